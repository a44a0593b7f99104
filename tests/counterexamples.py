"""The HTML report of the conformance machine's last counterexample, written beside its
trace file: what `wanconform report` writes for that trace (the machine's tests call it
when a run fails, so that a failing CI run leaves a page a person can read)."""

from __future__ import annotations

from pathlib import Path

from conformance.search.machine import WanConformance
from conformance.spark.check import LocalTrace, check_local
from reports.render import write_report


def counterexample_report(machine: type[WanConformance]) -> Path | None:
    """Write the report of `machine.last_failure` beside its trace; its path (or None)."""
    if machine.last_failure is None:
        return None
    config, ops, trace = machine.last_failure
    spec = machine.impl_spec()
    numbered = list(enumerate(ops, start=2))  # line 1 of the file is the configuration
    rows, examples, notes = check_local(
        [LocalTrace(str(trace), config, numbered)], spec, machine.impl_factory
    )
    html = trace.with_suffix(".html")
    write_report(rows, examples, notes, html, spec)
    return html
