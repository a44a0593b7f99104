"""What a campaign found, from its results table: data first, then the terminal text.

`summarize(results, seconds)` turns the rows of `conformance.check.RESULTS_SCHEMA` into
a `CampaignSummary` (plain data, also what a report renders); `render` makes the text
`wanconform check` and `wanconform campaign` print.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from conformance.coverage import Coverage
from conformance.properties import PROPERTIES
from traces.text import plural

STATUSES = ("held", "failed", "not applicable")


@dataclass(frozen=True, slots=True)
class DivergenceGroup:
    signature: str
    count: int
    example_where: str  # the first trace's divergent operation, "trace:seq"
    example_op: str
    example: str  # JSON: its differing paths


@dataclass(slots=True)
class CampaignSummary:
    traces: int = 0
    operations: int = 0
    events: int = 0
    seconds: float = 0.0  # the check's wall time
    skipped_by_profile: dict[str, tuple[int, int]] = field(default_factory=dict)  # skipped, ops
    divergences: list[DivergenceGroup] = field(default_factory=list)  # largest group first
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


def summarize(results: pa.Table, seconds: float) -> CampaignSummary:
    summary = CampaignSummary(seconds=seconds)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    summary.verdicts = {name: Counter() for name in ("P1", *PROPERTIES)}
    summary.violations = {name: [] for name in PROPERTIES}
    skipped: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in results.to_pylist():
        summary.traces += 1
        summary.operations += row["operations"]
        summary.events += row["events"]
        profile = row["profile"] or "(converted)"
        skipped[profile][0] += row["skipped"]
        skipped[profile][1] += row["operations"]
        summary.verdicts["P1"][row["p1"]] += 1
        if row["divergence_signature"] is not None:
            groups[row["divergence_signature"]].append(row)
        verdicts = json.loads(row["verdicts"])
        for name in PROPERTIES:
            summary.verdicts[name][row[name.lower()]] += 1
            kept = summary.violations[name]
            if len(kept) < 3:
                kept.extend(
                    f"{v['where']}: {v['message']}"
                    for v in verdicts[name]["violations"][: 3 - len(kept)]
                )
        summary.coverage.merge(json.loads(row["coverage"]))
        summary.bytes_full += row["bytes_full"]
        summary.bytes_delta += row["bytes_delta"]
        summary.dropped += row["dropped"]
        summary.dead_lettered += row["dead_lettered"]
    summary.skipped_by_profile = {p: (s, n) for p, (s, n) in sorted(skipped.items())}
    for signature, rows in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        first = rows[0]
        summary.divergences.append(
            DivergenceGroup(
                signature,
                len(rows),
                first["divergence_where"],
                first["divergence_op"],
                first["divergence"],
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
            for diff in json.loads(group.example)["differences"][:3]:
                lines.append(
                    f"              {diff['path']}: model={json.dumps(diff['model'])} "
                    f"impl={json.dumps(diff['impl'])}"
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
