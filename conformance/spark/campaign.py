"""What a campaign found, from its result rows: data first, then the terminal text.

`summarize(rows, seconds)` turns the rows of `conformance.spark.results.RESULTS_SCHEMA` into
a `CampaignSummary` (plain data); `render` makes the text `wanconform check` and
`wanconform campaign` print. Failures are grouped by signature exactly as reports group
them (`conformance.search.examples.failure_groups`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.running import geode_stats
from conformance.running.coverage import Coverage, capped_settles
from conformance.search.examples import MAX_EXAMPLES, failure_groups, group_variants
from conformance.spark.results import ALL_PROPERTIES
from traces.engine import DEFAULT_IMPL, impl_command
from traces.text import plural, printable, shell_word

STATUSES = ("held", "failed", "not applicable")
MAX_VARIANTS = 8  # a group's variants listed in the summary


@dataclass(frozen=True, slots=True)
class FailureGroup:
    signature: str
    count: int
    trace_id: str  # the group's first trace (exported to the results' failures/)
    example_where: str  # the first trace's divergent operation or violation, "trace:line"
    example_op: str  # P1: the operation (canonical JSON); else the violation's message
    example_differences: tuple[dict[str, str], ...]  # P1: the first differing paths
    variants: tuple[tuple[str, int], ...] = ()  # how it showed, and in how many traces


@dataclass(slots=True)
class CampaignSummary:
    traces: int = 0
    operations: int = 0
    events: int = 0
    seconds: float = 0.0  # the check's wall time
    skipped_by_profile: dict[str, tuple[int, int]] = field(default_factory=dict)  # skipped, ops
    divergences: list[FailureGroup] = field(default_factory=list)  # P1, largest group first
    verdicts: dict[str, Counter[str]] = field(default_factory=dict)  # P1..P7 -> status counts
    violations: dict[str, list[str]] = field(default_factory=dict)  # first few per property
    violating: dict[str, str] = field(default_factory=dict)  # property -> its first failing
    #   trace, when it is exported to the results' failures/ (a group with an example)
    coverage: Coverage = field(default_factory=Coverage)
    capped_traces: list[str] = field(default_factory=list)  # R25: a settle stopped at its cap
    bytes_full: int = 0
    bytes_delta: int = 0
    dropped: int = 0
    dead_lettered: int = 0

    @property
    def failed(self) -> bool:
        return any(counts["failed"] for counts in self.verdicts.values())


def summarize(rows: Sequence[dict[str, Any]], seconds: float) -> CampaignSummary:
    summary = CampaignSummary(seconds=seconds)
    summary.verdicts = {name: Counter() for name in ALL_PROPERTIES}
    summary.violations = {name: [] for name in ALL_PROPERTIES if name != "P1"}
    skipped: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        summary.traces += 1
        summary.operations += row["operations"]
        summary.events += row["events"]
        profile = row["profile"] or "(converted)"
        skipped[profile][0] += row["skipped"]
        skipped[profile][1] += row["operations"]
        for name in ALL_PROPERTIES:
            verdict = row["verdicts"][name.lower()]
            summary.verdicts[name][verdict["status"]] += 1
            kept = summary.violations.get(name)
            if kept is not None and len(kept) < 3:
                kept.extend(
                    f"{v['where']}: {v['message']}" for v in verdict["violations"][: 3 - len(kept)]
                )
        summary.coverage.merge(row["coverage"])
        if capped_settles(row["coverage"]):
            summary.capped_traces.append(row["trace_id"])
        summary.bytes_full += row["bytes_full"]
        summary.bytes_delta += row["bytes_delta"]
        summary.dropped += row["dropped"]
        summary.dead_lettered += row["dead_lettered"]
    summary.skipped_by_profile = {p: (s, n) for p, (s, n) in sorted(skipped.items())}
    for rank, (signature, members) in enumerate(failure_groups(rows)):
        divergence = members[0]["divergence"]
        if signature in summary.violations and rank < MAX_EXAMPLES:
            summary.violating[signature] = members[0]["trace_id"]
        if not signature.startswith("P1") or divergence is None:
            continue
        summary.divergences.append(
            FailureGroup(
                signature,
                len(members),
                members[0]["trace_id"],
                divergence["where"],
                divergence["op"],
                tuple(divergence["differences"]),
                tuple(group_variants(signature, members)),
            )
        )
    return summary


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def delta_share(bytes_delta: int, bytes_full: int) -> str:
    """The bytes shipped as deltas, as a share of all bytes shipped (summary and report)."""
    return _share(bytes_delta, bytes_full + bytes_delta)


def replay_command(failures: str, trace_id: str, impl: str, properties: bool = False) -> str:
    """The command that replays a failing trace exported to a results directory's
    failures/ (`conformance.spark.results`), with the impl that failed on it (and the
    properties checked, for a property's failure)."""
    checked = " --check-properties" if properties else ""
    command = impl_command(impl)
    trace = shell_word(f"{failures}/{trace_id}.jsonl")
    return f"{command} replay --engine both{checked} --impl {shell_word(impl)} {trace}"


def render(summary: CampaignSummary, failures: str = "", impl: str = DEFAULT_IMPL) -> str:
    """The summary as text; with `failures` (a results directory's failures/ folder as the
    user named it), each divergence group's reproduce command, and each failed
    property's."""
    rate = summary.events / summary.seconds if summary.seconds else 0.0
    lines = [
        f"traces: {summary.traces:,}   operations: {summary.operations:,}   "
        f"events: {summary.events:,}   checked in {summary.seconds:.1f} s "
        f"({rate:,.0f} events/s)",
        "skipped operations (SPEC §3) per profile: "
        + ", ".join(f"{p} {_share(s, n)}" for p, (s, n) in summary.skipped_by_profile.items()),
        "",
        "verdicts (traces)        held   failed   not applicable",
    ]
    for name, counts in summary.verdicts.items():
        lines.append(
            f"  {name:<20} {counts['held']:>8} {counts['failed']:>8} {counts['not applicable']:>16}"
        )
    for name, messages in summary.violations.items():
        for message in messages:
            lines.append(f"  {name} violation: {message}")
        if failures and name in summary.violating:
            command = replay_command(failures, summary.violating[name], impl, properties=True)
            lines.append(f"    reproduce: {command}")
    capped = capped_settles(summary.coverage.counts, len(summary.capped_traces))
    if capped:
        first = ", ".join(summary.capped_traces[:3])
        lines.append(f"  {capped} (first: {first})")
    lines.append("")
    lines.append("in Geode's statistics, over every trace (docs/GEODE_STATS.md):")
    lines.extend(f"  {line}" for line in geode_stats.lines(summary.coverage.counts))
    lines.append("")
    if summary.divergences:
        count = plural(len(summary.divergences), "signature")
        lines.append(f"divergences (P1), {count}:")
        for number, group in enumerate(summary.divergences):
            lines.append(f"  {group.count:>6} x {group.signature}")
            if len(group.variants) > 1:
                shown = group.variants[:MAX_VARIANTS]
                lines.append(f"         {plural(len(group.variants), 'variant')}:")
                lines += [f"         {count:>6} x {variant}" for variant, count in shown]
                if len(group.variants) > len(shown):
                    lines.append(f"         ... and {len(group.variants) - len(shown)} more")
            lines.append(f"         e.g. {group.example_where} {group.example_op}")
            for diff in group.example_differences[:3]:
                lines.append(
                    f"              {diff['path']}: model={diff['model']} impl={diff['impl']}"
                )
            if failures and number < MAX_EXAMPLES:  # exported (`conformance.spark.results`)
                command = replay_command(failures, group.trace_id, impl)
                lines.append(f"         reproduce: {command}")
    else:
        lines.append("divergences (P1): none: model and impl agree on every trace")
    lines += [
        "",
        "coverage (operations ran/skipped, receiver statuses, sender outcomes):",
        *summary.coverage.table().split("\n"),
        "",
        f"bytes shipped: {summary.bytes_full:,} as full values, {summary.bytes_delta:,} as "
        f"deltas ({delta_share(summary.bytes_delta, summary.bytes_full)} "
        "of all bytes as deltas)",
        f"events dropped: {summary.dropped:,}   dead-lettered: {summary.dead_lettered:,}",
    ]
    return "\n".join(map(printable, lines))  # each line one line: names, keys, folders
