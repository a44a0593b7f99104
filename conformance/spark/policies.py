"""`campaign --compare-policies` (issue 17, the dead-letter proposal's debate, with numbers).

The same generated traces, each run under four failure policies, which differ only in
the configuration (the operations are the same; same seed):

- `drop`: Geode's default: a failed event is logged and dropped (no listener, R18);
- `block`: the receiver retries until it succeeds (`retry_attempts: -1`, R7, R16.2), so
  an injected failure never comes back as failed;
- `dlq-kept`: the dead-letter listener (R24), records left where they are;
- `dlq-redelivered`: the listener, and once the trace's operations (and so its injected
  failures) are over: a `redeliver` of every sender (R26) and a `settle`.

Every policy's run ends with the sites that are down brought up and a `settle`.

Per policy, summed over the traces: events lost (dropped), keys whose entries differ
between sites at the end, the largest sender backlog reached (queue depth), dead-letter
records left, redelivery outcomes (requeued, superseded, unrecoverable) and the
conflicts that redelivered events met at receivers (R16.3). The engine is the impl.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from traces.config import Config, parse_config
from traces.engine import make_engine
from traces.ops import Op, Redeliver, Settle, SiteUp

SKIPPED_SITE_UP = {"kind": "skipped", "op": "site_up"}
POLICIES = ("drop", "block", "dlq-kept", "dlq-redelivered")
TITLES = {
    "drop": "drop (Geode's default)",
    "block": "block (retry_attempts -1)",
    "dlq-kept": "dead letters kept",
    "dlq-redelivered": "dead letters redelivered",
}


def policy_config(config: Config, policy: str) -> Config:
    """The trace's configuration under `policy` (module docstring)."""
    document = config.to_json()
    for sender in document["senders"]:
        sender["failure_listener"] = None if policy in ("drop", "block") else "dlq"
        sender["dlq_secure"] = sender["dlq_secure"] and sender["failure_listener"] == "dlq"
    if policy == "block":
        document["receivers"] = [dict(r, retry_attempts=-1) for r in document["receivers"]]
    return parse_config(document)


@dataclass(slots=True)
class PolicyFigures:
    """What one policy did, summed over the traces."""

    policy: str
    traces: int = 0
    events_lost: int = 0
    keys_differing: int = 0
    largest_backlog: int = 0
    records_left: int = 0
    redelivery: dict[str, int] = field(
        default_factory=lambda: {"requeued": 0, "superseded": 0, "unrecoverable": 0}
    )
    redelivery_conflicts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "title": TITLES[self.policy],
            "traces": self.traces,
            "events_lost": self.events_lost,
            "keys_differing": self.keys_differing,
            "largest_backlog": self.largest_backlog,
            "records_left": self.records_left,
            "redelivery": dict(self.redelivery),
            "redelivery_conflicts": self.redelivery_conflicts,
        }


def run_policy(config: Config, ops: Iterable[Op], policy: str, figures: PolicyFigures) -> None:
    """One trace under one policy, added to `figures`. Every policy ends the same way:
    the sites that are down come back up (no wipe) and `settle` (R25), so that "keys
    that differ at the end" compares quiescent systems; `dlq-redelivered` then redelivers
    every sender's records and settles again. The largest backlog is counted from the
    observations: enqueued and forwarded events join queues, acked ones leave, a wipe
    empties its site's queues, a requeued record joins again (R11, R12, R18, R21, R22,
    R26)."""
    engine = make_engine("impl", policy_config(config, policy))
    redelivered: set[str] = set()
    depth = {s.id: 0 for s in config.senders}  # queue depths from the observations (R12)
    at_site = {site: [s.id for s in config.senders_at(site)] for site in config.sites}

    def step(op: Op) -> None:
        observations = engine.apply(op)
        if isinstance(op, SiteUp) and op.wipe and observations != [SKIPPED_SITE_UP]:
            for sender in at_site[op.site]:  # R21: the wiped site's queues are empty
                depth[sender] = 0
        for obs in observations:
            kind = obs["kind"]
            if kind == "enqueued":
                for sender in obs["senders"]:
                    depth[sender] += 1
            elif kind == "forwarded":
                depth[obs["sender"]] += 1
            elif kind == "acked":
                depth[obs["sender"]] -= len(obs["removed"])
            elif kind == "redelivery":
                figures.redelivery[obs["outcome"]] += 1
                if obs["outcome"] == "requeued":
                    redelivered.add(obs["event"])
                    depth[obs["sender"]] += 1
            elif kind == "applied" and obs["status"] == "conflict":
                figures.redelivery_conflicts += obs["event"] in redelivered
        figures.largest_backlog = max(figures.largest_backlog, *depth.values(), 0)

    for op in ops:
        step(op)
    for site, held in engine.observe()["sites"].items():
        if not held["up"]:
            step(SiteUp(int(site)))
    step(Settle())
    if policy == "dlq-redelivered":
        for sender in config.senders:
            step(Redeliver(sender.id))
        step(Settle())
    state = engine.observe()
    figures.traces += 1
    senders = state["senders"].values()
    figures.events_lost += sum(s["stats"]["events_dropped"] for s in senders)
    figures.records_left += sum(len(s["dlq"]) for s in senders)
    sites = list(state["sites"].values())
    keys = {key for site in sites for key in site["entries"]}
    figures.keys_differing += sum(
        len({repr(site["entries"].get(key)) for site in sites}) > 1 for key in keys
    )


def compare(traces: Iterable[tuple[Config, Sequence[Op]]]) -> list[PolicyFigures]:
    """Every trace under every policy; the figures, in `POLICIES` order."""
    figures = {policy: PolicyFigures(policy) for policy in POLICIES}
    for config, ops in traces:
        for policy in POLICIES:
            run_policy(config, ops, policy, figures[policy])
    return [figures[policy] for policy in POLICIES]


def render_table(figures: Sequence[PolicyFigures]) -> str:
    """The campaign summary's table."""
    header = (
        f"{'failure policy':<28}{'lost':>8}{'keys differ':>13}{'max backlog':>13}"
        f"{'records left':>14}{'requeued':>10}{'superseded':>12}{'unrecov.':>10}"
        f"{'conflicts':>11}"
    )
    lines = [header]
    for f in figures:
        r = f.redelivery
        lines.append(
            f"{TITLES[f.policy]:<28}{f.events_lost:>8,}{f.keys_differing:>13,}"
            f"{f.largest_backlog:>13,}{f.records_left:>14,}{r['requeued']:>10,}"
            f"{r['superseded']:>12,}{r['unrecoverable']:>10,}{f.redelivery_conflicts:>11,}"
        )
    return "\n".join(lines)


def compare_trace_set(path: str) -> list[PolicyFigures]:
    """`compare` on every trace of a Parquet trace set (read once, a trace at a time)."""
    from traces.parquet import open_trace_set, parse_op_cell

    trace_set = open_trace_set(path)

    def traces() -> Iterable[tuple[Config, list[Op]]]:
        for info in trace_set.traces:
            ops = [
                parse_op_cell(info.trace_id, seq, text, info.config)
                for seq, text in trace_set.ops_of(info.trace_id)
            ]
            yield info.config, ops

    return compare(traces())
