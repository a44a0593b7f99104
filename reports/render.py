"""Render a report's data (`reports.report_data`) as one self-contained HTML file.

One Jinja2 template with autoescaping (`reports/templates/report.html.j2`): inline CSS,
JS and SVG, nothing fetched; the table of traces is embedded once, as JSON (Jinja2's
`tojson`, safe inside a script element), and drawn and filtered by the page's script.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jinja2
from markupsafe import Markup

from conformance.search.examples import Example
from conformance.spark.policies import KEYS_NOTE
from reports.chart_svg import Chart, render_chart_svg
from reports.escape import finalize, visible_data
from reports.report_data import ExploreView, Report, build_report
from traces.outputs import write_text_atomically
from traces.text import plural

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("reports", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    finalize=finalize,  # a U+202E in a trace id shows as \u202e
)
_ENVIRONMENT.filters["plural"] = plural  # {{ n | plural("trace") }}: "1 trace", "2 traces"
_ENVIRONMENT.globals["keys_note"] = KEYS_NOTE  # what "keys that differ" counts


def _chart(chart: Chart | None) -> Markup | str:
    return Markup(render_chart_svg(chart)) if chart is not None else ""


def render_report(report: Report) -> str:
    data: dict[str, Any] = visible_data(  # drawn as text by the page's script
        {
            "rows": list(report.rows),
            "signatures": [group.signature for group in report.groups],
        }
    )
    template = _ENVIRONMENT.get_template("report.html.j2")
    svg = {  # our own SVG, rendered with autoescaping by its module
        "topologies": [Markup(t.svg) for t in report.topologies],
        "sequences": [Markup(g.example.sequence_svg) if g.example else "" for g in report.groups],
        "coverage": [Markup(render_chart_svg(c)) for c in report.coverage_charts],
        "bandwidth": _chart(report.bandwidth_chart),
        "policies": _chart(report.policy_chart),
        "settings": _chart(report.settings_chart),
    }
    return template.render(r=report, data=data, svg=svg)


def write_report(
    rows: Sequence[Mapping[str, Any]],
    examples: Mapping[str, Example],
    notes: Mapping[str, str],
    path: str | os.PathLike[str],
    impl_spec: str,
    progress: Callable[[str], None] | None = None,
    policies: Sequence[Mapping[str, Any]] = (),
    explore: ExploreView | None = None,
    settings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    lateness: Sequence[str] = (),
) -> Report:
    """Compute the report of result rows and write it to `path` (atomically); with
    `explore`, the figures of the exploration that found them too; `settings`: the
    conflation and persistence comparisons of `--compare-policies`; `lateness`: each
    event log run's lateness verdict, in words (`validate DIR`), for the summary."""
    report = build_report(rows, examples, notes, impl_spec, progress, policies, settings)
    if explore is not None:
        report = dataclasses.replace(report, explore=explore)
    if lateness:
        report = dataclasses.replace(report, lateness=tuple(lateness))
    write_text_atomically(path, render_report(report))
    return report


def report_json(report: Report) -> dict[str, Any]:
    """The report's data as plain JSON (for tests and tools): tuples become lists."""
    data: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(report)))
    return data
