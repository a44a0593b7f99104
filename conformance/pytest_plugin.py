"""wanconform in your own pytest suite (issue 31, item 13): the conformance machine (the
Hypothesis stateful search over SPEC §3's operations, P1-P12 on every step, shrinking,
and the example database) against your engine.

In a test file of your repository:

    from conformance.pytest_plugin import conformance_tests

    TestMyEngine = conformance_tests("mymodule:MyEngine")   # or the class itself

and `pytest -n auto` runs it with the rest of your tests. A counterexample fails the test
with the operation that showed it, what differed, and the command that reproduces it,
`wanconform replay --engine both --impl mymodule:MyEngine --steps FILE`, the run written
to FILE (in `wanconform-counterexamples/`, or `--wanconform-counterexamples DIR`).

This module is also a pytest plugin (the `pytest11` entry point `wanconform`, loaded by
any pytest in an environment where wanconform is installed); its options:

  --wanconform-impl MODULE:CLASS    every `conformance_tests` class runs this engine instead
  --wanconform-examples N           runs of the machine per class (default: the current
                                    Hypothesis profile's max_examples)
  --wanconform-steps N              operations per run (default 50)
  --wanconform-counterexamples DIR  where counterexamples are written

The Hypothesis profile in force (`settings.load_profile`, `--hypothesis-profile`) gives
everything else (the example database, a seed: `--hypothesis-seed`, and the `ci` profile
Hypothesis loads where the environment variable CI is set, run without the database; see
README.md, "Check your own gateway"), except that the machine runs without a
deadline (engines take their time) and that a counterexample is shrunk by wanconform's
own shrinker (`wanconform shrink`: seconds, where Hypothesis's shrinking of a whole
machine run takes minutes), within 30 s: the test's message then names both the run
found and the minimal trace, each with its `wanconform replay` command.
"""

from __future__ import annotations

import unittest
from pathlib import Path
from typing import Any

import pytest

OPTIONS: dict[str, Any] = {}
"""The plugin's options, as this pytest run gave them (`pytest_configure`)."""

DEFAULT_DIRECTORY = "wanconform-counterexamples"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wanconform", "wanconform's conformance machine")
    group.addoption(
        "--wanconform-impl",
        metavar="MODULE:CLASS",
        help="run every conformance_tests() class against this engine",
    )
    group.addoption(
        "--wanconform-examples",
        type=int,
        metavar="N",
        help="runs of the conformance machine (default: the Hypothesis profile's)",
    )
    group.addoption(
        "--wanconform-steps", type=int, metavar="N", help="operations per run (default 50)"
    )
    group.addoption(
        "--wanconform-counterexamples",
        metavar="DIR",
        help=f"where counterexamples are written (default {DEFAULT_DIRECTORY}/)",
    )


def pytest_configure(config: pytest.Config) -> None:
    OPTIONS.clear()
    for name in ("impl", "examples", "steps", "counterexamples"):
        OPTIONS[name] = config.getoption(f"wanconform_{name}", None)
    for name in ("examples", "steps"):  # 0 would quietly be the default, -1 Hypothesis's error
        if OPTIONS[name] is not None and OPTIONS[name] < 1:
            raise pytest.UsageError(
                f"--wanconform-{name}: must be a positive integer, got {OPTIONS[name]}"
            )
    if OPTIONS["impl"] is not None:  # a wrong engine: one usage error, not a failure per class
        from traces.engine import load_impl
        from traces.errors import WanconformError

        try:
            load_impl(OPTIONS["impl"], [str(Path.cwd())])
        except WanconformError as exc:
            raise pytest.UsageError(str(exc).replace("--impl ", "--wanconform-impl ", 1)) from None


def conformance_tests(engine: Any = "impl:Engine", steps: int = 50) -> type[unittest.TestCase]:
    """A test case class that runs the conformance machine with `engine` (a class with
    the engine surface, traces/engine.py, or its `module:Class`) as the impl."""

    class Conformance(unittest.TestCase):
        def test_conformance_machine(self) -> None:
            from hypothesis import HealthCheck, Phase, settings
            from hypothesis.stateful import run_state_machine_as_test

            from conformance.search.examples import SHRINK_BUDGET
            from conformance.search.machine import ConformanceFailure, machine_with_impl
            from conformance.search.shrink import shrink
            from traces.engine import load_impl, user_engine
            from traces.errors import WanconformError
            from traces.outputs import write_text_atomically
            from traces.text import plural
            from traces.tracefile import trace_text

            chosen = OPTIONS.get("impl") or engine
            folder = Path(OPTIONS.get("counterexamples") or DEFAULT_DIRECTORY)
            examples = OPTIONS.get("examples") or settings().max_examples
            message = ""
            try:
                # a wrong engine (no such class, not an engine, fails to build ...): its
                # one line, as the command line says it
                factory = (
                    load_impl(chosen, [str(Path.cwd())])
                    if isinstance(chosen, str)
                    else user_engine(chosen)  # as `--impl` runs it
                    if isinstance(chosen, type)
                    else chosen
                )
                machine = machine_with_impl(factory, folder)
                run_state_machine_as_test(
                    machine,
                    settings=settings(
                        max_examples=examples,
                        stateful_step_count=OPTIONS.get("steps") or steps,
                        deadline=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                        phases=[Phase.explicit, Phase.reuse, Phase.generate],
                    ),
                )
            except WanconformError as exc:
                message = str(exc)  # without Hypothesis's notes: the machine's steps
            except ConformanceFailure as failure:
                assert machine.last_failure is not None
                config, ops, path = machine.last_failure
                shrunk = shrink(config, ops, factory, budget=SHRINK_BUDGET)
                minimal = path.with_name(f"{path.stem}.min.jsonl")
                write_text_atomically(minimal, trace_text(shrunk.config, shrunk.ops(ops)))
                properties = shrunk.failure.signature.property != "P1"
                message = (
                    f"{failure}\nshrunk to {plural(len(shrunk.kept), 'operation')} "
                    f"({shrunk.failure.signature}): reproduce with: "
                    f"{machine.replay_command(properties, minimal)}"
                )
            if message:  # the message alone: a traceback would show this method's source
                pytest.fail(message, pytrace=False)

    name = engine if isinstance(engine, str) else f"{engine.__module__}:{engine.__qualname__}"
    Conformance.__qualname__ = Conformance.__name__ = f"Conformance[{name}]"
    return Conformance
