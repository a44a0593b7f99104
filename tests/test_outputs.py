"""A tool that behaves (issue 20): outputs checked before the work and written whole or not
at all (also when the command is SIGKILLed), earlier results never replaced silently,
Ctrl-C one line and exit 130, a Spark master that is not there found at once, a Spark
worker killed mid-check (the task run again, or one line and nothing written; the
standalone Worker JVM killed: tests/test_cluster.py), progress that never goes backwards,
and a start-up that imports only what the command uses."""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from killing import assert_allowed_outcome, busy_python_worker, long_trace_set, run_killing

import conformance.spark.glue as glue
from conformance.spark.campaign import delta_share, render, summarize
from conformance.spark.check import LocalTrace, check_local
from reports.render import write_report
from traces.errors import WanconformError
from traces.outputs import (
    atomic_file,
    building_directory,
    check_output_directory,
    check_outputs,
    output_kind,
)
from traces.parquet import open_trace_set
from traces.tracefile import open_trace
from wanconform.cli import build_parser, main
from wanconform.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "traces" / "examples").glob("*.jsonl"))
TRACE = str(ROOT / "traces" / "examples" / "batching_by_size.jsonl")  # 11 operations
WANCONFORM = [sys.executable, "-m", "wanconform"]


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark must not start: the command has to fail before its work."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(glue, "session", refuse)


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing on stdout: no summary before the error
    [line] = captured.err.splitlines()
    return line


# -- found before the work (issue 20, item 1) ----------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["generate", "--traces", "1", "--ops", "1", "--out", "/proc/x"],
        ["campaign", "--traces", "1", "--ops", "1", "--out", "/proc/x"],
    ],
    ids=["generate", "campaign"],
)
def test_an_output_in_proc_is_refused_before_spark_starts(
    command: list[str], no_spark: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(command) == 2
    assert one_error(capsys) == "wanconform: error: /proc/x: cannot write: /proc takes no new files"


def test_check_into_proc_is_refused_before_spark_starts(
    tmp_path: Path, no_spark: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["convert", TRACE, "--out", str(tmp_path / "set")]) == 0
    capsys.readouterr()
    assert main(["check", str(tmp_path / "set"), "--out", "/proc/x"]) == 2
    assert one_error(capsys) == "wanconform: error: /proc/x: cannot write: /proc takes no new files"


def test_replay_report_in_a_missing_folder_prints_no_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", "--report", "/nosuchdir/r.html", TRACE]) == 2
    assert one_error(capsys) == (
        "wanconform: error: /nosuchdir/r.html: cannot write: no such folder /nosuchdir"
    )


def test_an_output_inside_a_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    out = tmp_path / "empty.jsonl" / "sub"
    assert main(["convert", TRACE, "--out", str(out)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {out}: cannot write: {tmp_path / 'empty.jsonl'} is a file, "
        "not a folder"
    )
    assert main(["replay", "--report", str(out / "r.html"), TRACE]) == 2
    assert "empty.jsonl is a file, not a folder" in one_error(capsys)


def test_an_output_directory_inside_another_output_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # its files would be foreign in the outer output, which --force could then never
    # replace (and a reader of the outer one would meet them)
    trace_set = tmp_path / "set"
    assert main(["convert", TRACE, "--out", str(trace_set)]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in trace_set.iterdir())
    inner = trace_set / "deeper" / "set2"
    assert main(["convert", TRACE, "--out", str(inner)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {inner}: is inside {trace_set}, a trace set wanconform wrote; "
        "give the output a path of its own"
    )
    assert sorted(p.name for p in trace_set.iterdir()) == before


def test_an_output_that_is_or_holds_an_input_is_refused_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `check set --out set --force` replaced the trace set by its results
    trace_set = tmp_path / "set"
    assert main(["convert", TRACE, "--out", str(trace_set)]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in trace_set.iterdir())
    for argv, output, how in (
        (["check", str(trace_set), "--out", str(trace_set)], "--out", "is it"),
        (["convert", str(trace_set), "--out", str(tmp_path)], "--out", "holds it"),
    ):
        assert main([*argv, "--force"]) == 2
        assert one_error(capsys) == (
            f"wanconform: error: {trace_set}: is an input, and the output {output} {how}; "
            "give the output a path of its own"
        )
    # an output file (the report) at a folder: that it is one, whatever the folder holds
    assert main(["report", str(trace_set), "-o", str(trace_set), "--force"]) == 2
    assert one_error(capsys) == f"wanconform: error: {trace_set}: is a directory; give a file name"
    assert sorted(p.name for p in trace_set.iterdir()) == before
    trace = tmp_path / "t.jsonl"
    trace.write_text(Path(TRACE).read_text())
    assert main(["shrink", str(trace), "-o", str(trace), "--force"]) == 2
    assert "is an input, and the output --output is it" in one_error(capsys)


def test_two_outputs_of_one_path_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = ["--site", f"1={GEODE / 'ln-cache.xml'}", "--site", f"2={GEODE / 'ny-cache.xml'}"]
    same = str(tmp_path / "o.json")
    assert main(["import", *sites, "-o", same, "--trace", same]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {same}: given for two outputs (--output and --trace); give "
        "each its own"
    )
    report = str(tmp_path / "r.html")
    assert main(["replay", TRACE, "--report", report, "--checkpoint", report]) == 2
    assert "given for two outputs (--report and --checkpoint)" in one_error(capsys)
    assert list(tmp_path.iterdir()) == []
    # "-" is standard output for import's -o only: any other output refuses it, before
    # any work, and leaves a file named "-" alone; ./- names that file
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("my notes\n")
    for argv, flag in (
        (["import", *sites, "--trace", "-"], "--trace"),
        (["report", TRACE, "-o", "-"], "--output"),
        (["shrink", TRACE, "-o", "-"], "--output"),
        (["replay", TRACE, "--report", "-"], "--report"),
        (["topology", TRACE, "--svg", "-"], "--svg"),
        (["check", TRACE, "--out", "-"], "--out"),
    ):
        assert main(argv) == 2
        assert one_error(capsys) == (
            f"wanconform: error: {flag} -: this output cannot go to standard output; give a "
            "path (./- for a file named -)"
        )
    assert [p.name for p in tmp_path.iterdir()] == ["-"]
    assert (tmp_path / "-").read_text() == "my notes\n"
    assert main(["import", *sites, "--trace", "./-"]) == 2
    assert one_error(capsys).startswith("wanconform: error: ./-: exists; give --force")


def test_an_output_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["topology", TRACE, "--svg", str(fifo)]) == 2
    assert one_error(capsys) == f"wanconform: error: {fifo}: cannot write: not a regular file"
    assert fifo.is_fifo()  # not replaced by a file
    assert main(["shrink", TRACE, "-o", str(tmp_path)]) == 2
    assert one_error(capsys) == f"wanconform: error: {tmp_path}: is a directory; give a file name"


# -- earlier results are not replaced silently (item 2) ------------------------------------


def test_an_earlier_trace_set_is_replaced_only_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "set1"
    assert main(["convert", *map(str, EXAMPLES[:10]), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["convert", TRACE, "--out", str(out)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {out}: holds a trace set written earlier; give --force to "
        "replace it, or choose another directory"
    )
    assert len(open_trace_set(out).traces) == 10  # untouched
    assert main(["convert", TRACE, "--out", str(out), "--force"]) == 0
    assert [t.trace_id for t in open_trace_set(out).traces] == ["batching_by_size"]
    assert sorted(os.listdir(tmp_path)) == ["set1"]  # nothing left beside it


def test_force_never_replaces_a_directory_wanconform_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["convert", TRACE, "--out", str(tmp_path / "mine"), "--force"]) == 2
    assert "exists and is not a wanconform output" in one_error(capsys)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    (tmp_path / "empty").mkdir()  # an empty directory holds nothing to lose
    assert main(["convert", TRACE, "--out", str(tmp_path / "empty")]) == 0


DLQ_TRACE = str(ROOT / "traces" / "examples" / "failed_event_dead_lettered.jsonl")
GEODE = ROOT / "tests" / "data" / "geode"


@pytest.mark.parametrize(
    "command",
    [
        [
            "import",
            "--site",
            f"1={GEODE / 'ln-cache.xml'}",
            "--site",
            f"2={GEODE / 'ny-cache.xml'}",
            "-o",
        ],
        ["topology", TRACE, "--svg"],
        ["replay", TRACE, "--report"],
        ["replay", TRACE, "--engine", "impl", "--checkpoint"],
        ["dlq", "STORE", "--format", "csv", "-o"],
        ["dlq", "STORE", "--redeliver", "-o"],
    ],
    ids=[
        "import -o",
        "topology --svg",
        "replay --report",
        "replay --checkpoint",
        "dlq -o",
        "dlq --redeliver -o",
    ],
)
def test_an_output_file_is_replaced_only_with_force_and_only_if_wanconform_wrote_it(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, item 1: a single-file output keeps the promise directories keep."""
    if "STORE" in command:
        store = tmp_path / "dlq"
        assert main(["replay", DLQ_TRACE, "--engine", "impl", "--dlq-dir", str(store)]) == 0
        command = [str(store) if word == "STORE" else word for word in command]
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n")
    capsys.readouterr()
    assert main([*command, str(out)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {out}: exists; give --force to replace it (only a file "
        "wanconform wrote), or choose another file"
    )
    assert main([*command, str(out), "--force"]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {out}: exists and is not a file wanconform wrote (or it changed "
        "since); choose another file"
    )
    assert out.read_text() == "my notes\n"
    ours = tmp_path / "ours"
    assert main([*command, str(ours)]) in (0, 1)
    written = ours.read_bytes()
    capsys.readouterr()
    assert main([*command, str(ours)]) == 2  # wanconform's own: still only with --force
    assert "exists; give --force to replace it" in one_error(capsys)
    os.utime(ours, ns=(0, 0))  # to see it replaced
    assert main([*command, str(ours), "--force"]) in (0, 1)
    assert ours.stat().st_mtime_ns > 0 and ours.read_bytes()[:40] == written[:40]
    with ours.open("ab") as changed:  # changed since: the user's now
        changed.write(b"\n")
    capsys.readouterr()
    assert main([*command, str(ours), "--force"]) == 2
    assert "is not a file wanconform wrote (or it changed since)" in one_error(capsys)


def written_by_wanconform(path: Path, text: str) -> None:
    """A file wanconform wrote as an output (in its folder's ledger), so that --force may
    replace it -- unless it is an input."""
    args = argparse.Namespace(
        output_files=("output",), output_directories=(), output_stdout=(), input_paths=(),
        output=str(path), force=False,
    )  # fmt: skip
    check_outputs(args)
    with atomic_file(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("command", "output", "how"),
    [
        (["import", "--trace", "SITE"], "--trace", "is it"),
        (["topology", "--svg", "SITE"], "--svg", "is it"),
        (["explore", "--depth", "1", "--report", "SITE"], "--report", "is it"),
        (["explore", "--depth", "1", "--out", "DIR"], "--out", "holds it"),
        (["generate", "--traces", "1", "--ops", "1", "--out", "DIR"], "--out", "holds it"),
        (["campaign", "--traces", "1", "--ops", "1", "--out", "DIR"], "--out", "holds it"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_a_site_file_is_an_input_no_output_may_replace(
    command: list[str],
    output: str,
    how: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_spark: None,
) -> None:
    """Each FILE of --site [DSID=]FILE[,FILE...] is an input, as a trace is: even one
    wanconform wrote (which --force may otherwise replace) is never an output's path,
    nor inside an output directory."""
    folder = tmp_path / "geode"
    folder.mkdir()
    site = folder / "ln.gfsh"
    written_by_wanconform(site, (GEODE / "ln.gfsh").read_text(encoding="utf-8"))
    before = site.read_bytes()
    sites = ["--site", f"1={GEODE / 'ln-cache.xml'},{site}", "--site", f"2={GEODE / 'ny.gfsh'}"]
    paths = {"SITE": str(site), "DIR": str(folder)}
    argv = [*sites, *(paths.get(word, word) for word in command[1:]), "--force"]
    assert main([command[0], *argv]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {site}: is an input, and the output {output} {how}; give the "
        "output a path of its own"
    )
    assert site.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [".wanconform-written.json", "ln.gfsh"]


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (["replay", TRACE], "--report or --checkpoint"),
        (["validate", TRACE], "--report"),
        (["topology", TRACE], "--svg"),
        (["explore", TRACE, "--depth", "1"], "--report or --out"),
        (["dlq", "STORE"], "--output"),
        (["import", "--site", f"1={GEODE / 'ln.gfsh'}", "--site", f"2={GEODE / 'ny.gfsh'}"],
         "--output or --trace"),
    ],
    ids=lambda value: value[0] if isinstance(value, list) else None,
)  # fmt: skip
def test_force_without_an_output_to_replace_is_refused(
    command: list[str], flags: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--force that can replace nothing (no output given; import's -o is standard output
    by default) is refused, not ignored: one line, exit 2, before any work."""
    store = tmp_path / "dlq"
    store.mkdir()
    argv = [str(store) if word == "STORE" else word for word in command]
    assert main([*argv, "--force"]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: --force: no output to replace (it goes with {flags}); leave it out"
    )
    assert list(store.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "output", "how"),
    [
        (
            ["replay", DLQ_TRACE, "--engine", "impl", "--report", "STORE/r.html"],
            "--report",
            "lies in it",
        ),
        (["replay", DLQ_TRACE, "--checkpoint", "STORE/c.json"], "--checkpoint", "lies in it"),
        (["check", TRACE, "--out", "STORE/results"], "--out", "lies in it"),
    ],
    ids=["replay --report", "replay --checkpoint", "check --out"],
)
@pytest.mark.parametrize("flag", ["--dlq-dir", "--queue-dir"])
def test_an_output_that_is_or_lies_in_a_store_is_refused_before_the_run(
    command: list[str],
    output: str,
    how: str,
    flag: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_spark: None,
) -> None:
    """A store (`--dlq-dir`, `--queue-dir`) is written in place by the run: an output at
    its path, or in it, is refused before the run, not after it (the store then written)."""
    store = tmp_path / "store"
    argv = [str(store) + word[5:] if word.startswith("STORE") else word for word in command]
    assert main([*argv, flag, str(store)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {store}: is the store {flag}, and the output {output} {how}; "
        "give the output a path of its own"
    )
    assert not store.exists()
    # the store at an output's path: it is in that output, as a store in check's --out
    report = ["replay", DLQ_TRACE, "--engine", "impl", "--report", str(store)]
    assert main([*report, flag, str(store)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {flag}: {store}: is in the output --report {store}; give the "
        "store a path of its own"
    )
    assert not store.exists()


def test_every_file_option_is_declared_where_it_is_accepted() -> None:
    """Each command that takes --site, --config, --dlq-dir or --queue-dir declares them
    (`declare_outputs`): an output can then never be one of their files, nor lie in a
    store, whichever command is given them."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    seen = set()
    for name, command in subparsers.choices.items():
        dests = {action.dest for action in command._actions}
        defaults = command._defaults
        if not defaults.get("output_files") and not defaults.get("output_directories"):
            continue  # writes nothing (bench)
        for dest, declared in (
            ("site", "site_inputs"),
            ("config", "input_paths"),
            ("dlq_dir", "store_directories"),
            ("queue_dir", "store_directories"),
        ):
            if dest in dests:
                assert dest in defaults.get(declared, ()), (name, dest)
                seen.add(dest)
    assert seen == {"site", "config", "dlq_dir", "queue_dir"}


@pytest.mark.parametrize(
    ("marker", "kind"),
    [
        ("campaign.json", "a campaign"),
        ("wanconform-traces.json", "a trace set"),
        ("wanconform-jsonl.json", "a directory of JSON Lines traces"),
        ("results.parquet", "a results directory"),
        ("notes.txt", None),
    ],
)
def test_output_kinds(tmp_path: Path, marker: str, kind: str | None) -> None:
    (tmp_path / marker).write_text("")
    assert output_kind(tmp_path) == kind


# -- Ctrl-C (item 3) -----------------------------------------------------------------------


def test_outputs_get_the_usual_modes_under_the_umask(tmp_path: Path) -> None:
    # tempfile makes its files 0600 and folders 0700; an output is made as `open` and
    # `mkdir` would: 0666 and 0777 less the umask (here 027: 0640 and 0750).
    old = os.umask(0o027)
    try:
        with atomic_file(tmp_path / "report.html") as temporary:
            temporary.write_text("x")
        with building_directory(tmp_path / "made" / "run") as staging:
            (staging / "site-1.jsonl").write_text("{}")
    finally:
        os.umask(old)
    assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "made" / "run").stat().st_mode & 0o777 == 0o750


def test_a_failed_output_directory_takes_the_parent_folders_it_made_with_it(
    tmp_path: Path,
) -> None:
    # tmp/a/b/out: a and b are made for it; the body fails: both go, tmp stays. With
    # a/keep written meanwhile by someone else, a stays (b goes).
    for kept in (False, True):
        with pytest.raises(KeyboardInterrupt), building_directory(tmp_path / "a" / "b" / "out"):
            if kept:
                (tmp_path / "a" / "keep").write_text("x")
            raise KeyboardInterrupt
        assert sorted(p.name for p in tmp_path.rglob("*")) == (["a", "keep"] if kept else [])
    # a parent that existed before is never removed, even when empty
    (tmp_path / "c").mkdir()
    with pytest.raises(KeyboardInterrupt), building_directory(tmp_path / "c" / "out"):
        raise KeyboardInterrupt
    assert (tmp_path / "c").is_dir() and not any((tmp_path / "c").iterdir())


@pytest.mark.parametrize(
    ("signum", "code", "line"),
    [
        (signal.SIGINT, 130, "wanconform: interrupted: nothing written\n"),  # Ctrl-C
        # (was: SIGTERM killed the command at once, its staging directory left beside --out)
        (signal.SIGTERM, 143, "wanconform: terminated: nothing written\n"),
    ],
)
def test_ctrl_c_or_sigterm_is_one_line_its_exit_status_and_nothing_written(
    signum: int,
    code: int,
    line: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import traces.parquet

    opened: list[str] = []

    def signalled_on_the_third(path: Any, *args: Any) -> Any:
        opened.append(str(path))
        if len(opened) == 3:  # two traces are in the staging directory by now
            os.kill(os.getpid(), signum)
        return open_trace(path, *args)

    monkeypatch.setattr(traces.parquet, "open_trace", signalled_on_the_third)
    # Not this test process's JVM (the `spark` fixture's, when an earlier test started it).
    monkeypatch.setattr(glue, "abandon", lambda: None)
    handler = signal.getsignal(signal.SIGTERM)
    assert main(["convert", *map(str, EXAMPLES[:5]), "--out", str(tmp_path / "set")]) == code
    captured = capsys.readouterr()
    assert captured.err == line
    assert captured.out == ""
    assert os.listdir(tmp_path) == []  # neither the set nor its staging directory
    assert len(opened) == 3
    assert signal.getsignal(signal.SIGTERM) is handler  # main put the caller's back


CHDIR_ENGINE = """
import os
import impl

class Engine(impl.Engine):
    def __init__(self, *args, **kwargs):
        os.chdir(os.path.join(os.path.dirname(__file__), "elsewhere"))
        super().__init__(*args, **kwargs)
"""


def test_an_engine_that_changes_directory_does_not_move_the_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # (was: --report out.html was written to elsewhere/out.html, where the engine went)
    (tmp_path / "chdir_engine.py").write_text(CHDIR_ENGINE)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    command = ["replay", TRACE, "--engine", "impl", "--impl", "chdir_engine:Engine"]
    assert main([*command, "--report", "out.html", "--checkpoint", "state.json"]) == 0
    assert os.getcwd() == str(tmp_path / "elsewhere")  # the engine did move
    assert sorted(os.listdir(tmp_path / "elsewhere")) == []
    assert (tmp_path / "out.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "state.json").is_file()
    # each output said so, by the absolute path it was written at (the engine moved)
    assert capsys.readouterr().err.splitlines()[-2:] == [
        f"wanconform: wrote {tmp_path / 'state.json'}",
        f"wanconform: wrote {tmp_path / 'out.html'}",
    ]


def test_an_engine_that_changes_directory_does_not_move_the_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # (was: "t.jsonl: no such file", exit 2: the trace was read again, for the run, after
    # the engine's constructor had moved to the parent folder)
    (tmp_path / "t.jsonl").write_text(Path(TRACE).read_text())
    monkeypatch.chdir(tmp_path)
    impl = ["--impl", "tests.user_engines:ChangesDirectory"]
    assert main(["replay", "t.jsonl", "--engine", "impl", *impl, "--checkpoint", "c.json"]) == 0
    assert os.getcwd() == str(tmp_path.parent)  # the engine did move
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "t.jsonl", "--engine", "both", *impl, "--from", "c.json"]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["report", "t.jsonl", *impl, "-o", "r.html"]) == 0
    out, err = capsys.readouterr()
    assert "error" not in err
    assert (tmp_path / "r.html").is_file()
    assert "P1: held" in out  # the lockstep ran from the checkpoint, on the same trace
    assert out.startswith("t.jsonl: ")  # named as given (replay --help: "t.jsonl:9")


def test_an_error_after_ctrl_c_during_spark_is_the_interrupt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in the middle of a Spark job often reaches the command as a Py4J error
    (the JVM call it broke): after Ctrl-C any error is the interrupt."""
    import wanconform.cmd_replay

    def broken_call(args: Any) -> int:
        glue._interrupted.set()
        raise RuntimeError("An error occurred while calling o29.sc")

    abandoned: list[bool] = []
    monkeypatch.setattr(glue, "abandon", lambda: abandoned.append(True))
    monkeypatch.setattr(wanconform.cmd_replay, "run", broken_call)
    try:
        assert main(["replay", TRACE]) == 130
    finally:
        glue._interrupted.clear()
    assert capsys.readouterr().err == "wanconform: interrupted: nothing written\n"
    assert abandoned == [True]  # the JVM is stopped with the command


SLOW_ENGINE = """
import os, sys, time
from pathlib import Path
import impl

class Engine(impl.Engine):
    def __init__(self, *args, **kwargs):
        if "pyspark.worker" in sys.modules:  # on a Spark worker, not the driver
            Path(os.environ["MARKS"], str(os.getpid())).touch()
            # held until the command is interrupted and its workers stopped, however slow
            # the machine: the check cannot end first (at most 300 s, more than the test
            # waits for the command to end after the interrupt)
            held = time.monotonic() + 300
            while time.monotonic() < held:
                time.sleep(0.05)
        super().__init__(*args, **kwargs)
"""


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_in_the_middle_of_a_spark_check(
    sent: signal.Signals, tmp_path: Path
) -> None:
    """A real Ctrl-C (SIGINT to the command's process group, as a terminal sends it), or
    SIGTERM to its process alone (`kill PID`), while a Spark worker checks a trace that
    does not end by itself: one line, exit 130 (143), no results directory nor its
    staging directory, no JVM or Python worker left, no JVM start-up notices before it.
    (SIGTERM killed the command outright, its staging directory and JVM left behind;
    Ctrl-C waited for the running task, in PySpark's collect.)"""
    traces = [str(p) for p in EXAMPLES[:6]]
    assert main(["convert", *traces, "--out", str(tmp_path / "set")]) == 0
    (tmp_path / "slow.py").write_text(SLOW_ENGINE)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "MARKS": str(marks)}
    command = [*WANCONFORM, "check", "set", "--out", "res", "--impl", "slow:Engine"]
    command += ["--master", "local[1]"]

    def a_worker_started(process: subprocess.Popen[str]) -> bool:
        assert process.poll() is None, process.communicate()
        return any(marks.iterdir())

    interrupted(command, tmp_path, a_worker_started, env, sent)
    assert sorted(os.listdir(tmp_path)) == ["marks", "set", "slow.py"]


def interrupted(
    command: list[str],
    cwd: Path,
    ready: Callable[[subprocess.Popen[str]], bool],
    env: dict[str, str] | None = None,
    sent: signal.Signals = signal.SIGINT,
) -> None:
    """Run `command` in a session of its own, send SIGINT to its process group (as a
    terminal's Ctrl-C) once `ready(process)`, and check the outcome: one line, exit 130,
    nothing on stdout, and no process of the session left a second later. With `sent`
    SIGTERM, that to the command's process alone (`kill PID`), and exit 143."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not ready(process):
            assert time.monotonic() < deadline, "not ready to interrupt in 300 s"
            time.sleep(0.1)
        if sent == signal.SIGINT:
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, sent)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    word, code = ("interrupted", 130) if sent == signal.SIGINT else ("terminated", 143)
    assert (process.returncode, err, out) == (code, f"wanconform: {word}: nothing written\n", "")
    time.sleep(1)
    assert living_processes_of_session(process.pid) == []


def living_processes_of_session(session: int) -> list[str]:
    found = subprocess.run(
        ["ps", "-o", "pid=,stat=,args=", "-s", str(session)], capture_output=True, text=True
    ).stdout.splitlines()
    return [line for line in found if line.split()[1][0] != "Z"]  # zombies are dead


# -- a Spark worker killed mid-check --------------------------------------------------------
def test_a_python_worker_killed_mid_check_is_run_again_or_the_check_is_one_line(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL a Python worker of `wanconform check --master local[2]` while it checks a
    trace: the master runs as local[2,2] (`glue.with_task_retries`), so Spark runs the task
    again and the results are an undisturbed run's, byte for byte but for `seconds` (what
    happens here); or the check is one line, exit 2, and writes nothing."""
    traces = long_trace_set(tmp_path / "set")
    out = tmp_path / "killed" / "results"
    out.parent.mkdir()
    command = [sys.executable, "-m", "wanconform", "check", str(traces), "--out", str(out)]
    outcome = run_killing([*command, "--master", "local[2]"], tmp_path, busy_python_worker)

    def undisturbed() -> tuple[int, Path]:
        request.getfixturevalue("spark")  # the session `main` then uses
        code = main(["check", str(traces), "--out", str(tmp_path / "undisturbed")])
        capsys.readouterr()
        return code, tmp_path / "undisturbed"

    assert_allowed_outcome(outcome, out, undisturbed)


@pytest.mark.parametrize(
    ("master", "tried"),
    [
        ("local", "local[1,2]"),
        ("local[2]", "local[2,2]"),
        ("local[*]", "local[*,2]"),
        ("local[4,3]", "local[4,3]"),  # the user's own count
        ("spark://h:7077", "spark://h:7077"),  # a cluster: spark.task.maxFailures, 4
    ],
)
def test_a_local_master_tries_each_task_twice(master: str, tried: str) -> None:
    assert glue.with_task_retries(master) == tried


@pytest.mark.parametrize("master", ["local[0]", "local[ 0 ]", "local[0,2]"])
def test_a_local_master_of_no_cores_is_one_line(master: str) -> None:
    # Spark's JVM printed 20 lines of stack ("cores per executor (=0)") before the error
    with pytest.raises(WanconformError) as caught:
        glue.session(master)
    assert str(caught.value) == f"--master {master}: a local master needs at least 1 core"


@pytest.mark.parametrize(
    # local[x], local[2 and localhost pass spark-submit's rule; Spark's JVM then printed
    # "Could not parse Master URL" with 20 lines of stack before the error
    "master",
    ["foo", "Local", "mesos://h:5050", " local", "", "local[x]", "local[2", "localhost"],
)
def test_a_master_spark_does_not_take_is_one_line_before_its_jvm_starts(master: str) -> None:
    # spark-submit's rule (yarn, or spark..., k8s..., local...): its JVM died with it
    # unsaid, leaving "Java gateway process exited before sending its port number"
    with pytest.raises(WanconformError) as caught:
        glue.session(master)
    assert str(caught.value) == (
        f"--master {master}: Spark takes local, local[N], spark://HOST:PORT, yarn or "
        "k8s://HOST:PORT"
    )


class Py4JJavaError(Exception):
    """As py4j's (only its module and text matter)."""


Py4JJavaError.__module__ = "py4j.protocol"
CRASHED = (
    "An error occurred while calling o183.getResult.\n: org.apache.spark.SparkException: "
    "Exception thrown in awaitResult: \n\tat org.apache.spark.util.SparkThreadUtils$.awaitResult"
    "(SparkThreadUtils.scala:56)\nCaused by: org.apache.spark.SparkException: Job aborted due "
    "to stage failure: Task 0 in stage 8.0 failed 2 times, most recent failure: Lost task 0.1 "
    "in stage 8.0 (TID 13) (192.0.2.2 executor driver): org.apache.spark.SparkException: Python "
    "worker exited unexpectedly (crashed). Consider setting 'spark.python.worker.faulthandler."
    "enabled' configuration to 'true' for the better Python traceback.\n\tat org.apache.spark"
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            CRASHED,
            "task 0 in stage 8.0 failed 2 times: Python worker exited unexpectedly (crashed)",
        ),
        (
            "Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 "
            "in stage 2.0 failed 4 times, most recent failure: Lost task 3.3 in stage 2.0 (TID 9) "
            "(10.0.0.7 executor 2): ExecutorLostFailure (executor 2 exited caused by one of the "
            "running tasks) Reason: Remote RPC client disassociated\n\tat x",
            "task 3 in stage 2.0 failed 4 times: ExecutorLostFailure (executor 2 exited caused by "
            "one of the running tasks) Reason: Remote RPC client disassociated",
        ),
        (
            "org.apache.spark.SparkException: Job 5 cancelled part of cancelled job group g\n\tat",
            "Job 5 cancelled part of cancelled job group g",
        ),
        (  # a damaged page in a trace set's ops file (its footer is fine): not a traceback
            "An error occurred while calling o191.getResult.\n: org.apache.spark.SparkException: "
            "Exception thrown in awaitResult: \n\tat org.apache.spark.util.SparkThreadUtils$."
            "awaitResult(SparkThreadUtils.scala:70)\nCaused by: org.apache.spark.SparkException: "
            "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///tmp/s/ops/"
            "part-4.parquet.  SQLSTATE: KD001\n\tat org.apache.spark.sql.errors.x\nCaused by: "
            "java.io.IOException: can not read class org.apache.parquet.format.PageHeader: don't "
            "know what type: 15\n\tat y",
            "cannot read /tmp/s/ops/part-4.parquet: can not read class "
            "org.apache.parquet.format.PageHeader: don't know what type: 15",
        ),
        (  # Python code that raised in a task: a bug, shown with its traceback
            "Job aborted due to stage failure: Task 0 in stage 1.0 failed 2 times, most recent "
            "failure: Lost task 0.1 in stage 1.0 (TID 3) (h executor driver): org.apache.spark."
            "api.python.PythonException: Traceback (most recent call last):",
            None,
        ),
        ("An error occurred while calling o12.parquet: AnalysisException: no such column", None),
    ],
)
def test_a_failed_spark_job_is_one_line_and_a_python_error_is_not(
    text: str, reason: str | None
) -> None:
    assert glue.job_failure(Py4JJavaError(text)) == reason
    assert glue.job_failure(RuntimeError(text)) is None  # not from Spark: not Spark's failure


# -- Spark master not there (item 4) -------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed: nothing listens there


def test_an_unreachable_master_is_one_line_before_any_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_jvm(settings: Any) -> None:
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(glue, "_launch_jvm", no_jvm)
    port = free_port()
    master = f"spark://127.0.0.1:{port}"
    out = tmp_path / "g"
    assert main(["generate", "--traces", "1", "--ops", "1", "--master", master, "--out", str(out)])
    assert one_error(capsys) == (
        f"wanconform: error: --master {master}: no Spark master answers (127.0.0.1:{port}: "
        "Connection refused); is the master running?"
    )
    assert not out.exists()


@pytest.mark.parametrize("master", ["spark://nohost", "spark://:7077", "spark://h:port"])
def test_a_malformed_master_is_one_line(master: str) -> None:
    with pytest.raises(WanconformError, match=re.escape(f"--master {master}: expected spark://")):
        glue.probe_master(master)


def test_the_jvm_start_up_notices_are_filtered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three lines every JVM start printed before the command's first line."""
    read, write = os.pipe()
    written: list[bytes] = []

    def capture(fd: int, data: bytes) -> int:
        written.append(data)
        return len(data)

    monkeypatch.setattr(os, "write", capture)
    noise = (
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
        b'Setting default log level to "WARN".\n'
        b"To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use "
        b"setLogLevel(newLevel).\n"
        b"spark: ERROR Executor: a real error\n"
    )
    with os.fdopen(write, "wb") as sink:
        sink.write(noise)
    with os.fdopen(read, "rb") as source:
        glue._forward_jvm_stderr(source)
    assert written == [b"spark: ERROR Executor: a real error\n"]


# -- progress (item 6) ---------------------------------------------------------------------


def shown(bar: Progress, capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [t for t in capsys.readouterr().err.replace("\033[K", "").split("\r") if t]


def test_progress_shows_one_bar_per_stage_and_never_goes_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(time, "monotonic", lambda: 100.0)
    bar = Progress("check", unit="tasks", bar=True)
    for number, done, total in [(1, 3, 8), (1, 2, 8), (2, 1, 16), (1, 8, 8), (2, 6, 16)]:
        bar.next_at = 0
        bar.stage(number, done, total)
    dots = "." * 30
    assert (
        shown(bar, capsys)
        == [
            f"check stage 1 [###########{dots[:19]}] 3/8 tasks     0 s",
            f"check stage 1 [###########{dots[:19]}] 3/8 tasks     0 s",  # a late poll: not 2
            f"check stage 2 [#{dots[:29]}] 1/16 tasks     0 s",  # the next stage, its own total
            f"check stage 2 [###########{dots[:19]}] 6/16 tasks     0 s",  # stage 1 never again
        ]
    )


def test_an_error_in_the_middle_of_the_work_erases_the_progress_line_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # validate reads an event log as it runs: a bad line found there is said on a line of
    # its own, not after the progress text
    import wanconform.progress

    monkeypatch.setattr(wanconform.progress, "_open", [])  # none left by an earlier test
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    bar = Progress("replaying run")
    bar.next_at = 0
    bar.update(65_536)
    bad = tmp_path / "t.jsonl"
    bad.write_text("not json\n")
    assert main(["replay", str(bad)]) == 2
    assert capsys.readouterr().err == (
        "\r\033[Kreplaying run: 65,536 operations\r\033[K"
        f"wanconform: error: {bad}:1: not valid JSON: Expecting value at column 1\n"
    )


class FakeStage:
    def __init__(self, stage_id: int, tasks: int, active: int, done: int) -> None:
        self.stageId, self.numTasks = stage_id, tasks
        self.numActiveTasks, self.numCompletedTasks = active, done


class FakeTracker:
    """Two jobs of a group: job 1's stages 3 (done) and 4 (running); job 2 not started."""

    stages: ClassVar[dict[int, FakeStage]] = {
        3: FakeStage(3, 8, 0, 8),
        4: FakeStage(4, 16, 2, 5),
        7: FakeStage(7, 4, 0, 0),
    }

    def getJobIdsForGroup(self, group: str) -> list[int]:
        return [1, 2]

    def getJobInfo(self, job: int) -> Any:
        return type("Job", (), {"stageIds": [3, 4] if job == 1 else [7]})

    def getStageInfo(self, stage: int) -> FakeStage:
        return self.stages[stage]


def test_spark_progress_reports_the_latest_started_stage_with_its_own_total(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, int, int]] = []

    class Context:
        def setJobGroup(self, group: str, label: str) -> None: ...

        def setLocalProperty(self, key: str, value: Any) -> None: ...

        def statusTracker(self) -> FakeTracker:
            return FakeTracker()

    spark = type("Spark", (), {"sparkContext": Context()})
    with glue.progress(spark, "check", lambda *a: calls.append(a)):
        time.sleep(1.2)
    assert calls and set(calls) == {(2, 5, 16)}  # stage 4 is the second that started


def test_starting_spark_is_said_while_the_session_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from wanconform.progress import start_spark

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    said: list[str] = []
    monkeypatch.setattr(glue, "session", lambda master: said.append(capsys.readouterr().err))
    start_spark(None)
    assert said == ["starting Spark (local[*]) ..."]
    assert capsys.readouterr().err == "\r\033[K"  # erased once started


# -- the report's figures agree with the summary's (item 7) --------------------------------


def test_the_report_and_the_summary_give_one_delta_share(tmp_path: Path) -> None:
    assert delta_share(100, 300) == "25.0%"  # 100 of the 400 bytes shipped
    assert delta_share(0, 0) == "-"
    path = ROOT / "traces" / "examples" / "delta_and_full_fallback_after_wipe.jsonl"
    trace = open_trace(path)
    rows, examples, notes = check_local([LocalTrace(trace.name, trace.config, list(trace.ops()))])
    text = render(summarize(rows, 1.0))
    [share] = re.findall(r"\((\S+) of all bytes as deltas\)", text)
    assert share != "-"
    write_report(rows, examples, notes, tmp_path / "r.html", "impl:Engine")
    html = (tmp_path / "r.html").read_text()
    assert f'<th>bytes sent as deltas, of all bytes</th><td class="num">{share}</td>' in html
    assert "delta vs full" not in html


# -- start-up (item 9) ---------------------------------------------------------------------

HEAVY = ("pyspark", "pandas", "hypothesis", "jinja2", "pyarrow", "networkx")


def test_the_command_line_imports_no_heavy_library_to_parse_or_replay() -> None:
    """`--help` builds every command's parser and `replay` of a small trace runs: neither
    needs Spark, pandas, Hypothesis, Jinja2, pyarrow or networkx (speed: `bench --startup`)."""
    script = (
        "import sys, contextlib, io\n"
        "from wanconform.cli import build_parser, main\n"
        "build_parser()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['replay', {TRACE!r}]) == 0\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (found.stdout, found.stderr) == ("[]\n", "")


# -- whole or nothing, even after SIGKILL ("atomic outputs everywhere") --------------------


def test_an_output_killed_at_random_moments_is_absent_or_whole(tmp_path: Path) -> None:
    """`convert` (a directory) and `replay --report` (a file), each SIGKILLed at random
    moments of its run: afterwards the output is absent or complete and valid, and the
    next run removes what the killed one left beside it."""
    sources = tmp_path / "in"
    sources.mkdir()
    for copy in range(4):  # 4 x 19 traces: long enough to be killed while writing
        for example in EXAMPLES:
            (sources / f"{example.stem}-{copy}.jsonl").write_text(example.read_text())
    traces = sorted(str(p) for p in sources.iterdir())
    commands = {
        "set": [*WANCONFORM, "convert", *traces, "--force", "--out"],
        "r.html": [*WANCONFORM, "replay", *traces[:20], "--force", "--report"],
    }
    rng = random.Random(20)
    for name, command in commands.items():
        target = tmp_path / name
        started = time.monotonic()
        subprocess.run([*command, str(target)], check=True, capture_output=True)
        whole = time.monotonic() - started
        complete = valid(target)
        for _ in range(3):
            process = subprocess.Popen([*command, str(target)], stdout=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.2, 1.0) * whole)
            process.kill()
            process.wait()
            assert not target.exists() or valid(target) == complete
        subprocess.run([*command, str(target)], check=True, capture_output=True)
        assert valid(target) == complete
    # no leftovers; r.html is known as wanconform's at every moment a kill can come
    assert sorted(os.listdir(tmp_path)) == [".wanconform-written.json", "in", "r.html", "set"]


def valid(target: Path) -> Any:
    if target.is_dir():
        return len(open_trace_set(target).traces)
    text = target.read_text()
    assert text.rstrip().endswith("</html>")
    return len(text)


def test_a_failed_property_in_a_campaign_summary_ends_with_its_reproduce_command() -> None:
    # Rows of two clean traces, one made to fail P2 (as a property a model and an impl
    # agree on can fail): the summary names the violation, then how to replay that trace
    # with the properties checked, from the results' failures/ (where it is exported).
    path = ROOT / "traces" / "examples" / "delta_and_full_fallback_after_wipe.jsonl"
    trace = open_trace(path)
    ops = list(trace.ops())
    rows, _, _ = check_local([LocalTrace(n, trace.config, ops) for n in ("t-1", "t-2")])
    failing = rows[1]
    failing["failures"] = ["P2"]
    failing["verdicts"]["p2"] = {
        "status": "failed", "reason": "", "violation_count": 1,
        "violations": [{"where": "t-2:9", "message": "event 1:3 (key 'a') neither applied"}],
    }  # fmt: skip
    text = render(summarize(rows, 1.0), "out/results/failures", "impl:Engine")
    assert (
        "  P2 violation: t-2:9: event 1:3 (key 'a') neither applied\n"
        "    reproduce: wanconform replay --engine both --check-properties --impl impl:Engine "
        "out/results/failures/t-2.jsonl\n"
    ) in text
    assert "reproduce" not in render(summarize(rows, 1.0))  # no failures/ to replay from


def test_force_replaces_an_output_directory_only_while_it_holds_only_what_was_written(
    tmp_path: Path,
) -> None:
    """A file the user added to an earlier output directory, or changed in it, is not
    replaced (with the directory) by --force: one line naming it."""
    out = tmp_path / "run"
    with building_directory(out) as staging:
        (staging / "live.json").write_text("{}")
        (staging / "logs").mkdir()
        (staging / "logs" / "site-1.jsonl").write_text("{}\n")
    check_output_directory(out, force=True)  # as written: replaceable
    (out / "notes.md").write_text("mine")
    with pytest.raises(
        WanconformError,
        match=r"run: holds a live run's event logs written earlier, and notes\.md, which "
        "wanconform did not write",
    ):
        check_output_directory(out, force=True)
    (out / "notes.md").unlink()
    check_output_directory(out, force=True)
    (out / "logs" / "site-1.jsonl").write_text('{"edited": 1}\n')
    with pytest.raises(WanconformError, match=r"and logs/site-1\.jsonl, which"):
        check_output_directory(out, force=True)


def test_force_replaces_an_output_directory_holding_a_file_wanconform_wrote_into_it(
    tmp_path: Path,
) -> None:
    """A report written later into a campaign's directory (an output file of its own,
    entered in that folder's ledger) does not stop --force from replacing the campaign;
    once edited by hand, it does."""
    out = tmp_path / "campaign"
    with building_directory(out) as staging:
        (staging / "campaign.json").write_text("{}")
    args = argparse.Namespace(
        output_files=("report",), output_directories=(), output_stdout=(), input_paths=(),
        report=str(out / "again.html"), force=False,
    )  # fmt: skip
    check_outputs(args)
    with atomic_file(out / "again.html") as temporary:
        temporary.write_text("<p>again</p>")
    assert (out / ".wanconform-written.json").exists()
    check_output_directory(out, force=True)  # the report and the ledger are wanconform's
    (out / "again.html").write_text("<p>edited</p>")
    with pytest.raises(WanconformError, match=r"and again\.html, which wanconform"):
        check_output_directory(out, force=True)


def test_an_output_file_that_is_the_input_s_folder_is_said_to_be_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `replay T --report DIR` (DIR holding T) said "T: is an input, and the output
    # --report holds it": true, but the output is a folder where a file is asked for
    trace = tmp_path / "t.jsonl"
    trace.write_text(Path(TRACE).read_text())
    assert main(["replay", str(trace), "--report", str(tmp_path)]) == 2
    assert one_error(capsys) == f"wanconform: error: {tmp_path}: is a directory; give a file name"
    assert main(["replay", str(trace), "--report", str(trace)]) == 2  # the input itself
    assert one_error(capsys) == (
        f"wanconform: error: {trace}: is an input, and the output --report is it; give the "
        "output a path of its own"
    )
