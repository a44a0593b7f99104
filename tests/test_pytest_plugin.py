"""wanconform's pytest plugin in a user's own project (issue 31, item 13): the conformance
machine against the user's engine, a counterexample printed with the command that
reproduces it, and the project's impl passing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from traces.tracefile import read_trace

BUGGY_ENGINE = '''"""A user's engine: the project's impl, but forgets a destroy's `enqueued`."""

from impl import Engine as Impl


class Engine(Impl):
    def apply(self, op):
        out = super().apply(op)
        if op.op == "destroy":
            return [o for o in out if o["kind"] != "enqueued"]
        return out
'''

TESTS = """from conformance.pytest_plugin import conformance_tests

TestMine = conformance_tests("mine:Engine")
"""


def pytest_in(
    project: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=project, capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip


def test_the_plugin_finds_a_users_bug_and_passes_the_impl(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(BUGGY_ENGINE)
    (tmp_path / "test_mine.py").write_text(TESTS)
    run = pytest_in(
        tmp_path, "--wanconform-examples", "200", "--wanconform-steps", "30",
        "--hypothesis-seed", "1",
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed" in run.stdout
    # the message alone: not the plugin's source as a traceback, nor a chained exception
    assert "def test_conformance_machine" not in run.stdout, run.stdout
    assert "During handling" not in run.stdout, run.stdout
    # distinct commands: under CI (the CI variable set) pytest's short summary repeats the
    # whole message
    commands = list(
        dict.fromkeys(
            re.findall(
                r"reproduce with: (wanconform replay --engine both --impl mine:Engine --steps "
                r"wanconform-counterexamples/counterexample-[0-9a-f]{12}(?:\.min)?\.jsonl)",
                run.stdout,
            )
        )
    )
    assert len(commands) == 2, run.stdout  # the run found, and the minimal trace
    # shrunk by wanconform's shrinker (1-minimal): it ends with the destroy whose
    # `enqueued` the engine forgets, after what makes its key live at that site (a write,
    # and when the write came from elsewhere, its delivery)
    shrunk = re.search(
        r"shrunk to (\d+) operations \(P1 observations: client writes \(R9-R11\) differ\)",
        run.stdout,
    )
    assert shrunk is not None, run.stdout
    minimal = read_trace(tmp_path / commands[1].split()[-1])
    assert 2 <= len(minimal.ops) == int(shrunk.group(1)) <= 6
    assert minimal.ops[-1].op == "destroy"
    for command in commands:  # each reproduces it from where the user stands
        replay = subprocess.run(
            [sys.executable, "-m", *command.split()],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert replay.returncode == 1 and "P1: FAILED" in replay.stdout, replay.stdout
    # --wanconform-impl runs the same tests on the project's impl: they pass
    run = pytest_in(tmp_path, "--wanconform-impl", "impl:Engine", "--wanconform-examples", "10")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_an_engine_that_cannot_be_built_fails_with_that_alone(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "class Engine:\n"
        "    def __init__(self, config):\n"
        "        raise ValueError('no config yet')\n"
        "    def apply(self, op):\n"
        "        return []\n"
        "    def observe(self):\n"
        "        return {}\n"
    )
    (tmp_path / "test_mine.py").write_text(TESTS)
    run = pytest_in(tmp_path, "--wanconform-examples", "5")
    assert run.returncode == 1, run.stdout + run.stderr
    line = (
        "--impl mine:Engine: building the engine raised ValueError: "
        "no config yet (mine.py:3, in __init__)"
    )
    # that line alone: not the plugin's source as a traceback, nor Hypothesis's steps
    failure = run.stdout.split("test_conformance_machine _")[1].split("\n=")[0]
    assert failure.splitlines()[1:] == [line], run.stdout
    assert f"FAILED test_mine.py::TestMine::test_conformance_machine - Failed: {line}" in run.stdout
    # not the machine's teardown failing on the state it never had
    assert "During handling" not in run.stdout and "AttributeError" not in run.stdout


def test_a_class_that_is_not_there_fails_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(BUGGY_ENGINE)
    (tmp_path / "test_mine.py").write_text(TESTS.replace("mine:Engine", "mine:Engin"))
    run = pytest_in(tmp_path, "--wanconform-examples", "5")
    assert run.returncode == 1, run.stdout + run.stderr
    failure = run.stdout.split("test_conformance_machine _")[1].split("\n=")[0]
    assert failure.splitlines()[1:] == ["--impl mine:Engin: module mine has no Engin"], run.stdout


def test_a_class_that_changes_its_operation_does_not_change_the_model(tmp_path: Path) -> None:
    """R9: a put's `enqueued` observation and entry hold the value it wrote. A class given
    to conformance_tests itself was given the model's own operation: changing the put's
    value after applying it changed the model's too, and the test passed."""
    (tmp_path / "test_mine.py").write_text(
        "from conformance.pytest_plugin import conformance_tests\n"
        "from impl import Engine as Impl\n\n\n"
        "class ChangesItsPut(Impl):\n"
        "    def apply(self, op):\n"
        "        out = super().apply(op)\n"
        "        if op.op == 'put':\n"
        "            op.value['extra'] = 1\n"
        "        return out\n\n\n"
        "TestMine = conformance_tests(ChangesItsPut)\n"
    )
    run = pytest_in(tmp_path, "--wanconform-examples", "20", "--hypothesis-seed", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert '.value.extra: model="<absent>" impl=1' in run.stdout, run.stdout
    assert "--impl test_mine:ChangesItsPut --steps" in run.stdout, run.stdout


def test_examples_and_steps_below_one_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(TESTS)
    for option, value in (("--wanconform-examples", "0"), ("--wanconform-steps", "-5")):
        run = pytest_in(tmp_path, option, value)
        assert run.returncode == 4, run.stdout + run.stderr  # pytest's usage error
        assert f"ERROR: {option}: must be a positive integer, got {value}" in run.stderr


def test_a_bug_in_a_test_file_under_tests_is_reproduced_from_the_project(tmp_path: Path) -> None:
    """The engine class defined in the test file itself, in `tests/` (pytest puts that
    directory on Python's path; a `wanconform` started from the project does not): the
    printed command says PYTHONPATH=tests, and works as printed."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_inline.py").write_text(
        BUGGY_ENGINE + "\n\nfrom conformance.pytest_plugin import conformance_tests\n\n"
        "TestInline = conformance_tests(Engine)\n"
    )
    run = pytest_in(tmp_path, "--wanconform-examples", "200", "--hypothesis-seed", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    commands = list(
        dict.fromkeys(
            re.findall(
                r"reproduce with: (PYTHONPATH=tests wanconform replay --engine both --impl "
                r"test_inline:Engine --steps \S+\.jsonl)",
                run.stdout,
            )
        )
    )
    assert len(commands) == 2, run.stdout
    for command in commands:
        replay = subprocess.run(
            ["sh", "-c", command.replace("wanconform", f"{sys.executable} -m wanconform", 1)],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert replay.returncode == 1 and "P1: FAILED" in replay.stdout, replay.stderr


def test_a_wrong_wanconform_impl_is_one_usage_error(tmp_path: Path) -> None:
    """Not one failure (with wanconform's traceback) per conformance_tests class."""
    (tmp_path / "mine.py").write_text(BUGGY_ENGINE)
    (tmp_path / "test_mine.py").write_text(TESTS + 'TestOther = conformance_tests("impl:Engine")\n')
    for value, error in (
        ("mine", "expected module:Class, e.g. impl:Engine"),
        ("mine:Nope", "module mine has no Nope"),
        ("nosuch:Engine", "no module named nosuch on Python's path nor in"),
    ):
        run = pytest_in(tmp_path, "--wanconform-impl", value)
        assert run.returncode == 4, run.stdout + run.stderr  # pytest's usage error
        assert f"ERROR: --wanconform-impl {value}: {error}" in run.stderr
        assert "Traceback" not in run.stdout + run.stderr and "failed" not in run.stdout


PROFILE = """from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

settings.register_profile(
    "wan", derandomize=False, database=DirectoryBasedExampleDatabase(".hypothesis/examples")
)
"""


def test_the_example_database_as_the_readme_says(tmp_path: Path) -> None:
    """Under CI (Hypothesis's own `ci` profile) and with --hypothesis-seed nothing is
    saved; the README's profile saves the counterexample, and the next run (another
    random search) reports that same one first."""
    (tmp_path / "mine.py").write_text(BUGGY_ENGINE)
    (tmp_path / "test_mine.py").write_text(TESTS)
    (tmp_path / "conftest.py").write_text(PROFILE)
    examples = tmp_path / ".hypothesis" / "examples"
    no_ci = {k: v for k, v in os.environ.items() if k != "CI"}

    def found(run: subprocess.CompletedProcess[str]) -> str:
        assert run.returncode == 1, run.stdout + run.stderr
        names = set(re.findall(r"counterexample-[0-9a-f]{12}\.jsonl", run.stdout))
        assert len(names) == 1, run.stdout
        name: str = names.pop()
        return name

    found(pytest_in(tmp_path, "--wanconform-examples", "200", env={**no_ci, "CI": "1"}))
    found(pytest_in(tmp_path, "--wanconform-examples", "200", "--hypothesis-seed", "3", env=no_ci))
    assert not examples.exists() or not any(p.is_file() for p in examples.rglob("*"))
    chosen = ("--wanconform-examples", "200", "--hypothesis-profile", "wan")
    first = found(pytest_in(tmp_path, *chosen, env={**no_ci, "CI": "1"}))
    assert any(p.is_file() for p in examples.rglob("*"))
    assert found(pytest_in(tmp_path, *chosen, env={**no_ci, "CI": "1"})) == first
