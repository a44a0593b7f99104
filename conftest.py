"""Hypothesis profiles for the whole suite.

- `ci` (default): small and derandomized, so `make test` is fast and repeatable.
- `deep`: long exploration; choose it with `--hypothesis-profile=deep` or
  `WANCONFORM_PROFILE=deep`, and scale it with `WANCONFORM_EXAMPLES` (default 5000).
- `mutation` (`make mutation`): `ci`'s runs, without shrinking: a mutant is killed by the
  first failing run, its smallest form is of no use. Under it the slowest test, the
  conformance machine, runs last, so a quick test that kills a mutant saves the machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=int(os.environ.get("WANCONFORM_EXAMPLES", "5000")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "mutation",
    parent=settings.get_profile("ci"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
PROFILE = os.environ.get("WANCONFORM_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if PROFILE == "mutation":  # the machine last: see the `mutation` profile above
        items.sort(key=lambda item: item.nodeid.startswith("tests/test_conformance.py"))


# -- the conformance harness's own coverage: a table in the terminal summary and a JSON file


def _harness_counts() -> dict[str, int]:
    from conformance.search.machine import WanConformance

    return dict(WanConformance.coverage.counts)


_worker_counts: dict[str, int] = {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the counts to the controller
        workeroutput["wanconform_coverage"] = json.dumps(_harness_counts())


def pytest_testnodedown(node: Any, error: Any) -> None:
    counts = json.loads(getattr(node, "workeroutput", {}).get("wanconform_coverage", "{}"))
    for name, count in counts.items():
        _worker_counts[name] = _worker_counts.get(name, 0) + count


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from conformance.running.coverage import Coverage

    coverage = Coverage()
    coverage.merge(_harness_counts())
    coverage.merge(_worker_counts)
    if not coverage.counts:
        return
    terminalreporter.section("conformance harness coverage")
    terminalreporter.write_line(coverage.table())
    missing = coverage.missing()
    terminalreporter.write_line(f"never seen: {', '.join(missing)}" if missing else "all seen")
    out = Path("out")
    out.mkdir(exist_ok=True)
    (out / "harness-coverage.json").write_text(
        json.dumps(dict(sorted(coverage.counts.items())), indent=1) + "\n"
    )
    terminalreporter.write_line(f"written to {out / 'harness-coverage.json'}")
