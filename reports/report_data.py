"""The HTML report's data, computed before any rendering (STYLE 8).

Input: what runs found, never a new run. One result row per trace
(`conformance.spark.results.RESULTS_SCHEMA`, from `wanconform check` or from traces run in this
process), the examples of the largest failure groups (`conformance.search.examples.Example`,
already shrunk and explained), and the impl that produced them. `build_report` counts
verdicts per property and profile, merges the coverage, groups the failures exactly as
campaigns do (`conformance.search.examples.failure_groups`), and turns each example into what
a person reads: model and impl side by side, the account of the run, the sequence
diagram, the life of the event involved. Everything that can grow with the campaign is
capped, and the cap says what it cut.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.properties.topology import analyse_topology
from conformance.running import geode_stats
from conformance.running.coverage import SITE_EVENTS, Coverage, capped_settles
from conformance.search.examples import MAX_EXAMPLES, Example, failure_groups, group_variants
from conformance.spark.campaign import delta_share
from conformance.spark.results import ALL_PROPERTIES
from model.routing import bucket_of
from reports.chart_svg import Chart, bar_chart
from reports.sequence_svg import render_sequence_svg, sequence_diagram
from reports.topology_svg import render_topology_svg
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.ops import parse_op
from traces.text import plural

MAX_GROUPS = 50  # failure groups shown
MAX_GROUP_TRACES = 50  # trace names listed per group
MAX_ROWS = 5_000  # traces in the filterable table
MAX_TOPOLOGIES = 12  # configurations drawn
MAX_SIDE_ROWS = 120  # rows of the model / impl comparison
MAX_NARRATIVE = 60  # lines of the account of the events
MAX_REASONS = 2  # reasons a property did not apply, per verdict cell


@dataclass(frozen=True, slots=True)
class Counts:
    held: int = 0
    failed: int = 0
    not_applicable: int = 0
    reasons: tuple[tuple[str, int], ...] = ()  # why it did not apply, most traces first


@dataclass(frozen=True, slots=True)
class VerdictRow:
    property: str
    cells: tuple[Counts, ...]  # one per profile, in `Report.profiles` order


@dataclass(frozen=True, slots=True)
class SideRow:
    path: str
    model: str
    impl: str
    differs: bool


@dataclass(frozen=True, slots=True)
class NarrativeLine:
    text: str
    focus: bool  # the failing operation


@dataclass(frozen=True, slots=True)
class ExampleView:
    """One failure explained, as the page shows it (from a `conformance` Example)."""

    trace: str
    failure: str  # the failure of the minimal trace, described
    original_operations: int
    minimal_trace: str  # JSON Lines
    kept_lines: tuple[int, ...]  # the input's line numbers the minimal trace kept
    stages: tuple[tuple[str, int], ...]  # what each shrinking stage left
    step: str  # the failing operation of the minimal trace, in words
    side: tuple[SideRow, ...]  # model and impl side by side
    side_note: str  # what the side-by-side shows (or why there is none)
    narrative: tuple[NarrativeLine, ...]
    sequence_svg: str
    command: str
    pytest: str
    event: str = ""  # the event the failure is about, if it names one
    event_life: tuple[str, ...] = ()  # everything that happened to it, across the sites


@dataclass(frozen=True, slots=True)
class Group:
    signature: str
    count: int
    traces: tuple[str, ...]  # capped at MAX_GROUP_TRACES
    example: ExampleView | None
    note: str  # why there is no example, or ""
    variants: tuple[tuple[str, int], ...] = ()  # P1: how it showed (operation, values)
    # the first trace's failure as its row has it (shown when there is no example: a
    # log's, which names the merged line): where, what, and P1's differing fields
    first: tuple[str, str, tuple[tuple[str, str, str], ...]] = ("", "", ())


@dataclass(frozen=True, slots=True)
class Topology:
    title: str
    traces: int
    svg: str


@dataclass(frozen=True, slots=True)
class ExploreView:
    """An exhaustive exploration (`wanconform explore --report`): its figures, new
    states per depth, and the coverage table with each item's shallowest depth."""

    summary: str  # the first line of the command's report
    figures: tuple[tuple[str, str], ...]
    levels: tuple[tuple[int, int], ...]  # (depth, new distinct states)
    coverage: tuple[tuple[str, int, str], ...]  # (item, count, depth or "never")


@dataclass(frozen=True, slots=True)
class Report:
    title: str
    generated: str  # time of writing (SOURCE_DATE_EPOCH when set)
    impl: str
    traces: int
    operations: int
    skipped: int
    failing: int
    seconds: float
    profiles: tuple[str, ...]
    verdicts: tuple[VerdictRow, ...]
    coverage: tuple[tuple[str, int], ...]
    bytes_full: int
    bytes_delta: int
    dropped: int
    dead_lettered: int
    topologies: tuple[Topology, ...]
    groups: tuple[Group, ...]
    caps: tuple[str, ...]  # what was cut, "showing 50 of 12,345 ..."
    rows: tuple[dict[str, Any], ...] = field(default=())  # the filterable table (as JSON)
    policies: tuple[PolicyRow, ...] = ()  # `campaign --compare-policies`
    policy_chart: Chart | None = None
    settings: tuple[PolicyRow, ...] = ()  # conflation and persistence, on and off
    settings_chart: Chart | None = None
    coverage_charts: tuple[Chart, ...] = ()  # statuses, outcomes, events per site
    bandwidth_chart: Chart | None = None
    explore: ExploreView | None = None  # `wanconform explore --report`
    capped: str = ""  # R25: the settles that stopped at their cap, if any
    geode: tuple[tuple[str, str, int], ...] = ()  # Geode's statistics (docs/GEODE_STATS.md)
    lateness: tuple[str, ...] = ()  # each event log run's lateness verdict, in words

    @property
    def delta_share(self) -> str:
        """Bytes shipped as deltas, of all bytes shipped: the summary's figure."""
        return delta_share(self.bytes_delta, self.bytes_full)


@dataclass(frozen=True, slots=True)
class PolicyRow:
    """One failure policy's figures (`conformance.spark.policies`), a row of its table."""

    title: str
    figures: dict[str, Any]


POLICY_BARS = (
    ("events lost", "events_lost"),
    ("keys that differ", "keys_differing"),
    ("records left", "records_left"),
    ("largest backlog", "largest_backlog"),
)


def policy_chart(policies: Sequence[Mapping[str, Any]]) -> Chart | None:
    """The policy comparison as bars: a section per measure, a bar per policy."""
    if not policies:
        return None
    sections = [(label, [(p["title"], p[key]) for p in policies]) for label, key in POLICY_BARS]
    return bar_chart("policies", "failure policies compared", sections)


SETTING_BARS = {
    "conflation": (
        ("bytes shipped", "bytes_shipped"),
        ("events conflated", "events_conflated"),
        ("keys that differ (conflation)", "keys_differing"),
    ),
    "persistence": (
        ("events lost from queues", "events_lost"),
        ("events re-sent", "events_resent"),
        ("keys that differ (persistence)", "keys_differing"),
    ),
}


def settings_chart(settings: Mapping[str, Sequence[Mapping[str, Any]]]) -> Chart | None:
    """Conflation and persistence on and off (`conformance.spark.policies`): a section
    per measure, a bar per setting."""
    sections = [
        (label, [(f["title"], f[key]) for f in settings[setting]])
        for setting, bars in SETTING_BARS.items()
        if settings.get(setting)
        for label, key in bars
    ]
    return (
        bar_chart("settings", "conflation and persistence compared", sections) if sections else None
    )


def coverage_charts(coverage: Mapping[str, int]) -> tuple[Chart, ...]:
    """Receiver statuses (R16) and sender outcomes seen, and the client events written
    at each site (`events.site.N`, counted from `enqueued`), as bars."""
    charts = []
    for prefix, name, label in (
        ("status.", "statuses", "receiver statuses (R16)"),
        ("outcome.", "outcomes", "sender outcomes"),
    ):
        values = [(k[len(prefix) :], n) for k, n in coverage.items() if k.startswith(prefix)]
        charts.append(bar_chart(name, label, [(label, values)]))
    sites = sorted(
        (int(k.rsplit(".", 1)[1]), n) for k, n in coverage.items() if k.startswith(SITE_EVENTS)
    )
    label = "client events written per site"
    charts.append(bar_chart("sites", label, [(label, [(f"site {s}", n) for s, n in sites])]))
    return tuple(charts)


def bandwidth_chart(rows: Sequence[Mapping[str, Any]], profiles: Sequence[str]) -> Chart:
    """Bytes shipped as full values and as deltas (R14; each row sums its senders'),
    a section per profile."""
    sections = [
        (
            profile,
            [
                (what, sum(r[key] for r in rows if _profile(r) == profile))
                for what, key in (("full values", "bytes_full"), ("deltas", "bytes_delta"))
            ],
        )
        for profile in profiles
    ]
    return bar_chart("bandwidth", "bytes sent as full values and as deltas", sections)


def _shown(shown: int, total: int, what: str) -> str:
    return f"showing {shown:,} of {plural(total, what)}"


def _reasons(reasons: Counter[str]) -> tuple[tuple[str, int], ...]:
    """The most common reasons, the rest counted as one line."""
    ordered = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    shown = ordered[:MAX_REASONS]
    if len(ordered) > MAX_REASONS:
        rest = ordered[MAX_REASONS:]
        shown.append((f"{plural(len(rest), 'other reason')}", sum(n for _, n in rest)))
    return tuple(shown)


def _generated() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = time.gmtime(int(epoch)) if epoch and epoch.isdigit() else time.gmtime()
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", moment)


def _profile(row: Mapping[str, Any]) -> str:
    return str(row["profile"] or "traces")


def build_report(
    rows: Sequence[Mapping[str, Any]],
    examples: Mapping[str, Example],
    notes: Mapping[str, str],
    impl_spec: str,
    progress: Callable[[str], None] | None = None,
    policies: Sequence[Mapping[str, Any]] = (),
    settings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> Report:
    """The report of result rows, with the examples (by signature) and, for a group
    without one, why (`notes`); `policies`: a campaign's failure-policy comparison;
    `settings`: its conflation and persistence comparisons (setting -> [on, off])."""
    say = progress or (lambda line: None)
    profiles = tuple(sorted({_profile(r) for r in rows}))
    verdicts = []
    for name in ALL_PROPERTIES:
        cells = []
        for profile in profiles:
            mine = [r["verdicts"][name.lower()] for r in rows if _profile(r) == profile]
            statuses = Counter(v["status"] for v in mine)
            reasons = Counter(v["reason"] for v in mine if v["status"] == "not applicable")
            cells.append(
                Counts(
                    statuses["held"],
                    statuses["failed"],
                    statuses["not applicable"],
                    _reasons(reasons),
                )
            )
        verdicts.append(VerdictRow(name, tuple(cells)))
    coverage = Coverage()
    for row in rows:
        coverage.merge(row["coverage"])
    extra = sorted(set(coverage.counts) - set(coverage.required()))
    coverage_rows = tuple((name, coverage.counts[name]) for name in [*coverage.required(), *extra])

    ordered = failure_groups(rows)
    caps = []
    if len(ordered) > MAX_GROUPS:
        caps.append(_shown(MAX_GROUPS, len(ordered), "failure signature"))
    groups = []
    for number, (signature, members) in enumerate(ordered[:MAX_GROUPS]):
        example = examples.get(signature)
        view, note = None, notes.get(signature, "")
        if example is not None:
            say(f"drawing the example of {signature}")
            view = example_view(example, f"example-{number}-")
        elif not note:
            note = (
                f"no example: only the {MAX_EXAMPLES} largest groups are explained"
                if number >= MAX_EXAMPLES
                else "no example: the trace was not at hand when the results were made"
            )
        names = tuple(m["trace_id"] for m in members[:MAX_GROUP_TRACES])
        if len(members) > MAX_GROUP_TRACES:
            caps.append(_shown(MAX_GROUP_TRACES, len(members), "trace") + f" of {signature}")
        variants = tuple(group_variants(signature, members))
        first = _first_failure(members[0], signature)
        groups.append(Group(signature, len(members), names, view, note, variants, first))

    topologies: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        topologies.setdefault(row["config"], []).append(row)
    drawn: list[Topology] = []
    for text, members in sorted(topologies.items(), key=lambda item: (-len(item[1]), item[0])):
        if len(drawn) == MAX_TOPOLOGIES:
            caps.append(_shown(MAX_TOPOLOGIES, len(topologies), "configuration"))
            break
        analysis = analyse_topology(parse_config(json.loads(text)))
        svg = render_topology_svg(analysis, ident=f"topology-{len(drawn)}-")
        drawn.append(Topology(f"as in {members[0]['trace_id']}", len(members), svg))
    if len(rows) > MAX_ROWS:
        caps.append(_shown(MAX_ROWS, len(rows), "trace") + " in the table of traces")
    table = tuple(
        {
            "trace": r["trace_id"],
            "profile": _profile(r),
            "operations": r["operations"],
            "skipped": r["skipped"],
            "failures": list(r["failures"]),
            "statuses": {p: r["verdicts"][p.lower()]["status"] for p in ALL_PROPERTIES[1:]},
        }
        for r in rows[:MAX_ROWS]
    )
    capped_traces = [r["trace_id"] for r in rows if capped_settles(r["coverage"])]
    capped = capped_settles(coverage.counts, len(capped_traces)) or ""
    if capped:
        capped += f" (first: {', '.join(capped_traces[:3])})"
    return Report(
        capped=capped,
        geode=tuple(
            (kind, name, value)
            for kind in (geode_stats.SENDER, geode_stats.RECEIVER)
            for name, value in geode_stats.values(coverage.counts, kind)
        ),
        title="wanconform report",
        generated=_generated(),
        impl=impl_spec,
        traces=len(rows),
        operations=sum(r["operations"] for r in rows),
        skipped=sum(r["skipped"] for r in rows),
        failing=sum(1 for r in rows if r["failures"]),
        seconds=round(sum(r["seconds"] for r in rows), 3),
        profiles=profiles,
        verdicts=tuple(verdicts),
        coverage=coverage_rows,
        bytes_full=sum(r["bytes_full"] for r in rows),
        bytes_delta=sum(r["bytes_delta"] for r in rows),
        dropped=sum(r["dropped"] for r in rows),
        dead_lettered=sum(r["dead_lettered"] for r in rows),
        topologies=tuple(drawn),
        groups=tuple(groups),
        caps=tuple(caps),
        rows=table,
        policies=tuple(PolicyRow(p["title"], dict(p)) for p in policies),
        policy_chart=policy_chart(policies),
        settings=tuple(
            PolicyRow(f["title"], dict(f)) for figures in (settings or {}).values() for f in figures
        ),
        settings_chart=settings_chart(settings or {}),
        coverage_charts=coverage_charts(dict(coverage_rows)),
        bandwidth_chart=bandwidth_chart(rows, profiles),
    )


# -- one example -------------------------------------------------------------------------


def _flatten(value: Any, path: str, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value, key=str):
            _flatten(value[key], f"{path}.{key}", out)
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            _flatten(item, f"{path}[{i}]", out)
    else:
        try:
            out[path] = canonical_json(value)
        except (TypeError, ValueError) as exc:  # a user's engine's state (P1 says so too)
            out[path] = f"not JSON ({exc})"


def side_by_side(
    model: Any, impl: Any, path: str, config: Config | None = None, keys: Mapping[str, str] = {}
) -> tuple[SideRow, ...]:
    """Both values flattened to leaf paths; the rows that differ are marked. With the
    configuration (and the keys of the run's events), a sender's dispatchers are named
    with the buckets they own (R31) and a queued event with its bucket (R28); a
    dispatcher's events carry what its lists say of them (`_dispatcher_notes`)."""
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    _flatten(model, path, left)
    _flatten(impl, path, right)
    left_notes: dict[str, str] = {}
    right_notes: dict[str, str] = {}
    _dispatcher_notes(model, path, left_notes)
    _dispatcher_notes(impl, path, right_notes)
    paths = sorted(set(left) | set(right))
    rows = []
    for p in paths[:MAX_SIDE_ROWS]:
        model_text, impl_text = left.get(p, "—"), right.get(p, "—")
        label = p
        if config is not None:
            label = _lane_label(config, p)
            model_text = _with_bucket(config, p, model_text, keys)
            impl_text = _with_bucket(config, p, impl_text, keys)
        model_text += left_notes.get(p, "")
        impl_text += right_notes.get(p, "")
        rows.append(SideRow(label, model_text, impl_text, left.get(p) != right.get(p)))
    return tuple(rows)


def _dispatcher_notes(value: Any, path: str, out: dict[str, str]) -> None:
    """What a dispatcher's own lists say of its events (SPEC §16.6), by leaf path as
    `_flatten` names them: an in-flight member not shipped was conflated in its batch
    (R33); a queued event may be recovered (R36, not indexed for R32) or on disk (R35)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            _dispatcher_notes(item, f"{path}[{i}]", out)
        return
    if not isinstance(value, dict):
        return
    if "queue" in value and "in_flight" in value:
        flight = value["in_flight"]
        if isinstance(flight, dict) and "shipped" in flight:
            shipped = set(flight["shipped"])
            for i, event in enumerate(flight.get("events", [])):
                if event not in shipped:
                    out[f"{path}.in_flight.events[{i}]"] = " (not shipped: conflated, R33)"
        recovered, on_disk = set(value.get("recovered", [])), set(value.get("on_disk", []))
        for i, event in enumerate(value["queue"]):
            notes = [w for w, where in (("recovered", recovered), ("on disk", on_disk))
                     if event in where]  # fmt: skip
            if notes:
                out[f"{path}.queue[{i}]"] = f" ({', '.join(notes)})"
        return
    for key, item in value.items():
        _dispatcher_notes(item, f"{path}.{key}", out)


_LANE_PATH = re.compile(r"^state\.senders\.([^.]+)\.dispatchers\[(\d+)\]")


def _lane_label(config: Config, path: str) -> str:
    """`state.senders.ny.dispatchers[1]...` of a parallel sender, with d1's buckets (R31)."""
    match = _LANE_PATH.match(path)
    if match is None or match.group(1) not in {s.id for s in config.senders}:
        return path
    sender = config.sender(match.group(1))
    if not sender.parallel:
        return path
    index = int(match.group(2))
    owned = list(
        range(index, config.region(sender.site).total_num_buckets, sender.dispatcher_threads)
    )
    shown = ", ".join(map(str, owned[:4])) + (", ..." if len(owned) > 4 else "")
    return f"{match.group(0)} (buckets {shown}){path[match.end() :]}"


def _with_bucket(config: Config, path: str, text: str, keys: Mapping[str, str]) -> str:
    """A queued event's id with its key's bucket at the sender's site (R28)."""
    match = _LANE_PATH.match(path)
    if match is None or match.group(1) not in {s.id for s in config.senders}:
        return text
    event = text.strip('"')
    key = keys.get(event)
    if key is None:
        return text
    bucket = bucket_of(config, config.sender(match.group(1)).site, key)
    return text if bucket is None else f"{text} (bucket {bucket})"


def example_view(example: Example, ident: str = "") -> ExampleView:
    """What the page shows of an example: computed from its data alone (`ident`: the
    prefix of its drawing's element ids, unique in the page)."""
    config = parse_config(example.config)
    steps = [(s.where, parse_op(s.op, config), s.observations) for s in example.steps]
    narrative = [
        NarrativeLine(step.text, index == example.focus) for index, step in enumerate(example.steps)
    ]
    if len(narrative) > MAX_NARRATIVE:
        narrative = narrative[-MAX_NARRATIVE:]
    focus = example.steps[example.focus] if example.steps else None
    return ExampleView(
        trace=example.trace,
        failure=example.failure,
        original_operations=example.original_operations,
        minimal_trace=example.minimal_trace,
        kept_lines=example.kept_lines,
        stages=example.stages,
        step=focus.text if focus is not None else "",
        side=side_by_side(
            example.side_model,
            example.side_impl,
            example.side_path,
            config,
            {
                obs["event"]: obs["key"]
                for s in example.steps
                for obs in s.observations
                if obs["kind"] == "enqueued"
            },
        ),
        side_note=example.side_note,
        narrative=tuple(narrative),
        sequence_svg=render_sequence_svg(sequence_diagram(config, steps, example.focus), ident),
        command=example.command,
        pytest=example.pytest,
        event=example.event,
        event_life=example.event_life,
    )


def _first_failure(
    row: Mapping[str, Any], signature: str
) -> tuple[str, str, tuple[tuple[str, str, str], ...]]:
    """Where and what a trace's failure of this signature was, from its row: P1's
    divergence (the operation and its differing fields), else the property's first
    violation."""
    divergence = row.get("divergence")
    if signature.startswith("P1") and divergence:
        differences = tuple((d["path"], d["model"], d["impl"]) for d in divergence["differences"])
        return divergence["where"], divergence["op"], differences
    name = signature.split(" ", 1)[0].lower()
    violations = row["verdicts"].get(name, {}).get("violations") or []
    if violations:
        return violations[0]["where"], violations[0]["message"], ()
    return "", "", ()
