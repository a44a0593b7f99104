"""Every bad-input path of the trace reader, the configuration and the CLI.

Each case is checked twice: `read_trace` raises a `TraceError` with the exact one-line
message (file:line and the field), and `wanconform replay` prints exactly that line on
stderr, nothing on stdout, no traceback, and exits 2 (STYLE 9).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from traces.tracefile import read_trace
from wanconform.cli import main
from wanconform.errors import TraceError

CONFIG = '{"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}}\n'
OPS = (
    "put, delta, destroy, putall, tick, deliver, deliver_ack, drop, drop_ack, site_down, "
    "site_up, fail, settle"
)
SCALAR = "must be a scalar (integer, string, boolean or null)"
SENDER_FIELDS = (
    "ack_timeout_ms, batch_size, batch_time_interval_ms, delta, dlq_secure, failure_listener, "
    "id, remote, retry_interval_ms, site"
)


def config_line(config: dict[str, Any]) -> str:
    return json.dumps({"config": config}) + "\n"


def op_line(op: dict[str, Any]) -> str:
    return json.dumps(op) + "\n"


def json_error(text: str) -> str:
    """The json module's own message for a syntax error (it is part of ours)."""
    try:
        json.loads(text)
    except ValueError as exc:
        return str(exc)
    raise AssertionError(f"{text!r} is valid JSON")


# (case id, file text, expected message with {path} for the file name)
CASES: list[tuple[str, str, str]] = [
    # --- JSON and file structure (SPEC §12) ---
    (
        "not_json",
        CONFIG + '{"op": "tick", "ms": 1\n',
        "{path}:2: not valid JSON: " + json_error('{"op": "tick", "ms": 1\n'),
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
        "{path}:2: value.f: " + SCALAR + ", got a number with a fraction",
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
        "{path}:1: config.senderz: unknown field (allowed: receivers, senders, sites)",
    ),
    (
        "config_not_an_object",
        '{"config": [1, 2]}\n',
        "{path}:1: config: must be an object, got a list",
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


def test_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TraceError) as info:
        read_trace(tmp_path)
    assert str(info.value) == f"{tmp_path}: is a directory, not a trace file"
    check_cli(capsys, [str(tmp_path)], f"{tmp_path}: is a directory, not a trace file")


def test_non_utf8_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = CONFIG.encode() + b'{"op": "put", "site": 1, "key": "\xff", "value": {}}\n'
    path = tmp_path / "latin.jsonl"
    path.write_bytes(data)
    # 0xff can never start a UTF-8 sequence; its offset is counted from the file start
    offset = data.index(b"\xff")
    message = f"{path}: not UTF-8 text (invalid start byte at byte {offset})"
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == message
    check_cli(capsys, [str(path)], message)


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
    assert state["senders"]["ny"]["queue"] == ["1:1"]
