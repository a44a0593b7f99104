"""From what the sites' Geode files declare to a SPEC §2 configuration (R6, R7, R27).

What maps onto the model:

    gateway-sender   id                                  -> senders[].id (made unique, below)
                     remote-distributed-system-id        -> senders[].remote
                     batch-size                          -> senders[].batch_size
                     batch-time-interval                 -> senders[].batch_time_interval_ms
                     socket-read-timeout                 -> senders[].ack_timeout_ms (below)
                     gateway-event-failure-listener      -> senders[].failure_listener "dlq" (R24)
                     parallel                            -> senders[].parallel (§16.9)
                     dispatcher-threads (unset: 5)       -> senders[].dispatcher_threads
                     order-policy KEY|THREAD|PARTITION   -> senders[].order_policy "key"|...
                     maximum-queue-memory (MB; unset:    -> senders[].maximum_queue_memory_bytes
                       100)                                 (x 1,048,576)
                     enable-batch-conflation             -> senders[].enable_batch_conflation
                     enable-persistence                  -> senders[].enable_persistence
                     alert-threshold (ms; unset: 0)      -> senders[].alert_threshold_ms
                     manual-start                        -> senders[].manual_start (warning)
    gateway-receiver retry-attempts                      -> receivers[].retry_attempts
                     wait-time-between-retry-attempts    -> receivers[].wait_time_between_
                                                            retry_attempts_ms
    region           PARTITION* shortcut, data-policy    -> regions[site] = partition with
                     partition|persistent-partition, or     total-num-buckets (unset: 113)
                     <partition-attributes>
    gfsh             start gateway-sender [--clean-      -> operation start_sender (clean_queues)
                       queues], stop|pause|resume           stop_sender|pause_sender|
                       gateway-sender                       resume_sender (`_operations`)

The defaults are Geode's (`GatewaySender.DEFAULT_DISPATCHER_THREADS` 5,
`DEFAULT_ORDER_POLICY` KEY, `DEFAULT_MAXIMUM_QUEUE_MEMORY` 100 MB,
`PartitionAttributesFactory.GLOBAL_MAX_BUCKETS_DEFAULT` 113), not SPEC §2's, so an
imported sender behaves as the Geode one: an unset `dispatcher-threads` is 5 dispatchers
with order policy key (SPEC §16.9). `order-policy` is read in any case, as Geode
upper-cases it. Errors where Geode refuses too (SPEC R27): a parallel sender with order
policy THREAD (`GatewaySenderFactoryImpl.create()`), and a region that names a parallel
sender in `gateway-sender-ids` but is not partitioned
(`DistributedRegion.validateAsynchronousEventDispatcher()`: any region without a PARTITION
type, including one that declares no type, is a DistributedRegion there). Both are
checked for every sender of a site, also one that R6 leaves out below, because Geode
would not create the sender or the region at all. So is `group-transaction-events`
where `GatewaySenderFactoryImpl.create()` refuses it: with batch conflation, or on a
serial sender with more than one dispatcher thread (Geode's default 5 included).

`socket-read-timeout` is how long Geode's sender waits for an ack (R20's
`ack_timeout_ms`). Geode's default and the value 0 mean "wait forever"; SPEC §2 has no
such value, so it becomes `WAIT_FOREVER_MS` = 2**62 ms (146 million years): a timeout
that never fires, yet `sent_at + ack_timeout_ms` stays a signed 64-bit integer (SPEC
§3) for any time below 2**62. Geode raises a value from 1 to 29,999 to its minimum of
30,000 ms, and so does the import (with a warning).

Warnings say what Geode does that the model does not, and what the model does instead;
every setting mapped above gives none, except `manual-start="true"`, which maps to
`manual_start` and warns that events written before `start_sender` are not queued (SPEC
§16.9), naming the `start gateway-sender` that starts it, if any. What SPEC §16.10 keeps
out warns, once per sender that sets it: `disk-store-name` (a disk store's capacity,
out-of-disk and compaction), `disk-synchronous="false"` on a persistent sender (the model
loses nothing written to a persistent queue), event and substitution filters; so do a
custom conflict resolver and a cache.xml `<pdx>` (PDX type propagation). These are read
but never warn, because they change nothing the model observes: `socket-buffer-size`,
`disk-synchronous` otherwise, `group-transaction-events` (no transactions in the model,
§16.10), `enforce-threads-connect-same-receiver`, transport filters, a receiver's ports,
bind address, host name and ping interval, and gfsh's `--groups`/`--members` (a site is
one system, R1).

gfsh's `start`, `stop`, `pause` and `resume gateway-sender` are operations, not
configuration: they become `ImportedConfig.operations` (R37's `start_sender` with
`clean_queues`, `stop_sender`, `pause_sender`, `resume_sender`), in site order and then
in the order of the files, with what they do to each sender's state; see `_operations`.
`wanconform import --trace` writes them after the configuration.

What Geode would do differently in a way the model cannot express is settled here:

- Regions: a sender that no region of its site names in `gateway-sender-ids` ships
  nothing in Geode; it is left out (warning). If a site's files create no region at
  all, a warning says that the model ships every write through every sender.
- One region per site (R1, R27). The site's region is read from its *shipping* regions,
  those whose `gateway-sender-ids` name a sender the import keeps (a region on no kept
  sender ships nothing and does not count): if none of them is partitioned, the site is
  replicated (no `regions` entry, the default); if any is, the site is partitioned,
  because a parallel sender can only ship a partitioned region in Geode and a serial
  one routes a partitioned region's events by bucket (R29's order policy partition).
  Its `total_num_buckets` is that of the first shipping partitioned region (in the
  order the files create them) that a kept parallel sender ships, else of the first
  shipping partitioned region. When the shipping regions are of different types, or
  the partitioned ones have different bucket counts, one warning per site names them
  and says which was taken. A site that creates no region but has a kept parallel
  sender is read as partitioned with 113 buckets (warning): the only kind a parallel
  sender ships.
- Sender ids are per site in Geode and global in a trace (SPEC §13): an id used at
  several sites becomes `SITE/ID` (`1/sender3`) with a warning naming the user's id.
- A serial and a parallel sender to the same remote (not modelled, SPEC §16.10): the
  serial one is kept, as a serial sender, and the parallel one left out (warning); two
  of a kind is an R6 error. A parallel sender alone to its remote imports as parallel.
- A sender to a site that declares no gateway-receiver can never connect, and a site
  whose files declare no gateway at all, or an import left with no sender, imports
  nothing useful: these are errors, unless `allow_partial`, which leaves such senders
  out (warning) and accepts the rest.

Values are checked by `traces.config.parse_config`, so an imported configuration obeys
exactly the rules of a hand-written one; errors name file, line and attribute.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from traces.config import DEFAULT_BUCKETS, INT32_MAX, Config, parse_config
from traces.errors import ConfigError
from traces.geode.declarations import (
    GeodeImportError,
    ReceiverDeclaration,
    RegionDeclaration,
    SenderCommand,
    SenderDeclaration,
    SiteDeclarations,
    Written,
    geode_boolean,
)
from traces.ops import Op, PauseSender, ResumeSender, StartSender, StopSender
from traces.text import plural

WAIT_FOREVER_MS = 2**62
"""`ack_timeout_ms` for Geode's `socket-read-timeout` 0 (its default): never times out."""

MINIMUM_SOCKET_READ_TIMEOUT_MS = 30_000
"""Geode raises a non-zero `socket-read-timeout` below this to this value."""

GEODE_DISPATCHER_THREADS = 5
"""Geode's `GatewaySender.DEFAULT_DISPATCHER_THREADS`: an unset `dispatcher-threads`."""

MEGABYTE = 1_048_576
"""Geode's unit of `maximum-queue-memory`."""

_ORDER_POLICIES = ("KEY", "THREAD", "PARTITION")  # Geode's GatewaySender.OrderPolicy
_INTEGER = re.compile(r"[+-]?[0-9]+")
_FIELD_ERROR = re.compile(r"^(?:senders|receivers)\[0\]\.(\w+): (.*)$", re.DOTALL)

# Geode attribute -> SPEC §2 field, for the integer settings copied as they are.
_SENDER_INTEGERS = {
    "remote-distributed-system-id": "remote",
    "batch-size": "batch_size",
    "batch-time-interval": "batch_time_interval_ms",
}
_SENDER_FLAGS = {  # Geode boolean attribute -> SPEC R27 field, copied as it is (§16.9)
    "enable-batch-conflation": "enable_batch_conflation",
    "enable-persistence": "enable_persistence",
    "manual-start": "manual_start",
}
_SENDER_V2 = {  # Geode attribute -> SPEC R27 field, read by their own functions below
    "parallel": "parallel",
    "dispatcher-threads": "dispatcher_threads",
    "order-policy": "order_policy",
    "maximum-queue-memory": "maximum_queue_memory_bytes",
    "alert-threshold": "alert_threshold_ms",
    **_SENDER_FLAGS,
}
_RECEIVER_INTEGERS = {
    "retry-attempts": "retry_attempts",
    "wait-time-between-retry-attempts": "wait_time_between_retry_attempts_ms",
}

_RECEIVER_TRUE_DIFFERS = {
    "manual-start": (
        "Geode's receiver accepts no connection until 'start gateway-receiver'; the "
        "model's receiver accepts batches from the start"
    ),
}
_BOOLEANS = (
    "parallel",
    *_SENDER_FLAGS,
    "disk-synchronous",
    "group-transaction-events",
    "enforce-threads-connect-same-receiver",
)
_DISK_STORE_DIFFERS = (
    "the model's queue overflows (R35) and persists (R36) to a disk without limit; a "
    "disk store's capacity, running out of disk and oplog compaction are not modelled "
    "(SPEC §16.10)"
)
_ASYNCHRONOUS_DISK_DIFFERS = (
    "Geode writes the persistent queue to disk asynchronously, so a crash can lose the "
    "events not yet written; the model's restart_sender keeps every queued event (R36; "
    "disk-synchronous false is not modelled, SPEC §16.10)"
)
_CHANGING_FILTERS = ("gateway-event-filter", "gateway-event-substitution-filter")


@dataclass(frozen=True, slots=True)
class ImportedConfig:
    """A SPEC §2 configuration and the warnings about where it differs from Geode."""

    config: Config
    warnings: tuple[str, ...]
    sender_names: Mapping[str, str]
    """Model sender id -> the id the user wrote (they differ when made unique)."""
    operations: tuple[Op, ...] = ()
    """gfsh's start/stop/pause/resume gateway-sender as R37 operations (`_operations`)."""


@dataclass(slots=True)
class _Sender:
    """One sender on its way into the configuration."""

    declaration: SenderDeclaration
    site: int
    raw: dict[str, Any]
    parallel: bool
    warnings: list[str]
    """Where it differs from Geode; reported only if the sender is kept."""


def map_sites(sites: Mapping[int, SiteDeclarations], allow_partial: bool = False) -> ImportedConfig:
    """Build and validate the SPEC §2 configuration of all sites (sorted by dsid)."""
    site_ids = sorted(sites)
    warnings: list[str] = [w for site in site_ids for w in sites[site].warnings]

    def partial(message: str) -> None:
        """An input that imports only in part: an error unless allow_partial."""
        if not allow_partial:
            raise GeodeImportError(f"{message} (--allow-partial imports the rest)")
        warnings.append(message)

    for site in site_ids:
        declared = sites[site]
        if not declared.senders and declared.receiver is None:
            partial(
                f"{_files(declared)}: site {site} declares no gateway-sender and no "
                "gateway-receiver: nothing of it is a WAN gateway"
            )
    senders: list[_Sender] = []
    for site in site_ids:
        declared = sites[site]
        warnings.extend(_site_warnings(site, declared))
        attached = _attached_senders(site, declared, warnings)
        parsed = {
            d.id: _sender(d, site, site_ids, declared.commands) for d in declared.senders.values()
        }
        _check_parallel_regions(declared, parsed)
        for declaration in declared.senders.values():
            sender = parsed[declaration.id]
            if attached is not None and declaration.id not in attached:
                warnings.append(
                    f"{declaration.where}: {declaration.label}: no region of site {site} "
                    "names it in gateway-sender-ids, so Geode ships nothing through it; "
                    "left out (the model would ship every write)"
                )
                continue
            senders.append(sender)
    senders = _one_per_pair(senders, warnings)
    receivers = {
        site: _receiver(sites[site].receiver, site, warnings)
        for site in site_ids
        if sites[site].receiver is not None
    }
    connectable = []
    for sender in senders:
        remote = sender.raw["remote"]
        if remote in receivers:
            connectable.append(sender)
            continue
        partial(
            f"{sender.declaration.where}: {sender.declaration.label}: site {remote} "
            f"({_files(sites[remote])}) declares no gateway-receiver, so this sender can "
            "never connect"
        )
    senders = connectable
    for sender in senders:
        warnings.extend(sender.warnings)
        warnings.extend(_missing_remote_regions(sender, sites))
    if not senders:
        partial("no gateway-sender to import: events never leave their site")
    regions = {}
    for site in site_ids:
        kept = [s for s in senders if s.site == site]
        region = _site_region(site, sites[site], kept, warnings)
        if region is not None:
            regions[str(site)] = region
    names = _unique_ids(senders, warnings)
    try:
        config = parse_config(
            {
                "sites": site_ids,
                "senders": [s.raw for s in senders],
                "receivers": list(receivers.values()),
                "regions": regions,
            }
        )
    except ConfigError as exc:  # checked piecewise above; kept as a safety net
        raise GeodeImportError(f"imported configuration: {exc}") from None
    return ImportedConfig(
        config=config,
        warnings=tuple(warnings),
        sender_names=names,
        operations=_operations(sites, senders),
    )


def _missing_remote_regions(sender: _Sender, sites: Mapping[int, SiteDeclarations]) -> list[str]:
    """A warning for each region shipping through `sender` that its remote site's files
    do not create (when they create any): Geode's receiver fails those events ("Region
    ... was not found during batch create request", `GatewayReceiverCommand`), and the
    sender logs the batch exception and removes the batch as acknowledged
    (`GatewaySenderEventRemoteDispatcher`)."""
    remote = sender.raw["remote"]
    remote_regions = sites[remote].regions
    if not remote_regions:
        return []  # which regions the remote site has is not known
    declaration = sender.declaration
    return [
        f"{region.where}: region {region.name!r} ships through {declaration.label}, but "
        f"site {remote} ({_files(sites[remote])}) creates no region {region.name!r} (its "
        f"regions: {', '.join(sorted(remote_regions))}); Geode's receiver fails these "
        "events (region not found) and the sender drops them after logging it; the model "
        "applies them to the remote site's one region (R1)"
        for region in sites[sender.site].regions.values()
        if declaration.id in region.senders() and region.name not in remote_regions
    ]


def _operations(sites: Mapping[int, SiteDeclarations], senders: list[_Sender]) -> tuple[Op, ...]:
    """The gfsh sender commands as R37 operations: sites by dsid, each in file order.

    A kept sender starts running, or stopped with `manual_start`. A command that Geode
    answers without acting, because of the sender's state, gives no operation, exactly
    where R37's operation would not be enabled: `start` on a running sender ('is already
    started': its queue is not cleaned either), `stop` or `pause` on one that does not
    run, `pause` on a paused one, `resume` on one not paused. Commands on a sender the
    import leaves out are dropped with it."""
    kept = {(s.site, s.declaration.id): s for s in senders}
    # (running, paused) per kept sender, as each command leaves it
    state = {key: (not s.raw.get("manual_start", False), False) for key, s in kept.items()}
    operations: list[Op] = []
    for site in sorted(sites):
        for command in sites[site].commands:
            key = (site, command.sender)
            if key not in kept:
                continue
            running, paused = state[key]
            sender = kept[key].raw["id"]
            operation: Op
            if command.action == "start" and not running:
                operation, state[key] = StartSender(sender, command.clean_queues), (True, False)
            elif command.action == "stop" and running:
                operation, state[key] = StopSender(sender), (False, False)
            elif command.action == "pause" and running and not paused:
                operation, state[key] = PauseSender(sender), (True, True)
            elif command.action == "resume" and paused:
                operation, state[key] = ResumeSender(sender), (True, False)
            else:
                continue
            operations.append(operation)
    return tuple(operations)


def _files(site: SiteDeclarations) -> str:
    return ", ".join(site.files)


def _site_warnings(site: int, declared: SiteDeclarations) -> list[str]:
    warnings = []
    resolver = declared.conflict_resolver
    if resolver is not None:
        warnings.append(
            f"{resolver.where}: {resolver.name} {resolver.value}: Geode lets this class "
            "decide between conflicting events of different sites; the model always "
            "applies R16.3 (higher timestamp wins, then higher dsid; custom "
            "GatewayConflictResolvers are not modelled, SPEC §16.10)"
        )
    for region in declared.regions.values():
        checks = region.concurrency_checks
        if checks is not None and not _boolean(checks, f"region {region.name!r}"):
            warnings.append(
                f"{checks.where}: region {region.name!r}: {checks.name}={checks.value}: "
                "Geode then applies every arriving event without comparing versions, so "
                "the last arrival wins; the model always resolves conflicts by version "
                "(R16.3)"
            )
    return warnings


def _attached_senders(
    site: int, declared: SiteDeclarations, warnings: list[str]
) -> set[str] | None:
    """The senders some region names, or None when the files create no region."""
    if not declared.regions:
        if declared.senders:
            warnings.append(
                f"{_files(declared)}: site {site}: the files create no region, so which "
                f"regions ship through {plural(len(declared.senders), 'sender')} "
                f"{', '.join(sorted(declared.senders))} is not known; the model ships "
                "every write of the site through them (Geode ships only the regions "
                "whose gateway-sender-ids name a sender)"
            )
        return None
    attached: set[str] = set()
    distinct: dict[tuple[str, ...], str] = {}
    for region in declared.regions.values():
        ids = region.senders()
        for sender_id in ids:
            if sender_id not in declared.senders:
                written = region.sender_ids
                assert written is not None  # ids come from it
                blanks = (
                    f" (Geode does not trim the blanks around {sender_id.strip()!r} in "
                    "cache.xml; write the ids without them)"
                    if sender_id.strip() in declared.senders
                    else ""
                )
                warnings.append(
                    f"{written.where}: region {region.name!r}: {written.name} names "
                    f"{sender_id!r}, which site {site} does not have; Geode ships nothing "
                    f"through it; ignored{blanks}"
                )
        attached.update(ids)
        if ids:
            distinct.setdefault(tuple(sorted(set(ids))), region.name)
    if len(distinct) > 1:
        described = "; ".join(f"{name}: {', '.join(ids)}" for ids, name in distinct.items())
        warnings.append(
            f"{_files(declared)}: site {site}: regions ship through different senders "
            f"({described}); the model has one region per site (R1), whose writes every "
            "one of these senders ships"
        )
    return attached


def _check_parallel_regions(declared: SiteDeclarations, senders: Mapping[str, _Sender]) -> None:
    """R27: a region that names a parallel sender must be partitioned, as in Geode
    (`DistributedRegion.validateAsynchronousEventDispatcher()`); checked for every sender
    of the site, also one that R6 leaves out, since Geode would not create the region."""
    for region in declared.regions.values():
        for sender_id in region.senders():
            sender = senders.get(sender_id)
            if sender is None or not sender.parallel or region.partitioned:
                continue
            written = region.sender_ids
            assert written is not None  # the ids come from it
            kind = region.type
            declared_as = (
                f"{kind.name}={kind.value} at {kind.where}"
                if kind is not None
                else "it declares no PARTITION type"
            )
            raise GeodeImportError(
                f"{written.where}: region {region.name!r}: parallel gateway sender "
                f"{sender_id!r} cannot be used with a replicated region ({declared_as}; Geode: "
                f"'Parallel Gateway Sender {sender_id} can not be used with replicated region "
                f"{region.name}'; SPEC R27)"
            )


def _buckets(region: RegionDeclaration) -> int:
    """A partitioned region's `total-num-buckets` (Geode's default 113)."""
    written = region.total_num_buckets
    if written is None:
        return DEFAULT_BUCKETS
    label = f"region {region.name!r}: {written.name}"
    if not _INTEGER.fullmatch(written.value.strip()):
        raise GeodeImportError(
            f"{written.where}: {label}: must be an integer, got {written.value!r}"
        )
    buckets = int(written.value)
    if not 1 <= buckets <= INT32_MAX:  # Geode: PartitionAttributesImpl.validateAttributes()
        raise GeodeImportError(
            f"{written.where}: {label}: must be from 1 to {INT32_MAX} (Geode refuses "
            f"'TotalNumBuckets {buckets}'), got {buckets}"
        )
    return buckets


def _site_region(
    site: int, declared: SiteDeclarations, kept: list[_Sender], warnings: list[str]
) -> dict[str, Any] | None:
    """R27: the one region of a site, from the regions that ship through its kept
    senders (see the module docstring); None for a replicated one (the default)."""
    partitioned_buckets = {
        name: _buckets(region) for name, region in declared.regions.items() if region.partitioned
    }
    ids = {s.declaration.id for s in kept}
    parallel = sorted(s.declaration.id for s in kept if s.parallel)
    if not declared.regions:
        if not parallel:
            return None
        warnings.append(
            f"{_files(declared)}: site {site}: parallel {_senders(parallel)} and no region: the "
            f"site's region is read as partitioned with Geode's default {DEFAULT_BUCKETS} "
            "buckets, the only kind a parallel sender ships (R27)"
        )
        return {"type": "partition"}
    shipping = [r for r in declared.regions.values() if ids & set(r.senders())]
    for region in shipping:
        written = region.type
        if written is not None and _unmodelled(written.value):
            kind = "partitioned" if region.partitioned else "replicated"
            warnings.append(
                f"{written.where}: region {region.name!r}: {written.name} {written.value}: "
                "only replicate and partition data policies are modelled (SPEC §16.10), "
                f"not a local, normal or preloaded region; read as {kind}"
            )
    partitioned = [r for r in shipping if r.partitioned]
    if not partitioned:
        return None
    chosen = next((r for r in partitioned if set(parallel) & set(r.senders())), partitioned[0])
    buckets = partitioned_buckets[chosen.name]
    replicated = [r for r in shipping if not r.partitioned]
    if replicated or any(partitioned_buckets[r.name] != buckets for r in partitioned):
        listed = ", ".join(f"{r.name} ({partitioned_buckets[r.name]} buckets)" for r in partitioned)
        if replicated:
            listed += f"; replicated: {', '.join(r.name for r in replicated)}"
        with_parallel = sorted(set(parallel) & set(chosen.senders()))
        reason = (
            f"the region of parallel {_senders(with_parallel)}"
            if with_parallel
            else "the first partitioned one"
        )
        warnings.append(
            f"{_files(declared)}: site {site}: the regions that ship through its senders "
            f"differ (partitioned: {listed}); the model has one region per site (R1, R27): "
            f"partitioned with {buckets} buckets, as {chosen.name}, {reason}"
        )
    return {"type": "partition", "total_num_buckets": buckets}


def _at(written: Written, declaration: SenderDeclaration | ReceiverDeclaration) -> str:
    """Where a setting was written and by which command (an alter's own)."""
    return f"{written.where}: {written.label or declaration.label}"


def _unmodelled(region_type: str) -> bool:
    """A data policy or region shortcut that is neither replicate nor partition as the
    model has them (SPEC §16.10): a local region, or data policy normal or preloaded. (A
    proxy, data policy empty, is a member's accessor of its site's replicated or
    partitioned data, which the model has whole.)"""
    value = region_type.strip()
    return value in ("normal", "preloaded") or value.upper().startswith("LOCAL")


def _senders(ids: list[str]) -> str:
    return f"{'sender' if len(ids) == 1 else 'senders'} {', '.join(ids)}"


def _integer(declaration: SenderDeclaration | ReceiverDeclaration, written: Written) -> int:
    if not _INTEGER.fullmatch(written.value.strip()):
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}: must be an integer, "
            f"got {written.value!r}"
        )
    return int(written.value)


def _sender_integer(declaration: SenderDeclaration, written: Written) -> int:
    """An integer setting of a sender, which Geode holds in a Java int: a larger one is a
    NumberFormatException in cache.xml and an invalid option value in gfsh."""
    value = _integer(declaration, written)
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}: must be from {-INT32_MAX - 1} to "
            f"{INT32_MAX} (a Java int), got {value}"
        )
    return value


def _boolean(written: Written, label: str) -> bool:
    try:
        return geode_boolean(written.value, gfsh=written.name.startswith("--"))
    except ValueError as exc:
        raise GeodeImportError(f"{written.where}: {label}: {written.name}: {exc}") from None


def _sender(
    declaration: SenderDeclaration, site: int, sites: list[int], commands: list[SenderCommand]
) -> _Sender:
    warnings: list[str] = []
    settings = declaration.settings
    label = declaration.label
    raw: dict[str, Any] = {"id": declaration.id, "site": site}
    for name, spec_field in _SENDER_INTEGERS.items():
        if name in settings:
            raw[spec_field] = _sender_integer(declaration, settings[name])
    remote = raw["remote"]
    if remote not in sites:
        remote_id = settings["remote-distributed-system-id"]
        raise GeodeImportError(
            f"{remote_id.where}: {label}: {remote_id.name}: site {remote} has no --site "
            f"(imported sites: {', '.join(map(str, sites))})"
        )
    raw["ack_timeout_ms"] = _ack_timeout(declaration, warnings)
    flags = {name: _boolean(settings[name], label) for name in _BOOLEANS if name in settings}
    for name, spec_field in _SENDER_FLAGS.items():
        if name in flags:
            raw[spec_field] = flags[name]
    if flags.get("manual-start"):
        warnings.append(_manual_start_warning(declaration, commands))
    if "disk-store-name" in settings:
        written = settings["disk-store-name"]
        warnings.append(
            f"{written.where}: {label}: {written.name}={written.value}: {_DISK_STORE_DIFFERS}"
        )
    if flags.get("disk-synchronous") is False and flags.get("enable-persistence"):
        written = settings["disk-synchronous"]
        warnings.append(
            f"{written.where}: {label}: {written.name}={written.value}: "
            f"{_ASYNCHRONOUS_DISK_DIFFERS}"
        )
    parallel = flags.get("parallel", False)
    raw["parallel"] = parallel
    raw["dispatcher_threads"] = _dispatcher_threads(declaration)
    raw["order_policy"] = _order_policy(declaration, parallel)
    _check_grouped_transactions(declaration, flags, raw["dispatcher_threads"])
    megabytes = _java_int(declaration, "maximum-queue-memory", "megabytes")
    if megabytes is not None:  # unset: Geode's 100 MB, SPEC R27's default too
        raw["maximum_queue_memory_bytes"] = megabytes * MEGABYTE
    threshold = _java_int(declaration, "alert-threshold", "ms")
    if threshold is not None:  # unset: Geode's DEFAULT_ALERT_THRESHOLD 0, off (R38)
        raw["alert_threshold_ms"] = threshold
    for written in declaration.filters:
        kind = written.name.strip("<>-")
        if kind in _CHANGING_FILTERS:
            warnings.append(
                f"{_at(written, declaration)}: {written.name} {written.value}: Geode lets "
                "this class drop or change events before they are queued; the model "
                "ships every event unchanged (event and substitution filters are not "
                "modelled, SPEC §16.10)"
            )
    listener = declaration.failure_listener
    if listener is not None:
        raw["failure_listener"] = "dlq"
        warnings.append(
            f"{listener.where}: {label}: {listener.name} {listener.value}: the dead-letter "
            "proposal's listener, which Geode 1.15 does not have (SPEC §13); modelled as "
            'failure_listener "dlq" (R24)'
        )
    _validated(declaration, "senders", raw, sites)
    return _Sender(declaration, site, raw, parallel, warnings)


def _dispatcher_threads(declaration: SenderDeclaration) -> int:
    """`dispatcher-threads`; unset is Geode's `DEFAULT_DISPATCHER_THREADS`, 5 (SPEC §16.9)."""
    written = declaration.settings.get("dispatcher-threads")
    if written is None:
        return GEODE_DISPATCHER_THREADS
    threads = _sender_integer(declaration, written)
    if threads < 1:  # GatewaySenderFactoryImpl.create(): "... dispatcher threads less than 1"
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}: must be >= 1, got {threads}"
        )
    return threads


def _check_grouped_transactions(
    declaration: SenderDeclaration, flags: Mapping[str, bool], threads: int
) -> None:
    """`group-transaction-events="true"` is refused by Geode's
    `GatewaySenderFactoryImpl.create()` with batch conflation, and on a serial sender
    with more than one dispatcher thread, Geode's default 5 included (gfsh's create and
    alter refuse both too); the model has no transactions, but Geode would not create
    the sender."""
    if not flags.get("group-transaction-events"):
        return
    written = declaration.settings["group-transaction-events"]
    if flags.get("enable-batch-conflation"):
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}={written.value}: not with "
            "enable-batch-conflation true (Geode: 'GatewaySender "
            f"{declaration.id} cannot be created with both group transaction events set "
            "to true and batch conflation enabled')"
        )
    if not flags.get("parallel") and threads > 1:
        unset = "" if "dispatcher-threads" in declaration.settings else " (Geode's default)"
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}={written.value}: a serial "
            f"sender with dispatcher-threads {threads}{unset} cannot group transaction "
            "events: set dispatcher-threads to 1 (Geode: 'SerialGatewaySender "
            f"{declaration.id} cannot be created with group transaction events set to "
            "true when dispatcher threads is greater than 1')"
        )


def _order_policy(declaration: SenderDeclaration, parallel: bool) -> str:
    """`order-policy` KEY, THREAD or PARTITION in any case (Geode upper-cases it); unset is
    Geode's `DEFAULT_ORDER_POLICY`, KEY. A parallel sender refuses THREAD (R27)."""
    written = declaration.settings.get("order-policy")
    if written is None:
        return "key"
    policy = written.value.strip().upper()
    if policy not in _ORDER_POLICIES:
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}: must be KEY, THREAD or "
            f"PARTITION, got {written.value!r}"
        )
    if parallel and policy == "THREAD":
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}={written.value}: a "
            "parallel sender cannot use the thread order policy (Geode: 'Parallel Gateway "
            f"Sender {declaration.id} can not be created with OrderPolicy THREAD'; SPEC R27)"
        )
    return policy.lower()


def _java_int(declaration: SenderDeclaration, name: str, unit: str) -> int | None:
    """A setting Geode holds in a Java int that R27 needs >= 0 (`maximum-queue-memory`,
    `alert-threshold`), as written in `unit`; None when it is not set."""
    written = declaration.settings.get(name)
    if written is None:
        return None
    value = _integer(declaration, written)
    if not 0 <= value <= INT32_MAX:
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}: must be from 0 to "
            f"{INT32_MAX} {unit} (a Java int), got {value}"
        )
    return value


def _manual_start_warning(declaration: SenderDeclaration, commands: list[SenderCommand]) -> str:
    """`manual-start="true"` maps to `manual_start` (§16.9); what it costs, and what starts
    the sender: the site's first `start gateway-sender` for it, if any."""
    written = declaration.settings["manual-start"]
    start = next((c for c in commands if c.action == "start" and c.sender == declaration.id), None)
    started = (
        f"{start.where}: '{start.text}' becomes the operation start_sender"
        if start is not None
        else "no 'start gateway-sender' in the files: it stays stopped until a trace's start_sender"
    )
    return (
        f"{_at(written, declaration)}: {written.name}={written.value}: the sender "
        "begins stopped (manual_start, R37), as in Geode: events written before start_sender "
        "are not queued, so never reach the remote site (Geode deprecates manual start as "
        f"likely to cause data loss); {started}"
    )


def _ack_timeout(declaration: SenderDeclaration, warnings: list[str]) -> int:
    """R20's ack timeout from `socket-read-timeout` (see the module docstring)."""
    written = declaration.settings.get("socket-read-timeout")
    if written is None:
        return WAIT_FOREVER_MS
    timeout = _sender_integer(declaration, written)
    if timeout < 0:
        raise GeodeImportError(
            f"{_at(written, declaration)}: {written.name}: must be >= 0 "
            f"(0 = wait forever), got {timeout}"
        )
    if timeout == 0:
        return WAIT_FOREVER_MS
    if timeout < MINIMUM_SOCKET_READ_TIMEOUT_MS:
        warnings.append(
            f"{_at(written, declaration)}: {written.name}={timeout} is below "
            f"Geode's minimum of {MINIMUM_SOCKET_READ_TIMEOUT_MS} ms: Geode uses "
            f"{MINIMUM_SOCKET_READ_TIMEOUT_MS}, and so does the model (ack_timeout_ms)"
        )
        return MINIMUM_SOCKET_READ_TIMEOUT_MS
    return timeout


def _one_per_pair(senders: list[_Sender], warnings: list[str]) -> list[_Sender]:
    """R6: one sender per (site, remote); of a serial and a parallel one, keep the serial."""
    by_pair: dict[tuple[int, int], list[_Sender]] = {}
    for sender in senders:
        by_pair.setdefault((sender.site, sender.raw["remote"]), []).append(sender)
    kept = []
    for (site, remote), group in by_pair.items():
        serial = [s for s in group if not s.parallel]
        if len(group) == 1:
            kept.append(group[0])
            continue
        if len(serial) != 1 or len(group) != 2:
            first, second = group[0].declaration, group[1].declaration
            raise GeodeImportError(
                f"{second.where}: {second.label}: site {site} already has a sender to site "
                f"{remote} ({first.where}); R6 allows one per pair of sites (Geode only "
                "one serial and one parallel)"
            )
        parallel = next(s for s in group if s.parallel).declaration
        warnings.append(
            f"{parallel.where}: {parallel.label}: site {site} also has the serial sender "
            f"{serial[0].declaration.id!r} to site {remote}; R6 allows one per pair of "
            "sites: the parallel sender is left out, the serial one kept"
        )
        kept.append(serial[0])
    return sorted(kept, key=lambda s: (s.site, s.raw["id"]))


def _unique_ids(senders: list[_Sender], warnings: list[str]) -> dict[str, str]:
    """Rename ids used at several sites to `SITE/ID` (SPEC §13); model id -> user's id.

    An id used at one site that is written as another's `SITE/ID` (`1/x` at site 2, when
    `x` is at sites 1 and 2) is renamed too, until no two model ids are the same (a
    `SITE/ID` is unique: a site has one sender of an id)."""
    sites_of = Counter(sender.declaration.id for sender in senders)
    renamed = {i for i, sender in enumerate(senders) if sites_of[sender.declaration.id] > 1}
    while True:
        taken = {f"{senders[i].site}/{senders[i].declaration.id}" for i in renamed}
        clashing = {
            i for i, s in enumerate(senders) if i not in renamed and s.declaration.id in taken
        }
        if not clashing:
            break
        renamed |= clashing
    names = {}
    for i, sender in enumerate(senders):
        written_id = sender.declaration.id
        if i in renamed:
            sender.raw["id"] = f"{sender.site}/{written_id}"
            others = sorted(s.site for s in senders if s.declaration.id == written_id)
            why = (
                f"is used at sites {', '.join(map(str, others))}"
                if len(others) > 1
                else "is the model name of another site's sender"
            )
            warnings.append(
                f"{sender.declaration.where}: {sender.declaration.label}: sender id "
                f"{written_id!r} {why} (Geode's ids are per site, a trace's are global): "
                f"named {sender.raw['id']!r} in the model"
            )
        names[sender.raw["id"]] = written_id
    return names


def _receiver(
    declaration: ReceiverDeclaration | None, site: int, warnings: list[str]
) -> dict[str, Any]:
    assert declaration is not None
    raw: dict[str, Any] = {"site": site}
    for name, spec_field in _RECEIVER_INTEGERS.items():
        if name in declaration.settings:
            raw[spec_field] = _integer(declaration, declaration.settings[name])
    for name, difference in _RECEIVER_TRUE_DIFFERS.items():
        written = declaration.settings.get(name)
        if written is not None and _boolean(written, declaration.label):
            warnings.append(
                f"{_at(written, declaration)}: {written.name}={written.value}: {difference}"
            )
    _validated(declaration, "receivers", raw, [site])
    return raw


def _validated(
    declaration: SenderDeclaration | ReceiverDeclaration,
    key: str,
    raw: dict[str, Any],
    sites: list[int],
) -> None:
    """Check one sender or receiver with `parse_config`; errors quote the Geode name.

    A parallel sender is checked as if its site were partitioned: its regions are checked
    by `_check_parallel_regions`, with Geode's message."""
    check: dict[str, Any] = {"sites": sites, key: [raw]}
    if raw.get("parallel"):
        check["regions"] = {str(raw["site"]): {"type": "partition"}}
    try:
        parse_config(check)
    except ConfigError as exc:
        message = str(exc)
        match = _FIELD_ERROR.match(message)
        if match is None:
            raise GeodeImportError(f"{declaration.where}: {declaration.label}: {message}") from None
        spec_field, problem = match.groups()
        by_field = {**_SENDER_INTEGERS, **_RECEIVER_INTEGERS, **_SENDER_V2, "id": "id"}
        geode_name = next((g for g, f in by_field.items() if f == spec_field), spec_field)
        written = declaration.settings.get(geode_name)
        if written is None:
            where = f"{declaration.where}: {declaration.label}: {geode_name}"
        else:  # named by the command that wrote it (an alter's own)
            where = f"{_at(written, declaration)}: {written.name}"
        raise GeodeImportError(f"{where}: {problem}") from None
