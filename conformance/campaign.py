"""What a campaign found, from its result rows: data first, then the terminal text.

`summarize(rows, seconds)` turns the rows of `conformance.results.RESULTS_SCHEMA` into
a `CampaignSummary` (plain data); `render` makes the text `wanconform check` and
`wanconform campaign` print. Failures are grouped by signature exactly as reports group
them (`conformance.examples.failure_groups`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.coverage import Coverage
from conformance.examples import failure_groups
from conformance.results import ALL_PROPERTIES
from traces.text import plural

STATUSES = ("held", "failed", "not applicable")


@dataclass(frozen=True, slots=True)
class FailureGroup:
    signature: str
    count: int
    example_where: str  # the first trace's divergent operation or violation, "trace:line"
    example_op: str  # P1: the operation (canonical JSON); else the violation's message
    example_differences: tuple[dict[str, str], ...]  # P1: the first differing paths


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
    coverage: Coverage = field(default_factory=Coverage)
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
        summary.bytes_full += row["bytes_full"]
        summary.bytes_delta += row["bytes_delta"]
        summary.dropped += row["dropped"]
        summary.dead_lettered += row["dead_lettered"]
    summary.skipped_by_profile = {p: (s, n) for p, (s, n) in sorted(skipped.items())}
    for signature, members in failure_groups(rows):
        divergence = members[0]["divergence"]
        if not signature.startswith("P1") or divergence is None:
            continue
        summary.divergences.append(
            FailureGroup(
                signature,
                len(members),
                divergence["where"],
                divergence["op"],
                tuple(divergence["differences"]),
            )
        )
    return summary


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def render(summary: CampaignSummary) -> str:
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
    lines.append("")
    if summary.divergences:
        count = plural(len(summary.divergences), "signature")
        lines.append(f"divergences (P1), {count}:")
        for group in summary.divergences:
            lines.append(f"  {group.count:>6} x {group.signature}")
            lines.append(f"         e.g. {group.example_where} {group.example_op}")
            for diff in group.example_differences[:3]:
                lines.append(
                    f"              {diff['path']}: model={diff['model']} impl={diff['impl']}"
                )
    else:
        lines.append("divergences (P1): none: model and impl agree on every trace")
    lines += [
        "",
        "coverage (operations ran/skipped, receiver statuses, sender outcomes):",
        summary.coverage.table(),
        "",
        f"bytes shipped: {summary.bytes_full:,} as full values, {summary.bytes_delta:,} as "
        f"deltas ({_share(summary.bytes_delta, summary.bytes_full + summary.bytes_delta)} "
        "of all bytes as deltas)",
        f"events dropped: {summary.dropped:,}   dead-lettered: {summary.dead_lettered:,}",
    ]
    return "\n".join(lines)
