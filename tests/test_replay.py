"""What `wanconform replay` tells a person (issue: every answer honest and readable).

Expected lines are written from SPEC v1.1 and the trace, by hand: tags per R9, sizes per
R4 (`{"v":1}` is 7 bytes), verdicts per §11.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wanconform.cli import main

ONE_WAY = '{"config":{"sites":[1,2],"senders":[{"id":"ny","site":1,"remote":2}]}}\n'
PAIR = (
    '{"config":{"sites":[1,2],"senders":['
    '{"id":"ldn","site":2,"remote":1,"batch_size":1},'
    '{"id":"ny","site":1,"remote":2,"batch_size":1}]}}\n'
)
EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"


def write(tmp_path: Path, config: str, *ops: str) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text(config + "".join(op + "\n" for op in ops))
    return str(path)


def test_steps_show_skipped_operations_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trace of the issue: batch_size 100, so the put is only queued and the three
    network operations after it find nothing in the network (§3: skipped)."""
    path = write(
        tmp_path,
        ONE_WAY,
        '{"op":"put","site":1,"key":"k","value":{"v":1}}',
        '{"op":"deliver","sender":"ny"}',
        '{"op":"deliver_ack","sender":"ny"}',
        '{"op":"drop_ack","sender":"ny"}',
    )
    assert main(["replay", path, "--steps"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:5] == [
        f'{path}:2 put 1 k {{"v":1}} → site 1 wrote 1:1 (create k, [1,0,1]), queued on ny',
        f"{path}:3 deliver ny → skipped: no batch of ny in the network",
        f"{path}:4 deliver_ack ny → skipped: no ack of ny in the network",
        f"{path}:5 drop_ack ny → skipped: no ack of ny in the network",
        f"{path}: 4 operations (3 skipped), time 0 ms",
    ]
    assert out[5].startswith("  site 1: up, seq 1, 1 entry; applied=0")  # not "1 entries"
    assert out[6].startswith("  site 2: up, seq 0, 0 entries; applied=0")
    assert out[-1] == "  sites differ:" or out[-2] == "  sites differ:"
    assert out[-1] == '    k: site 1 {"v":1} [1,0,1], site 2 absent'


def test_steps_say_what_a_batch_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = ONE_WAY.replace('"remote":2', '"remote":2,"batch_size":2')
    path = write(
        tmp_path,
        config,
        '{"op":"put","site":1,"key":"a","value":{"v":1}}',
        '{"op":"put","site":1,"key":"b","value":{"v":1}}',
        '{"op":"deliver","sender":"ny"}',
        '{"op":"deliver_ack","sender":"ny"}',
    )
    assert main(["replay", path, "--steps"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:4] == [
        f'{path}:3 put 1 b {{"v":1}} → site 1 wrote 1:2 (create b, [1,0,1]), queued on ny; '
        "ny sent batch 1 [1:1, 1:2] (14 bytes full, 0 delta)",
        f"{path}:4 deliver ny → site 2 applied 1:1 ok, 1:2 ok; ack of batch 1 in the network",
        f"{path}:5 deliver_ack ny → ny got the ack of batch 1, removed [1:1, 1:2]",
    ]
    assert out[-1] == "  all sites hold identical entries"


def verdict_lines(out: str) -> list[str]:
    return [
        line.strip()
        for line in out.splitlines()
        if line.strip()[:2] in {"P2", "P3", "P4", "P5", "P6", "P7"}
    ]


def test_P2_v12_checks_only_events_after_the_last_wipe_and_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        PAIR,
        '{"op":"put","site":1,"key":"k","value":{"v":1}}',
        '{"op":"site_down","site":2}',
        '{"op":"site_up","site":2,"wipe":true}',
        '{"op":"settle"}',
    )
    assert main(["replay", path, "--check-properties"]) == 0
    assert verdict_lines(capsys.readouterr().out) == [
        # v1.2: P2 is checked on the events written after the last wipe: none here.
        "P2: not applicable: no event written after the last wipe was checked at a settle "
        f"with every site up (site 2 was wiped at {path}:4)",
        "P3: held",  # 1:1 applied once at site 2 (sent after the wipe, at the settle)
        "P4: held",
        # v1.2: P5 key by key; k was written before the wipe, so no key is left.
        "P5: not applicable: no key left to compare at a settle with every site up: each "
        "was dropped, dead-lettered or written before a wipe",
        "P6: not applicable: no value was built from a delta",
        "P7: not applicable: no sender has dlq_secure",
    ]


def test_P5_v12_not_applicable_when_its_only_key_had_a_drop_and_the_sites_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Site 2 fails the only attempt (retry_attempts 0) on k: ny drops 1:1 (R18, no
    listener) at the settle on line 4; P2 holds (dropped = stopped on the way)."""
    path = write(
        tmp_path,
        PAIR,
        '{"op":"fail","site":2,"key":"k","exception":"E","times":1}',
        '{"op":"put","site":1,"key":"k","value":{"v":1}}',
        '{"op":"settle"}',
    )
    assert main(["replay", path, "--check-properties"]) == 0
    out = capsys.readouterr().out
    assert verdict_lines(out) == [
        "P2: held",
        "P3: not applicable: no event was applied",
        "P4: held",
        # v1.2: P5 key by key; the only key, k, had an event dropped.
        "P5: not applicable: no key left to compare at a settle with every site up: each "
        "was dropped, dead-lettered or written before a wipe",
        "P6: not applicable: no value was built from a delta",
        "P7: not applicable: no sender has dlq_secure",
    ]
    assert out.splitlines()[-2:] == [
        "  sites differ:",
        '    k: site 1 {"v":1} [1,0,1], site 2 absent',
    ]


def test_P4_is_not_applicable_on_an_unsupported_topology(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(EXAMPLES / "unsupported_diamond.jsonl")
    assert main(["replay", path, "--check-properties"]) == 0
    lines = verdict_lines(capsys.readouterr().out)
    assert lines[2] == (
        "P4: not applicable: the topology is unsupported (R23): "
        "site 4 receives events of site 1 along 2 paths"
    )


def test_help_points_to_the_spec_and_says_how_P4_is_handled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "docs/SPEC.md" in text
    assert "not applicable and why (e.g. P4 on an unsupported topology, R23)" in text


def test_json_line_holds_steps_verdicts_and_convergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        PAIR,
        '{"op":"put","site":1,"key":"k","value":{"v":1}}',
        '{"op":"deliver","sender":"ldn"}',
        '{"op":"settle"}',
    )
    assert main(["replay", path, "--json", "--steps", "--check-properties"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    document = json.loads(out)
    assert (document["operations"], document["skipped"], document["converged"]) == (3, 1, True)
    assert [step["where"] for step in document["steps"]] == [f"{path}:{n}" for n in (2, 3, 4)]
    assert document["steps"][1]["text"] == (
        f"{path}:3 deliver ldn → skipped: no batch of ldn in the network"
    )
    assert document["properties"]["P5"] == {"status": "held", "reason": "", "violations": []}
    assert document["divergence"] is None


def test_topology_of_a_geode_file_suggests_site(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(Path(__file__).parent / "data" / "geode" / "ln-cache.xml")
    assert main(["topology", path]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"wanconform: error: {path}: not a JSON configuration or trace; for Geode cache.xml "
        f"or gfsh files give each site's files with --site, e.g. --site 1={path} --site 2=OTHER\n"
    )


def test_engine_both_json_reports_a_divergence_on_its_line_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LateBatchTime flushes one ms late (R15 with > for >=): with batch_time_interval_ms
    0 the model sends 1:1 at once, the planted impl does not. The second trace has no
    timed flush, so both agree on it; every trace gets its JSON line, exit 1."""
    config = ONE_WAY.replace('"remote":2', '"remote":2,"batch_time_interval_ms":0')
    first = write(tmp_path, config, '{"op":"put","site":1,"key":"k","value":{"v":1}}')
    second = str(EXAMPLES / "batching_by_size.jsonl")
    argv = ["replay", first, second, "--engine", "both", "--json"]
    assert main([*argv, "--impl", "tools.planted_bugs:LateBatchTime"]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["trace"] for line in lines] == [first, second]
    assert lines[0]["divergence"] == {
        "index": 0,
        "where": f"{first}:2",
        "op": {"op": "put", "site": 1, "key": "k", "value": {"v": 1}},
        "differences": [
            {
                "path": "observations[1]",
                "model": {
                    "kind": "sent",
                    "sender": "ny",
                    "dispatcher": 0,
                    "batch_id": 1,
                    "events": ["1:1"],
                    "bytes_full": 7,
                    "bytes_delta": 0,
                    "events_resent": 0,
                },
                "impl": "<absent>",
            }
        ],
        "total": 1,
    }
    assert lines[1]["divergence"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--impl", "nope"], "--impl nope: expected module:Class, e.g. impl:Engine"),
        (["--impl", "impl:Engine"], "--impl: needs --engine impl or --engine both"),
        (["--one-process"], "--one-process: needs --engine both (one engine runs alone)"),
    ],
)
def test_impl_and_one_process_option_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(EXAMPLES / "batching_by_size.jsonl")
    engine = ["--engine", "both"] if argv[1:] == ["nope"] else []
    assert main(["replay", trace, *engine, *argv]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"wanconform: error: {message}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [  # segments are a lockstep run's (--engine both: replay --help, COMMANDS.md)
        (["--segment-ops", "2"], "--segment-ops: needs --engine both"),
        (["--engine", "model", "--master", "local"], "--master: needs --engine both"),
        (["--engine", "impl", "--segment-ops", "2"], "--segment-ops: needs --engine both"),
    ],
)
def test_segment_options_that_cannot_take_effect_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(EXAMPLES / "batching_by_size.jsonl")
    assert main(["replay", trace, *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"wanconform: error: {message}") and err.count("\n") == 1


USER_ENGINES = """
from impl import Engine


class FailsAtImport:
    pass


class NeedsNoConfig(Engine):
    def __init__(self):  # the wrong signature: an engine is built from the configuration
        pass


class RaisesOnDeliver(Engine):
    def apply(self, op):
        if op.op == "deliver":
            raise KeyError("no such batch")
        return super().apply(op)


class CountsOneTooMany(Engine):  # site 2's `applied` is off by one from the start
    def observe(self):
        state = super().observe()
        state["sites"]["2"]["stats"]["applied"] += 1
        return state


class ObserveFails(Engine):
    def observe(self):
        raise RuntimeError("not yet")


class ReturnsNothing(Engine):  # forgets `return` on a deliver
    def apply(self, op):
        observations = super().apply(op)
        if op.op != "deliver":
            return observations


class KeysFail(Engine):  # the optional observe_keys (traces/engine.py)
    def observe_keys(self, keys):
        raise LookupError("no keys")


class ReturnsASet(Engine):  # an observation JSON cannot hold
    def apply(self, op):
        observations = super().apply(op)
        if op.op == "deliver":
            observations[0]["extra"] = {1}
        return observations


class ExitsOnDeliver(Engine):  # sys.exit in an engine is its failure, named as a raise
    def apply(self, op):
        if op.op == "deliver":
            import sys

            sys.exit(3)
        return super().apply(op)


class ExitsAtBuild(Engine):  # the site's exit(): named at the user's line, not Python's
    def __init__(self, config):
        exit(4)


class StateNotJson(Engine):  # a state JSON cannot hold
    def observe(self):
        state = super().observe()
        state["extra"] = {1}
        return state


class TakesNoOp(Engine):  # the wrong signature: named as the user's, not where it was called
    def apply(self):
        return []


class KeysTakeNothing(Engine):
    def observe_keys(self):
        return {}


class ReturnsText(Engine):  # a str from apply: not to be taken for what an engine raised
    def apply(self, op):
        observations = super().apply(op)
        return "delivered" if op.op == "deliver" else observations


class CapsAsAMethod:  # settle_capped is an attribute; a method is always true
    def __init__(self, config):  # (not a subclass: the impl's own attribute would hide it)
        self.engine = Engine(config)

    def apply(self, op):
        return self.engine.apply(op)

    def observe(self):
        return self.engine.observe()

    def settle_capped(self):
        return False


class ChangesItsPut(Engine):  # changes the value it was given, which it keeps (as impl does)
    def apply(self, op):
        observations = super().apply(op)
        if op.op == "put":
            op.value["extra"] = 1
        return observations
"""


@pytest.mark.parametrize(
    ("source", "engine", "message"),
    [
        ('raise RuntimeError("boom")\n', "X",
         "--impl {m}:X: importing {m} from {dir} raised RuntimeError: boom ({m}.py:1, in "
         "<module>)"),
        ("def f(:\n", "X",
         "--impl {m}:X: importing {m} from {dir} raised SyntaxError: invalid syntax ({m}.py, "
         "line 1)"),
        (USER_ENGINES, "NeedsNoConfig",
         "--impl {m}:NeedsNoConfig: building the engine raised TypeError: "
         "NeedsNoConfig.__init__() takes 1 positional argument but 2 were given"),
        ('import sys\nsys.exit("no licence")\n', "X",
         "--impl {m}:X: importing {m} from {dir} raised SystemExit: no licence ({m}.py:2, in "
         "<module>)"),
        (USER_ENGINES, "ExitsAtBuild",
         "--impl {m}:ExitsAtBuild: building the engine raised SystemExit: 4 ({m}.py:64, in "
         "__init__)"),
        # an exception without a message (a bare raise, a bare assert): its name alone
        ("class X:\n    def __init__(self, config):\n        raise NotImplementedError\n"
         "    def apply(self, op):\n        return []\n    def observe(self):\n        return {}\n",
         "X", "--impl {m}:X: building the engine raised NotImplementedError ({m}.py:3, in "
         "__init__)"),
    ],
)  # fmt: skip
def test_a_user_engine_that_fails_to_import_or_build_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    engine: str,
    message: str,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # --impl adds the trace's folder
    module = f"mine_{tmp_path.name}"  # a module of its own: Python keeps what it imports
    (tmp_path / f"{module}.py").write_text(source)
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "batching_by_size.jsonl").read_text())
    assert main(["replay", str(trace), "--engine", "both", "--impl", f"{module}:{engine}"]) == 2
    expected = message.format(m=module, dir=tmp_path)
    assert capsys.readouterr() == ("", f"wanconform: error: {expected}\n")


@pytest.mark.parametrize("engine", ["impl", "both"])
def test_a_user_engines_settle_capped_that_is_no_bool_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """R25: `settle_capped` says whether the last settle stopped at its cap. A method is
    always true: every settle was taken for a capped one, P2 and P12 not applicable."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mine.py").write_text(USER_ENGINES)
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "site_down_and_back.jsonl").read_text())
    argv = ["replay", str(trace), "--engine", engine, "--check-properties"]
    assert main([*argv, "--impl", "mine:CapsAsAMethod"]) == 2
    assert capsys.readouterr() == (
        "",
        "wanconform: error: --impl mine:CapsAsAMethod: settle_capped is a method, not a bool: "
        "an attribute (or a property) that says whether the last settle stopped at its cap\n",
    )


def test_a_user_engine_that_changes_its_operation_does_not_change_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R9: a put writes its value, and its `enqueued` observation shows it. An engine that
    then changes the put's value in place was given the model's own operation, and so
    changed the model's observation and entry too: both engines had {"n": 1, "extra": 1}
    and P1 held."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mine.py").write_text(USER_ENGINES)
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "batching_by_size.jsonl").read_text())
    argv = ["replay", str(trace), "--engine", "both", "--impl", "mine:ChangesItsPut"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert (
        f"P1: FAILED: model and impl (mine:ChangesItsPut) diverge at {trace}:2: divergence at "
        '{"key":"a","op":"put","site":1,"value":{"n":1}}\n'
        '    observations[0].value.extra: model="<absent>" impl=1\n'
    ) in out


def test_what_a_user_engine_prints_goes_to_stderr_not_into_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's engine that prints while it debugs (at import, build and every apply): with
    `--json` its prints were lines of stdout among the JSON; now stdout is the one JSON
    line of the trace and the prints are on stderr, in order."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    module = f"printer_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(
        'print("imported")\n'
        "from impl import Engine\n"
        "class Printer(Engine):\n"
        "    def __init__(self, config):\n"
        '        print("built")\n'
        "        super().__init__(config)\n"
        "    def apply(self, op):\n"
        '        print("apply", op.op)\n'
        "        return super().apply(op)\n"
    )
    trace = write(tmp_path, ONE_WAY, '{"op":"put","site":1,"key":"k","value":{"v":1}}')
    argv = ["replay", trace, "--engine", "both", "--one-process", "--json"]
    assert main([*argv, "--impl", f"{module}:Printer"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["p1"]["status"] for line in out.splitlines()] == ["held"]
    assert err.splitlines() == ["imported", "built", "apply put"]


@pytest.mark.parametrize(
    ("name", "file", "imported"),
    [
        ("model", "model.py", "{root}/model/__init__.py"),  # wanconform's own
        ("traces", "traces", "{root}/traces/__init__.py"),  # a package: traces/mine.py
        ("json", "json.py", "{json}"),  # the standard library's
    ],
)
def test_a_user_engine_named_as_a_module_python_imports_elsewhere_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    file: str,
    imported: str,
) -> None:
    """A user's model.py with an Engine, beside the trace: `--impl model:Engine` loaded
    wanconform's model and found it agreeing with itself (exit 0); now exit 2, one line
    naming the user's file and the module Python imports instead."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)  # the user's directory (the repository's root holds model/)
    if file == "traces":
        (tmp_path / "traces").mkdir()
        (tmp_path / "traces" / "mine.py").write_text(USER_ENGINES)
        spec = "traces.mine:RaisesOnDeliver"
    else:
        (tmp_path / file).write_text(USER_ENGINES.replace("RaisesOnDeliver", "Engine", 1))
        spec = f"{name}:Engine"
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "batching_by_size.jsonl").read_text())
    assert main(["replay", str(trace), "--engine", "both", "--impl", spec]) == 2
    where = imported.format(root=EXAMPLES.parent.parent, json=json.__file__)
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: --impl {spec}: {tmp_path / file} cannot be imported as {name}: "
        f"Python imports {name} from {where}; rename yours (e.g. my_{name})\n",
    )


@pytest.mark.parametrize(
    ("command", "before"),
    [
        (["shrink", "{trace}", "-o", "{dir}/min.jsonl"], "{trace}: "),
        (["explore", "{trace}", "--depth", "1", "--engine", "both"], ""),
    ],
)
def test_a_user_engine_that_fails_to_build_is_one_line_in_shrink_and_explore(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    before: str,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    module = f"mine_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(USER_ENGINES)
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "batching_by_size.jsonl").read_text())
    argv = [part.format(trace=trace, dir=tmp_path) for part in command]
    assert main([*argv, "--impl", f"{module}:NeedsNoConfig"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == (
        f"wanconform: error: {before.format(trace=trace)}--impl {module}:NeedsNoConfig: "
        "building the engine raised TypeError: "
        "NeedsNoConfig.__init__() takes 1 positional argument but 2 were given"
    )
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("engine", "found"),
    [
        # a raise in apply: the operation where it raised, what the model made there
        ("RaisesOnDeliver", 't.jsonl:{deliver}: divergence at {{"op":"deliver"'),
        # states that differ from the start: the first operation after which they differ
        ("CountsOneTooMany", "t.jsonl:2: divergence at "),
        ("ObserveFails", "t.jsonl:2: divergence at "),
        # apply returned what is not a list of JSON objects: where it did
        ("ReturnsNothing", 't.jsonl:{deliver}: divergence at {{"op":"deliver"'),
        ("ReturnsASet", 't.jsonl:{deliver}: divergence at {{"op":"deliver"'),
        ("ReturnsText", 't.jsonl:{deliver}: divergence at {{"op":"deliver"'),
        ("ExitsOnDeliver", 't.jsonl:{deliver}: divergence at {{"op":"deliver"'),
        ("StateNotJson", "t.jsonl:2: divergence at "),
    ],
)
def test_a_user_engine_that_raises_or_starts_wrong_is_a_divergence(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    engine: str,
    found: str,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mine.py").write_text(USER_ENGINES)  # the same module in every case
    trace = tmp_path / "t.jsonl"
    text = (EXAMPLES / "batching_by_size.jsonl").read_text()
    trace.write_text(text)
    deliver = 1 + next(
        number for number, line in enumerate(text.splitlines(), 1) if '"deliver"' in line
    )
    assert main(["replay", str(trace), "--engine", "both", "--impl", f"mine:{engine}"]) == 1
    out = capsys.readouterr().out
    assert f"P1: FAILED: model and impl (mine:{engine}) diverge at {tmp_path}/" in out
    assert found.format(deliver=deliver - 1) in out
    detail = {
        "RaisesOnDeliver": "impl=\"raised KeyError: 'no such batch' (mine.py:17, in apply)\"",
        "CountsOneTooMany": "state.sites.2.stats.applied: model=0 impl=1",
        "ObserveFails": (
            'state: model="its observable state" impl="raised RuntimeError: not yet '
            '(mine.py:30, in observe)"'
        ),
        "ReturnsNothing": 'impl="returned None from apply, not a list of observations"',
        "ReturnsText": 'impl="returned a str from apply, not a list of observations"',
        "ReturnsASet": (
            'impl="returned an observation from apply that is not JSON (Object of type set is '
            'not JSON serializable)"'
        ),
        "ExitsOnDeliver": 'impl="raised SystemExit: 3 (mine.py:58, in apply)"',
        "StateNotJson": (
            'state.extra: model="<absent>" impl="observed what is not JSON (Object of type '
            'set is not JSON serializable)"'
        ),
    }[engine]
    assert detail in out


@pytest.mark.parametrize(
    ("engine", "line", "problem"),
    [
        ("RaisesOnDeliver", 9, "raised KeyError: 'no such batch' (mine.py:17, in apply)"),
        ("ReturnsNothing", 9, "returned None from apply, not a list of observations"),
        ("ReturnsText", 9, "returned a str from apply, not a list of observations"),
        ("ObserveFails", 12, "raised RuntimeError: not yet (mine.py:30, in observe)"),
        ("KeysFail", 10, "raised LookupError: no keys (mine.py:42, in observe_keys)"),
        ("ExitsOnDeliver", 9, "raised SystemExit: 3 (mine.py:58, in apply)"),
        (
            "StateNotJson",
            12,
            "returned a state from observe that is not JSON (Object of type set is not JSON "
            "serializable)",
        ),
        (
            "TakesNoOp",
            2,
            "raised TypeError: TakesNoOp.apply() takes 1 positional argument but 2 were given",
        ),
        (
            "KeysTakeNothing",
            10,
            "raised TypeError: KeysTakeNothing.observe_keys() takes 1 positional argument but 2 "
            "were given",
        ),
    ],
)
def test_a_user_engine_alone_that_raises_or_returns_wrong_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    engine: str,
    line: int,
    problem: str,
) -> None:
    # --engine impl: no model for P1 to differ from; what the engine did, where, not a traceback
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mine.py").write_text(USER_ENGINES)
    trace = tmp_path / "t.jsonl"
    keys = engine in ("KeysFail", "KeysTakeNothing")
    example = "site_down_and_back" if keys else "batching_by_size"  # a settle
    trace.write_text((EXAMPLES / f"{example}.jsonl").read_text())
    argv = ["replay", str(trace), "--engine", "impl", "--check-properties"]
    assert main([*argv, "--impl", f"mine:{engine}"]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: --impl mine:{engine}: at {trace}:{line}, the engine {problem}\n",
    )


def test_replay_report_writes_the_report_of_the_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(Path(__file__).parent / "data" / "report" / "resend.jsonl")
    report = tmp_path / "r.html"
    bug = "tools.planted_bugs:ResendWithoutPossibleDuplicate"
    argv = ["replay", trace, "--engine", "both", "--impl", bug, "--report", str(report)]
    assert main(argv) == 1
    assert capsys.readouterr().err.splitlines()[-1] == f"wanconform: wrote {report}"
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "resend.jsonl" in html


def test_replay_report_of_a_user_engine_whose_state_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # was: a traceback from the report's side-by-side view, and no report
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mine.py").write_text(USER_ENGINES)
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "batching_by_size.jsonl").read_text())
    report = tmp_path / "r.html"
    argv = ["replay", str(trace), "--engine", "both", "--impl", "mine:StateNotJson"]
    assert main([*argv, "--report", str(report)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == f"wanconform: wrote {report}"
    assert "not JSON (Object of type set is not JSON serializable)" in report.read_text()


def test_keys_with_control_characters_are_shown_escaped_one_line_per_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A key may hold any text (SPEC §12); a terminal is shown it escaped, as an error
    # message quotes it: a line break in a key does not break --steps' one line per step.
    key = "a\nb\x1b[2J"
    trace = tmp_path / "t.jsonl"
    config = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}
    put = {"op": "put", "site": 1, "key": key, "value": {"v": 1}}
    trace.write_text(f"{json.dumps({'config': config})}\n{json.dumps(put)}\n")
    assert main(["replay", str(trace), "--steps"]) == 0
    out = capsys.readouterr().out
    [step] = [line for line in out.splitlines() if line.startswith(f"{trace}:2 ")]
    assert 'put 1 a\\nb\\x1b[2J {"v":1}' in step and "(create a\\nb\\x1b[2J, [1,0,1])" in step
    assert "\x1b" not in out
    assert '    a\\nb\\x1b[2J: site 1 {"v":1} [1,0,1], site 2 absent' in out  # sites differ


PERSISTENT = (
    '{"config":{"sites":[1,2],"senders":[{"id":"ny","site":1,"remote":2,'
    '"batch_size":10,"enable_persistence":true}]}}\n'
)


@pytest.mark.parametrize("flag", ["--queue-dir", "--dlq-dir"])
def test_two_traces_that_would_share_a_store_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    """A trace's store is DIR/TRACE/ (COMMANDS.md): x/t.jsonl and y/t.jsonl, or one trace
    given twice, would share DIR/t. Without the check, x's two queued events (R36: kept on
    disk) were left in DIR/t and y's run then stopped on them after x's summary was printed,
    and a trace given twice raised a traceback. Now: one line, exit 2, nothing on stdout,
    no store made."""
    for folder, ops in (
        ("x", ['{"op":"put","site":1,"key":"a","value":{"v":1}}',
               '{"op":"put","site":1,"key":"b","value":{"v":1}}']),
        ("y", ['{"op":"restart_sender","sender":"ny"}', '{"op":"settle"}']),
    ):  # fmt: skip
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.jsonl").write_text(PERSISTENT + "".join(o + "\n" for o in ops))
    x, y = str(tmp_path / "x" / "t.jsonl"), str(tmp_path / "y" / "t.jsonl")
    store = tmp_path / "store"
    for traces, which in (([x, y], f"{x} and {y}"), ([x, x], f"{x} is given twice")):
        assert main(["replay", "--engine", "both", flag, str(store), *traces]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            f"wanconform: error: {flag}: {which}: their runs would share the store "
            f"{store / 't'} (a trace's store is DIR/TRACE/); give each trace once, under "
            "its own name\n"
        )
        assert not store.exists()
    # each under its own name: y's restart finds an empty queue (R36: kept 0)
    (tmp_path / "y" / "u.jsonl").write_text((tmp_path / "y" / "t.jsonl").read_text())
    u = str(tmp_path / "y" / "u.jsonl")
    assert main(["replay", "--engine", "both", "--steps", flag, str(store), x, u]) == 0
    out = capsys.readouterr().out
    assert f"{u}:2 restart_sender ny → ny restart, kept 0" in out
    assert out.count("P1: held") == 2


def test_P5_v20_not_applicable_names_a_key_left_out_by_a_stopped_sender(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R37: ny is stopped, so 1:1 is `not_queued`; §16.7 "P5 amended" leaves k out, the
    only key, so P5 does not apply. The reason named only v1.2's (dropped, dead-lettered,
    before a wipe), none of which happened here."""
    path = write(
        tmp_path,
        PAIR,
        '{"op":"stop_sender","sender":"ny"}',
        '{"op":"put","site":1,"key":"k","value":{"v":1}}',
        '{"op":"settle"}',
    )
    assert main(["replay", path, "--engine", "both", "--check-properties"]) == 0
    out = capsys.readouterr().out
    assert verdict_lines(out) == [
        "P2: held (exempt, not queued (sender stopped): 1:1)",
        "P3: not applicable: no event was applied",
        "P4: not applicable: no event was shipped",
        "P5: not applicable: no key left to compare at a settle with every site up: each "
        "was dropped, dead-lettered, lost from a queue or not queued (a sender restarted "
        "or stopped), or written before a wipe",
        "P6: not applicable: no value was built from a delta",
        "P7: not applicable: no sender has dlq_secure",
    ]
    assert out.splitlines()[-2:] == [
        "  sites differ:",
        '    k: site 1 {"v":1} [1,0,1], site 2 absent',
    ]


def test_checkpoint_of_a_user_engine_alone_without_one_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    module = f"mine_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(
        "from impl import Engine as Impl\n\n\n"
        "class Wrapped:  # the engine surface, and no checkpoint()\n"
        "    def __init__(self, config):\n"
        "        self.inner = Impl(config)\n\n"
        "    def apply(self, op):\n"
        "        return self.inner.apply(op)\n\n"
        "    def observe(self):\n"
        "        return self.inner.observe()\n"
    )
    trace = tmp_path / "t.jsonl"
    trace.write_text((EXAMPLES / "batching_by_size.jsonl").read_text())
    out = tmp_path / "cp.json"
    argv = ["replay", str(trace), "--engine", "impl", "--checkpoint", str(out)]
    assert main([*argv, "--impl", f"{module}:Wrapped"]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: --checkpoint: {module}:Wrapped cannot write a checkpoint\n",
    )
    assert not out.exists()


def test_the_summary_shows_a_bidi_override_in_a_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a sender id and a key holding U+202E: printed raw, each turned the rest of its line
    # around in a terminal; the summary shows it as \u202e (the key already was)
    config = {"sites": [1, 2], "senders": [{"id": "ny\u202ex", "site": 1, "remote": 2}]}
    put = {"op": "put", "site": 1, "key": "k\u202eab", "value": {"a": 1}}
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": config}) + "\n" + json.dumps(put) + "\n")
    assert main(["replay", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out
    assert "  sender ny\\u202ex (1->2): queue 1, in flight none, 0 dead letters" in out
    assert '    k\\u202eab: site 1 {"a":1} [1,0,1], site 2 absent' in out
