"""The pages and help texts say what the commands do (issue 20, item 7: texts that
disagreed with the code or with each other)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.spark.policies import PolicyFigures, SettingFigures
from wanconform.cli import build_parser, main

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


def test_make_run_hands_each_site_to_the_command_as_one_word(tmp_path: Path) -> None:
    """`make run SITES=...` passes each site as written, shell characters and all: the
    command, not the shell, reports a missing file (one line, exit 2)."""
    odd = tmp_path / "ln'(1).xml"
    odd.write_bytes((ROOT / "tests/data/geode/ln-cache.xml").read_bytes())
    missing = tmp_path / "ny;x.xml"
    venv = Path(sys.executable).parent.parent
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "-o", "build/.impl-compiled", "run", f"VENV={venv}",
         f"SITES=1={odd} 2={missing}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"wanconform: error: {missing}: no such file"


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


def test_every_library_the_code_imports_is_a_declared_dependency() -> None:
    # `pip install .` alone must give a working command: each third-party module the
    # packages import (at any depth, as a user's run may reach it) belongs to a
    # distribution that pyproject.toml's [project] dependencies name. (pytest is the
    # exception: only pytest itself loads conformance/pytest_plugin.py.)
    import ast
    import sys
    import tomllib
    from importlib.metadata import packages_distributions

    def normal(name: str) -> str:  # PEP 503
        return re.sub(r"[-_.]+", "-", name).lower()

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {normal(re.split(r"[<>=!~\[; ]", spec)[0]) for spec in project["dependencies"]}
    packages = ["model", "impl", "traces", "conformance", "reports", "wanconform"]
    distributions = packages_distributions()
    undeclared: dict[str, str] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in packages or top in (
                        "__future__", "pytest",
                    ):  # fmt: skip
                        continue
                    owners = {normal(owner) for owner in distributions.get(top, [top])}
                    if not owners & declared:
                        undeclared.setdefault(top, str(path.relative_to(ROOT)))
    assert undeclared == {}


def test_the_not_applicable_reason_commands_md_quotes_is_what_replay_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text(
        '{"config":{"sites":[1,2],"senders":[{"id":"ny","site":1,"remote":2}]}}\n'
        '{"op":"put","site":1,"key":"k","value":{"v":1}}\n'
        '{"op":"put","site":1,"key":"k","value":{"v":2}}\n'
        '{"op":"tick","ms":1}\n'
        '{"op":"site_down","site":2}\n'
        '{"op":"site_up","site":2,"wipe":true}\n'
        '{"op":"settle"}\n'
    )
    assert main(["replay", "t.jsonl", "--check-properties"]) == 0
    out = capsys.readouterr().out
    (printed,) = [line.strip() for line in out.splitlines() if line.strip().startswith("P2:")]
    commands = " ".join((ROOT / "docs/COMMANDS.md").read_text().split())
    assert f"`{printed}`" in commands


def test_the_fields_commands_md_gives_policies_json_are_the_ones_it_has() -> None:
    commands = " ".join((ROOT / "docs/COMMANDS.md").read_text().split())
    described = commands.split("`OUT/policies.json` is `", 1)[1].split("`", 1)[0]
    listed = {
        name: [field.strip() for field in fields.split(",")]
        for name, fields in re.findall(r'"(\w+)": \[[^:\]]*: ([^\]]*)\]', described)
    }
    assert listed == {
        "policies": list(PolicyFigures("drop").to_json()),
        "conflation": list(SettingFigures("conflation", True).to_json()),
        "persistence": list(SettingFigures("persistence", True).to_json()),
    }


def test_explore_help_names_the_properties_explore_md_says_are_checked() -> None:
    help_text = " ".join(subcommand("explore").format_help().split())  # type: ignore[attr-defined]
    pages = {
        page: " ".join((ROOT / page).read_text().split())
        for page in ("docs/EXPLORE.md", "README.md")
    }
    on_edges = re.search(r"(P3, P4[^.;]*?) are checked on every transition", help_text)
    assert on_edges is not None
    at_settle = re.search(r"every transition, (P2[^.;]*?) after settle", help_text)
    assert at_settle is not None
    for page, text in pages.items():
        assert f"{on_edges.group(1)} are checked on every transition" in text.replace("**", ""), (
            page
        )
    assert f"{at_settle.group(1)} after settle" in pages["README.md"]


def test_every_option_a_page_gives_a_command_is_in_its_help() -> None:
    commands = [a for a in build_parser()._actions if a.dest == "command"]
    choices = commands[0].choices
    assert isinstance(choices, dict)
    helps = {
        name: set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z]|-o)\b", parser.format_help()))
        for name, parser in choices.items()
    }
    unknown = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for match in re.finditer(r"wanconform (\w+)((?:[^`\n]|\\\n)*)", text):
            name, rest = match.groups()
            if name not in helps or "unrecognized arguments" in rest:
                continue
            rest = re.split(r"&&|\| wanconform|;", rest)[0]  # the next command's are its own
            given = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z]|-o)\b", rest))
            for option in sorted(given - helps[name] - {"--help", "--version"}):
                line = text[: match.start()].count("\n") + 1
                unknown.append(f"{page.name}:{line}: wanconform {name} {option}")
    assert unknown == []


def words_of_help(name: str, columns: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    text = subcommand(name).format_help()  # type: ignore[attr-defined]
    return re.sub(r"-\n\s+", "-", text).split()  # argparse may break a line after a hyphen


def test_no_help_text_breaks_a_word_across_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    # argparse cuts a word longer than the column (explore's list of operations, once
    # one word "put,delta,...": "pu" / "t,delta,..." on a terminal of 80 columns)
    commands = [a for a in build_parser()._actions if a.dest == "command"]
    choices = commands[0].choices
    assert isinstance(choices, dict)
    for name in choices:
        assert words_of_help(name, 80, monkeypatch) == words_of_help(name, 10_000, monkeypatch), (
            name
        )
    explore = " ".join(words_of_help("explore", 80, monkeypatch))
    assert "(default all: put, delta, destroy, putall, tick, deliver," in explore


def test_generate_s_seed_is_the_traces_not_a_campaign_s() -> None:
    text = " ".join(subcommand("generate").format_help().split())  # type: ignore[attr-defined]
    assert "--seed SEED the traces' seed (default 0)" in text


def heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped,
    spaces as hyphens, a repeated one numbered (-1, -2, ...)."""
    anchors: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading and not fenced:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            anchor, n = slug, 0
            while anchor in anchors:
                n += 1
                anchor = f"{slug}-{n}"
            anchors.add(anchor)
    return anchors


def test_every_link_between_pages_names_a_file_and_heading_that_exist() -> None:
    assert "readings-of-the-spec-in-full" in heading_anchors(ROOT / "docs/DESIGN.md")
    assert "crash-campaign-wanconform-bench---dlq-crash-n" in heading_anchors(
        ROOT / "docs/DLQ_STORE.md"
    )
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for match in re.finditer(r"\]\(([^)\s]+)\)", text):
            path, _, anchor = match.group(1).partition("#")
            if path.startswith(("http:", "https:", "mailto:")):
                continue
            target = page.parent / path if path else page
            line = text[: match.start()].count("\n") + 1
            if not target.exists():
                broken.append(f"{page.name}:{line}: {match.group(1)}: no such file")
            elif anchor and target.suffix == ".md" and anchor not in heading_anchors(target):
                broken.append(f"{page.name}:{line}: {match.group(1)}: no such heading")
    assert broken == []


def test_the_examples_page_names_every_example() -> None:
    examples = ROOT / "traces/examples"
    page = (examples / "README.md").read_text()
    files = [p for p in examples.rglob("*.json*") if p.name != "README.md"]
    assert len([p for p in files if p.parent.name == "topologies"]) == 8
    unnamed = [str(p.relative_to(examples)) for p in files if f"`{p.name}`" not in page]
    assert unnamed == []
    assert "`topologies/`" in page


def test_commands_md_has_a_heading_for_every_command() -> None:
    headings = re.findall(r"^## (.*)$", (ROOT / "docs/COMMANDS.md").read_text(), re.MULTILINE)
    named = {name for heading in headings for name in re.findall(r"[a-z]+", heading)}
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert isinstance(commands, dict)
    assert sorted(set(commands) - named) == []
    assert "validate, live, dlq, bench" in headings


def test_every_option_a_help_text_names_is_an_option_of_that_command() -> None:
    # validate's --master once said "only with --engine both", and validate has no
    # --engine. Options in backquotes quote another command (`replay --engine model`);
    # dlq's "the --dlq-dir DIR of a run" and import's gfsh --clean-queues are not its own.
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert isinstance(commands, dict)
    elsewhere = {("dlq", "--dlq-dir"), ("import", "--clean-queues")}
    foreign = []
    for name, parser in commands.items():
        own = {option for action in parser._actions for option in action.option_strings}
        texts = [parser.description or "", parser.epilog or ""]
        texts += [action.help or "" for action in parser._actions]
        for text in texts:
            unquoted = re.sub(r"`[^`]*`", "", text)
            for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", unquoted):
                if option not in own and (name, option) not in elsewhere:
                    foreign.append(f"wanconform {name}: {option}")
    assert foreign == []


def test_commands_md_s_synopsis_gives_each_bench_mode_the_options_it_reads() -> None:
    # `bench --startup --ops 7` once ran, --ops ignored; now an option a mode does not
    # read is refused (cmd_bench.MODE_OPTIONS), and the synopsis must list what each reads.
    from wanconform.cmd_bench import MODE_OPTIONS

    text = (ROOT / "docs/COMMANDS.md").read_text()
    synopsis = text.split("## Synopsis", 1)[1].split("\n\n", 2)[1]
    forms = [
        form
        for line in synopsis.splitlines()
        if line.strip().startswith("wanconform bench")
        for form in line.strip().removeprefix("wanconform bench").split("| wanconform bench")
    ]
    given: dict[str | None, set[str]] = {}
    for form in forms:
        first = re.match(r"\s*--([a-z-]+)", form)
        mode = first.group(1).replace("-", "_") if first else None
        given[mode] = set(re.findall(r"\[--([a-z-]+)", form))
    assert given == {
        mode: {option.replace("_", "-") for option in options} | {"json"}
        for mode, options in MODE_OPTIONS.items()
    }


def test_commands_md_s_synopsis_names_every_option_of_every_command() -> None:
    text = (ROOT / "docs/COMMANDS.md").read_text()
    synopsis = text.split("## Synopsis", 1)[1].split("\n\n", 2)[1]
    named: dict[str, set[str]] = {}
    command = ""
    for line in synopsis.splitlines():
        if start := re.match(r"\s*wanconform (\w+)", line):
            command = start.group(1)
        named.setdefault(command, set()).update(re.findall(r"(--[a-z][a-z-]*|-o)\b", line))
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert isinstance(commands, dict)
    missing = [
        f"wanconform {name} {action.option_strings[0]}"
        for name, parser in commands.items()
        for action in parser._actions
        if action.option_strings
        and action.dest != "help"
        and not set(action.option_strings) & named.get(name, set())
    ]
    unknown = [
        f"wanconform {name} {option}"
        for name, options in named.items()
        for option in sorted(options)
        if not any(option in action.option_strings for action in commands[name]._actions)
    ]
    assert (missing, unknown) == ([], [])


def test_the_defaults_commands_md_s_synopsis_gives_are_the_parsers() -> None:
    # live's --rate is client steps per second (a step may be an injected failure or an
    # operator's step instead of a write: --fail, --lifecycle), as its help says.
    synopsis = " ".join((ROOT / "docs/COMMANDS.md").read_text().split("## Synopsis", 1)[1].split())

    def default(command: str, dest: str) -> Any:
        actions = subcommand(command)._actions  # type: ignore[attr-defined]
        return next(action.default for action in actions if action.dest == dest)

    live = [default("live", dest) for dest in ("duration", "seed", "rate", "keys")]
    assert (
        "(defaults: {:g} s, seed {}, {:g} client steps/s per site, {} keys)".format(*live)
        in synopsis
    )
    for command in ("generate", "campaign"):
        made = [default(command, dest) for dest in ("traces", "ops", "profile", "seed")]
        assert "(defaults: {} traces, {} ops, {}, seed {})".format(*made) in synopsis, command
