"""The HTML report's data, computed before any rendering (STYLE 8; issue 10).

Input: one `TraceRecord` per trace (what a campaign's results row holds: verdicts,
divergence, counts). `records_from_traces` builds them by replaying trace files in
lockstep with the properties checked; `records_from_results` is the seam for the Spark
campaign's Parquet results (not yet supported). `build_report` groups the failures by
signature (`conformance.shrink`), largest group first, and for the example of each group
shrinks its trace and explains the first failure: model and impl side by side, the words
of `replay --steps` (`conformance.narrative`), a sequence diagram, and how to reproduce it.
Everything that can grow with the campaign is capped, and the cap says what it cut.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from conformance.check import TraceCheck
from conformance.coverage import Coverage
from conformance.narrative import Narrator, describe
from conformance.properties import PROPERTIES
from conformance.shrink import NothingToShrink, Shrunk, pytest_text, shrink
from conformance.topology import analyse_topology
from reports.sequence_svg import render_sequence_svg, sequence_diagram
from reports.topology_svg import render_topology_svg
from traces.canonical import canonical_json
from traces.config import parse_config
from traces.engine import DEFAULT_IMPL, load_impl, make_engine
from traces.errors import WanconformError
from traces.files import write_text_atomically
from traces.observations import Observation
from traces.ops import Op
from traces.parquet import open_trace_set, trace_set_jsonl
from traces.text import plural
from traces.tracefile import open_trace, trace_text, where

MAX_GROUPS = 50  # failure groups shown
MAX_EXAMPLES = 20  # groups whose example is shrunk and explained
MAX_GROUP_TRACES = 50  # trace names listed per group
MAX_ROWS = 5_000  # traces in the filterable table
MAX_TOPOLOGIES = 12  # configurations drawn
MAX_SIDE_ROWS = 120  # rows of the model / impl comparison
MAX_NARRATIVE = 60  # lines of the account of the events


@dataclass(frozen=True, slots=True)
class PropertyResult:
    property: str  # "P2" .. "P7"
    status: str  # held | failed | not applicable
    reason: str = ""
    violations: tuple[tuple[str, str], ...] = ()  # (where, message)


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One trace's results (the campaign's results row, issue 9)."""

    trace: str  # name or id
    profile: str
    config: dict[str, Any]  # SPEC §2, as JSON
    operations: int
    skipped: int
    divergence: dict[str, Any] | None  # Divergence.to_json()
    properties: tuple[PropertyResult, ...]
    coverage: dict[str, int]  # conformance.machine.Coverage counts
    bytes_full: int
    bytes_delta: int
    dropped: int
    dead_lettered: int
    seconds: float
    source: str = ""  # the trace file, when there is one (to shrink the example)
    divergence_signature: str = ""  # conformance.check.signature: what alike ones share

    def failures(self) -> list[str]:
        """The signatures of its failures: P1's (as `wanconform check` groups them),
        then each failed property."""
        out = []
        if self.divergence is not None:
            out.append(f"P1 {self.divergence_signature}")
        out.extend(p.property for p in self.properties if p.status == "failed")
        return out


MAX_EXPORTED_FAILURES = 200
"""A campaign's failing traces written out as JSONL (to shrink and reproduce them)."""


def record_from_row(row: dict[str, Any], source: str = "") -> TraceRecord:
    """A result row of `wanconform check` (conformance/check.py) as a record."""
    divergence = None
    if row["divergence"] is not None:
        cut = json.loads(row["divergence"])
        divergence = {
            "index": cut["index"],
            "where": row["divergence_where"],
            "op": json.loads(row["divergence_op"]),
            "differences": cut["differences"],
            "total": cut["total"],
        }
    verdicts = json.loads(row["verdicts"])
    properties = tuple(
        PropertyResult(
            name,
            verdicts[name]["status"],
            verdicts[name]["reason"],
            tuple((v["where"], v["message"]) for v in verdicts[name]["violations"]),
        )
        for name in PROPERTIES
    )
    return TraceRecord(
        trace=row["trace_id"],
        profile=row["profile"] or "traces",
        config=json.loads(row["config"]),
        operations=row["operations"],
        skipped=row["skipped"],
        divergence=divergence,
        properties=properties,
        coverage=json.loads(row["coverage"]),
        bytes_full=row["bytes_full"],
        bytes_delta=row["bytes_delta"],
        dropped=row["dropped"],
        dead_lettered=row["dead_lettered"],
        seconds=row["seconds"],
        source=source,
        divergence_signature=row["divergence_signature"] or "",
    )


def records_from_results(directory: str) -> list[TraceRecord]:
    """The records of a campaign directory (`traces/`, `results/`) or of a `check`
    results directory. A campaign's failing traces (at most `MAX_EXPORTED_FAILURES`) are
    written to `failures/TRACE_ID.jsonl` beside them, so that their examples can be
    shrunk and reproduced."""
    root = Path(directory)
    results = root / "results" if (root / "results" / "results.parquet").exists() else root
    path = results / "results.parquet"
    if not path.is_file():
        raise WanconformError(
            f"{directory}: not a campaign or results directory (no results.parquet); "
            "give trace files or the directory `wanconform campaign --out` wrote"
        )
    rows = pq.read_table(path).to_pylist()
    failing = [
        row["trace_id"]
        for row in rows
        if row["p1"] == "failed" or any(row[name.lower()] == "failed" for name in PROPERTIES)
    ][:MAX_EXPORTED_FAILURES]
    sources: dict[str, str] = {}
    traces = root / "traces"
    if failing and traces.is_dir():
        wanted = set(failing)
        folder = root / "failures"
        folder.mkdir(exist_ok=True)
        for trace_id, lines in trace_set_jsonl(open_trace_set(traces)):
            if trace_id in wanted:
                target = folder / f"{trace_id}.jsonl"
                write_text_atomically(target, "".join(line + "\n" for line in lines))
                sources[trace_id] = os.fspath(target)
    return [record_from_row(row, sources.get(row["trace_id"], "")) for row in rows]


def record_from_trace(
    path: str, impl_spec: str = DEFAULT_IMPL, profile: str | None = None
) -> TraceRecord:
    """Check one trace file as `wanconform check` checks a trace: lockstep (P1) with
    P2-P7, one result row."""
    source = open_trace(path)
    check = TraceCheck(
        source.name,
        source.config,
        load_impl(impl_spec),
        replay=lambda: (op for _, op in source.ops()),
        profile=profile or Path(path).parent.name or "traces",
    )
    for line, op in source.ops():
        check.step(line, op)
    return record_from_row(check.finish(), os.fspath(path))


def coverage_skipped(counts: dict[str, int]) -> int:
    return sum(count for name, count in counts.items() if name.endswith(".skipped"))


def records_from_traces(paths: Sequence[str], impl_spec: str = DEFAULT_IMPL) -> list[TraceRecord]:
    """Every input a trace file (validated first), or one campaign or results directory."""
    if len(paths) == 1 and os.path.isdir(paths[0]):
        return records_from_results(paths[0])
    for path in paths:
        if os.path.isdir(path):
            raise WanconformError(f"{path}: a directory: give it alone, or give trace files")
    for path in paths:
        open_trace(path)  # validate all before any work
    return [record_from_trace(path, impl_spec) for path in paths]


# -- the report --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Counts:
    held: int = 0
    failed: int = 0
    not_applicable: int = 0


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
class Example:
    """One failure explained: the shrunk trace, the failing step, how to reproduce it."""

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
    example: Example | None
    note: str  # why there is no example, or ""


@dataclass(frozen=True, slots=True)
class Topology:
    title: str
    traces: int
    svg: str


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


def _shown(shown: int, total: int, what: str) -> str:
    return f"showing {shown:,} of {plural(total, what)}"


def _generated() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = time.gmtime(int(epoch)) if epoch and epoch.isdigit() else time.gmtime()
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", moment)


def build_report(
    records: Sequence[TraceRecord],
    impl_spec: str = DEFAULT_IMPL,
    progress: Callable[[str], None] | None = None,
) -> Report:
    say = progress or (lambda line: None)
    profiles = tuple(sorted({r.profile for r in records}))
    verdicts = []
    for name in PROPERTIES:
        cells = []
        for profile in profiles:
            statuses = Counter(
                p.status
                for r in records
                if r.profile == profile
                for p in r.properties
                if p.property == name
            )
            cells.append(Counts(statuses["held"], statuses["failed"], statuses["not applicable"]))
        verdicts.append(VerdictRow(name, tuple(cells)))
    p1 = [
        Counts(
            sum(1 for r in records if r.profile == p and r.divergence is None),
            sum(1 for r in records if r.profile == p and r.divergence is not None),
        )
        for p in profiles
    ]
    verdicts.insert(0, VerdictRow("P1", tuple(p1)))
    coverage = Coverage()
    for record in records:
        coverage.merge(record.coverage)
    extra = sorted(set(coverage.counts) - set(coverage.required()))
    coverage_rows = tuple((name, coverage.counts[name]) for name in [*coverage.required(), *extra])

    by_signature: dict[str, list[TraceRecord]] = {}
    for record in records:
        for signature in record.failures():
            by_signature.setdefault(signature, []).append(record)
    ordered = sorted(by_signature.items(), key=lambda item: (-len(item[1]), item[0]))
    caps = []
    if len(ordered) > MAX_GROUPS:
        caps.append(_shown(MAX_GROUPS, len(ordered), "failure signature"))
    groups = []
    for number, (signature, members) in enumerate(ordered[:MAX_GROUPS]):
        example, note = None, ""
        if number >= MAX_EXAMPLES:
            note = f"no example: only the {MAX_EXAMPLES} largest groups are explained"
        elif not members[0].source:
            note = "no example: the trace file is not at hand"
        else:
            say(f"explaining {signature} with {members[0].trace}")
            example, note = explain(members[0], signature, impl_spec)
        names = tuple(m.trace for m in members[:MAX_GROUP_TRACES])
        if len(members) > MAX_GROUP_TRACES:
            caps.append(_shown(MAX_GROUP_TRACES, len(members), f"traces of {signature}"))
        groups.append(Group(signature, len(members), names, example, note))

    topologies: dict[str, list[TraceRecord]] = {}
    for record in records:
        topologies.setdefault(canonical_json(record.config), []).append(record)
    drawn: list[Topology] = []
    for _, members in sorted(topologies.items(), key=lambda item: (-len(item[1]), item[0])):
        if len(drawn) == MAX_TOPOLOGIES:
            caps.append(_shown(MAX_TOPOLOGIES, len(topologies), "configuration"))
            break
        svg = render_topology_svg(analyse_topology(parse_config(members[0].config)))
        drawn.append(Topology(f"as in {members[0].trace}", len(members), svg))
    if len(records) > MAX_ROWS:
        caps.append(_shown(MAX_ROWS, len(records), "trace") + " in the table of traces")
    rows = tuple(
        {
            "trace": r.trace,
            "profile": r.profile,
            "operations": r.operations,
            "skipped": r.skipped,
            "failures": r.failures(),
            "statuses": {p.property: p.status for p in r.properties},
        }
        for r in records[:MAX_ROWS]
    )
    return Report(
        title="wanconform report",
        generated=_generated(),
        impl=impl_spec,
        traces=len(records),
        operations=sum(r.operations for r in records),
        skipped=sum(r.skipped for r in records),
        failing=sum(1 for r in records if r.failures()),
        seconds=round(sum(r.seconds for r in records), 3),
        profiles=profiles,
        verdicts=tuple(verdicts),
        coverage=coverage_rows,
        bytes_full=sum(r.bytes_full for r in records),
        bytes_delta=sum(r.bytes_delta for r in records),
        dropped=sum(r.dropped for r in records),
        dead_lettered=sum(r.dead_lettered for r in records),
        topologies=tuple(drawn),
        groups=tuple(groups),
        caps=tuple(caps),
        rows=rows,
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
        out[path] = canonical_json(value)


def side_by_side(model: Any, impl: Any, path: str) -> tuple[SideRow, ...]:
    """Both values flattened to leaf paths; the rows that differ are marked."""
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    _flatten(model, path, left)
    _flatten(impl, path, right)
    paths = sorted(set(left) | set(right))
    return tuple(
        SideRow(p, left.get(p, "—"), right.get(p, "—"), left.get(p) != right.get(p))
        for p in paths[:MAX_SIDE_ROWS]
    )


def _common_prefix(paths: list[str]) -> str:
    """The deepest dotted path above every differing path (state.senders.ny)."""
    parts = [p.replace("[", ".[").split(".") for p in paths]
    prefix: list[str] = []
    for column in zip(*parts, strict=False):
        if len(set(column)) != 1:
            break
        prefix.append(column[0])
    return ".".join(prefix[:3]).replace(".[", "[") or "state"


def _lookup(state: Any, path: str) -> Any:
    for part in path.split(".")[1:]:
        state = state.get(part, {}) if isinstance(state, dict) else {}
    return state


def explain(record: TraceRecord, signature: str, impl_spec: str) -> tuple[Example | None, str]:
    """Shrink the record's trace and explain its first failure (the group's example)."""
    source = open_trace(record.source)
    lines = [line for line, _ in source.ops()]
    ops = [op for _, op in source.ops()]
    try:
        shrunk = shrink(source.config, ops, load_impl(impl_spec))
    except NothingToShrink:
        return None, "no example: the trace no longer fails"
    if str(shrunk.failure.signature) != signature and not signature.startswith("P1"):
        note = f"the trace's first failure is {shrunk.failure.signature}"
    else:
        note = ""
    minimal = shrunk.ops(ops)
    name = f"{Path(record.source).stem}.min.jsonl"
    text = trace_text(source.config, minimal)
    side, side_note, step, narrative, svg, life = _steps(
        source.config, minimal, shrunk, impl_spec, name
    )
    command = (
        f"wanconform shrink {record.source} -o {name} --impl {impl_spec} "
        f"--pytest test_{Path(record.source).stem}.py\n"
        f"wanconform replay --engine both --steps {name}"
    )
    example = Example(
        trace=record.trace,
        failure=shrunk.failure.describe(),
        original_operations=len(ops),
        minimal_trace=text,
        kept_lines=tuple(lines[i] for i in shrunk.kept),
        stages=tuple(shrunk.stages),
        step=step,
        side=side,
        side_note=side_note + (f" ({note})" if note else ""),
        narrative=narrative,
        event=life[0] if life else "",
        event_life=life[1:],
        sequence_svg=svg,
        command=command,
        pytest=pytest_text(text, impl_spec, shrunk.failure, name),
    )
    return example, ""


_EVENT_ID = re.compile(r"\bevent (\d+:\d+)")


def failure_event(failure: Any) -> str:
    """The event a failure is about: the one a violation names, or the event of the
    first differing observation of a divergence ("" if none)."""
    if failure.violation is not None:
        found = _EVENT_ID.search(failure.violation.message)
        return found.group(1) if found else ""
    differences = failure.divergence.differences if failure.divergence else ()
    index = _OBSERVATION_INDEX.match(differences[0].path) if differences else None
    if index is not None and int(index.group(1)) < len(failure.observations):
        observation = failure.observations[int(index.group(1))]
        events = observation.get("events") or [observation.get("event", "")]
        return str(events[0])
    return ""


_OBSERVATION_INDEX = re.compile(r"observations\[(\d+)\]")


def mentions(obs: Observation, event: str) -> bool:
    """Does an observation concern `event` (its own, or in a batch, ack or timeout)?"""
    return obs.get("event") == event or any(
        event in obs.get(field, ()) for field in ("events", "removed")
    )


def _steps(
    config: Any, ops: list[Op], shrunk: Shrunk, impl_spec: str, name: str
) -> tuple[tuple[SideRow, ...], str, str, tuple[NarrativeLine, ...], str, tuple[str, ...]]:
    """Run the minimal trace on model and impl side by side; words, diagram, and the life
    of the event the failure is about (its id first, then one line per happening)."""
    model = make_engine("model", config)
    impl = load_impl(impl_spec)(config)
    narrator = Narrator(config)
    failure = shrunk.failure
    narrative: list[NarrativeLine] = []
    steps: list[tuple[str, Op, list[Observation]]] = []
    side: tuple[SideRow, ...] = ()
    side_note, step = "", ""
    for index, op in enumerate(ops):
        here = where(name, index + 2)  # line 1 holds the configuration
        model_obs = model.apply(op)
        impl_obs = impl.apply(op)
        text = narrator.line(here, op, model_obs, model.observe)
        focus = index == failure.index
        narrative.append(NarrativeLine(text, focus))
        steps.append((here, op, model_obs))
        if not focus:
            continue
        step = text
        divergence = failure.divergence
        if divergence is None:
            side_note = f"{failure.describe()} (model and impl agree on this operation)"
            side = side_by_side(model_obs, impl_obs, "observations")
        elif divergence.differences and divergence.differences[0].path.startswith("obs"):
            side_note = "the observations of this operation, model and impl"
            side = side_by_side(model_obs, impl_obs, "observations")
        else:
            prefix = _common_prefix([d.path for d in divergence.differences])
            side_note = f"the observable state under {prefix} after this operation"
            side = side_by_side(
                _lookup(model.observe(), prefix), _lookup(impl.observe(), prefix), prefix
            )
    if len(narrative) > MAX_NARRATIVE:
        narrative = narrative[-MAX_NARRATIVE:]
    svg = render_sequence_svg(sequence_diagram(config, steps, failure.index))
    event = failure_event(failure)
    life = [
        f"{here} {describe(obs)}"
        for here, _, observations in steps
        for obs in observations
        if event and mentions(obs, event)
    ]
    return side, side_note, step, tuple(narrative), svg, (event, *life) if life else ()
