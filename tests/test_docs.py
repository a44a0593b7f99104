"""The pages and help texts say what the commands do (issue 20, item 7: texts that
disagreed with the code or with each other)."""

from __future__ import annotations

import re
from pathlib import Path

from wanconform.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def subcommand(name: str) -> object:
    parser = build_parser([name])
    actions = [a for a in parser._actions if a.dest == "command"]
    return actions[0].choices[name]  # type: ignore[index]


def test_campaign_help_names_every_file_it_writes() -> None:
    text = subcommand("campaign").format_help()  # type: ignore[attr-defined]
    flat = " ".join(text.split())
    for written in ("failures/", "report.html", "summary.txt", "results.parquet"):
        assert written in flat, written


def test_generate_and_campaign_make_traces_of_the_same_default_length() -> None:
    defaults = {
        name: subcommand(name)
        .parse_args(  # type: ignore[attr-defined]
            ["--traces", "1", "--profile", "steady", "--seed", "1", "--out", "x"]
        )
        .ops
        for name in ("generate", "campaign")
    }
    assert defaults == {"generate": 1000, "campaign": 1000}


def test_what_the_pages_say_make_run_does_is_what_the_makefile_runs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "wanconform campaign" in recipe
    for page in ("README.md", "traces/examples/README.md"):
        text = " ".join((ROOT / page).read_text().split())
        assert "`make run` runs a campaign" in text or "then a small campaign" in text, page
        for mention in re.findall(r"`make run`[^()]{0,60}", text):
            assert "replay" not in mention, (page, mention)


def test_the_spec_s_source_documents_are_named_in_a_page_a_clone_has() -> None:
    spec = (ROOT / "docs/SPEC.md").read_text()
    assert "../shared/seeds/" in spec  # the owner's text, kept as it is
    sources = (ROOT / "docs/SOURCES.md").read_text()
    named = re.findall(r"`(\d{3}_[0-9a-f]{16}\.txt)`", sources)
    assert len(named) == 5
    seeds = ROOT.parent / "shared" / "seeds"
    if seeds.is_dir():  # in the workspace: every document, and only those
        assert sorted(named) == sorted(p.name for p in seeds.glob("*.txt"))
    readme = (ROOT / "README.md").read_text()
    assert "docs/SOURCES.md" in readme
