"""Every bad-input path of the trace reader, the configuration and the CLI.

Each case is checked twice: `read_trace` raises a `TraceError` with the exact one-line
message (file:line and the field), and `wanconform replay` prints exactly that line on
stderr, nothing on stdout, no traceback, and exits 2 (STYLE 9).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from traces.errors import TraceError
from traces.ops import Put, Tick
from traces.tracefile import open_trace, read_trace
from wanconform.cli import main

CONFIG = '{"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}}\n'
OPS = (
    "put, delta, destroy, putall, tick, deliver, deliver_ack, drop, drop_ack, site_down, "
    "site_up, fail, settle, redeliver, restart_sender, stop_sender, start_sender, pause_sender, "
    "resume_sender"
)
SCALAR = "must be a scalar (integer, string, boolean or null)"
SENDER_FIELDS = (
    "ack_timeout_ms, alert_threshold_ms, batch_size, batch_time_interval_ms, delta, "
    "dispatcher_threads, dlq_secure, enable_batch_conflation, enable_persistence, "
    "failure_listener, id, manual_start, maximum_queue_memory_bytes, order_policy, parallel, "
    "remote, retry_interval_ms, site"
)


def config_line(config: dict[str, Any]) -> str:
    return json.dumps({"config": config}) + "\n"


def op_line(op: dict[str, Any]) -> str:
    return json.dumps(op) + "\n"


# (case id, file text, expected message with {path} for the file name)
CASES: list[tuple[str, str, str]] = [
    # --- JSON and file structure (SPEC §12) ---
    (  # issue 8: the message named the file line and, after it, "line 2 column 1"
        "not_json_truncated_line",
        CONFIG + '{"op": "tick", "ms": 1\n',
        "{path}:2: not valid JSON: Expecting ',' delimiter at the end of the line",
    ),
    (
        "not_json_names_the_column",
        CONFIG + '{"op": "tick" "ms": 1}\n',
        "{path}:2: not valid JSON: Expecting ',' delimiter at column 15",
    ),
    (  # Python's message ends "starting at": the column follows it, "at" not said twice
        "not_json_unterminated_string",
        CONFIG + '{"op": "tick", "ms": 1, "x": "abc\n',
        "{path}:2: not valid JSON: Unterminated string starting at column 30",
    ),
    (
        "not_json_two_values_on_one_line",
        CONFIG + '{"op": "settle"} {"op": "settle"}\n',
        "{path}:2: not valid JSON: Extra data at column 18",
    ),
    (
        "not_json_nested_too_deeply",
        CONFIG + "[" * 100_000 + "\n",
        "{path}:2: not valid JSON: nested too deeply",
    ),
    (  # a byte order mark is accepted at the start of a file only
        "bom_after_the_first_line",
        CONFIG + "\ufeff" + '{"op": "settle"}\n',
        "{path}:2: not valid JSON: a byte order mark (U+FEFF) is allowed only at the start "
        "of the file",
    ),
    (
        "not_json_nan",
        CONFIG + '{"op": "tick", "ms": NaN}\n',
        "{path}:2: not valid JSON: NaN is not valid JSON",
    ),
    (
        "duplicate_keys_in_op",
        CONFIG + '{"op": "tick", "ms": 1, "ms": 2}\n',
        "{path}:2: not valid JSON: field 'ms' appears twice in one object",
    ),
    (
        "duplicate_keys_in_config",
        '{"config": {"sites": [1], "sites": [2]}}\n',
        "{path}:1: not valid JSON: field 'sites' appears twice in one object",
    ),
    (
        "first_line_not_config",
        '{"op": "tick", "ms": 1}\n',
        '{path}:1: the first line must be {{"config": {{...}}}} (SPEC §12)',
    ),
    (  # issue 8: what `wanconform import` writes is a configuration, not yet a trace
        "configuration_given_as_a_trace",
        '{"receivers":[],"senders":[],"sites":[1,2]}\n',
        "{path}:1: this is a configuration, not a trace: a trace's first line is "
        '{{"config": {{...}}}} followed by operations (SPEC §12)',
    ),
    (
        "first_line_config_plus_extra",
        '{"config": {"sites": [1]}, "ops": []}\n',
        '{path}:1: the first line must be {{"config": {{...}}}} (SPEC §12)',
    ),
    ("empty_file", "", '{path}:1: empty trace: the first line must be {{"config": {{...}}}}'),
    (
        "blank_lines_only",
        "\n  \n",
        '{path}:1: empty trace: the first line must be {{"config": {{...}}}}',
    ),
    (
        "line_numbers_count_blank_lines",
        CONFIG + "\n" + op_line({"op": "tick", "ms": 0}),
        "{path}:3: ms: must be an integer > 0, got 0",
    ),
    (
        "op_not_an_object",
        CONFIG + "[1, 2]\n",
        "{path}:2: an operation must be a JSON object, got a list",
    ),
    # --- operations (SPEC §3) ---
    (
        "unknown_op",
        CONFIG + op_line({"op": "explode"}),
        "{path}:2: op: unknown operation 'explode' (one of " + OPS + ")",
    ),
    ("missing_op", CONFIG + op_line({"site": 1}), "{path}:2: op: missing (one of " + OPS + ")"),
    # a null op is there, not missing; a number is no name ("unknown operation None" before)
    (
        "null_op",
        CONFIG + op_line({"op": None}),
        "{path}:2: op: must be an operation's name, got null",
    ),
    (
        "number_op",
        CONFIG + op_line({"op": 5}),
        "{path}:2: op: must be an operation's name, got an integer",
    ),
    (
        "missing_field",
        CONFIG + op_line({"op": "put", "site": 1, "key": "k"}),
        "{path}:2: value: missing (required by 'put')",
    ),
    (
        "unknown_op_field",
        CONFIG + op_line({"op": "tick", "ms": 1, "sender": "ny"}),
        "{path}:2: sender: unknown field for 'tick' (fields: ms)",
    ),
    (
        "bool_where_int_ms",
        CONFIG + op_line({"op": "tick", "ms": True}),
        "{path}:2: ms: must be an integer > 0, got a boolean",
    ),
    (
        "bool_where_int_site",
        CONFIG + op_line({"op": "site_down", "site": True}),
        "{path}:2: site: must be an integer site id, got a boolean",
    ),
    (
        "float_in_value",
        CONFIG + op_line({"op": "put", "site": 1, "key": "k", "value": {"f": 1.5}}),
        "{path}:2: value.f: " + SCALAR + ", got a number with a fraction (1.5)",
    ),
    (  # issue 8: 1e400 overflows a float; it was called "a number with a fraction"
        "float_overflow_in_tick",
        CONFIG + '{"op": "tick", "ms": 1e400}\n',
        "{path}:2: ms: must be an integer > 0, got a number too large for a 64-bit float (1e400)",
    ),
    (
        "exponent_in_tick",
        CONFIG + '{"op": "tick", "ms": 1E2}\n',
        "{path}:2: ms: must be an integer > 0, got a number with an exponent (1E2)",
    ),
    (
        "fraction_in_putall_entry",
        CONFIG + '{"op": "putall", "site": 1, "entries": {"k": {"f": 2.0}}}\n',
        "{path}:2: entries.k.f: " + SCALAR + ", got a number with a fraction (2.0)",
    ),
    (  # issue 8: an empty name was "must be a non-empty ..., got a string"
        "empty_exception_name",
        CONFIG + op_line({"op": "fail", "site": 2, "key": "k", "exception": "", "times": 1}),
        "{path}:2: exception: must be a non-empty exception name, got an empty string",
    ),
    (
        "nested_object_in_value",
        CONFIG + op_line({"op": "put", "site": 1, "key": "k", "value": {"f": {"g": 1}}}),
        "{path}:2: value.f: " + SCALAR + ", got an object",
    ),
    (
        "list_in_delta_changes",
        CONFIG + op_line({"op": "delta", "site": 1, "key": "k", "changes": {"f": [1]}}),
        "{path}:2: changes.f: " + SCALAR + ", got a list",
    ),
    (
        "nested_object_in_putall_entry",
        CONFIG + op_line({"op": "putall", "site": 1, "entries": {"k": {"f": {"g": 1}}}}),
        "{path}:2: entries.k.f: " + SCALAR + ", got an object",
    ),
    (
        "value_not_an_object",
        CONFIG + op_line({"op": "put", "site": 1, "key": "k", "value": 3}),
        "{path}:2: value: must be an object of field -> scalar, got an integer",
    ),
    (
        "unknown_site",
        CONFIG + op_line({"op": "put", "site": 3, "key": "k", "value": {}}),
        "{path}:2: site: unknown site 3 (the config has sites [1, 2])",
    ),
    (
        "unknown_sender",
        CONFIG + op_line({"op": "deliver", "sender": "tokyo"}),
        "{path}:2: sender: unknown sender 'tokyo' (the config has ['ny'])",
    ),
    (
        "tick_ms_0",
        CONFIG + op_line({"op": "tick", "ms": 0}),
        "{path}:2: ms: must be an integer > 0, got 0",
    ),
    (
        "fail_times_minus_1",
        CONFIG + op_line({"op": "fail", "site": 2, "key": "k", "exception": "E", "times": -1}),
        "{path}:2: times: must be an integer > 0, got -1",
    ),
    (
        "site_up_wipe_not_bool",
        CONFIG + op_line({"op": "site_up", "site": 1, "wipe": 1}),
        "{path}:2: wipe: must be true or false, got an integer",
    ),
    # --- configuration (SPEC §2, R6-R8) ---
    (
        "unknown_sender_field",
        config_line(
            {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_sise": 3}]}
        ),
        "{path}:1: config.senders[0].batch_sise: unknown field (allowed: " + SENDER_FIELDS + ")",
    ),
    (
        "sender_to_own_site",
        config_line({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 1}]}),
        "{path}:1: config.senders[0].remote: a sender cannot ship to its own site 1 (R6)",
    ),
    (
        "two_senders_for_one_pair",
        config_line(
            {
                "sites": [1, 2],
                "senders": [
                    {"id": "ny", "site": 1, "remote": 2},
                    {"id": "ny2", "site": 1, "remote": 2},
                ],
            }
        ),
        "{path}:1: config.senders[1]: site 1 already has sender 'ny' to site 2 "
        "(R6: at most one per pair)",
    ),
    (
        "duplicate_sender_id",
        config_line(
            {
                "sites": [1, 2],
                "senders": [
                    {"id": "ny", "site": 1, "remote": 2},
                    {"id": "ny", "site": 2, "remote": 1},
                ],
            }
        ),
        "{path}:1: config.senders[1].id: sender id 'ny' is used twice (R6)",
    ),
    (  # issue 8: was "must be a non-empty string, got a string"
        "empty_sender_id",
        config_line({"sites": [1, 2], "senders": [{"id": "", "site": 1, "remote": 2}]}),
        "{path}:1: config.senders[0].id: must be a non-empty string, got an empty string",
    ),
    (
        "site_0",
        config_line({"sites": [0, 2]}),
        "{path}:1: config.sites[0]: must be an integer from 1 to 255 (R1), got 0",
    ),
    (
        "site_256",
        config_line({"sites": [1, 256]}),
        "{path}:1: config.sites[1]: must be an integer from 1 to 255 (R1), got 256",
    ),
    (
        "receiver_retry_attempts_minus_2",
        config_line({"sites": [1, 2], "receivers": [{"site": 2, "retry_attempts": -2}]}),
        "{path}:1: config.receivers[0].retry_attempts: must be >= -1, got -2",
    ),
    (
        "bool_where_int_batch_size",
        config_line(
            {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": True}]}
        ),
        "{path}:1: config.senders[0].batch_size: must be an integer, got a boolean",
    ),
    # DISAGREES WITH traces/tracefile.py: parse_trace_lines prefixes "config." to a
    # ConfigError whose path already starts with "config" for top-level fields, giving
    # "config.config.senderz" / "config.config: must be an object".
    (
        "unknown_config_field",
        config_line({"sites": [1, 2], "senderz": []}),
        "{path}:1: config.senderz: unknown field (allowed: receivers, regions, senders, sites)",
    ),
    (
        "config_not_an_object",
        '{"config": [1, 2]}\n',
        "{path}:1: config: must be an object, got a list",
    ),
    # --- SPEC §3: every integer is signed 64-bit, and so is the sum of the ticks ---
    (  # Python's json refuses more than 4,300 digits: this was a ValueError's text
        "tick_ms_5000_digits",
        CONFIG + '{"op": "tick", "ms": ' + "9" * 5000 + "}\n",
        "{path}:2: ms: 99999...(5000 digits) is outside the signed 64-bit range (SPEC §3)",
    ),
    (
        "tick_ms_2_pow_63",
        CONFIG + op_line({"op": "tick", "ms": 2**63}),
        "{path}:2: ms: 9223372036854775808 is outside the signed 64-bit range (SPEC §3)",
    ),
    (
        "value_below_minus_2_pow_63",
        CONFIG + op_line({"op": "put", "site": 1, "key": "k", "value": {"n": -(2**63) - 1}}),
        "{path}:2: value.n: -9223372036854775809 is outside the signed 64-bit range (SPEC §3)",
    ),
    (
        "delta_change_5000_digits_negative",
        CONFIG + '{"op": "delta", "site": 1, "key": "k", "changes": {"n": -' + "1" * 5000 + "}}\n",
        "{path}:2: changes.n: -11111...(5000 digits) is outside the signed 64-bit range (SPEC §3)",
    ),
    (
        "putall_entry_2_pow_64",
        CONFIG + op_line({"op": "putall", "site": 1, "entries": {"k": {"n": 2**64}}}),
        "{path}:2: entries.k.n: 18446744073709551616 is outside the signed 64-bit range (SPEC §3)",
    ),
    (
        "fail_times_2_pow_63",
        CONFIG + op_line({"op": "fail", "site": 2, "key": "k", "exception": "E", "times": 2**63}),
        "{path}:2: times: 9223372036854775808 is outside the signed 64-bit range (SPEC §3)",
    ),
    (
        "site_5000_digits",
        CONFIG + '{"op": "site_down", "site": ' + "2" * 5000 + "}\n",
        "{path}:2: site: 22222...(5000 digits) is outside the signed 64-bit range (SPEC §3)",
    ),
    (  # 2^63 - 1 + 1: each tick is in range, their sum is not
        "ticks_add_up_past_2_pow_63",
        CONFIG
        + op_line({"op": "tick", "ms": 2**63 - 1})
        + op_line({"op": "settle"})
        + op_line({"op": "tick", "ms": 1}),
        "{path}:4: ms: the ticks add up to 9223372036854775808, past the signed 64-bit range "
        "(SPEC §3)",
    ),
    (
        "config_batch_size_2_pow_63",
        config_line(
            {
                "sites": [1, 2],
                "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 2**63}],
            }
        ),
        "{path}:1: config.senders[0].batch_size: 9223372036854775808 is outside the signed "
        "64-bit range (SPEC §3)",
    ),
    (
        "config_retry_attempts_5000_digits",
        '{"config": {"sites": [1, 2], "receivers": [{"site": 2, "retry_attempts": -'
        + "9" * 5000
        + "}]}}\n",
        "{path}:1: config.receivers[0].retry_attempts: -99999...(5000 digits) is outside the "
        "signed 64-bit range (SPEC §3)",
    ),
    (
        "config_sender_site_5000_digits",
        '{"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": '
        + "1" * 5000
        + ', "remote": 2}]}}\n',
        "{path}:1: config.senders[0].site: 11111...(5000 digits) is outside the signed 64-bit "
        "range (SPEC §3)",
    ),
    (
        "config_sites_5000_digits",
        '{"config": {"sites": [' + "1" * 5000 + "]}}\n",
        "{path}:1: config.sites[0]: must be an integer from 1 to 255 (R1), "
        "got 11111...(5000 digits)",
    ),
]


def check_cli(capsys: pytest.CaptureFixture[str], paths: list[str], message: str) -> None:
    code = main(["replay", *paths, "--engine", "model"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err == f"wanconform: error: {message}\n"
    assert "Traceback" not in err


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_trace_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    message = expected.format(path=path)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == message
    assert "\n" not in message
    check_cli(capsys, [str(path)], message)


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nowhere.jsonl"
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == f"{path}: no such file"
    check_cli(capsys, [str(path)], f"{path}: no such file")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", ""], "an empty path; give the name of a trace file"),
        (["validate", ""], "an empty path; give the name of a trace file"),
        (
            ["live", "--config", "", "--out", "run"],
            "an empty path; give the name of a configuration or trace file",
        ),
    ],
)
def test_an_empty_input_path_is_named_as_one(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    # (was "wanconform: error: : no such file", naming nothing)
    assert run_cli(capsys, argv) == f"wanconform: error: {message}\n"


def test_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TraceError) as info:
        read_trace(tmp_path)
    assert str(info.value) == f"{tmp_path}: is a directory, not a trace file"
    check_cli(capsys, [str(tmp_path)], f"{tmp_path}: is a directory, not a trace file")


def test_a_parquet_file_given_as_a_trace_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a trace set's file, given where a JSON Lines trace belongs (was "not valid JSON")
    trace_set = tmp_path / "set"
    assert main(["convert", _ELEVEN, "--out", str(trace_set)]) == 0
    capsys.readouterr()
    [part] = sorted((trace_set / "ops").glob("*.parquet"))
    message = (
        f"{part}:1: a Parquet file, not JSON Lines (`wanconform convert SET --out DIR` writes "
        "the traces of the trace set SET it belongs to as JSON Lines)"
    )
    check_cli(capsys, [str(part)], message)
    assert main(["validate", str(part)]) == 2
    assert capsys.readouterr().err == f"wanconform: error: {message}\n"


def test_non_utf8_bytes_are_named_by_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 8: the message gave a byte offset in the file and no line
    data = CONFIG.encode() + b'{"op": "put", "site": 1, "key": "\xff", "value": {}}\n'
    path = tmp_path / "latin.jsonl"
    path.write_bytes(data)
    # 0xff can never start a UTF-8 sequence; it is the 34th byte of line 2
    message = f"{path}:2: not UTF-8 text: byte 0xff at column 34 (invalid start byte)"
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == message
    check_cli(capsys, [str(path)], message)


def test_truncated_utf8_sequence_at_the_end_of_a_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(CONFIG.encode() + b'{"op": "put", "site": 1, "key": "\xc3"}\n')
    with pytest.raises(TraceError) as info:
        open_trace(path)
    assert str(info.value) == (
        f"{path}:2: not UTF-8 text: byte 0xc3 at column 34 (invalid continuation byte)"
    )


def test_byte_order_mark_at_the_start_is_accepted(tmp_path: Path) -> None:
    # Our reading: RFC 8259 §8.1 lets a parser ignore a leading BOM, and editors on Windows
    # write one; we accept it at the start of the file (elsewhere it is an error, see CASES).
    plain = tmp_path / "plain.jsonl"
    plain.write_text(CONFIG + op_line({"op": "tick", "ms": 3}), encoding="utf-8")
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    expected = read_trace(plain)
    assert read_trace(marked).ops == expected.ops == (Tick(3),)
    assert read_trace(marked).config == expected.config
    source = open_trace(marked)
    assert list(source.ops()) == [(2, Tick(3))]


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == "wanconform 0.1.0\n"


def test_every_trace_is_validated_before_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(CONFIG + op_line({"op": "put", "site": 1, "key": "k", "value": {}}))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(CONFIG + op_line({"op": "tick", "ms": 0}))
    check_cli(capsys, [str(good), str(bad)], f"{bad}:2: ms: must be an integer > 0, got 0")
    check_cli(capsys, [str(bad), str(good)], f"{bad}:2: ms: must be an integer > 0, got 0")


def test_good_trace_replays_with_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(CONFIG + op_line({"op": "put", "site": 1, "key": "k", "value": {"f": 1}}))
    assert main(["replay", str(good), "--engine", "model", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    document = json.loads(out)
    assert out.count("\n") == 1
    assert (document["operations"], document["skipped"], document["converged"]) == (1, 0, False)
    state = document["state"]
    assert state["sites"]["1"]["entries"] == {"k": {"value": {"f": 1}, "version": [1, 0, 1]}}
    assert state["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:1"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--config", "{tmp}/none.json"], "{tmp}/none.json: "),
        (["--config", "{tmp}/c.json", "--site", "1={tmp}/c.json"],
         "--config and --site: give the configuration one way, not both"),
        (["--define", "X=1"], "--define and --allow-partial go with --site (Geode files)"),
        (["--config", "{tmp}/bad.json"], "{tmp}/bad.json: senders[0].remote: "),
        (["--site", "1={tmp}/none.xml"], "{tmp}/none.xml"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["generate", "campaign"])
def test_a_bad_given_configuration_is_one_line_before_any_work(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    flags: list[str],
    message: str,
) -> None:
    (tmp_path / "c.json").write_text('{"sites": [1, 2]}\n')
    bad = {"sites": [1, 2], "senders": [{"id": "a", "site": 1, "remote": 3}]}
    (tmp_path / "bad.json").write_text(json.dumps(bad) + "\n")
    argv = [command, *(f.format(tmp=tmp_path) for f in flags), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("wanconform: error: ")
    assert message.format(tmp=tmp_path) in captured.err
    assert captured.err.count("\n") == 1
    assert not (tmp_path / "out").exists()


# --- found by `make fuzz` (tools/fuzz.py): each failed with a traceback or two lines ---


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one stderr line of a rejected command (exit 2, nothing on stdout)."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("line", "code"),
    [('{"op": "put", "site": 1, "key": "\\ud800", "value": {}}', "\\ud800"),
     ('{"key":"k","op":"put","site":1,"value":{"\\udfff\\ud800":1}}', "\\udfff")],
)  # fmt: skip
def test_a_lone_surrogate_escape_is_not_a_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, code: str
) -> None:
    # was: UnicodeEncodeError when the state was encoded; a pair ("\ud83d\ude42") is fine
    path = tmp_path / "t.jsonl"
    path.write_text(CONFIG + line + "\n")
    message = (
        f"{path}:2: not valid JSON: {code} is half of a UTF-16 surrogate pair, not a character"
    )
    check_cli(capsys, [str(path)], message)
    path.write_text(CONFIG + '{"op": "put", "site": 1, "key": "\\ud83d\\ude42", "value": {}}\n')
    assert read_trace(path).ops == (Put(1, "\U0001f642", {}),)


def test_deep_nesting_on_the_fast_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # was: RecursionError from msgspec on a line in canonical key order
    path = tmp_path / "t.jsonl"
    path.write_text(CONFIG + '{"op": ' + "[" * 3000 + "]" * 3000 + "}\n")
    check_cli(capsys, [str(path)], f"{path}:2: not valid JSON: nested too deeply")


def test_deep_nesting_in_a_configuration_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was: RecursionError out of `wanconform topology`
    path = tmp_path / "c.json"
    path.write_text('{"sites": ' + "[" * 3000 + "]" * 3000 + "}\n")
    err = run_cli(capsys, ["topology", str(path)])
    assert err == f"wanconform: error: {path}: not valid JSON: nested too deeply\n"


def test_a_control_character_quoted_from_the_input_stays_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was: an escaped "\r" in a field name printed as a carriage return (two lines)
    path = tmp_path / "t.jsonl"
    path.write_text('{"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, '
                    '"remote": 2, "retry_inte\\rval_ms\\u202e": 1}]}}\n')  # fmt: skip
    err = run_cli(capsys, ["replay", str(path)])
    assert err.startswith(
        f"wanconform: error: {path}:1: config.senders[0].retry_inte\\rval_ms\\u202e: "
        "unknown field (allowed: "
    )


def test_an_unknown_xml_encoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # was: LookupError out of the SAX parser
    path = tmp_path / "ln-cache.xml"
    path.write_text('<?xml version="1.0" encoding="ny"?>\n<cache/>\n')
    err = run_cli(capsys, ["import", "--site", f"1={path}"])
    assert err == f"wanconform: error: {path}:1: not well-formed XML: unknown encoding: ny\n"


def test_a_log_observation_with_a_fraction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was: TypeError (JsonNumber not serializable) when the disagreement was printed.
    # SPEC §10: an observation's values are integers, strings, booleans or null.
    path = tmp_path / "l.jsonl"
    observed = [{"kind": "enqueued", "site": 1, "event": "1:1", "key": "k", "op": "create",
                 "version": [1, 0, 1], "value": {"n": 1.5}, "senders": ["ny"],
                 "routes": {"ny": {"dispatcher": 0, "bucket": None}}}]  # fmt: skip
    op = {"op": "put", "site": 1, "key": "k", "value": {"n": 1}, "observed": observed}
    path.write_text(CONFIG + op_line(op))
    err = run_cli(capsys, ["validate", str(path)])
    assert err == (
        f"wanconform: error: {path}:2: observed[0].value.n: must be an integer, a string, a "
        "boolean or null (SPEC §10), got a number with a fraction (1.5)\n"
    )


def test_a_log_observation_with_an_integer_of_5000_digits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was: "must be an integer, a string, a boolean or null (SPEC §10), got an integer"
    path = tmp_path / "l.jsonl"
    observed = [{"kind": "enqueued", "site": 1, "event": "1:1", "key": "k", "op": "create",
                 "version": [1, 0, 1], "value": {"n": 12345}, "senders": ["ny"],
                 "routes": {"ny": {"dispatcher": 0, "bucket": None}}}]  # fmt: skip
    op = {"op": "put", "site": 1, "key": "k", "value": {"n": 1}, "observed": observed}
    path.write_text(CONFIG + op_line(op).replace("12345", "-" + "7" * 5000))
    err = run_cli(capsys, ["validate", str(path)])
    assert err == (
        f"wanconform: error: {path}:2: observed[0].value.n: must be an integer, a string, a "
        "boolean or null (SPEC §10), got an integer with too many digits "
        "(-77777...(5000 digits))\n"
    )


@pytest.mark.parametrize(
    ("payload", "problem"),
    [({"add": {"sender": "ny"}}, "an add whose record has no string event_id"),
     ({"add": []}, "an add whose record is not an object"),
     ({"remove": [1]}, "a remove that is not a list of event ids"),
     ({"add": {"event_id": "1:1", "sender": "ny", "key": "k", "op": "create",
               "exception": "E", "version": [1, 0, 1], "recipients": 2}},
      "an add whose record has no list recipients")],
)  # fmt: skip
def test_a_dead_letter_frame_with_a_valid_checksum_around_a_bad_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: dict[str, Any], problem: str
) -> None:
    # was: KeyError / TypeError out of `wanconform dlq` (docs/DLQ_STORE.md: damage is an error)
    from impl.dlq_store import frame

    (tmp_path / "ny.dlq").write_bytes(frame(payload))
    err = run_cli(capsys, ["dlq", str(tmp_path)])
    assert err == f"wanconform: error: {tmp_path / 'ny.dlq'}: byte 0: damaged frame ({problem})\n"


def test_a_trace_set_whose_second_ops_file_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was: ArrowInvalid out of `convert` (a dataset's schema comes from its first file only)
    from traces.parquet import jsonl_to_parquet

    trace = tmp_path / "t.jsonl"
    trace.write_text(CONFIG + op_line({"op": "settle"}))
    jsonl_to_parquet([trace], tmp_path / "set")
    (tmp_path / "set" / "ops" / "part-00001.parquet").write_bytes(b"")
    err = run_cli(capsys, ["convert", str(tmp_path / "set"), "--out", str(tmp_path / "out")])
    assert err.startswith(f"wanconform: error: {tmp_path / 'set' / 'ops'}: not readable Parquet: ")
    assert "part-00001.parquet" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["replay", "--engin", "both", "t.jsonl"],
            "wanconform replay: error: unrecognized arguments: --engin "
            "(see: wanconform replay --help)",
        ),
        (
            ["generate", "--trace", "10", "--out", "set"],
            "wanconform generate: error: unrecognized arguments: --trace 10 "
            "(see: wanconform generate --help)",
        ),
        (
            ["replay", "--engine", "nope", "t.jsonl"],
            "wanconform replay: error: argument --engine: invalid choice: 'nope' (choose from "
            "'model', 'impl', 'both') (see: wanconform replay --help)",
        ),
        (
            ["replay"],
            "wanconform replay: error: the following arguments are required: TRACE "
            "(see: wanconform replay --help)",
        ),
    ],
    ids=["abbreviated_flag", "abbreviated_flag_with_value", "bad_choice", "missing_argument"],
)
def test_a_wrong_command_line_is_one_line_and_abbreviations_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    """Issue 31 item 8: one line on stderr, exit 2, nothing on stdout and nothing written;
    an option must be written whole (argparse would take `--engin` for `--engine`)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    captured = capsys.readouterr()
    assert (info.value.code, captured.out, captured.err) == (2, "", expected + "\n")


# Found by a sweep of every command's input handling (2026-11-27).
_ELEVEN = str(
    Path(__file__).resolve().parent.parent / "traces" / "examples" / "batching_by_size.jsonl"
)


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    return line


def test_bench_ops_beyond_a_list_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # was a traceback: ValueError from islice() deep in steady_workload
    assert main(["bench", "--ops", str(2**70)]) == 2
    assert _one_error(capsys) == (f"wanconform: error: --ops: at most {sys.maxsize}, got {2**70}")


def test_bench_segments_of_a_bad_trace_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was a traceback: RuntimeError "model: exit 2: ..." from the first timed run
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["bench", "--segments", str(empty)]) == 2
    assert _one_error(capsys) == (
        f'wanconform: error: {empty}:1: empty trace: the first line must be {{"config": {{...}}}}'
    )


def test_replay_checkpoint_onto_its_own_from_is_refused_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--from ck --checkpoint ck --force` replaced the input checkpoint
    ck = tmp_path / "ck.json"
    assert main(["replay", _ELEVEN, "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    before = ck.read_bytes()
    assert main(["replay", _ELEVEN, "--from", str(ck), "--checkpoint", str(ck), "--force"]) == 2
    assert _one_error(capsys) == (
        f"wanconform: error: {ck}: is an input, and the output --checkpoint is it; give "
        "the output a path of its own"
    )
    assert ck.read_bytes() == before


@pytest.mark.parametrize(
    ("position", "message"),
    [
        # docs/CHECKPOINT.md "The document": `position`, if present, has `operations` (an
        # integer from 0, at most the trace's count), and `line` (from 1) with `offset`
        # (from 0), and no other field. `"operations": true` was taken as 1 (the state
        # after 11 operations run from the 2nd); the others were accepted.
        ({"operations": True}, "position.operations: true is not of type integer"),
        ({"operations": "3"}, 'position.operations: "3" is not of type integer'),
        ({"operations": None}, "position.operations: null is not of type integer"),
        ({"operations": -1}, "position.operations: -1 is less than the minimum of 0"),
        ({}, "position: 'operations' is a required property"),
        ({"line": 2, "offset": 0}, "position: 'operations' is a required property"),
        (
            {"operations": 11, "line": 0, "offset": 0},
            "position.line: 0 is less than the minimum of 1",
        ),
        (
            {"operations": 11, "line": 13, "offset": -1},
            "position.offset: -1 is less than the minimum of 0",
        ),
        ({"operations": 11, "line": 13}, "position: 'offset' is a dependency of 'line'"),
        ({"operations": 11, "offset": 9}, "position: 'line' is a dependency of 'offset'"),
        (
            {"operations": 11, "trace": "t.jsonl"},
            "position: Additional properties are not allowed ('trace' was unexpected)",
        ),
        ([11], "position: a list is not of type object"),
        (
            {"operations": 12},  # the trace has 11
            f"position.operations: 12 is not an operation count of {_ELEVEN} (0..11)",
        ),
    ],
)
def test_a_checkpoint_position_that_is_no_place_in_a_trace_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], position: Any, message: str
) -> None:
    ck = tmp_path / "ck.json"
    assert main(["replay", _ELEVEN, "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    doc = json.loads(ck.read_text())
    doc["position"] = position
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "out.json"
    argv = ["replay", _ELEVEN, "--engine", "both", "--from", str(bad), "--checkpoint", str(out)]
    assert main(argv) == 2
    assert _one_error(capsys) == f"wanconform: error: {bad}: {message}"
    assert not out.exists()  # nothing half-written


def test_a_checkpoint_position_of_the_segments_or_none_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # all three fields (as segments write them), or no position (start of the trace)
    ck = tmp_path / "ck.json"
    assert main(["replay", _ELEVEN, "--checkpoint", str(ck)]) == 0
    doc = json.loads(ck.read_text())
    for position in ({"operations": 11, "line": 13, "offset": 0}, None):
        doc.pop("position", None)
        if position is not None:
            doc["position"] = position
        good = tmp_path / "good.json"
        good.write_text(json.dumps(doc))
        capsys.readouterr()
        assert main(["replay", _ELEVEN, "--engine", "both", "--from", str(good)]) == 0
        assert "error" not in capsys.readouterr().err


def test_a_checkpoint_with_a_key_twice_or_bad_json_is_one_line_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a key given twice was accepted (the last kept); bad JSON was Python's text,
    # "not JSON: Expecting value: line 3 column 7 (char 45)", with no file:line
    ck = tmp_path / "ck.json"
    assert main(["replay", _ELEVEN, "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    twice = tmp_path / "twice.json"
    twice.write_text(ck.read_text().replace('{"config"', '{"version":99,"config"', 1))
    assert main(["replay", _ELEVEN, "--from", str(twice)]) == 2
    assert _one_error(capsys) == (
        f"wanconform: error: {twice}: not valid JSON: field 'version' appears twice in one object"
    )
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "wanconform-checkpoint",\n "version": 2,\n "x": }\n')
    assert main(["replay", _ELEVEN, "--from", str(broken)]) == 2
    assert _one_error(capsys) == (
        f"wanconform: error: {broken}:3: not valid JSON: Expecting value at column 7"
    )


def test_an_output_inside_an_input_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `convert SET --out SET/ops/x` wrote JSON Lines into the Parquet set, which then no
    # longer read; now refused before any work, the set untouched
    trace_set = tmp_path / "set"
    assert main(["convert", _ELEVEN, "--out", str(trace_set)]) == 0
    capsys.readouterr()
    before = sorted(str(p) for p in trace_set.rglob("*"))
    inside = trace_set / "ops" / "x"
    assert main(["convert", str(trace_set), "--out", str(inside)]) == 2
    assert _one_error(capsys) == (
        f"wanconform: error: {trace_set}: is an input directory, and the output --out "
        f"({inside}) is inside it; give the output a path of its own"
    )
    assert sorted(str(p) for p in trace_set.rglob("*")) == before


def test_an_output_inside_a_dead_letter_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `dlq STORE -o STORE/x.csv` wrote into the store, which the docs say is never changed
    store = tmp_path / "store"
    store.mkdir()
    (store / "ny.dlq").write_bytes(b"")
    inside = store / "x.csv"
    assert main(["dlq", str(store), "--format", "csv", "-o", str(inside)]) == 2
    assert _one_error(capsys) == (
        f"wanconform: error: {store}: is an input directory, and the output --output "
        f"({inside}) is inside it; give the output a path of its own"
    )
    assert sorted(p.name for p in store.iterdir()) == ["ny.dlq"]


def test_ctrl_c_names_the_stores_a_run_keeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C writes no output, but the durable stores of --dlq-dir/--queue-dir keep what
    the run put in them (they are durable): the interrupt's line says where."""
    import conformance.running.stores

    def interrupt(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("wanconform.cmd_replay.replay_sources", interrupt)
    # the interrupt would stop this worker's Spark session, which other tests share
    monkeypatch.delitem(sys.modules, "conformance.spark.glue", raising=False)
    dlq = tmp_path / "dlq"
    assert main(["replay", _ELEVEN, "--engine", "both", "--dlq-dir", str(dlq)]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"wanconform: interrupted: nothing written but to the stores in {dlq}, which keep "
        "what the run put in them"
    )
    assert main(["replay", _ELEVEN]) == 130  # a later command of this process: none
    assert capsys.readouterr().err.splitlines()[-1] == "wanconform: interrupted: nothing written"
    assert conformance.running.stores.OPENED == []


def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """Ctrl-C a moment after start, while the command imports its modules (traces.engine
    is one of the first), is the same one line and exit 130, not a traceback."""
    import subprocess

    program = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'traces.engine':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "from wanconform.cli import main\n"
        f"sys.exit(main(['replay', {_ELEVEN!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path
    )
    assert (done.returncode, done.stdout) == (130, "")
    assert done.stderr == "wanconform: interrupted: nothing written\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("options", [[], ["--json"], ["--steps"]])
def test_a_standard_output_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, options: list[str]
) -> None:
    """`replay T > /dev/full` (a full disk): the output cannot be written, so one line
    and exit 2, not a traceback and exit 1 (which says a divergence was found)."""
    import subprocess

    program = "import sys; from wanconform.cli import main; sys.exit(main(sys.argv[1:]))"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", program, "replay", _ELEVEN, *options],
            stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2, "wanconform: error: cannot write standard output: No space left on device\n"
    )  # fmt: skip


def test_a_directory_given_as_the_checkpoint_is_named_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # it said "is a directory, not checkpoint"
    assert main(["replay", _ELEVEN, "--from", str(tmp_path)]) == 2
    assert _one_error(capsys) == f"wanconform: error: {tmp_path}: is a directory, not a checkpoint"
