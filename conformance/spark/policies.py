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

Two more comparisons of the same traces, each a setting on every sender, on then off,
run on the model (SPEC v2.0 part 2, §16.4-16.5; every run ends as above):

- `conflation` (`enable_batch_conflation`, R32-R34): bytes shipped (full and delta),
  events conflated (`events_conflated_in_queue` + `events_conflated_from_batches`) and
  keys that differ at the end;
- `persistence` (`enable_persistence`, R36-R37), which matters only where a trace has
  `restart_sender` (or stops a serial sender): events lost (`queue_lost` observations,
  by reason), the `events_lost_on_restart` counter, events re-sent (`events_resent`) and
  keys that differ; `traces_with_restarts` says how many traces had a restart.

`OUT/policies.json` (`Comparison.to_json`): `{"policies": [one object per failure policy,
keys as PolicyFigures.to_json], "conflation": [on, off], "persistence": [on, off]}`, each
setting's object as `SettingFigures.to_json`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from traces.config import Config, parse_config
from traces.engine import Engine, make_engine
from traces.observations import Observation
from traces.ops import Op, Redeliver, RestartSender, Settle, SiteUp

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
    keys_differing_after_wipe: int = 0  # of them, in traces with a wipe (`KEYS_NOTE`)
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
            "keys_differing_after_wipe": self.keys_differing_after_wipe,
            "largest_backlog": self.largest_backlog,
            "records_left": self.records_left,
            "redelivery": dict(self.redelivery),
            "redelivery_conflicts": self.redelivery_conflicts,
        }


def run_settled(
    engine_name: str,
    config: Config,
    ops: Iterable[Op],
    watch: Callable[[Op, list[Observation]], None],
) -> Engine:
    """`ops` on a new engine, then the sites that are down back up (no wipe) and `settle`
    (R25), so that "keys that differ at the end" compares quiescent systems; `watch` sees
    every operation and its observations. Returns the engine, for more."""
    engine = make_engine(engine_name, config)
    for op in ops:
        watch(op, engine.apply(op))
    for site, held in engine.observe()["sites"].items():
        if not held["up"]:
            watch(SiteUp(int(site)), engine.apply(SiteUp(int(site))))
    watch(Settle(), engine.apply(Settle()))
    return engine


KEYS_NOTE = (
    "keys differ: keys whose entries are not the same at every site at the end (every "
    'site up, then a settle); "after a wipe": those of traces where a site came back '
    "wiped (site_up wipe, R21): its entries are gone, and WAN replication never sends "
    "entries written before again, so no failure policy or setting brings them back"
)
"""What "keys differ" counts, said under its tables (summary and report)."""


def wiped(ops: Sequence[Op]) -> bool:
    """Does the trace bring a site back wiped (R21)?"""
    return any(isinstance(op, SiteUp) and op.wipe for op in ops)


def keys_differing(state: dict[str, Any]) -> int:
    """Keys whose entries are not the same at every site."""
    sites = list(state["sites"].values())
    keys = {key for site in sites for key in site["entries"]}
    return sum(len({repr(site["entries"].get(key)) for site in sites}) > 1 for key in keys)


def run_policy(config: Config, ops: Sequence[Op], policy: str, figures: PolicyFigures) -> None:
    """One trace under one policy, added to `figures`. Every policy ends the same way
    (`run_settled`); `dlq-redelivered` then redelivers every sender's records and settles
    again. The largest backlog is counted from the observations: enqueued and forwarded
    events join queues, acked ones leave, a wipe empties its site's queues, a requeued
    record joins again (R11, R12, R18, R21, R22, R26)."""
    redelivered: set[str] = set()
    depth = {s.id: 0 for s in config.senders}  # queue depths from the observations (R12)
    at_site = {site: [s.id for s in config.senders_at(site)] for site in config.sites}

    def step(op: Op, observations: list[Observation]) -> None:
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

    engine = run_settled("impl", policy_config(config, policy), ops, step)
    if policy == "dlq-redelivered":
        after: list[Op] = [*(Redeliver(sender.id) for sender in config.senders), Settle()]
        for op in after:
            step(op, engine.apply(op))
    state = engine.observe()
    figures.traces += 1
    senders = state["senders"].values()
    figures.events_lost += sum(s["stats"]["events_dropped"] for s in senders)
    figures.records_left += sum(len(s["dlq"]) for s in senders)
    differing = keys_differing(state)
    figures.keys_differing += differing
    figures.keys_differing_after_wipe += differing if wiped(ops) else 0


# -- conflation and persistence, on and off (SPEC v2.0 part 2) ------------------------------

SETTINGS = {"conflation": "enable_batch_conflation", "persistence": "enable_persistence"}
SETTING_TITLES = {
    "conflation": "batch conflation",
    "persistence": "queue persistence",
}


def setting_config(config: Config, setting: str, enabled: bool) -> Config:
    """The trace's configuration with `setting` (a key of `SETTINGS`) on or off on every
    sender."""
    document = config.to_json()
    for sender in document["senders"]:
        sender[SETTINGS[setting]] = enabled
    return parse_config(document)


@dataclass(slots=True)
class SettingFigures:
    """What one setting, on or off, did, summed over the traces."""

    setting: str  # a key of SETTINGS
    enabled: bool
    traces: int = 0
    traces_with_restarts: int = 0  # traces with a restart_sender operation
    bytes_shipped: int = 0  # bytes_full + bytes_delta
    events_conflated_in_queue: int = 0  # R32
    events_conflated_from_batches: int = 0  # R33
    events_lost: int = 0  # queue_lost observations (R36, R37)
    lost_by_reason: dict[str, int] = field(
        default_factory=lambda: {"restart": 0, "stop": 0, "clean_queues": 0}
    )
    events_lost_on_restart: int = 0  # the counter (restarts and serial stops)
    events_resent: int = 0
    keys_differing: int = 0
    keys_differing_after_wipe: int = 0  # of them, in traces with a wipe (`KEYS_NOTE`)

    @property
    def title(self) -> str:
        return f"{SETTING_TITLES[self.setting]} {'on' if self.enabled else 'off'}"

    @property
    def events_conflated(self) -> int:
        return self.events_conflated_in_queue + self.events_conflated_from_batches

    def to_json(self) -> dict[str, Any]:
        common = {
            "setting": self.setting,
            "enabled": self.enabled,
            "title": self.title,
            "traces": self.traces,
            "keys_differing": self.keys_differing,
            "keys_differing_after_wipe": self.keys_differing_after_wipe,
        }
        if self.setting == "conflation":
            return common | {
                "bytes_shipped": self.bytes_shipped,
                "events_conflated": self.events_conflated,
                "events_conflated_in_queue": self.events_conflated_in_queue,
                "events_conflated_from_batches": self.events_conflated_from_batches,
            }
        return common | {
            "traces_with_restarts": self.traces_with_restarts,
            "events_lost": self.events_lost,
            "lost_by_reason": dict(self.lost_by_reason),
            "events_lost_on_restart": self.events_lost_on_restart,
            "events_resent": self.events_resent,
        }


def run_setting(config: Config, ops: Sequence[Op], figures: SettingFigures) -> None:
    """One trace with `figures`' setting on or off, on the model, added to `figures`."""

    def watch(op: Op, observations: list[Observation]) -> None:
        for obs in observations:
            if obs["kind"] == "queue_lost":
                figures.events_lost += 1
                figures.lost_by_reason[obs["reason"]] += 1

    engine = run_settled(
        "model", setting_config(config, figures.setting, figures.enabled), ops, watch
    )
    state = engine.observe()
    figures.traces += 1
    figures.traces_with_restarts += any(isinstance(op, RestartSender) for op in ops)
    for sender in state["senders"].values():
        stats = sender["stats"]
        figures.bytes_shipped += stats["bytes_full"] + stats["bytes_delta"]
        figures.events_conflated_in_queue += stats["events_conflated_in_queue"]
        figures.events_conflated_from_batches += stats["events_conflated_from_batches"]
        figures.events_lost_on_restart += stats["events_lost_on_restart"]
        figures.events_resent += stats["events_resent"]
    differing = keys_differing(state)
    figures.keys_differing += differing
    figures.keys_differing_after_wipe += differing if wiped(ops) else 0


@dataclass(slots=True)
class Comparison:
    """Everything `--compare-policies` computes (module docstring)."""

    policies: list[PolicyFigures]
    settings: dict[str, list[SettingFigures]]  # setting -> [on, off]

    def to_json(self) -> dict[str, Any]:
        return {"policies": [f.to_json() for f in self.policies]} | {
            setting: [f.to_json() for f in figures] for setting, figures in self.settings.items()
        }

    @staticmethod
    def merged(parts: Sequence[Comparison]) -> Comparison:
        """The comparison of all the parts' traces together (each part a disjoint set of
        traces): counts add up, the largest backlog is the largest."""
        first = parts[0]
        policies = [_merged(figures) for figures in zip(*(p.policies for p in parts), strict=True)]
        settings = {
            setting: [
                _merged(figures)
                for figures in zip(*(p.settings[setting] for p in parts), strict=True)
            ]
            for setting in first.settings
        }
        return Comparison(policies, settings)


def _merged(figures: Sequence[Any]) -> Any:
    """One figures object of several of the same policy or setting (`Comparison.merged`)."""
    values: dict[str, Any] = {}
    for name in (f.name for f in dataclasses.fields(figures[0])):
        parts = [getattr(f, name) for f in figures]
        if name == "largest_backlog":
            values[name] = max(parts)
        elif isinstance(parts[0], dict):
            values[name] = {key: sum(part[key] for part in parts) for key in parts[0]}
        elif isinstance(parts[0], int) and not isinstance(parts[0], bool):
            values[name] = sum(parts)
        else:  # the policy or setting's name, on or off: the same in every part
            values[name] = parts[0]
    return type(figures[0])(**values)


def compare(traces: Iterable[tuple[Config, Sequence[Op]]]) -> list[PolicyFigures]:
    """Every trace under every policy; the figures, in `POLICIES` order."""
    return compare_all(traces, settings=False).policies


def compare_all(
    traces: Iterable[tuple[Config, Sequence[Op]]], policies: bool = True, settings: bool = True
) -> Comparison:
    """Every trace under every policy (with `policies`; on the impl) and with each setting
    on and off (with `settings`; on the model): the traces are read once."""
    figures = {policy: PolicyFigures(policy) for policy in (POLICIES if policies else ())}
    compared = {
        setting: [SettingFigures(setting, True), SettingFigures(setting, False)]
        for setting in (SETTINGS if settings else ())
    }
    for config, ops in traces:
        for policy, policy_figures in figures.items():
            run_policy(config, ops, policy, policy_figures)
        for pair in compared.values():
            for setting_figures in pair:
                run_setting(config, ops, setting_figures)
    return Comparison(list(figures.values()), compared)


def render_table(figures: Sequence[PolicyFigures]) -> str:
    """The campaign summary's table."""
    header = (
        f"{'failure policy':<28}{'lost':>8}{'keys differ':>13}{'after a wipe':>14}"
        f"{'max backlog':>13}"
        f"{'records left':>14}{'requeued':>10}{'superseded':>12}{'unrecov.':>10}"
        f"{'conflicts':>11}"
    )
    lines = [header]
    for f in figures:
        r = f.redelivery
        lines.append(
            f"{TITLES[f.policy]:<28}{f.events_lost:>8,}{f.keys_differing:>13,}"
            f"{f.keys_differing_after_wipe:>14,}"
            f"{f.largest_backlog:>13,}{f.records_left:>14,}{r['requeued']:>10,}"
            f"{r['superseded']:>12,}{r['unrecoverable']:>10,}{f.redelivery_conflicts:>11,}"
        )
    return "\n".join(lines)


def render_settings(settings: dict[str, list[SettingFigures]]) -> str:
    """The campaign summary's tables of conflation and persistence, on and off."""
    lines = []
    if "conflation" in settings:
        lines.append(
            f"{'batch conflation (model)':<28}{'bytes shipped':>15}{'conflated':>11}"
            f"{'in queue':>10}{'in batch':>10}{'keys differ':>13}{'after a wipe':>14}"
        )
        for f in settings["conflation"]:
            lines.append(
                f"{'on' if f.enabled else 'off':<28}{f.bytes_shipped:>15,}"
                f"{f.events_conflated:>11,}{f.events_conflated_in_queue:>10,}"
                f"{f.events_conflated_from_batches:>10,}{f.keys_differing:>13,}"
                f"{f.keys_differing_after_wipe:>14,}"
            )
    if "persistence" in settings:
        first = settings["persistence"][0]
        restarts = f"{first.traces_with_restarts:,} of {first.traces:,}"
        lines.append(f"\nqueue persistence (model; {restarts} traces have restart_sender):")
        lines.append(
            f"{'queue persistence':<28}{'lost':>8}{'restart':>9}{'stop':>6}{'clean':>7}"
            f"{'lost on restart':>17}{'re-sent':>9}{'keys differ':>13}{'after a wipe':>14}"
        )
        for f in settings["persistence"]:
            r = f.lost_by_reason
            lines.append(
                f"{'on' if f.enabled else 'off':<28}{f.events_lost:>8,}{r['restart']:>9,}"
                f"{r['stop']:>6,}{r['clean_queues']:>7,}{f.events_lost_on_restart:>17,}"
                f"{f.events_resent:>9,}{f.keys_differing:>13,}"
                f"{f.keys_differing_after_wipe:>14,}"
            )
    return "\n".join(lines)


def compare_trace_set(path: str, only: Iterable[str] | None = None) -> Comparison:
    """`compare_all` on every trace of a Parquet trace set (read once, a trace at a time),
    or on the traces of ids `only` (a part of the set, `conformance.spark.glue`)."""
    from traces.parquet import open_trace_set, parse_op_cell

    trace_set = open_trace_set(path)
    chosen = None if only is None else set(only)

    def traces() -> Iterable[tuple[Config, list[Op]]]:
        for info in trace_set.traces:
            if chosen is not None and info.trace_id not in chosen:
                continue
            ops = [
                parse_op_cell(info.trace_id, seq, text, info.config)
                for seq, text in trace_set.ops_of(info.trace_id)
            ]
            yield info.config, ops

    return compare_all(traces())
