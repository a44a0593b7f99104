"""What a site's Geode files declare, as written, before any mapping to SPEC §2.

The readers (`cachexml`, `gfsh`, `properties`) fill one `SiteDeclarations` per site; the
mapping (`mapping`) turns them into a configuration. Every value keeps the name the user
wrote (`batch-size` or `--batch-size`) and its place (`file:line`), so each error and
warning can name both.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from traces.errors import ConfigError


class GeodeImportError(ConfigError):
    """A Geode configuration that cannot be imported; names file, line and attribute."""


@dataclass(frozen=True, slots=True)
class Written:
    """One value as the user wrote it: Geode name (`batch-size`, `--batch-size`), text,
    place, and the command that wrote it when it is not the one that declared its owner
    (gfsh's `alter gateway-sender`)."""

    name: str
    value: str
    where: str
    label: str = ""


@dataclass(slots=True)
class SenderDeclaration:
    """One `gateway-sender` (cache.xml) or `create gateway-sender` (gfsh).

    `settings` is keyed by the Geode attribute name without `--` (the cache.xml attribute
    and the gfsh option share their names); `label` is how messages name the sender.
    """

    id: str
    where: str
    label: str
    settings: dict[str, Written] = field(default_factory=dict)
    failure_listener: Written | None = None
    filters: list[Written] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SenderCommand:
    """A gfsh `start`, `stop`, `pause` or `resume gateway-sender`: an operation on a sender
    once the configuration exists (SPEC R37), not configuration; `mapping` turns it into
    a trace operation."""

    action: str  # "start", "stop", "pause" or "resume"
    sender: str  # the id as the user wrote it
    where: str
    text: str  # how messages name the command: "start gateway-sender --id=ny"
    clean_queues: bool = False  # start only: `--clean-queues`


@dataclass(slots=True)
class ReceiverDeclaration:
    """The `gateway-receiver` of a site."""

    where: str
    label: str
    settings: dict[str, Written] = field(default_factory=dict)


def did_you_mean(word: str, choices: Iterable[str], prefix: str = "") -> str:
    """` (did you mean PREFIXchoice?)` for the choice closest to a misspelt `word`, or ""."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""


def geode_boolean(value: str, gfsh: bool) -> bool:
    """A boolean as Geode reads it; ValueError (the reason) where Geode refuses it or reads
    it against what it says.

    cache.xml: the schema (`xsd:boolean`) lets `true`, `false`, `1` and `0` through, the
    DTDs `true` and `false`, and `CacheXmlParser` reads them with `Boolean.parseBoolean`,
    so `1` is false there: refused. gfsh: Geode 1.15 (Spring Shell's `BooleanConverter`)
    takes `true`/`1`/`yes` and `false`/`0`/`no` in any case, Geode 2's parser reads only
    `true` as true, so `1` and `yes` are refused.
    """
    text = value.strip().lower() if gfsh else value.strip()
    if text == "true":
        return True
    if text in ("false", "0") or (gfsh and text == "no"):
        return False
    if text == "1" or (gfsh and text == "yes"):
        meaning = (
            "Geode 1.15's gfsh reads it as true, Geode 2's (Boolean.parseBoolean) as false"
            if gfsh
            else "Geode's schema lets it through, but CacheXmlParser reads every value "
            "other than true as false (Boolean.parseBoolean)"
        )
        raise ValueError(f"must be true or false, got {value!r} ({meaning}; write true)")
    raise ValueError(f"must be true or false, got {value!r}")


REGION_SHORTCUTS = (
    "PARTITION",
    "PARTITION_REDUNDANT",
    "PARTITION_PERSISTENT",
    "PARTITION_REDUNDANT_PERSISTENT",
    "PARTITION_OVERFLOW",
    "PARTITION_REDUNDANT_OVERFLOW",
    "PARTITION_PERSISTENT_OVERFLOW",
    "PARTITION_REDUNDANT_PERSISTENT_OVERFLOW",
    "PARTITION_HEAP_LRU",
    "PARTITION_REDUNDANT_HEAP_LRU",
    "REPLICATE",
    "REPLICATE_PERSISTENT",
    "REPLICATE_OVERFLOW",
    "REPLICATE_PERSISTENT_OVERFLOW",
    "REPLICATE_HEAP_LRU",
    "LOCAL",
    "LOCAL_PERSISTENT",
    "LOCAL_HEAP_LRU",
    "LOCAL_OVERFLOW",
    "LOCAL_PERSISTENT_OVERFLOW",
    "PARTITION_PROXY",
    "PARTITION_PROXY_REDUNDANT",
    "REPLICATE_PROXY",
)
"""Geode's `RegionShortcut` names; `RegionShortcut.isPartition()` is "the name contains
PARTITION", and so is `is_partition_shortcut`."""


def is_partition_shortcut(name: str) -> bool:
    """A `RegionShortcut` of a partitioned region (`PARTITION`, `PARTITION_REDUNDANT`, ...)."""
    return "PARTITION" in name


@dataclass(slots=True)
class RegionDeclaration:
    """A region: the gateway senders it ships through, its concurrency checks and (SPEC
    §16.9) its type: `partitioned` with the `type` that says so (a `RegionShortcut`, a
    `data-policy` or `<partition-attributes>`) and its `total-num-buckets`."""

    name: str
    where: str
    sender_ids: Written | None = None
    concurrency_checks: Written | None = None
    partitioned: bool = False
    type: Written | None = None
    total_num_buckets: Written | None = None

    def senders(self) -> tuple[str, ...]:
        """The ids of `gateway-sender-ids`, comma separated, as Geode splits them: gfsh
        trims each id, cache.xml keeps blanks (`CacheXmlParser`'s `StringTokenizer`: "a, b"
        names `a` and ` b`); both drop empty ones."""
        if self.sender_ids is None:
            return ()
        ids = self.sender_ids.value.split(",")
        if self.sender_ids.name.startswith("--"):
            ids = [s.strip() for s in ids]
        return tuple(s for s in ids if s)


@dataclass(slots=True)
class SiteDeclarations:
    """Everything the files of one site declare; the readers apply their files in order."""

    files: list[str] = field(default_factory=list)
    dsid: Written | None = None
    senders: dict[str, SenderDeclaration] = field(default_factory=dict)
    receiver: ReceiverDeclaration | None = None
    regions: dict[str, RegionDeclaration] = field(default_factory=dict)
    conflict_resolver: Written | None = None
    warnings: list[str] = field(default_factory=list)
    commands: list[SenderCommand] = field(default_factory=list)
    """The gfsh sender operations, in the order the files give them."""

    def add_sender(self, sender: SenderDeclaration) -> None:
        """A second sender of the same id in one site is refused, as Geode refuses it."""
        previous = self.senders.get(sender.id)
        if previous is not None:
            raise GeodeImportError(
                f"{sender.where}: {sender.label}: gateway-sender {sender.id!r} already "
                f"exists at {previous.where}; Geode refuses a second sender of one id per site"
            )
        self.senders[sender.id] = sender

    def add_region(self, region: RegionDeclaration, label: str) -> None:
        """A second region of the same full path in one site is refused, as Geode refuses
        it (cache.xml: `RegionExistsException`; gfsh: "Region ... already exists"), and so
        is a subregion of a partitioned region (Geode's `PartitionedRegion.createSubregion`
        throws `UnsupportedOperationException`)."""
        previous = self.regions.get(region.name)
        if previous is not None:
            raise GeodeImportError(
                f"{region.where}: {label}: region {region.name!r} already exists at "
                f"{previous.where}; Geode refuses to create a region twice"
            )
        parent = self.regions.get(region.name.rsplit("/", 1)[0])
        if parent is not None and parent.partitioned:
            raise GeodeImportError(
                f"{region.where}: {label}: a subregion of the partitioned region "
                f"{parent.name!r} ({parent.where}); Geode's partitioned regions have no "
                "subregions (PartitionedRegion.createSubregion throws "
                "UnsupportedOperationException)"
            )
        self.regions[region.name] = region

    def set_receiver(self, receiver: ReceiverDeclaration) -> None:
        """A site has one gateway receiver."""
        if self.receiver is not None:
            raise GeodeImportError(
                f"{receiver.where}: a second {receiver.label} (the first is at "
                f"{self.receiver.where}); a site has one receiver"
            )
        self.receiver = receiver

    def set_dsid(self, dsid: Written) -> None:
        """The site's distributed-system-id, as one of its files sets it."""
        if self.dsid is not None and self.dsid.value.strip() != dsid.value.strip():
            raise GeodeImportError(
                f"{dsid.where}: {dsid.name}={dsid.value}, but {self.dsid.where} sets "
                f"{self.dsid.name}={self.dsid.value}: the files of one site name two "
                "distributed systems"
            )
        if self.dsid is None:
            self.dsid = dsid


PLACEHOLDER = re.compile(r"\$\{([^${}]*)\}")
"""`${NAME}`: filled by Geode at startup (cache.xml) or by gfsh's variables (gfsh)."""


def expand_placeholders(text: str, defines: Mapping[str, str], where: str, name: str) -> str:
    """Replace every `${NAME}` with its `--define NAME=VALUE` (or gfsh variable) value.

    An undefined placeholder is an error: Geode would stop on it (cache.xml) or put an
    empty string in its place (gfsh), and neither gives a usable configuration.
    """

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if not key.strip():  # no --define can give it a value (KEY must be a name)
            raise GeodeImportError(f"{where}: {name}: placeholder ${{{key}}} names no variable")
        if key not in defines:
            raise GeodeImportError(
                f"{where}: {name}: placeholder ${{{key}}} has no value; give it with "
                f"--define {key}=VALUE"
            )
        return defines[key]

    return PLACEHOLDER.sub(value, text)
