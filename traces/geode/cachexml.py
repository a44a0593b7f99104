"""Read a Geode `cache.xml`: its gateways, regions and conflict resolver, as written.

Namespaces read: `http://geode.apache.org/schema/cache`, the older
`http://schema.pivotal.io/gemfire/cache`, or none (the GemFire 7.0 / 8.0 DTD form,
`<!DOCTYPE cache PUBLIC "-//GemStone Systems, Inc.//GemFire Declarative Caching 7.0//EN"
"http://www.gemstone.com/dtd/cache7_0.dtd">`). Geode resolves those DTDs from its own jar
and never fetches them; so does this reader: it accepts a GemFire cache DTD reference
without reading it, and refuses any other external DTD. Entity declarations (billion
laughs, external entities) are refused; parsing is done by defusedxml.

What is read (everything else of the file is not about gateways):

- `<gateway-sender>`: every attribute (an attribute Geode's schema does not have is an
  error, so a misspelt `batch-sise` never silently becomes a default), the
  `<gateway-event-failure-listener>` of the dead-letter proposal (R24) and the filters;
- `<gateway-receiver>`: its attributes and transport filters;
- `<region>` (nested ones too) and named `<region-attributes id=...>` reached through
  `refid`: `gateway-sender-ids`, `concurrency-checks-enabled` and (SPEC §16.9) the
  region's type: a `RegionShortcut` refid (`PARTITION_REDUNDANT`, ...), `data-policy`
  (`partition`, `persistent-partition`) or `<partition-attributes>`, with its
  `total-num-buckets`;
- `<gateway-conflict-resolver>`;
- `<gateway-hub>` (the pre-7.0 WAN) is reported as not modelled.

`${NAME}` placeholders in these values are filled from `--define NAME=VALUE`, as Geode
fills them from system properties at startup.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from xml.sax import SAXParseException, handler
from xml.sax.xmlreader import AttributesNSImpl, Locator

import defusedxml.sax
from defusedxml.common import DefusedXmlException, EntitiesForbidden

from traces.geode.declarations import (
    REGION_SHORTCUTS,
    GeodeImportError,
    ReceiverDeclaration,
    RegionDeclaration,
    SenderDeclaration,
    SiteDeclarations,
    Written,
    did_you_mean,
    expand_placeholders,
    is_partition_shortcut,
)

CACHE_NAMESPACES = (
    "http://geode.apache.org/schema/cache",
    "http://schema.pivotal.io/gemfire/cache",
)
"""cache.xml namespaces read; a file may also use none (the DTD form)."""

SENDER_ATTRIBUTES = (
    "id",
    "remote-distributed-system-id",
    "parallel",
    "manual-start",
    "socket-buffer-size",
    "socket-read-timeout",
    "enable-batch-conflation",
    "batch-size",
    "batch-time-interval",
    "enable-persistence",
    "disk-store-name",
    "disk-synchronous",
    "maximum-queue-memory",
    "alert-threshold",
    "dispatcher-threads",
    "order-policy",
    "group-transaction-events",
    "enforce-threads-connect-same-receiver",
)
"""The attributes of `<gateway-sender>` in Geode's cache.xml schema."""

RECEIVER_ATTRIBUTES = (
    "start-port",
    "end-port",
    "bind-address",
    "maximum-time-between-pings",
    "socket-buffer-size",
    "hostname-for-senders",
    "manual-start",
    # The dead-letter proposal's receiver settings (R7, R16):
    "retry-attempts",
    "wait-time-between-retry-attempts",
)
"""The attributes of `<gateway-receiver>`."""

REGION_ATTRIBUTES = (
    "async-event-queue-ids", "cloning-enabled", "concurrency-checks-enabled",
    "concurrency-level", "data-policy", "disk-store-name", "disk-synchronous", "early-ack",
    "enable-async-conflation", "enable-gateway", "enable-subscription-conflation",
    "gateway-sender-ids", "hub-id", "id", "ignore-jta", "index-update-type",
    "initial-capacity", "is-lock-grantor", "load-factor", "mirror-type",
    "multicast-enabled", "off-heap", "persist-backup", "pool-name", "publisher", "refid",
    "scope", "statistics-enabled",
)  # fmt: skip
"""The attributes of `<region-attributes>` in Geode's cache-1.0.xsd and the GemFire 7.0/8.0
DTDs (`off-heap` is the schema's only addition); Geode's validating parser refuses others."""

PARTITION_DATA_POLICIES = ("partition", "persistent-partition")
"""The `data-policy` values of a partitioned region in Geode's cache.xml schema."""
DATA_POLICIES = ("empty", "normal", "preloaded", "replicate", "persistent-replicate",
                 *PARTITION_DATA_POLICIES)  # fmt: skip
"""Every `data-policy` of the schema (Geode refuses any other value)."""

FAILURE_LISTENER = "gateway-event-failure-listener"
SENDER_FILTERS = (
    "gateway-event-filter",
    "gateway-event-substitution-filter",
    "gateway-transport-filter",
)

CACHE_ELEMENTS = (
    "cache-transaction-manager",
    "dynamic-region-factory",
    "gateway-hub",
    "gateway-sender",
    "gateway-receiver",
    "gateway-conflict-resolver",
    "async-event-queue",
    "cache-server",
    "pool",
    "disk-store",
    "pdx",
    "region-attributes",
    "jndi-bindings",
    "region",
    "vm-root-region",
    "function-service",
    "resource-manager",
    "serialization-registration",
    "backup",
    "initializer",
)
"""The child elements of `<cache>` in Geode's cache.xml schema and the GemFire DTDs."""
_READ_ELEMENTS = (
    "gateway-sender",
    "gateway-receiver",
    "gateway-conflict-resolver",
    "region",
    "region-attributes",
)

_GEMFIRE_DTD = re.compile(
    r"(https?://www\.gemstone\.com/dtd/cache\d+_\d+\.dtd"
    r"|-//GemStone Systems, Inc\.//GemFire Declarative Caching \d+\.\d+//EN)"
)


@dataclass(slots=True)
class _Element:
    """A parsed XML element: namespace, local name, unqualified attributes, line."""

    namespace: str | None
    name: str
    attributes: dict[str, str]
    line: int
    children: list[_Element] = field(default_factory=list)
    text: str = ""


class _TreeBuilder(handler.ContentHandler):
    """Builds `_Element`s from SAX events, keeping each element's line number.

    Also the lexical handler: a DOCTYPE is accepted only when it names a GemFire cache
    DTD (which is never read), and a reference to an undeclared entity is refused.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.locator: Locator | None = None
        self.root: _Element | None = None
        self._open: list[_Element] = []
        self.unread_dtd = False

    def setDocumentLocator(self, locator: Locator) -> None:
        self.locator = locator

    def line(self) -> int:
        number = self.locator.getLineNumber() if self.locator is not None else None
        return number or 0

    def startElementNS(
        self, name: tuple[str | None, str], qname: str | None, attrs: AttributesNSImpl
    ) -> None:
        attributes = {
            local: value for (namespace, local), value in attrs.items() if namespace is None
        }
        element = _Element(name[0], name[1], attributes, self.line())
        if self._open:
            self._open[-1].children.append(element)
        else:
            self.root = element
        self._open.append(element)

    def endElementNS(self, name: tuple[str | None, str], qname: str | None) -> None:
        self._open.pop()

    def characters(self, content: str) -> None:
        if self._open:
            self._open[-1].text += content

    def skippedEntity(self, name: str) -> None:
        raise GeodeImportError(
            f"{self.path}:{self.line()}: refused: reference to the undeclared entity &{name};"
        )

    # The lexical handler (xml.sax.handler.LexicalHandler's methods).
    def startDTD(self, name: str, public_id: str | None, system_id: str | None) -> None:
        external = [ref for ref in (public_id, system_id) if ref]
        self.unread_dtd = bool(external)
        if external and not any(_GEMFIRE_DTD.fullmatch(ref) for ref in external):
            raise GeodeImportError(
                f"{self.path}:{self.line()}: refused: the file refers to the external DTD "
                f"{system_id or public_id!r}; only GemFire's cache DTDs (which Geode "
                "resolves from its own jar) are accepted"
            )

    def endDTD(self) -> None:
        pass

    def startCDATA(self) -> None:
        pass

    def endCDATA(self) -> None:
        pass

    def comment(self, content: str) -> None:
        pass

    def startEntity(self, name: str) -> None:
        pass

    def endEntity(self, name: str) -> None:
        pass


def _parse_xml(data: bytes, path: str) -> _Element:
    builder = _TreeBuilder(path)
    parser = defusedxml.sax.make_parser()
    parser.forbid_entities = True
    # A DOCTYPE's external DTD is never read (expat's external entities are off);
    # `startDTD` above decides which DOCTYPEs are acceptable.
    parser.forbid_external = False
    parser.setFeature(handler.feature_namespaces, True)
    parser.setFeature(handler.feature_external_ges, False)
    parser.setFeature(handler.feature_external_pes, False)
    parser.setProperty(handler.property_lexical_handler, builder)
    parser.setContentHandler(builder)
    try:
        parser.parse(io.BytesIO(data))
    except SAXParseException as exc:
        raise GeodeImportError(
            f"{path}:{exc.getLineNumber()}: not well-formed XML: {exc.getMessage()}"
        ) from None
    except EntitiesForbidden as exc:
        raise GeodeImportError(
            f"{path}:{builder.line()}: refused: the file declares the XML entity {exc.name!r}; "
            "entity declarations (entity expansion, external entities) are not allowed"
        ) from None
    except DefusedXmlException as exc:
        raise GeodeImportError(f"{path}:{builder.line()}: refused unsafe XML: {exc}") from None
    except LookupError as exc:  # <?xml ... encoding="NAME"?> that Python does not know
        raise GeodeImportError(f"{path}:1: not well-formed XML: {exc}") from None
    if builder.root is None:  # pragma: no cover - expat reports a missing root itself
        raise GeodeImportError(f"{path}: no XML element found")
    if builder.unread_dtd:
        _refuse_undeclared_entities(data, path)
    return builder.root


_ENTITY_REFERENCE = re.compile(rb"&([A-Za-z_:][A-Za-z0-9_.:-]*);")
_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
_PREDEFINED = {b"amp", b"lt", b"gt", b"quot", b"apos"}


def _refuse_undeclared_entities(data: bytes, path: str) -> None:
    """With an unread DTD, expat silently drops `&name;` in attribute values: refuse it.

    GemFire's cache DTDs declare no entities, so any reference but XML's five is an error.
    """
    text = _COMMENT.sub(lambda m: b"\n" * m.group().count(b"\n"), data)
    for match in _ENTITY_REFERENCE.finditer(text):
        if match.group(1) not in _PREDEFINED:
            line = text.count(b"\n", 0, match.start()) + 1
            name = match.group(1).decode("ascii", "replace")
            raise GeodeImportError(
                f"{path}:{line}: refused: reference to the undeclared entity &{name};"
            )


def read_cache_xml(
    data: bytes, path: str, site: SiteDeclarations, defines: Mapping[str, str]
) -> None:
    """Add what one cache.xml declares to `site`."""
    root = _parse_xml(data, path)
    namespace = root.namespace
    if root.name != "cache" or (namespace is not None and namespace not in CACHE_NAMESPACES):
        found = f"{{{namespace}}}{root.name}" if namespace else root.name
        raise GeodeImportError(
            f"{path}:{root.line}: root element is <{found}>, expected <cache> with namespace "
            f"{' or '.join(CACHE_NAMESPACES)} or none (a client-cache has no gateways)"
        )
    reader = _CacheReader(path, namespace, site, defines)
    reader.declared_ids = _attribute_ids(root, namespace)
    for element in root.children:
        if not reader.ours(element):
            continue  # another schema's extension element: not a gateway
        where = f"{path}:{element.line}"
        if element.name == "region-attributes" and "id" in element.attributes:
            reader.define_attributes(element)
        elif element.name == "gateway-sender":
            site.add_sender(reader.sender(element))
        elif element.name == "gateway-receiver":
            site.set_receiver(reader.receiver(element))
        elif element.name == "region":
            reader.region(element, "")
        elif element.name == "gateway-conflict-resolver":
            class_name = _class_name(element) or "(no class-name)"
            site.conflict_resolver = Written("<gateway-conflict-resolver>", class_name, where)
        elif element.name == "gateway-hub":
            site.warnings.append(
                f"{where}: <gateway-hub> (the pre-7.0 WAN) is not modelled; ignored "
                "(declare gateway-sender and gateway-receiver instead)"
            )
        elif element.name == "pdx":
            site.warnings.append(
                f"{where}: <pdx>: Geode sends PDX type definitions between sites; the "
                "model's values are plain JSON (PDX type propagation is not modelled, "
                "SPEC §16.10)"
            )
        elif element.name not in CACHE_ELEMENTS:
            # Geode's schema rejects the file; one close to an element this import reads
            # is a misspelling that would otherwise leave a gateway out silently.
            close = difflib.get_close_matches(element.name, _READ_ELEMENTS, n=1, cutoff=0.75)
            if close:
                raise GeodeImportError(
                    f"{where}: unknown element <{element.name}> in <cache> "
                    f"(did you mean <{close[0]}>?)"
                )


def _attribute_ids(root: _Element, namespace: str | None) -> dict[str, _Element]:
    """Every `<region-attributes id>` of the file, the first of each id, at any depth."""
    ids: dict[str, _Element] = {}
    elements = root.children[::-1]  # a stack, in document order
    while elements:
        element = elements.pop()
        if element.namespace == namespace and element.name == "region-attributes":
            ids.setdefault(element.attributes.get("id", ""), element)
        elements.extend(reversed(element.children))
    ids.pop("", None)
    return ids


def _class_name(element: _Element) -> str:
    for child in element.children:
        if child.name == "class-name":
            return child.text.strip()
    return ""


@dataclass(slots=True)
class _CacheReader:
    path: str
    namespace: str | None
    site: SiteDeclarations
    defines: Mapping[str, str]
    named_attributes: dict[str, list[tuple[str | None, _Element]]] = field(default_factory=dict)
    """The `<region-attributes id>`s read so far: each id's attribute sources, weakest first
    (a `RegionShortcut` its refids lead to as None, then each named one with its id)."""
    declared_ids: dict[str, _Element] = field(default_factory=dict)

    def ours(self, element: _Element) -> bool:
        return element.namespace == self.namespace

    def where(self, element: _Element) -> str:
        return f"{self.path}:{element.line}"

    def value(self, element: _Element, name: str, label: str) -> str:
        return expand_placeholders(
            element.attributes[name], self.defines, self.where(element), f"{label}: {name}"
        )

    def attributes(self, element: _Element, label: str, known: Sequence[str]) -> dict[str, Written]:
        settings: dict[str, Written] = {}
        for name in sorted(element.attributes):
            if name not in known:
                hint = did_you_mean(name, sorted(known))
                raise GeodeImportError(
                    f"{self.where(element)}: {label}: unknown attribute "
                    f"{name}={element.attributes[name]!r}; <{element.name}> has no such "
                    f"attribute in Geode's cache.xml schema{hint}"
                )
            settings[name] = Written(name, self.value(element, name, label), self.where(element))
        return settings

    def sender(self, element: _Element) -> SenderDeclaration:
        sender_id = element.attributes.get("id")
        label = (
            f"<gateway-sender id={sender_id!r}>" if sender_id is not None else "<gateway-sender>"
        )
        for required in ("id", "remote-distributed-system-id"):
            if required not in element.attributes:
                raise GeodeImportError(
                    f"{self.where(element)}: {label}: attribute {required} is missing"
                )
        settings = self.attributes(element, label, SENDER_ATTRIBUTES)
        declaration = SenderDeclaration(settings["id"].value, self.where(element), label, settings)
        for child in element.children:
            where = self.where(child)
            if child.name == FAILURE_LISTENER:
                class_name = _class_name(child) or "(no class-name)"
                declaration.failure_listener = Written(f"<{child.name}>", class_name, where)
            elif child.name in SENDER_FILTERS:
                declaration.filters.append(
                    Written(f"<{child.name}>", _class_name(child) or "(no class-name)", where)
                )
            else:
                allowed = ", ".join(f"<{name}>" for name in (FAILURE_LISTENER, *SENDER_FILTERS))
                raise GeodeImportError(
                    f"{where}: {label}: unknown element <{child.name}> (allowed: {allowed})"
                )
        return declaration

    def receiver(self, element: _Element) -> ReceiverDeclaration:
        label = "<gateway-receiver>"
        settings = self.attributes(element, label, RECEIVER_ATTRIBUTES)
        for child in element.children:
            if child.name != "gateway-transport-filter":
                raise GeodeImportError(
                    f"{self.where(child)}: {label}: unknown element <{child.name}> "
                    "(allowed: <gateway-transport-filter>)"
                )
        return ReceiverDeclaration(self.where(element), label, settings)

    def region(self, element: _Element, parent: str) -> None:
        """A region and its subregions; their names are full paths (`/a/b`).

        Its attributes come, weakest first, from the region's `refid`, then from its own
        `<region-attributes>` (and that one's `refid`), as Geode's `RegionCreation` does.
        """
        if "name" not in element.attributes:  # required by Geode's schema and DTDs
            inside = f" in <region name={parent!r}>" if parent else ""
            raise GeodeImportError(
                f"{self.where(element)}: <region>{inside}: attribute name is missing"
            )
        name = f"{parent}/{element.attributes['name']}"
        declaration = RegionDeclaration(name, self.where(element))
        label = f"<region name={name!r}>"
        for attribute in sorted(set(element.attributes) - {"name", "refid"}):
            raise GeodeImportError(
                f"{self.where(element)}: {label}: unknown attribute "
                f"{attribute}={element.attributes[attribute]!r}; <region> has only name and "
                "refid in Geode's cache.xml schema (the rest goes in <region-attributes>)"
            )
        chain = self._named(element, label)  # attribute sources, weakest first
        for source in element.children:
            if self.ours(source) and source.name == "region-attributes":
                chain = [*chain, *self._named(source, label), (source, label)]
                if "id" in source.attributes:
                    self.define_attributes(source)
        partition_attributes: _Element | None = None
        for source, source_label in chain:
            if source.name == "region-attributes":
                self._known_region_attributes(source, source_label)
            if source.name != "region-attributes":  # the RegionShortcut a refid names
                shortcut = source.attributes["refid"]
                declaration.type = Written("refid", shortcut, self.where(source))
                declaration.partitioned = is_partition_shortcut(shortcut)
                continue
            if "gateway-sender-ids" in source.attributes:
                declaration.sender_ids = Written(
                    "gateway-sender-ids",
                    self.value(source, "gateway-sender-ids", source_label),
                    self.where(source),
                )
            if "concurrency-checks-enabled" in source.attributes:
                declaration.concurrency_checks = Written(
                    "concurrency-checks-enabled",
                    self.value(source, "concurrency-checks-enabled", source_label),
                    self.where(source),
                )
            if "data-policy" in source.attributes:
                policy = self.value(source, "data-policy", source_label)
                if policy.strip() not in DATA_POLICIES:
                    close = difflib.get_close_matches(policy.strip(), DATA_POLICIES, n=1)
                    hint = f"did you mean {close[0]}?" if close else "one of " + ", ".join(
                        DATA_POLICIES
                    )  # fmt: skip
                    raise GeodeImportError(
                        f"{self.where(source)}: {source_label}: data-policy: {policy!r} is "
                        f"not a Geode data policy ({hint})"
                    )
                declaration.type = Written("data-policy", policy, self.where(source))
                declaration.partitioned = policy.strip() in PARTITION_DATA_POLICIES
            for child in source.children:
                if self.ours(child) and child.name == "partition-attributes":
                    partition_attributes = child
                    if "total-num-buckets" in child.attributes:
                        declaration.total_num_buckets = Written(
                            "total-num-buckets",
                            self.value(child, "total-num-buckets", source_label),
                            self.where(child),
                        )
        if partition_attributes is not None:
            self._partition_attributes(declaration, partition_attributes, label)
        self.site.add_region(declaration, label)
        for child in element.children:
            if self.ours(child) and child.name == "region":
                self.region(child, name)

    def _partition_attributes(
        self, declaration: RegionDeclaration, element: _Element, label: str
    ) -> None:
        """`<partition-attributes>` makes a region without a data policy partitioned
        (Geode's `RegionAttributesCreation.setPartitionAttributes`); with a data policy
        that is not a partition one, Geode refuses the region."""
        if declaration.type is None:
            declaration.partitioned = True
            declaration.type = Written("<partition-attributes>", "", self.where(element))
        elif not declaration.partitioned:
            written = declaration.type
            raise GeodeImportError(
                f"{self.where(element)}: {label}: <partition-attributes> on a region whose "
                f"{written.name} is {written.value!r} ({written.where}); Geode: 'Data policy "
                f"{written.value} is not allowed for a partitioned region'"
            )

    def _known_region_attributes(self, element: _Element, label: str) -> None:
        for name in sorted(element.attributes):
            if name not in REGION_ATTRIBUTES:
                hint = did_you_mean(name, REGION_ATTRIBUTES)
                raise GeodeImportError(
                    f"{self.where(element)}: {label}: unknown attribute "
                    f"{name}={element.attributes[name]!r}; <region-attributes> has no such "
                    f"attribute in Geode's cache.xml schema{hint}"
                )

    def define_attributes(self, element: _Element) -> None:
        """A `<region-attributes id>` once Geode has read it: a refid names only those
        read before it (Geode's `RegionAttributesCreation.inheritAttributes` looks the id
        up when the referring element starts), and a second one of an id replaces the
        first for the elements after it."""
        name = element.attributes["id"]
        label = f"<region-attributes id={name!r}>"
        self.named_attributes[name] = [*self._sources(element, label), (name, element)]

    def _named(self, element: _Element, label: str) -> list[tuple[_Element, str]]:
        """The attribute sources `element`'s refid leads to, weakest first, each with the
        label its values are named by."""
        return [
            (source, label if name is None else f"{label} via <region-attributes id={name!r}>")
            for name, source in self._sources(element, label)
        ]

    def _sources(self, element: _Element, label: str) -> list[tuple[str | None, _Element]]:
        """The named region-attributes `element`'s refid leads to, following their own
        refids, weakest first.

        A refid naming no region-attributes read so far but a `RegionShortcut`
        (`REPLICATE`, `PARTITION`, ...) sets the region's type (SPEC §16.9) and no gateway
        senders; it comes first in the list, as the element that names it (id None).
        """
        refid = element.attributes.get("refid")
        if refid is None:
            return []
        if refid in self.named_attributes:
            return self.named_attributes[refid]
        if refid in REGION_SHORTCUTS:
            return [(None, _Element(element.namespace, "refid", {"refid": refid}, element.line))]
        later = self.declared_ids.get(refid)
        if later is not None:  # itself, one that refers back to it, or one further down
            raise GeodeImportError(
                f"{self.where(element)}: {label}: refid: {refid!r} names the "
                f"<region-attributes id> at {self.where(later)}, not one defined before this "
                f"element (Geode reads cache.xml in order: 'Cannot reference non-existing "
                f"region attributes named {refid}')"
            )
        names = [*REGION_SHORTCUTS, *self.declared_ids]
        hint = did_you_mean(refid, names)
        raise GeodeImportError(
            f"{self.where(element)}: {label}: refid: {refid!r} names no <region-attributes "
            f"id> of this file and no Geode region shortcut{hint}"
        )
