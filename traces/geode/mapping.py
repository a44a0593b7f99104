"""From what the sites' Geode files declare to a SPEC §2 configuration (R6, R7).

What maps onto the model:

    gateway-sender   id                                  -> senders[].id (made unique, below)
                     remote-distributed-system-id        -> senders[].remote
                     batch-size                          -> senders[].batch_size
                     batch-time-interval                 -> senders[].batch_time_interval_ms
                     socket-read-timeout                 -> senders[].ack_timeout_ms (below)
                     gateway-event-failure-listener      -> senders[].failure_listener "dlq" (R24)
    gateway-receiver retry-attempts                      -> receivers[].retry_attempts
                     wait-time-between-retry-attempts    -> receivers[].wait_time_between_
                                                            retry_attempts_ms

`socket-read-timeout` is how long Geode's sender waits for an ack (R20's
`ack_timeout_ms`). Geode's default and the value 0 mean "wait forever"; SPEC §2 has no
such value, so it becomes `WAIT_FOREVER_MS` = 2**62 ms (146 million years): a timeout
that never fires, yet `sent_at + ack_timeout_ms` stays a signed 64-bit integer (SPEC
§3) for any time below 2**62. Geode raises a value from 1 to 29,999 to its minimum of
30,000 ms, and so does the import (with a warning).

Warnings say what Geode does that the model does not, and what the model does instead;
a setting whose value the model matches (`parallel="false"`, `dispatcher-threads="1"`,
`enable-batch-conflation="false"`, `enable-persistence="false"`, ...) gives none. The
settings of what SPEC §13 lists as not modelled warn once per sender that sets them:
`enable-persistence="true"` and `disk-synchronous` (queue persistence),
`maximum-queue-memory` (overflow to disk), `disk-store-name` (the disk store of both);
so do `parallel`, `enable-batch-conflation` and a cache.xml `<pdx>` (PDX type
propagation). These are read but never warn,
because they change nothing the model observes: `socket-buffer-size`, `alert-threshold`,
`order-policy` (it orders the several dispatchers that `dispatcher-threads` > 1
warns about), `group-transaction-events` (no transactions in the model),
`enforce-threads-connect-same-receiver`, transport filters, a receiver's ports, bind
address, host name and ping interval, and gfsh's `--groups`/`--members` (a site is one
system, R1). An unset `dispatcher-threads` (Geode's default 5, with order-policy KEY,
which keeps each key's events in order) is read as the model's one dispatcher.

What Geode would do differently in a way the model cannot express is settled here:

- Regions: a sender that no region of its site names in `gateway-sender-ids` ships
  nothing in Geode; it is left out (warning). If a site's files create no region at
  all, a warning says that the model ships every write through every sender.
- Sender ids are per site in Geode and global in a trace (SPEC §13): an id used at
  several sites becomes `SITE/ID` (`1/sender3`) with a warning naming the user's id.
- A serial and a parallel sender to the same remote: the serial one is kept and the
  parallel one left out (warning); two of a kind is an R6 error.
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

from traces.config import Config, parse_config
from traces.errors import ConfigError
from traces.geode.declarations import (
    GeodeImportError,
    ReceiverDeclaration,
    SenderDeclaration,
    SiteDeclarations,
    Written,
)
from traces.text import plural

WAIT_FOREVER_MS = 2**62
"""`ack_timeout_ms` for Geode's `socket-read-timeout` 0 (its default): never times out."""

MINIMUM_SOCKET_READ_TIMEOUT_MS = 30_000
"""Geode raises a non-zero `socket-read-timeout` below this to this value."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_FIELD_ERROR = re.compile(r"^(?:senders|receivers)\[0\]\.(\w+): (.*)$", re.DOTALL)

# Geode attribute -> SPEC §2 field, for the integer settings copied as they are.
_SENDER_INTEGERS = {
    "remote-distributed-system-id": "remote",
    "batch-size": "batch_size",
    "batch-time-interval": "batch_time_interval_ms",
}
_RECEIVER_INTEGERS = {
    "retry-attempts": "retry_attempts",
    "wait-time-between-retry-attempts": "wait_time_between_retry_attempts_ms",
}

# Boolean sender settings whose `true` the model does not do: what Geode then does.
_SENDER_TRUE_DIFFERS = {
    "parallel": (
        "Geode's parallel sender keeps one queue per bucket on every member and ships "
        "them independently, so events of different keys may arrive in another order; "
        "the model ships them as one serial sender (R12, SPEC §13)"
    ),
    "manual-start": (
        "Geode does not start the sender until 'start gateway-sender'; the model's "
        "sender runs from the start"
    ),
    "enable-batch-conflation": (
        "Geode replaces a queued update of a key by a later one of the same key; the "
        "model ships every update (batch conflation is not modelled, SPEC §13)"
    ),
}
_RECEIVER_TRUE_DIFFERS = {
    "manual-start": (
        "Geode's receiver accepts no connection until 'start gateway-receiver'; the "
        "model's receiver accepts batches from the start"
    ),
}
_SENDER_TRUE_DIFFERS["enable-persistence"] = (
    "Geode writes the queue to a disk store and recovers it when the member restarts; "
    "the model keeps the queue in memory across site_down/site_up and loses it with a "
    "wipe (queue persistence is not modelled, SPEC §13)"
)
_BOOLEANS = (
    *_SENDER_TRUE_DIFFERS,
    "disk-synchronous",
    "group-transaction-events",
    "enforce-threads-connect-same-receiver",
)
# Sender settings of what SPEC §13 does not model: a warning whenever one is set.
_SENDER_SET_DIFFERS = {
    "maximum-queue-memory": (
        "Geode overflows queued events beyond this many megabytes to disk; the model's "
        "queue has no memory limit (queue overflow is not modelled, SPEC §13)"
    ),
    "disk-store-name": (
        "the disk store of the queue's persistence and overflow is not modelled (SPEC §13)"
    ),
    "disk-synchronous": (
        "how Geode writes the queue to disk (persistence and overflow) is not modelled (SPEC §13)"
    ),
}
_CHANGING_FILTERS = ("gateway-event-filter", "gateway-event-substitution-filter")


@dataclass(frozen=True, slots=True)
class ImportedConfig:
    """A SPEC §2 configuration and the warnings about where it differs from Geode."""

    config: Config
    warnings: tuple[str, ...]
    sender_names: Mapping[str, str]
    """Model sender id -> the id the user wrote (they differ when made unique)."""


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
        for declaration in declared.senders.values():
            sender = _sender(declaration, site, site_ids)
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
    if not senders:
        partial("no gateway-sender to import: events never leave their site")
    names = _unique_ids(senders, warnings)
    try:
        config = parse_config(
            {
                "sites": site_ids,
                "senders": [s.raw for s in senders],
                "receivers": list(receivers.values()),
            }
        )
    except ConfigError as exc:  # checked piecewise above; kept as a safety net
        raise GeodeImportError(f"imported configuration: {exc}") from None
    return ImportedConfig(config=config, warnings=tuple(warnings), sender_names=names)


def _files(site: SiteDeclarations) -> str:
    return ", ".join(site.files)


def _site_warnings(site: int, declared: SiteDeclarations) -> list[str]:
    warnings = []
    resolver = declared.conflict_resolver
    if resolver is not None:
        warnings.append(
            f"{resolver.where}: {resolver.name} {resolver.value}: Geode lets this class "
            "decide between conflicting events of different sites; the model always "
            "applies R16.3 (higher timestamp wins, then higher dsid)"
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
                warnings.append(
                    f"{written.where}: region {region.name!r}: {written.name} names "
                    f"{sender_id!r}, which site {site} does not have; Geode ships nothing "
                    "through it; ignored"
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


def _integer(declaration: SenderDeclaration | ReceiverDeclaration, written: Written) -> int:
    if not _INTEGER.fullmatch(written.value.strip()):
        raise GeodeImportError(
            f"{written.where}: {declaration.label}: {written.name}: must be an integer, "
            f"got {written.value!r}"
        )
    return int(written.value)


def _boolean(written: Written, label: str) -> bool:
    value = written.value.strip().lower()
    if value not in ("true", "false"):
        raise GeodeImportError(
            f"{written.where}: {label}: {written.name}: must be true or false, "
            f"got {written.value!r}"
        )
    return value == "true"


def _sender(declaration: SenderDeclaration, site: int, sites: list[int]) -> _Sender:
    warnings: list[str] = []
    settings = declaration.settings
    label = declaration.label
    raw: dict[str, Any] = {"id": declaration.id, "site": site}
    for name, spec_field in _SENDER_INTEGERS.items():
        if name in settings:
            raw[spec_field] = _integer(declaration, settings[name])
    remote = raw["remote"]
    if remote not in sites:
        remote_id = settings["remote-distributed-system-id"]
        raise GeodeImportError(
            f"{remote_id.where}: {label}: {remote_id.name}: site {remote} has no --site "
            f"(imported sites: {', '.join(map(str, sites))})"
        )
    raw["ack_timeout_ms"] = _ack_timeout(declaration, warnings)
    for name in _BOOLEANS:
        flag = settings.get(name)
        if flag is not None and _boolean(flag, label) and name in _SENDER_TRUE_DIFFERS:
            warnings.append(
                f"{flag.where}: {label}: {flag.name}={flag.value}: {_SENDER_TRUE_DIFFERS[name]}"
            )
    for name, difference in _SENDER_SET_DIFFERS.items():
        if name in settings:
            written = settings[name]
            warnings.append(
                f"{written.where}: {label}: {written.name}={written.value}: {difference}"
            )
    if "dispatcher-threads" in settings:
        written = settings["dispatcher-threads"]
        threads = _integer(declaration, written)
        if threads < 1:
            raise GeodeImportError(
                f"{written.where}: {label}: {written.name}: must be >= 1, got {threads}"
            )
        if threads > 1:
            warnings.append(
                f"{written.where}: {label}: {written.name}={threads}: Geode dispatches up "
                f"to {threads} batches at once from {threads} queues (split by "
                "order-policy); the model sends one batch at a time from one FIFO queue "
                "(R12, R13)"
            )
    for written in declaration.filters:
        kind = written.name.strip("<>-")
        if kind in _CHANGING_FILTERS:
            warnings.append(
                f"{written.where}: {label}: {written.name} {written.value}: Geode lets "
                "this class drop or change events before they are queued; the model "
                "ships every event unchanged"
            )
    listener = declaration.failure_listener
    if listener is not None:
        raw["failure_listener"] = "dlq"
        warnings.append(
            f"{listener.where}: {label}: {listener.name} {listener.value}: the dead-letter "
            "proposal's listener, which Geode 1.15 does not have (SPEC §13); modelled as "
            'failure_listener "dlq" (R24)'
        )
    parallel = "parallel" in settings and _boolean(settings["parallel"], label)
    _validated(declaration, "senders", raw, sites)
    return _Sender(declaration, site, raw, parallel, warnings)


def _ack_timeout(declaration: SenderDeclaration, warnings: list[str]) -> int:
    """R20's ack timeout from `socket-read-timeout` (see the module docstring)."""
    written = declaration.settings.get("socket-read-timeout")
    if written is None:
        return WAIT_FOREVER_MS
    timeout = _integer(declaration, written)
    if timeout < 0:
        raise GeodeImportError(
            f"{written.where}: {declaration.label}: {written.name}: must be >= 0 "
            f"(0 = wait forever), got {timeout}"
        )
    if timeout == 0:
        return WAIT_FOREVER_MS
    if timeout < MINIMUM_SOCKET_READ_TIMEOUT_MS:
        warnings.append(
            f"{written.where}: {declaration.label}: {written.name}={timeout} is below "
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
    """Rename ids used at several sites to `SITE/ID` (SPEC §13); model id -> user's id."""
    sites_of = Counter(sender.raw["id"] for sender in senders)
    names = {}
    for sender in senders:
        written_id = sender.raw["id"]
        if sites_of[written_id] > 1:
            sender.raw["id"] = f"{sender.site}/{written_id}"
            others = sorted(s.site for s in senders if s.declaration.id == written_id)
            warnings.append(
                f"{sender.declaration.where}: {sender.declaration.label}: sender id "
                f"{written_id!r} is used at sites {', '.join(map(str, others))} (Geode's ids "
                f"are per site, a trace's are global): named {sender.raw['id']!r} in the "
                "model"
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
                f"{written.where}: {declaration.label}: {written.name}={written.value}: "
                f"{difference}"
            )
    _validated(declaration, "receivers", raw, [site])
    return raw


def _validated(
    declaration: SenderDeclaration | ReceiverDeclaration,
    key: str,
    raw: dict[str, Any],
    sites: list[int],
) -> None:
    """Check one sender or receiver with `parse_config`; errors quote the Geode name."""
    try:
        parse_config({"sites": sites, key: [raw]})
    except ConfigError as exc:
        message = str(exc)
        match = _FIELD_ERROR.match(message)
        if match is None:
            raise GeodeImportError(f"{declaration.where}: {declaration.label}: {message}") from None
        spec_field, problem = match.groups()
        by_field = {**_SENDER_INTEGERS, **_RECEIVER_INTEGERS, "id": "id"}
        geode_name = next((g for g, f in by_field.items() if f == spec_field), spec_field)
        written = declaration.settings.get(geode_name)
        where = written.where if written is not None else declaration.where
        name = written.name if written is not None else geode_name
        raise GeodeImportError(f"{where}: {declaration.label}: {name}: {problem}") from None
