"""`wanconform validate` (issue 16): a system's own log checked against the model.

Expected values come from SPEC §3, §10 and R9-R18 worked by hand, never from a run."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl import Engine
from traces.logschema import schema_text
from traces.observations import KINDS
from traces.ops import FIELD_KINDS, OP_NAMES, op_to_json
from traces.tracefile import read_trace
from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "log.schema.json").read_text())
JAVA = ROOT / "examples" / "java" / "SerialSender.java"
RESEND = ROOT / "tests" / "data" / "report" / "resend.jsonl"


def schema_errors(path: Path) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return [
        f"{number}: {error.message}"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for error in validator.iter_errors(json.loads(line))
    ]


def log_of(trace: Path, out: Path, state_every: int = 0) -> list[dict[str, Any]]:
    """The log the impl would write for a trace: what a correct system logs."""
    source = read_trace(trace)
    engine = Engine(source.config)
    lines: list[dict[str, Any]] = [{"config": source.config.to_json()}]
    for index, op in enumerate(source.ops):
        line = op_to_json(op) | {"observed": engine.apply(op)}
        if state_every and index % state_every == 0:
            line["state"] = engine.observe()
        lines.append(line)
    write(out, lines)
    return lines


def write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture(scope="module")
def java_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("java") is None:
        pytest.skip("no java on this machine (Java 17 runs the example's source directly)")
    folder = tmp_path_factory.mktemp("java")
    buggy, fixed = folder / "gw.log.jsonl", folder / "gw-fixed.log.jsonl"
    for out, flags in ((buggy, []), (fixed, ["--fixed"])):
        subprocess.run(["java", str(JAVA), str(out), *flags], check=True, timeout=120)
    return buggy, fixed


def test_r15_the_java_senders_missing_flush_after_an_ack_is_found_at_line_8(
    java_logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # Lines 2-6: five puts (batch_size 2): the 2nd sends batch 1 [1:1, 1:2] (R15), the
    # 3rd-5th queue behind it (R13). Line 7: deliver. Line 8: deliver_ack removes 1:1 and
    # 1:2 (R18); the queue holds 1:3, 1:4, 1:5 >= batch_size, so the flush after the
    # operation (§3, R15) sends batch 2 [1:3, 1:4] of values {"n":2}, {"n":3}: 7 + 7
    # bytes (R4). The Java sender does not flush after an ack.
    buggy, _ = java_logs
    assert main(["validate", str(buggy)]) == 1
    out = capsys.readouterr().out
    assert (
        f"P1: FAILED: model and the log diverge at {buggy}:8: divergence at "
        '{"op":"deliver_ack","sender":"ny"}\n'
        '    observations[1]: model={"batch_id":2,"bytes_delta":0,"bytes_full":14,'
        '"dispatcher":0,"events":["1:3","1:4"],"events_resent":0,"kind":"sent","sender":"ny"} '
        'log="<absent>"\n'
    ) in out
    assert schema_errors(buggy) == []


def test_the_fixed_java_senders_log_agrees_with_the_model(
    java_logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, fixed = java_logs
    assert main(["validate", str(fixed), "--json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    result = json.loads(line)
    assert result["operations"] == 160  # 20 rounds of 5 puts, deliver, deliver_ack, tick
    assert result["p1"]["status"] == "held"
    assert result["divergence"] is None
    assert schema_errors(fixed) == []


def test_logged_states_are_compared_where_they_are_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.log.jsonl"
    lines = log_of(RESEND, good, state_every=3)  # states on lines 2, 5, 8, 11
    assert main(["validate", str(good), "--check-properties"]) == 0
    assert "P1: held (model and the log agree at every step)" in capsys.readouterr().out
    assert schema_errors(good) == []
    # The state logged on line 8 (after the 2,000 ms tick) says site 2 applied 7 events;
    # by then it applied a and b (the delivered batch of 2, R16): 2.
    lines[7]["state"]["sites"]["2"]["stats"]["applied"] = 7
    bad = tmp_path / "bad.log.jsonl"
    write(bad, lines)
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"diverge at {bad}:8: divergence at " + '{"ms":2000,"op":"tick"}' in out
    assert "    state.sites.2.stats.applied: model=2 log=7\n" in out  # the log, not "impl"
    assert f"  the log stopped at {bad}:8 (P1); the model ran on alone to the end" in out


def test_a_logged_observation_that_differs_is_the_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = log_of(RESEND, tmp_path / "x.jsonl")
    # Line 9, tick 500 after the 2,000 ms timeout: the batch [a, b] is re-sent with both
    # events flagged possible_duplicate (R20): events_resent 2. The log says 0.
    assert lines[8]["observed"][0]["kind"] == "sent"
    lines[8]["observed"][0]["events_resent"] = 0
    log = tmp_path / "resend.log.jsonl"
    write(log, lines)
    assert main(["validate", str(log)]) == 1
    out = capsys.readouterr().out
    assert f"diverge at {log}:9: divergence at " + '{"ms":500,"op":"tick"}' in out
    assert "    observations[0].events_resent: model=2 log=0\n" in out
    # shrink on a log: nothing is shrunk, so --shrink-budget is refused (was: ignored)
    cut = tmp_path / "cut.jsonl"
    assert main(["shrink", str(log), "-o", str(cut), "--shrink-budget", "5"]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {log}: a log is cut, not shrunk: no --impl, --pytest or "
        "--shrink-budget\n",
    )
    assert not cut.exists()
    # shrink on a log: the trace of its operations up to the disagreement
    assert main(["shrink", str(log), "-o", str(cut)]) == 0
    out = capsys.readouterr().out
    assert "a log cannot be shrunk without the system that wrote it" in out
    assert "wrote the trace of its first 8 operations" in out
    assert f"  P1: model and the log diverge at {log}:9: divergence at " in out
    assert read_trace(cut).ops == read_trace(RESEND).ops[:8]
    # --report: the group, and why it has no shrunk example
    html = tmp_path / "r.html"
    assert main(["validate", str(log), "--report", str(html)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == f"wanconform: wrote {html}"
    page = html.read_text()
    assert "P1 observations: sent.events_resent" in page
    assert "a log cannot be shrunk without the system that wrote it" in page


CONFIG = {"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}}
TICK = {"op": "tick", "ms": 1}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (TICK, "observed: missing: a log line is an operation and the list of what the "
               "system observed after it (docs/LOG.md)"),
        (TICK | {"observed": {}}, "observed: must be a list, got an object"),
        (TICK | {"observed": [7]}, "observed[0]: must be an object, got an integer"),
        (TICK | {"observed": [{"kind": "sended"}]},
         "observed[0]: kind: must be one of " + ", ".join(KINDS) + " (SPEC §10), got \"sended\""),
        (TICK | {"observed": [], "state": {"time": 1}},
         "state: must be the observable state of SPEC §10, an object with exactly the "
         "fields senders, sites, time"),
        (TICK | {"observed": [], "state": None},  # (was taken as no state; the schema refuses it)
         "state: must be the observable state of SPEC §10, an object with exactly the "
         "fields senders, sites, time"),
        (TICK | {"observed": [], "state": {"time": "1", "sites": {}, "senders": {}}},
         "state.time: must be an integer (ms), got a string"),
        (TICK | {"observed": [], "state": {"time": 1, "sites": [], "senders": {}}},
         "state.sites: must be an object, got a list"),
        (TICK | {"observed": [], "state": {"time": 2**63, "sites": {}, "senders": {}}},
         "state.time: 9223372036854775808 is outside the signed 64-bit range (SPEC §3)"),
        ({"op": "deliver", "sender": "xx", "observed": []}, "sender: unknown sender 'xx'"),
        ({"op": "tick", "ms": 0, "observed": []}, "ms: must be"),
    ],
)  # fmt: skip
def test_a_bad_log_line_is_one_line_naming_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: dict[str, Any], message: str
) -> None:
    log = tmp_path / "bad.log.jsonl"
    write(log, [CONFIG, TICK | {"observed": []}, line])
    assert main(["validate", str(log)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"wanconform: error: {log}:3: ")
    assert message in captured.err
    assert captured.err.count("\n") == 1
    # the documented schema refuses the same line (which senders exist it cannot know)
    if "unknown sender" not in message:
        assert schema_errors(log) and all(e.startswith("3: ") for e in schema_errors(log))


def test_max_late_ms_on_a_log_of_operations_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # lateness belongs to event logs; a log of operations has no due steps to be late
    log = tmp_path / "ops.log.jsonl"
    write(log, [CONFIG, TICK | {"observed": []}])
    assert main(["validate", "--max-late-ms", "5", str(log)]) == 2
    assert capsys.readouterr().err == (
        "wanconform: error: --max-late-ms: only an event log has lateness (docs/LOG.md, "
        f"'Event logs'); {log} is a log of operations\n"
    )
    assert main(["validate", str(log)]) == 0


def test_the_example_log_of_docs_log_md_is_valid_and_agrees_with_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SPEC §2 batch_size 2: the 1st put queues 1:1 (R9, R13); the 2nd queues 1:2 and the
    # flush sends batch 1 [1:1, 1:2] of {"n":0}, {"n":1}: 7 + 7 bytes (R4, R15); the tick
    # of 1 ms is far from any timeout (R19): nothing observed.
    text = (ROOT / "docs" / "LOG.md").read_text()
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    log = tmp_path / "example.log.jsonl"
    log.write_text(example)
    assert len(example.splitlines()) == 4
    assert schema_errors(log) == []
    assert main(["validate", str(log), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["operations"], result["p1"]["status"]) == (3, "held")
    sender = result["state"]["senders"]["ny"]
    assert sender["dispatchers"][0]["in_flight"]["events"] == ["1:1", "1:2"]
    assert sender["stats"]["bytes_full"] == 14


def test_the_schema_says_what_the_reader_accepts() -> None:
    # The file in the repository is what traces/logschema.py makes from the reader's own
    # tables (issue 31 item 9: the schema and the reader cannot drift) ...
    assert (ROOT / "docs" / "log.schema.json").read_text() == schema_text()
    lines = SCHEMA["$defs"]["operation_line"]["oneOf"]
    assert [branch["properties"]["op"]["const"] for branch in lines] == list(OP_NAMES)
    for branch in lines:
        fields = FIELD_KINDS[branch["properties"]["op"]["const"]]
        required = {name for name, kind in fields.items() if not kind.endswith("?")}
        assert set(branch["required"]) == {"op", "observed", *required}
        assert set(branch["properties"]) == {"op", "observed", "state", *fields}
    kinds = SCHEMA["$defs"]["observation"]["oneOf"]
    assert [kind["properties"]["kind"]["const"] for kind in kinds] == list(KINDS)
    # ... and says, field by field, what SPEC §10 and §16.6 list (by hand, two kinds):
    sent = kinds[KINDS.index("sent")]
    assert sent["required"] == ["kind", "sender", "dispatcher", "batch_id", "events",
                                "bytes_full", "bytes_delta", "events_resent"]  # fmt: skip
    assert sent["additionalProperties"] is False
    applied = kinds[KINDS.index("applied")]
    assert applied["required"] == ["kind", "site", "sender", "event", "key", "status"]
    assert set(applied["properties"]) - set(applied["required"]) == {"exception", "value"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda obs: obs | {"extra": None},
            "enqueued.extra: unknown field (SPEC §10: enqueued has kind, site, event, key, op, "
            "version, value, senders, routes)",
        ),
        (
            lambda obs: {k: v for k, v in obs.items() if k != "routes"},
            "enqueued.routes: missing (SPEC §10: enqueued has kind, site, event, key, op, "
            "version, value, senders, routes; traces/observations.py)",
        ),
        (lambda obs: obs | {"site": "1"}, "enqueued.site: must be an integer, got a string"),
    ],
)
def test_a_logged_observation_with_a_field_too_many_or_too_few_is_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    # Issue 31 item 9: an observation is checked against the one list of fields
    # (traces/observations.py FIELDS): a field too many, one missing or one of the wrong
    # type is a bad line (exit 2), not a disagreement (exit 1). By hand: a put at site 1
    # with sender ny 1 -> 2 (batch_size 100) only enqueues 1:1 (R9, R11, R29: d0).
    config = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}
    enqueued = {"kind": "enqueued", "site": 1, "event": "1:1", "key": "k", "op": "create",
                "version": [1, 0, 1], "value": {}, "senders": ["ny"],
                "routes": {"ny": {"dispatcher": 0, "bucket": None}}}  # fmt: skip
    put = {"op": "put", "site": 1, "key": "k", "value": {}}
    log = tmp_path / "l.jsonl"
    write(log, [{"config": config}, put | {"observed": [enqueued]}])
    assert main(["validate", str(log)]) == 0  # the observation as SPEC §10 makes it
    capsys.readouterr()
    write(log, [{"config": config}, put | {"observed": [change(enqueued)]}])
    assert main(["validate", str(log), "--json", "--check-properties"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"wanconform: error: {log}:2: observed[0]: {message}\n"


def test_a_sent_without_bytes_delta_is_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}]}
    enqueued = {"kind": "enqueued", "site": 1, "event": "1:1", "key": "k", "op": "create",
                "version": [1, 0, 1], "value": {}, "senders": ["ny"],
                "routes": {"ny": {"dispatcher": 0, "bucket": None}}}  # fmt: skip
    sent = {"kind": "sent", "sender": "ny", "dispatcher": 0, "batch_id": 1, "events": ["1:1"],
            "bytes_full": 2, "events_resent": 0}  # fmt: skip
    log = tmp_path / "l.jsonl"
    put = {"op": "put", "site": 1, "key": "k", "value": {}}
    write(log, [{"config": config}, put | {"observed": [enqueued, sent]}])
    assert main(["validate", str(log)]) == 2
    assert capsys.readouterr().err.startswith(
        f"wanconform: error: {log}:2: observed[1]: sent.bytes_delta: missing (SPEC §10: sent has"
    )
    assert schema_errors(log)  # the documented schema refuses it too


_SAMPLES: list[Any] = [0, -3, 2**40, True, None, "x", "", [], ["1:2"], {}, {"a": 1}, 1.5]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_quick_field_test_accepts_only_what_check_fields_accepts(data: Any) -> None:
    """`_plainly_well_formed` is a shortcut of `check_fields`: whatever it accepts,
    `check_fields` accepts too (and `check_fields`, not it, words every error)."""
    from traces.logfile import _plainly_well_formed, check_fields
    from traces.observations import FIELDS, OPTIONAL_FIELDS

    kind = data.draw(st.sampled_from(sorted(FIELDS)))
    names = [*FIELDS[kind], *OPTIONAL_FIELDS.get(kind, {}), "other"]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True))
    observation = {"kind": kind, **{n: data.draw(st.sampled_from(_SAMPLES)) for n in chosen}}
    if _plainly_well_formed(kind, observation):
        check_fields("here", kind, observation)  # raises nothing
        assert set(FIELDS[kind]) <= observation.keys() and "other" not in observation


def test_the_quick_field_test_takes_a_well_formed_observation() -> None:
    applied = {
        "kind": "applied",
        "site": 2,
        "sender": "ny",
        "event": "1:1",
        "key": "k",
        "status": "ok",
    }
    from traces.logfile import _plainly_well_formed

    assert _plainly_well_formed("applied", applied)
    assert not _plainly_well_formed("applied", {**applied, "site": True})  # bool is no integer
    assert not _plainly_well_formed("applied", {**applied, "value": None})  # value: an object
    assert _plainly_well_formed("applied", {**applied, "value": {"f": 1}})
