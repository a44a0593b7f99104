"""What the commands print about the user's names: one line each, escaped (`printable`),
never a UnicodeEncodeError after the work is done; and values quoted in a line cut short
(`cut`). Each command runs as the user runs it: a subprocess whose standard output is
UTF-8 (PYTHONIOENCODING), where a surrogate-escaped byte of a file name cannot be written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from traces.text import cut, shell_word

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data"
GEODE = DATA / "geode"
RESEND = "tools.planted_bugs:ResendWithoutPossibleDuplicate"


def wanconform(*argv: str | Path) -> tuple[int, list[str], list[str]]:
    """Exit status, stdout's lines and stderr's lines of `wanconform ARGV`."""
    done = subprocess.run(
        [sys.executable, "-m", "wanconform", *map(str, argv)],
        capture_output=True,
        cwd=ROOT,  # tools.planted_bugs
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    out, err = (os.fsdecode(text).splitlines() for text in (done.stdout, done.stderr))
    assert "Traceback (most recent call last):" not in err, "\n".join(err)
    return done.returncode, out, err


@pytest.fixture
def byte(tmp_path: Path) -> Path:
    """A folder named with byte 0xff (not UTF-8: surrogate-escaped in Python)."""
    folder = tmp_path / os.fsdecode(b"b\xff")
    folder.mkdir()
    return folder


@pytest.fixture
def newline(tmp_path: Path) -> Path:
    """A folder named with a line break (UTF-8: pyarrow can write there)."""
    folder = tmp_path / "n\nl"
    folder.mkdir()
    return folder


def test_the_outputs_written_by_replay_import_topology_explore_shrink_are_named_escaped(
    tmp_path: Path, byte: Path
) -> None:
    shown = f"{tmp_path}/b\\udcff"
    code, _, err = wanconform(
        "replay", DATA / "report" / "resend.jsonl", "--report", byte / "r.html"
    )
    assert (code, err[-1]) == (0, f"wanconform: wrote {shown}/r.html")
    sites = ["--site", f"1={GEODE / 'ln.gfsh'}", "--site", f"2={GEODE / 'ny.gfsh'}"]
    code, _, err = wanconform("import", *sites, "-o", byte / "c.json", "--trace", byte / "t.jsonl")
    assert (code, err[-2:]) == (
        0,
        [f"wanconform: wrote {shown}/c.json", f"wanconform: wrote {shown}/t.jsonl"],
    )
    code, _, err = wanconform("topology", *sites, "--svg", byte / "t.svg")
    assert (code, err[-1]) == (0, f"wanconform: wrote {shown}/t.svg")
    example = ROOT / "traces" / "examples" / "batching_by_size.jsonl"
    code, _, err = wanconform("explore", example, "--depth", "2", "--report", byte / "e.html")
    assert (code, err[-1]) == (0, f"wanconform: wrote {shown}/e.html")
    trace = DATA / "report" / "resend.jsonl"
    code, out, _ = wanconform("shrink", trace, "--impl", RESEND, "-o", byte / "m.jsonl")
    assert code == 0
    assert out[0].endswith(f" (17 traces run); wrote {shown}/m.jsonl")
    assert out[2] == (
        f"  reproduce: wanconform replay --engine both --impl {RESEND} "
        f"--steps $'{tmp_path}/b\\xff/m.jsonl'"
    )
    assert (byte / "m.jsonl").exists() and (byte / "r.html").exists()


def test_the_folders_of_generate_convert_check_and_replays_stores_are_named_on_one_line(
    tmp_path: Path, newline: Path
) -> None:
    shown = f"{tmp_path}/n\\nl"
    code, out, _ = wanconform("generate", "--traces", "2", "--ops", "30", "--out", newline / "g")
    assert (code, out) == (0, [f"{shown}/g: 2 traces of 30 operations (profiles chaos)"])
    code, out, _ = wanconform("convert", newline / "g", "-o", newline / "c")
    assert (code, out) == (0, [f"{shown}/c: 2 JSON Lines traces"])
    code, out, err = wanconform(
        "check", newline / "g", "--out", newline / "r", "--dlq-dir", newline / "d"
    )
    assert code == 0
    assert out[-1] == f"results: {shown}/r/results.parquet"
    assert err == [
        f"dead letters: one store per trace, {shown}/d/TRACE_ID "
        f"(inspect with `wanconform dlq $'{tmp_path}/n\\x0al/d'`)"
    ]
    trace = DATA / "report" / "dead_letter.jsonl"
    code, _, err = wanconform("replay", "--engine", "both", trace, "--dlq-dir", newline / "s")
    assert (code, err) == (0, [f"dead_letter.jsonl: dead letters in {shown}/s/dead_letter"])


def test_live_names_its_logs_on_one_line(tmp_path: Path, newline: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"sites": [1, 2], "senders": [{"id": "ln", "site": 2, "remote": 1}]})
    )
    code, out, _ = wanconform(
        "live", "--config", config, "--out", newline / "run", "--duration", "1"
    )
    assert code == 0
    shown = f"{tmp_path}/n\\nl/run"
    assert [line.split(": ")[0] for line in out] == [
        f"{shown}/site-1.jsonl",
        f"{shown}/site-2.jsonl",
        "check them",
    ]
    assert out[-1] == f"check them: wanconform validate $'{tmp_path}/n\\x0al/run'"


def test_a_differing_value_in_replays_summary_is_cut_to_200_characters(tmp_path: Path) -> None:
    # a multi-megabyte value was printed whole in the one line of its key
    lines = (DATA / "report" / "dead_letter.jsonl").read_text().splitlines()
    lines[1] = json.dumps({"op": "put", "site": 2, "key": "x", "value": {"v": "z" * 3_000_000}})
    trace = tmp_path / "big.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    code, out, _ = wanconform("replay", "--engine", "both", trace, "--dlq-dir", tmp_path / "s")
    assert code == 0
    assert out[-1] == '    x: site 1 absent, site 2 {"v":"' + "z" * 194 + "... [1,0,2]"
    assert cut("abc", 3) == "abc" and cut("abcd", 3) == "abc..."


def test_the_geode_import_warnings_name_the_site_files_on_one_line(newline: Path) -> None:
    # a site file's folder holding a line break split each warning naming the file
    for name in ("ln.gfsh", "ny.gfsh"):
        (newline / name).write_text((GEODE / name).read_text())
    sites = ["--site", f"1={newline / 'ln.gfsh'}", "--site", f"2={newline / 'ny.gfsh'}"]
    code, _, err = wanconform("topology", *sites)
    assert code == 0
    assert err[0].startswith(f"wanconform: warning: {newline.parent}/n\\nl/ln.gfsh:5: create ")
    assert all(line.startswith("wanconform: warning: ") for line in err)


def test_replays_violations_name_the_trace_escaped(tmp_path: Path, newline: Path) -> None:
    # a trace's folder with a line break split each violation's line
    trace = newline / "p8.jsonl"
    trace.write_text(
        (ROOT / "traces" / "examples" / "p8_batch_conflation_reorders.jsonl").read_text()
    )
    code, out, _ = wanconform("replay", "--check-properties", trace)
    assert code == 1
    line = (
        f"    {tmp_path}/n\\nl/p8.jsonl:16: P8: sender ny: event 1:2 (key 'k') processed at "
        "site 2 after 1:4, which was appended to ny after it"
    )
    assert line in out


def test_a_path_pyarrow_cannot_encode_is_refused_before_any_work(
    tmp_path: Path, byte: Path
) -> None:
    # pyarrow encodes paths as UTF-8: a folder named with byte 0xff was a traceback
    # (pyarrow.lib.tobytes: UnicodeEncodeError, inside a Spark worker for generate)
    shown = f"{tmp_path}/b\\udcff"
    why = "the path is not UTF-8, and Parquet (pyarrow) takes only UTF-8 paths; rename it or "
    why += "choose another path"
    example = ROOT / "traces" / "examples" / "batching_by_size.jsonl"
    writes: list[tuple[list[str | Path], str]] = [
        (["generate", "--traces", "1", "--ops", "5", "--out", byte / "g"], "g"),
        (["campaign", "--traces", "1", "--ops", "5", "--out", byte / "c"], "c"),
        (["convert", example, "-o", byte / "s"], "s"),
        (["check", ROOT / "tests" / "data", "--out", byte / "r"], "r"),
    ]
    for argv, name in writes:
        code, out, err = wanconform(*argv)
        assert (code, out, err) == (
            2,
            [],
            [f"wanconform: error: {shown}/{name}: cannot write: {why}"],
        )
    assert list(byte.iterdir()) == []
    code, _, _ = wanconform("convert", example, "-o", tmp_path / "s")
    assert code == 0
    (tmp_path / "s").rename(byte / "s")  # a trace set in a folder named with 0xff
    reads: list[list[str | Path]] = [
        ["convert", byte / "s", "-o", tmp_path / "j"],
        ["check", byte / "s", "--out", tmp_path / "r"],
    ]
    for argv in reads:
        code, out, err = wanconform(*argv)
        assert (code, out, err) == (2, [], [f"wanconform: error: {shown}/s: cannot read: {why}"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["b\udcff"]
    (byte / "s").rename(tmp_path / "s")
    code, out, _ = wanconform("convert", tmp_path / "s", "-o", byte / "j")  # JSON Lines: any path
    assert (code, out) == (0, [f"{shown}/j: 1 JSON Lines trace"])


def test_a_printed_command_names_the_users_file_when_pasted_into_a_shell(tmp_path: Path) -> None:
    # the suggested commands printed the names unquoted ("wanconform dlq my dlq") or
    # escaped for reading ("b\\udcff"), which a shell does not read back as the name
    for name, word in (
        ("plain/d-1.x", "plain/d-1.x"),
        ("my dlq", "'my dlq'"),
        ("it's", "'it'\"'\"'s'"),
        ("n\nl", "$'n\\x0al'"),
        (os.fsdecode(b"b\xff'\\"), "$'b\\xff\\'\\\\'"),
        ("r\u202el", "$'r\\xe2\\x80\\xael'"),
    ):
        assert shell_word(name) == word
        pasted = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True)
        assert pasted.stdout == os.fsencode(name)


def test_the_suggested_commands_quote_the_users_names(tmp_path: Path) -> None:
    folder = tmp_path / "my dir"
    folder.mkdir()
    (folder / "ln.gfsh").write_text((GEODE / "ln.gfsh").read_text())
    code, out, err = wanconform("topology", folder / "ln.gfsh")
    assert (code, out) == (2, [])
    assert err[0].endswith(f"e.g. --site '1={folder}/ln.gfsh' --site 2=OTHER")
    example = ROOT / "traces" / "examples" / "batching_by_size.jsonl"
    (folder / "t.jsonl").write_text(example.read_text())
    code, out, err = wanconform("convert", folder, "-o", tmp_path / "s")
    assert (code, out) == (2, [])
    assert err[0].endswith(f"`wanconform convert '{folder}'/*.jsonl --out SET`")
