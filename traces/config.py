"""Configuration types and their validation: R6, R7, R8 (SPEC §2) and R27 (v2.0: regions,
parallel senders, dispatcher threads, order policies, queue memory, conflation,
persistence, the alert threshold, manual start).

A configuration is checked whole before anything runs. Errors name the field as a path
(`senders[0].batch_size`) and say what is wrong, so a user can fix the trace at once.
Fields not in SPEC §2 are rejected: a misspelt `batch_sise` must not silently become the
default.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from traces.errors import ConfigError
from traces.text import cut

FAILURE_LISTENERS = (None, "dlq")

# SPEC §3: every integer of a trace is a signed 64-bit integer, and so is the sum of its ticks.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True, repr=False)
class JsonNumber:
    """A JSON number kept as its text: one with a fraction or an exponent (`1.5`, `1e400`),
    or an integer too long to be 64-bit (Python refuses to convert more than 4,300 digits).
    The trace reader decodes such numbers to this, so validation can say what they are."""

    text: str

    @property
    def is_integer(self) -> bool:
        return not any(c in self.text for c in ".eE")

    def __repr__(self) -> str:
        return abbreviate_number(self.text)


def abbreviate_number(text: str) -> str:
    """A number's text short enough for a message: `99999...(5000 digits)`."""
    if len(text) <= 30:
        return text
    sign = "-" if text.startswith("-") else ""
    digits = text.removeprefix("-")
    if digits.isdigit():
        return f"{sign}{digits[:5]}...({len(digits)} digits)"
    return f"{text[:12]}...({len(text)} characters)"


def show(value: Any) -> str:
    """A value from a JSON file as a message quotes it: as JSON writes it (`"1"`, `null`,
    huge integers and strings abbreviated), a list or an object by its type."""
    if _is_int(value):
        digits = value.bit_length() * math.log10(2)
        if digits > 4000:  # str() of an int this long raises (sys.get_int_max_str_digits)
            return f"an integer of about {int(digits)} digits"
        return abbreviate_number(str(value))
    if value is None or isinstance(value, bool):  # as the JSON file writes them
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, str):
        return cut(json.dumps(value, ensure_ascii=False))
    if isinstance(value, list | dict):
        return json_kind(value)
    return repr(value)


def int64_error(value: Any) -> str | None:
    """The SPEC §3 complaint about an integer outside -2^63..2^63-1; None for any other value."""
    if isinstance(value, JsonNumber) and value.is_integer:
        text = repr(value)
    elif _is_int(value) and not INT64_MIN <= value <= INT64_MAX:
        text = show(value)
    else:
        return None
    return f"{text} is outside the signed 64-bit range (SPEC §3)"


ORDER_POLICIES = ("key", "thread", "partition")  # R27, Geode's GatewaySender.OrderPolicy
REGION_TYPES = ("replicate", "partition")  # R27
DEFAULT_BUCKETS = 113  # R27: Geode's GLOBAL_MAX_BUCKETS_DEFAULT
DEFAULT_QUEUE_MEMORY = 104_857_600  # R27: Geode's maximum-queue-memory default, 100 MB
INT32_MAX = 2**31 - 1  # Java's int: total-num-buckets and dispatcher-threads are ints
MAX_DISPATCHERS = 1024
"""wanconform keeps every dispatcher's state (R29); Geode sets no bound, its default is 5."""


@dataclass(frozen=True, slots=True)
class RegionConfig:
    """R27: the region of one site: replicated (v1.2's R1) or partitioned into buckets."""

    type: str = "replicate"
    total_num_buckets: int = DEFAULT_BUCKETS

    @property
    def partitioned(self) -> bool:
        return self.type == "partition"

    def to_json(self) -> dict[str, Any]:
        if not self.partitioned:
            return {"type": self.type}
        return {"type": self.type, "total_num_buckets": self.total_num_buckets}


REPLICATE = RegionConfig()


@dataclass(frozen=True, slots=True)
class SenderConfig:
    """One gateway sender at `site` shipping to `remote` (Geode `gateway-sender`): serial or
    parallel (R27), with `dispatcher_threads` dispatchers (R29)."""

    id: str
    site: int
    remote: int
    batch_size: int = 100
    batch_time_interval_ms: int = 1000
    ack_timeout_ms: int = 10000
    retry_interval_ms: int = 5000
    delta: bool = False
    failure_listener: str | None = None
    dlq_secure: bool = False
    parallel: bool = False  # R27 (v2.0)
    dispatcher_threads: int = 1
    order_policy: str = "key"
    maximum_queue_memory_bytes: int = DEFAULT_QUEUE_MEMORY
    enable_batch_conflation: bool = False  # R32-R34
    enable_persistence: bool = False  # R36, R37
    alert_threshold_ms: int = 0  # R38 (0: off)
    manual_start: bool = False  # R37: the sender begins stopped

    def to_json(self) -> dict[str, Any]:
        """The v1.2 fields always; the v2.0 fields when they differ from their defaults,
        so that a v1.2 configuration is written as the same text as before."""
        out: dict[str, Any] = {
            "id": self.id,
            "site": self.site,
            "remote": self.remote,
            "batch_size": self.batch_size,
            "batch_time_interval_ms": self.batch_time_interval_ms,
            "ack_timeout_ms": self.ack_timeout_ms,
            "retry_interval_ms": self.retry_interval_ms,
            "delta": self.delta,
            "failure_listener": self.failure_listener,
            "dlq_secure": self.dlq_secure,
        }
        for name in V2_SENDER_FIELDS:
            value = getattr(self, name)
            if value != _V2_DEFAULTS[name]:
                out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class ReceiverConfig:
    """The gateway receiver of one site (retry options from the dead-letter proposal)."""

    site: int
    retry_attempts: int = 0
    wait_time_between_retry_attempts_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "retry_attempts": self.retry_attempts,
            "wait_time_between_retry_attempts_ms": self.wait_time_between_retry_attempts_ms,
        }


V2_SENDER_FIELDS = (
    "parallel",
    "dispatcher_threads",
    "order_policy",
    "maximum_queue_memory_bytes",
    "enable_batch_conflation",
    "enable_persistence",
    "alert_threshold_ms",
    "manual_start",
)
_V2_DEFAULTS: dict[str, Any] = {
    name: SenderConfig.__dataclass_fields__[name].default for name in V2_SENDER_FIELDS
}


@dataclass(frozen=True, slots=True)
class Config:
    """A whole WAN: its sites (sorted), senders (sorted by id), one receiver per site and
    (v2.0) the region of each site that is not replicated."""

    sites: tuple[int, ...]
    senders: tuple[SenderConfig, ...]
    receivers: tuple[ReceiverConfig, ...]
    regions: Mapping[int, RegionConfig] = field(default_factory=dict, hash=False)
    # Look-up indexes, built once; not part of the value (compare=False).
    _by_id: Mapping[str, SenderConfig] = field(init=False, repr=False, compare=False)
    _by_site: Mapping[int, tuple[SenderConfig, ...]] = field(init=False, repr=False, compare=False)
    _receivers: Mapping[int, ReceiverConfig] = field(init=False, repr=False, compare=False)
    _reached: Mapping[int, frozenset[int]] = field(init=False, repr=False, compare=False)
    _buckets: Mapping[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {s.id: s for s in self.senders})
        by_site = {site: tuple(s for s in self.senders if s.site == site) for site in self.sites}
        object.__setattr__(self, "_by_site", by_site)
        object.__setattr__(self, "_receivers", {r.site: r for r in self.receivers})
        reached = {site: frozenset({site, *(s.remote for s in by_site[site])}) for site in by_site}
        object.__setattr__(self, "_reached", reached)
        buckets = {site: region.total_num_buckets for site, region in self.regions.items()}
        object.__setattr__(self, "_buckets", buckets)

    def sender(self, sender_id: str) -> SenderConfig:
        return self._by_id[sender_id]

    def receiver(self, site: int) -> ReceiverConfig:
        return self._receivers[site]

    def senders_at(self, site: int) -> tuple[SenderConfig, ...]:
        """The senders of one site, in sorted id order (R22's offer order)."""
        return self._by_site[site]

    def site_and_remotes(self, site: int) -> frozenset[int]:
        """The site and the remote sites of its senders (R11: an event written there
        starts with these recipients)."""
        return self._reached[site]

    def region(self, site: int) -> RegionConfig:
        """R27: the site's region (replicated unless `regions` says otherwise)."""
        return self.regions.get(site, REPLICATE)

    def buckets(self, site: int) -> int:
        """R28: the site's number of buckets; 0 when its region is replicated."""
        return self._buckets.get(site, 0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sites": list(self.sites),
            "senders": [s.to_json() for s in self.senders],
            "receivers": [r.to_json() for r in self.receivers],
        }
        if self.regions:  # v2.0: only when some site is not replicated
            out["regions"] = {
                str(site): self.regions[site].to_json() for site in sorted(self.regions)
            }
        return out


_SENDER_INTS: dict[str, tuple[int, int]] = {  # field -> (default, smallest allowed value)
    "batch_size": (100, 1),
    "batch_time_interval_ms": (1000, 0),
    "ack_timeout_ms": (10000, 1),
    "retry_interval_ms": (5000, 0),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be an object, got {json_kind(value)}")
    return value


def json_kind(value: Any) -> str:
    """How an error message names the JSON type of a value it did not expect."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _is_int(value):
        return "an integer"
    if isinstance(value, JsonNumber):
        if value.is_integer:  # past 4,300 digits: "an integer" alone would contradict a
            # message that allows integers (an observation's, SPEC §10)
            return f"an integer with too many digits ({value!r})"
        if "." in value.text:
            return f"a number with a fraction ({value!r})"
        if math.isinf(float(value.text)):
            return f"a number too large for a 64-bit float ({value!r})"
        return f"a number with an exponent ({value!r})"
    if isinstance(value, float):
        return "a number with a fraction" if math.isfinite(value) else "an infinite number"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _check_fields(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ConfigError(
            f"{where}.{unknown[0]}: unknown field (allowed: {', '.join(sorted(allowed))})"
        )


def _int_field(obj: Mapping[str, Any], name: str, where: str, default: int, least: int) -> int:
    value = obj.get(name, default)
    if problem := int64_error(value):
        raise ConfigError(f"{where}.{name}: {problem}")
    if not _is_int(value):
        raise ConfigError(f"{where}.{name}: must be an integer, got {json_kind(value)}")
    if value < least:
        raise ConfigError(f"{where}.{name}: must be >= {least}, got {value}")
    return int(value)


def _bool_field(obj: Mapping[str, Any], name: str, where: str) -> bool:
    value = obj.get(name, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{name}: must be true or false, got {json_kind(value)}")
    return value


def _site_field(obj: Mapping[str, Any], name: str, where: str, sites: set[int]) -> int:
    if name not in obj:
        raise ConfigError(f"{where}.{name}: missing (a site id from 'sites')")
    value = obj[name]
    if problem := int64_error(value):
        raise ConfigError(f"{where}.{name}: {problem}")
    if not _is_int(value):
        raise ConfigError(f"{where}.{name}: must be an integer site id, got {json_kind(value)}")
    if value not in sites:
        raise ConfigError(f"{where}.{name}: site {value} is not in 'sites'")
    return int(value)


def _parse_sites(raw: Mapping[str, Any]) -> tuple[int, ...]:
    if "sites" not in raw:
        raise ConfigError("sites: missing (a list of distributed-system-ids 1..255)")
    sites = raw["sites"]
    if not isinstance(sites, list) or not sites:
        raise ConfigError("sites: must be a non-empty list of distributed-system-ids 1..255")
    seen: set[int] = set()
    for index, site in enumerate(sites):
        if not _is_int(site) or not 1 <= site <= 255:
            raise ConfigError(
                f"sites[{index}]: must be an integer from 1 to 255 (R1), got {show(site)}"
            )
        if site in seen:
            raise ConfigError(f"sites[{index}]: site {site} is listed twice")
        seen.add(site)
    return tuple(sorted(seen))


def _parse_sender(
    raw: Any, where: str, sites: set[int], regions: Mapping[int, RegionConfig]
) -> SenderConfig:
    obj = _object(raw, where)
    _check_fields(obj, set(SenderConfig.__dataclass_fields__), where)
    sender_id = obj.get("id")
    if not isinstance(sender_id, str) or not sender_id:
        raise ConfigError(f"{where}.id: must be a non-empty string, got {json_kind(sender_id)}")
    site = _site_field(obj, "site", where, sites)
    remote = _site_field(obj, "remote", where, sites)
    if site == remote:
        raise ConfigError(f"{where}.remote: a sender cannot ship to its own site {site} (R6)")
    ints = {
        name: _int_field(obj, name, where, default, least)
        for name, (default, least) in _SENDER_INTS.items()
    }
    listener = obj.get("failure_listener")
    if listener not in FAILURE_LISTENERS:
        raise ConfigError(
            f'{where}.failure_listener: must be null or "dlq" (R7), got {show(listener)}'
        )
    parallel = _bool_field(obj, "parallel", where)
    dispatchers = _int_field(obj, "dispatcher_threads", where, 1, 1)
    if dispatchers > MAX_DISPATCHERS:
        raise ConfigError(
            f"{where}.dispatcher_threads: at most {MAX_DISPATCHERS} (wanconform keeps every "
            f"dispatcher's state, R29), got {dispatchers}"
        )
    policy = obj.get("order_policy", "key")
    if policy not in ORDER_POLICIES:
        raise ConfigError(
            f'{where}.order_policy: must be "key", "thread" or "partition" (R27), got '
            f"{show(policy)}"
        )
    if parallel:
        region = regions.get(site, REPLICATE)
        if not region.partitioned:
            raise ConfigError(
                f"{where}.parallel: a parallel sender needs a partitioned region at site "
                f"{site}; Geode: 'Parallel Gateway Sender {sender_id} can not be used with "
                "replicated region' (R27)"
            )
        if policy == "thread":
            raise ConfigError(
                f"{where}.order_policy: a parallel sender cannot use the thread policy; "
                f"Geode: 'Parallel Gateway Sender {sender_id} can not be created with "
                "OrderPolicy THREAD' (R27)"
            )
    return SenderConfig(
        id=sender_id,
        site=site,
        remote=remote,
        delta=_bool_field(obj, "delta", where),
        failure_listener=listener,
        dlq_secure=_bool_field(obj, "dlq_secure", where),
        parallel=parallel,
        dispatcher_threads=dispatchers,
        order_policy=policy,
        maximum_queue_memory_bytes=_int_field(
            obj, "maximum_queue_memory_bytes", where, DEFAULT_QUEUE_MEMORY, 0
        ),
        enable_batch_conflation=_bool_field(obj, "enable_batch_conflation", where),
        enable_persistence=_bool_field(obj, "enable_persistence", where),
        alert_threshold_ms=_int_field(obj, "alert_threshold_ms", where, 0, 0),
        manual_start=_bool_field(obj, "manual_start", where),
        **ints,
    )


def _parse_receiver(raw: Any, where: str, sites: set[int]) -> ReceiverConfig:
    obj = _object(raw, where)
    _check_fields(obj, set(ReceiverConfig.__dataclass_fields__), where)
    return ReceiverConfig(
        site=_site_field(obj, "site", where, sites),
        retry_attempts=_int_field(obj, "retry_attempts", where, 0, -1),
        wait_time_between_retry_attempts_ms=_int_field(
            obj, "wait_time_between_retry_attempts_ms", where, 0, 0
        ),
    )


def _parse_regions(obj: Mapping[str, Any], sites: set[int]) -> dict[int, RegionConfig]:
    """R27: `regions` maps a site, as a string, to its region; only partitioned ones are
    kept (a replicated region is the default)."""
    raw = _object(obj.get("regions", {}), "regions")
    regions: dict[int, RegionConfig] = {}
    for name, value in raw.items():
        where = f"regions.{name}"
        if not (name.isascii() and name.isdigit() and str(int(name)) == name):
            raise ConfigError(f'{where}: a region is keyed by a site id as a string, e.g. "1"')
        if int(name) not in sites:
            raise ConfigError(f"{where}: site {name} is not in 'sites'")
        region = _object(value, where)
        _check_fields(region, {"type", "total_num_buckets"}, where)
        kind = region.get("type", "replicate")
        if kind not in REGION_TYPES:
            raise ConfigError(
                f'{where}.type: must be "replicate" or "partition" (R27), got {show(kind)}'
            )
        if kind == "replicate":
            if "total_num_buckets" in region:
                raise ConfigError(
                    f'{where}.total_num_buckets: allowed only with "type": "partition" (R27)'
                )
            continue
        buckets = _int_field(region, "total_num_buckets", where, DEFAULT_BUCKETS, 1)
        if buckets > INT32_MAX:
            raise ConfigError(
                f"{where}.total_num_buckets: at most {INT32_MAX} (a Java int), got {buckets}"
            )
        regions[int(name)] = RegionConfig("partition", buckets)
    return regions


def parse_config(raw: Any) -> Config:
    """Validate a SPEC §2 configuration object; raise ConfigError naming the field."""
    obj = _object(raw, "config")
    _check_fields(obj, {"sites", "senders", "receivers", "regions"}, "config")
    sites = _parse_sites(obj)
    site_set = set(sites)
    regions = _parse_regions(obj, site_set)
    raw_senders = obj.get("senders", [])
    if not isinstance(raw_senders, list):
        raise ConfigError(f"senders: must be a list, got {json_kind(raw_senders)}")
    senders: dict[str, SenderConfig] = {}
    pairs: dict[tuple[int, int], str] = {}
    for index, raw_sender in enumerate(raw_senders):
        sender = _parse_sender(raw_sender, f"senders[{index}]", site_set, regions)
        if sender.id in senders:
            raise ConfigError(f"senders[{index}].id: sender id {sender.id!r} is used twice (R6)")
        pair = (sender.site, sender.remote)
        if pair in pairs:
            raise ConfigError(
                f"senders[{index}]: site {sender.site} already has sender {pairs[pair]!r} "
                f"to site {sender.remote} (R6: at most one per pair)"
            )
        senders[sender.id] = sender
        pairs[pair] = sender.id
    raw_receivers = obj.get("receivers", [])
    if not isinstance(raw_receivers, list):
        raise ConfigError(f"receivers: must be a list, got {json_kind(raw_receivers)}")
    receivers: dict[int, ReceiverConfig] = {}
    for index, raw_receiver in enumerate(raw_receivers):
        receiver = _parse_receiver(raw_receiver, f"receivers[{index}]", site_set)
        if receiver.site in receivers:
            raise ConfigError(f"receivers[{index}].site: site {receiver.site} has two receivers")
        receivers[receiver.site] = receiver
    return Config(
        sites=sites,
        senders=tuple(senders[i] for i in sorted(senders)),
        receivers=tuple(receivers.get(site, ReceiverConfig(site=site)) for site in sites),
        regions=regions,
    )
