"""`wanconform shrink` (issue 10): a failing trace shrinks to a 1-minimal trace with the
same failure signature; bad input and a trace that does not fail exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.running.lockstep import first_divergence
from conformance.running.run import normalize_path
from conformance.search.shrink import find_failure, shrink
from tools.planted_bugs import DeadLetterWithoutValue, ResendWithoutPossibleDuplicate
from traces.config import parse_config
from traces.engine import impl_command, load_impl
from traces.ops import Deliver, Fail, Op, Put, Settle, Tick
from traces.tracefile import read_trace
from wanconform.cli import main

DATA = Path(__file__).parent / "data" / "report"
RESEND = "tools.planted_bugs:ResendWithoutPossibleDuplicate"


def test_normalize_path_hides_indices_keys_and_events() -> None:
    assert normalize_path("state.sites.2.entries.k7.value") == "state.sites.2.entries.*.value"
    assert normalize_path("observations[12].events_resent") == "observations[].events_resent"


def test_r20_resend_without_flag_shrinks_to_the_lost_ack_and_resend() -> None:
    # resend.jsonl: a, b, c written (batch_size 2: batch [a, b] sent), delivered, its ack
    # lost, d written, the ack times out at 2,000 ms and the batch is resent at +500 ms
    # (R20) -- the bug resends it without the possible-duplicate flag.
    trace = read_trace(DATA / "resend.jsonl")
    result = shrink(trace.config, trace.ops, ResendWithoutPossibleDuplicate)
    assert str(result.failure.signature) == "P1 observations: sent.events_resent"
    minimal = result.ops(list(trace.ops))
    # One write fills no batch of 2 (R15): both puts are needed and the second sends the
    # batch; it need not even be delivered: unacked for ack_timeout_ms 2,000 it times out
    # and is resent after retry_interval_ms 500 (R20). Deliver and the lost ack go.
    assert minimal == [Put(1, "a", {"n": 1}), Put(1, "b", {"n": 2}), Tick(2000), Tick(500)]
    assert result.kept == [0, 1, 6, 7]
    # 1-minimal: removing any one operation loses the failure (or changes it).
    for i in range(len(minimal)):
        failure = find_failure(
            trace.config, minimal[:i] + minimal[i + 1 :], ResendWithoutPossibleDuplicate
        )
        assert failure is None or failure.signature != result.failure.signature
    # The real impl agrees with the model on the minimal trace.
    assert first_divergence(trace.config, minimal) is None


def test_shrink_cli_writes_trace_and_failing_pytest(tmp_path: Path) -> None:
    out, test = tmp_path / "min.jsonl", tmp_path / "test_min.py"
    code = main(
        ["shrink", str(DATA / "resend.jsonl"), "-o", str(out), "--impl", RESEND,
         "--pytest", str(test)]
    )  # fmt: skip
    assert code == 0
    assert len(read_trace(out).ops) == 4
    imports = [line for line in test.read_text().splitlines() if line.startswith("from ")]
    assert imports == [  # in isort's order: a user's linter takes the file as it is
        "from __future__ import annotations",
        "from conformance.running.lockstep import first_divergence",
        "from traces.engine import load_impl",
        "from traces.tracefile import parse_trace_lines",
    ]
    text = test.read_text()
    docstring = text[: text.index('"""', 3) + 3].splitlines()  # its quotes too
    assert max(map(len, docstring)) <= 88  # ruff's default line length
    assert docstring[0].startswith('"""Regression test written by `wanconform shrink`: ')
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         str(test), "--rootdir", str(Path(__file__).parent.parent)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout  # fails while the bug is there ...
    assert "events_resent: model=2 impl=0" in run.stdout


def test_the_pytest_of_an_engine_found_next_to_the_trace_finds_it_from_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the module is next to the trace, the test written and run elsewhere: it must fail
    # on the divergence (and pass once the engine is fixed), not on "no module named"
    monkeypatch.setattr(sys, "path", list(sys.path))
    traces, tests = tmp_path / "traces", tmp_path / "tests"
    traces.mkdir()
    tests.mkdir()
    module = f"mine_{tmp_path.name}"
    (traces / f"{module}.py").write_text(
        "from impl import Engine as Impl\n\n\n"
        "class Engine(Impl):  # tools.planted_bugs.ResendWithoutPossibleDuplicate\n"
        "    def _mark_resend(self, event):\n"
        "        pass\n"
    )
    trace = traces / "resend.jsonl"
    trace.write_text((DATA / "resend.jsonl").read_text())
    monkeypatch.chdir(tests)
    test = tests / "test_min.py"
    argv = ["shrink", str(trace), "-o", "min.jsonl", "--impl", f"{module}:Engine"]
    assert main([*argv, "--pytest", str(test)]) == 0
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         str(test), "--rootdir", str(Path(__file__).parent.parent)],
        capture_output=True, text=True, check=False, cwd=tests,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout
    assert "events_resent: model=2 impl=0" in run.stdout


def test_a_second_load_of_an_engine_found_next_to_the_trace_still_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # report loads the impl, then each example's explanation loads it again: the module is
    # then already imported, and the reproduce commands must still name its directory
    monkeypatch.setattr(sys, "path", list(sys.path))
    traces, elsewhere = tmp_path / "traces", tmp_path / "elsewhere"
    traces.mkdir()
    elsewhere.mkdir()
    module = f"mine_{tmp_path.name}"
    (traces / f"{module}.py").write_text("from impl import Engine\n")
    monkeypatch.chdir(elsewhere)
    spec = f"{module}:Engine"
    load_impl(spec, [str(traces)])
    assert impl_command(spec) == f"PYTHONPATH={traces} wanconform"
    load_impl(spec)
    assert impl_command(spec) == f"PYTHONPATH={traces} wanconform"


def test_shrink_of_a_trace_that_does_not_fail_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "min.jsonl"
    assert main(["shrink", str(DATA / "resend.jsonl"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith(
        "resend.jsonl: nothing to shrink: model and impl agree and P2-P12 hold"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nomodule_xyz:Engine", "--impl nomodule_xyz:Engine: no module named nomodule_xyz on"),
        ("tools.planted_bugs:Nope", "module tools.planted_bugs has no Nope"),
        ("tools.planted_bugs:PLANTED_BUGS", "PLANTED_BUGS is not an engine"),
        ("impl", "--impl impl: expected module:Class"),
        # a file's path where a module's name goes: its name said, not "no module named"
        (
            "./mine.py:Engine",
            "--impl ./mine.py:Engine: expected module:Class, a module's full name, not a "
            "file's: --impl mine:Engine, run from the directory that holds mine.py",
        ),
        ("engines/mine.py:Engine", "not a file's: --impl mine:Engine, run from"),
        (".mine:Engine", "not a file's: --impl mine:Engine, run from"),
    ],
)
def test_bad_impl_spec_is_one_line_exit_2(
    spec: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["shrink", str(DATA / "resend.jsonl"), "-o", str(tmp_path / "m.jsonl")]
    assert main([*args, "--impl", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_load_impl_default_is_the_impl() -> None:
    trace = read_trace(DATA / "resend.jsonl")
    assert first_divergence(trace.config, trace.ops, load_impl(None)) is None


def test_shrink_keeps_only_the_sites_senders_and_receivers_the_failure_needs(
    tmp_path: Path,
) -> None:
    # resend.jsonl's failure needs sites 1 and 2 and sender ny only: add two unused sites
    # (3, 9), three idle senders (x: 1->3 queues every write of site 1 but is never
    # delivered; y: 3->9 and z: 2->1 carry writes that ddmin removes), a receiver with
    # retries at site 2, writes at site 3 and a partitioned region at site 9 (R28). The
    # shrunk trace drops all of them.
    lines = (DATA / "resend.jsonl").read_text().splitlines()
    config = {
        "sites": [1, 2, 3, 9],
        "senders": [
            {"id": "ny", "site": 1, "remote": 2, "batch_size": 2, "ack_timeout_ms": 2000,
             "retry_interval_ms": 500},
            {"id": "x", "site": 1, "remote": 3},
            {"id": "y", "site": 3, "remote": 9, "batch_size": 1},
            {"id": "z", "site": 2, "remote": 1, "batch_size": 1},
        ],
        "receivers": [{"site": 2, "retry_attempts": 2}],
        "regions": {"9": {"type": "partition", "total_num_buckets": 3}},
    }  # fmt: skip
    extra = [
        '{"op": "put", "site": 3, "key": "q", "value": {"n": 9}}',
        '{"op": "deliver", "sender": "y"}',
        '{"op": "put", "site": 2, "key": "r", "value": {"n": 8}}',
    ]
    trace = tmp_path / "wide.jsonl"
    trace.write_text("\n".join([json.dumps({"config": config}), *extra, *lines[1:]]) + "\n")
    out = tmp_path / "min.jsonl"
    assert main(["shrink", str(trace), "-o", str(out), "--impl", RESEND]) == 0
    minimal = read_trace(out)
    assert minimal.config.to_json() == {
        "sites": [1, 2],
        "senders": [
            {"id": "ny", "site": 1, "remote": 2, "batch_size": 2, "ack_timeout_ms": 2000,
             "retry_interval_ms": 500, "batch_time_interval_ms": 1000, "delta": False,
             "failure_listener": None, "dlq_secure": False},
        ],
        "receivers": [
            {"site": 1, "retry_attempts": 0, "wait_time_between_retry_attempts_ms": 0},
            {"site": 2, "retry_attempts": 0, "wait_time_between_retry_attempts_ms": 0},
        ],
    }  # fmt: skip
    assert list(minimal.ops) == [
        Put(1, "a", {"n": 1}), Put(1, "b", {"n": 2}), Tick(2000), Tick(500)
    ]  # fmt: skip
    failure = find_failure(minimal.config, minimal.ops, load_impl(RESEND))
    assert failure is not None
    assert str(failure.signature) == "P1 observations: sent.events_resent"


def test_r22_ddmin_runs_again_after_a_sender_is_pruned_without_operations(
    tmp_path: Path,
) -> None:
    # Site 2 writes k, shipped at once to site 1 (b) and queued for site 3 (c, which no
    # operation names). Site 1 applies it but does not forward it to site 3: c's
    # recipients hold 3 already (R22). So the delta at site 1 is what puts an event on a
    # (1->3, batch_size 1: shipped at once, R15), and the tick past a's ack timeout
    # re-sends it (R20; retry_interval_ms 0: in the same tick), which the bug does without
    # the flag. Every one of the 4 operations is needed while c exists. Pruning c (no
    # operation goes with it) makes site 1 forward k to site 3 on a at the delivery
    # (R22), so the delta is needless: the 1-minimal trace is put, deliver, tick.
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "a", "site": 1, "remote": 3, "batch_size": 1, "ack_timeout_ms": 500,
             "retry_interval_ms": 0},
            {"id": "b", "site": 2, "remote": 1, "batch_size": 1},
            {"id": "c", "site": 2, "remote": 3},
        ],
    }  # fmt: skip
    ops = [
        '{"op": "put", "site": 2, "key": "k", "value": {"v": 1}}',
        '{"op": "deliver", "sender": "b"}',
        '{"op": "delta", "site": 1, "key": "k", "changes": {"v": 2}}',
        '{"op": "tick", "ms": 6000}',
    ]
    trace = tmp_path / "r22.jsonl"
    trace.write_text("\n".join([json.dumps({"config": config}), *ops]) + "\n")
    out = tmp_path / "min.jsonl"
    assert main(["shrink", str(trace), "-o", str(out), "--impl", RESEND]) == 0
    minimal = read_trace(out)
    assert [s.id for s in minimal.config.senders] == ["a", "b"]
    assert list(minimal.ops) == [Put(2, "k", {"v": 1}), Deliver("b"), Tick(6000)]
    failure = find_failure(minimal.config, minimal.ops, load_impl(RESEND))
    assert failure is not None
    assert str(failure.signature) == "P1 observations: sent.events_resent"


def test_r24_a_failure_that_names_no_key_says_so_and_keeps_every_key() -> None:
    # R24: the failed event's dead letter keeps its value; the bug drops it. The failure
    # is a difference in state.senders.ny.dlq[0].value at the settle: no entry key in the
    # path, no key in the settle, no event id in the text, so no key is named and the
    # stage that keeps only the named keys is skipped (it would remove every write).
    config = parse_config(
        {"sites": [1, 2], "senders": [
            {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "failure_listener": "dlq"}]}
    )  # fmt: skip
    ops: list[Op] = [Fail(2, "k", "Injected", 1), Put(1, "k", {"v": 1}), Settle()]
    lines: list[str] = []
    result = shrink(config, ops, DeadLetterWithoutValue, progress=lines.append)
    assert "keys involved: none named by the failure, so every key is kept" in lines
    assert not any(line.startswith("kept only the") for line in lines)
    assert result.kept == [0, 1, 2]
    assert str(result.failure.signature) == "P1 state.senders.*.dlq[].value"


def test_shrinking_within_a_budget_keeps_the_shortest_failing_trace_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, item 7: a budget that runs out at once keeps the trace cut after its
    first failure (stage 1), says so, and it still fails the same way."""
    trace = read_trace(DATA / "resend.jsonl")
    said: list[str] = []
    result = shrink(
        trace.config, trace.ops, ResendWithoutPossibleDuplicate, said.append, budget=1e-9
    )
    assert result.out_of_budget
    assert result.kept == list(range(result.first_failure.index + 1))
    # the failing operation by its ordinal, and by its line when the command names them
    assert said[0] == "failure: P1 observations: sent.events_resent at operation 8 of 10"
    # its own figure, not "0 s" (which --shrink-budget reads as no limit)
    assert said[-1].startswith("the budget of 1e-09 s ran out: kept the shortest failing trace")
    again = find_failure(trace.config, result.ops(list(trace.ops)), ResendWithoutPossibleDuplicate)
    assert again is not None and again.signature == result.failure.signature
    # the command says it is not minimal; without a budget (0) it is (4 operations)
    out = tmp_path / "min.jsonl"
    command = ["shrink", str(DATA / "resend.jsonl"), "-o", str(out), "--impl", RESEND]
    assert main([*command, "--shrink-budget", "0.000001"]) == 0
    assert "  not minimal: the budget of 1e-06 s ran out" in capsys.readouterr().out
    assert len(read_trace(out).ops) == len(result.kept)
    assert main([*command, "--shrink-budget", "0", "--force"]) == 0
    assert len(read_trace(out).ops) == 4
    assert (
        f"shrink: failure: P1 observations: sent.events_resent at {DATA}/resend.jsonl:9 "
        "(operation 8 of 10)"
    ) in capsys.readouterr().err


def test_check_names_the_failure_groups_before_it_shrinks_their_examples() -> None:
    """Issue 31, item 7: the groups first, then each example shrunk within its budget."""
    from conformance.spark.check import LocalTrace, check_local

    trace = read_trace(DATA / "resend.jsonl")
    said: list[str] = []
    local = LocalTrace("resend", trace.config, list(enumerate(trace.ops, 2)))
    _, examples, _ = check_local([local], RESEND, progress=said.append, shrink_budget=60)
    assert said[:3] == [
        "failure group P1 observations: sent.events_resent: 1 trace (first resend)",
        "shrinking the example of 1 group (at most 60 s each; --shrink-budget)",
        "explaining P1 observations: sent.events_resent with resend",
    ]
    assert len(examples) == 1


def test_the_reproduce_command_finds_an_engine_found_next_to_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # --impl finds a module next to the trace (as `python -m` finds one in the current
    # directory); the printed command must find it too, wherever it is run from.
    monkeypatch.setattr(sys, "path", list(sys.path))
    engines, elsewhere = tmp_path / "engines", tmp_path / "elsewhere"
    engines.mkdir()
    elsewhere.mkdir()
    module = f"mine_{tmp_path.name}"  # a module of its own: Python keeps what it imports
    (engines / f"{module}.py").write_text(
        "from impl import Engine\n\n\n"
        "class Buggy(Engine):  # site 2 counts one event too many once it applied one\n"
        "    def observe(self):\n"
        "        state = super().observe()\n"
        "        stats = state['sites']['2']['stats']\n"
        "        stats['applied'] += 1 if stats['applied'] else 0\n"
        "        return state\n"
    )
    trace = engines / "resend.jsonl"
    trace.write_text((DATA / "resend.jsonl").read_text())
    monkeypatch.chdir(elsewhere)
    out = elsewhere / "min.jsonl"
    assert main(["shrink", str(trace), "-o", str(out), "--impl", f"{module}:Buggy"]) == 0
    [command] = [
        line.strip().removeprefix("reproduce: ")
        for line in capsys.readouterr().out.splitlines()
        if line.strip().startswith("reproduce: ")
    ]
    assert command == (
        f"PYTHONPATH={engines} wanconform replay --engine both --impl {module}:Buggy --steps {out}"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    installed = f" {Path(sys.executable).parent}/wanconform "
    run = subprocess.run(
        ["bash", "-c", command.replace(" wanconform ", installed)],
        cwd=tmp_path, capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert run.returncode == 1 and "P1: FAILED: model and impl" in run.stdout, run.stderr


def test_the_reproduce_command_of_a_property_failure_checks_the_properties(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # p8_batch_conflation_reorders.jsonl fails P8 on both engines (16 operations -> 13).
    # `replay --engine both` checks P1 only and passed the minimal trace (exit 0): the
    # printed command must add --check-properties, and then fail on P8 (exit 1).
    trace = (
        Path(__file__).parent.parent / "traces" / "examples" / "p8_batch_conflation_reorders.jsonl"
    )
    out = tmp_path / "min.jsonl"
    assert main(["shrink", str(trace), "-o", str(out)]) == 0
    [command] = [
        line.strip().removeprefix("reproduce: ")
        for line in capsys.readouterr().out.splitlines()
        if line.strip().startswith("reproduce: ")
    ]
    assert (
        command
        == f"wanconform replay --engine both --impl impl:Engine --check-properties --steps {out}"
    )
    assert len(read_trace(out).ops) == 13
    assert main(command.split()[1:]) == 1
    assert "P8: FAILED (1 violation)" in capsys.readouterr().out
    # a divergence (P1) is shown without it, as before
    resend = tmp_path / "resend.jsonl"
    assert main(["shrink", str(DATA / "resend.jsonl"), "-o", str(resend), "--impl", RESEND]) == 0
    assert f"reproduce: wanconform replay --engine both --impl {RESEND} --steps {resend}\n" in (
        capsys.readouterr().out
    )


def test_the_machines_reproduce_command_of_a_property_failure_checks_the_properties(
    tmp_path: Path,
) -> None:
    # The Hypothesis machine's message for a property's failure named `replay --engine
    # both` without --check-properties, which passes the trace it wrote.
    from conformance.search.machine import ConformanceFailure, machine_with_impl
    from traces.config import parse_config

    machine_class = machine_with_impl(ResendWithoutPossibleDuplicate, tmp_path)
    machine = machine_class.__new__(machine_class)  # no Hypothesis run: only its message
    machine.config = parse_config(
        {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}
    )
    machine.ops = [Put(1, "k", {"v": 1})]
    for properties, option in ((True, "--check-properties "), (False, "")):
        with pytest.raises(ConformanceFailure) as raised:
            machine.fail_with(["P8: a violation"], properties=properties)
        last = str(raised.value).splitlines()[-1]
        assert last.startswith(
            f"reproduce with: wanconform replay --engine both --impl {RESEND} {option}--steps "
        )


def test_a_budget_is_shown_as_given() -> None:
    from conformance.search.shrink import budget_text

    assert [budget_text(s) for s in (120.0, 1.0, 1_234.4, 0.5, 0.001, 1e-06)] == [
        "120 s", "1 s", "1,234 s", "0.5 s", "0.001 s", "1e-06 s"
    ]  # fmt: skip
