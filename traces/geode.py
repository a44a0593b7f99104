"""Import a real Geode WAN configuration: SPEC §2 (R6, R7) from cache.xml or gfsh.

One file per site, named on the command line as `--site DSID=FILE` (a site's dsid lives
in its `gemfire.properties`, not in cache.xml, so the user says which file is which).
A file is either a `cache.xml` (namespace `http://geode.apache.org/schema/cache`, the
older `http://schema.pivotal.io/gemfire/cache`, or none) or a gfsh script with one
command per line (`create gateway-sender ...`, `create gateway-receiver ...`).

What maps onto the model (everything else of a gateway is reported, not silently lost):

    gateway-sender   id                                  -> senders[].id
                     remote-distributed-system-id        -> senders[].remote
                     batch-size                          -> senders[].batch_size
                     batch-time-interval                 -> senders[].batch_time_interval_ms
                     <gateway-event-failure-listener>,   -> senders[].failure_listener "dlq" (R24)
                     --gateway-event-failure-listener
    gateway-receiver retry-attempts                      -> receivers[].retry_attempts
                     wait-time-between-retry-attempts    -> receivers[].wait_time_between_
                                                            retry_attempts_ms

(the failure listener and the two receiver settings are the dead-letter proposal's).
Attributes and options of Geode's schema that the model does not cover (parallel,
conflation, persistence, ports, filters, ...) become warnings returned with the
configuration. Anything that is not Geode's (a misspelt `batch-sise`) is an error: it
must not silently become a default. Values are checked by `traces.config.parse_config`,
so an imported configuration obeys exactly the rules of a hand-written one; errors name
file, line, element and attribute.

XML is parsed only with defusedxml: entity declarations (billion laughs) and external
DTDs or entities are refused with one line naming the file.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax import SAXParseException, handler
from xml.sax.xmlreader import AttributesNSImpl, Locator

import defusedxml.sax
from defusedxml.common import (
    DefusedXmlException,
    EntitiesForbidden,
    ExternalReferenceForbidden,
)

from traces.config import Config, parse_config
from traces.files import read_bytes
from wanconform.errors import ConfigError

CACHE_NAMESPACES = (
    "http://geode.apache.org/schema/cache",
    "http://schema.pivotal.io/gemfire/cache",
)
"""cache.xml namespaces we read; a file may also use none."""

SENDER = "gateway-sender"
RECEIVER = "gateway-receiver"

# Geode name (cache.xml attribute or gfsh option, without "--") -> SPEC §2 field.
_SENDER_FIELDS = {
    "id": "id",
    "remote-distributed-system-id": "remote",
    "batch-size": "batch_size",
    "batch-time-interval": "batch_time_interval_ms",
}
_RECEIVER_FIELDS = {
    "retry-attempts": "retry_attempts",
    "wait-time-between-retry-attempts": "wait_time_between_retry_attempts_ms",
}
_FAILURE_LISTENER = "gateway-event-failure-listener"

_NOT_MODELLED_QUEUE = "queue overflow and persistence are not modelled (SPEC §13)"
_NOT_MODELLED_NETWORK = "connections and ports are not modelled"
_NOT_MODELLED_FILTER = "event and transport filters are not modelled"
_NOT_MODELLED_DEPLOY = "members and groups are not modelled: a site is one system (R1)"

# Geode's own settings that the model does not cover -> why they are ignored.
_SENDER_IGNORED = {
    "parallel": "the model's senders are serial (SPEC §13)",
    "manual-start": "senders start at once in the model",
    "socket-buffer-size": _NOT_MODELLED_NETWORK,
    "socket-read-timeout": "the model's ack timeout is ack_timeout_ms (stays at its default)",
    "enable-batch-conflation": "batch conflation is not modelled (SPEC §13)",
    "enable-persistence": _NOT_MODELLED_QUEUE,
    "disk-store-name": _NOT_MODELLED_QUEUE,
    "disk-synchronous": _NOT_MODELLED_QUEUE,
    "maximum-queue-memory": _NOT_MODELLED_QUEUE,
    "alert-threshold": "queue alerts are not modelled",
    "dispatcher-threads": "a sender dispatches one batch at a time (R13)",
    "order-policy": "a sender keeps one FIFO queue (R12)",
    "group-transaction-events": "transactions are not modelled",
    "enforce-threads-connect-same-receiver": _NOT_MODELLED_NETWORK,
}
_RECEIVER_IGNORED = {
    "start-port": _NOT_MODELLED_NETWORK,
    "end-port": _NOT_MODELLED_NETWORK,
    "bind-address": _NOT_MODELLED_NETWORK,
    "hostname-for-senders": _NOT_MODELLED_NETWORK,
    "maximum-time-between-pings": _NOT_MODELLED_NETWORK,
    "socket-buffer-size": _NOT_MODELLED_NETWORK,
    "manual-start": "receivers start at once in the model",
}
# Sub-elements of cache.xml gateways (and the gfsh options that set them).
_FILTERS = {
    "gateway-event-filter": _NOT_MODELLED_FILTER,
    "gateway-event-substitution-filter": _NOT_MODELLED_FILTER,
    "gateway-transport-filter": _NOT_MODELLED_FILTER,
}
_GFSH_ONLY_IGNORED = {
    "group": _NOT_MODELLED_DEPLOY,
    "groups": _NOT_MODELLED_DEPLOY,
    "member": _NOT_MODELLED_DEPLOY,
    "members": _NOT_MODELLED_DEPLOY,
}
_GFSH_SENDER_IGNORED = {
    **_SENDER_IGNORED,
    **_FILTERS,
    **_GFSH_ONLY_IGNORED,
    "type": "the model's senders are serial (SPEC §13)",
}
_GFSH_RECEIVER_IGNORED = {
    **_RECEIVER_IGNORED,
    "gateway-transport-filter": _NOT_MODELLED_FILTER,
    **_GFSH_ONLY_IGNORED,
    "if-not-exists": "gfsh-only behaviour",
    "skip-if-exists": "gfsh-only behaviour",
}
# gfsh options that may be given without a value (`--parallel` means `--parallel=true`).
_GFSH_FLAGS = frozenset(
    {
        "parallel",
        "manual-start",
        "enable-batch-conflation",
        "enable-persistence",
        "disk-synchronous",
        "group-transaction-events",
        "enforce-threads-connect-same-receiver",
        "if-not-exists",
        "skip-if-exists",
    }
)

_INTEGER = re.compile(r"[+-]?[0-9]+")
_FIELD_ERROR = re.compile(r"^(?:senders|receivers)\[0\]\.(\w+): (.*)$", re.DOTALL)


class GeodeImportError(ConfigError):
    """A Geode configuration file that cannot be imported; names file, line and attribute."""


@dataclass(frozen=True, slots=True)
class SiteFile:
    """One `--site DSID=FILE` argument: the configuration file of one distributed system."""

    site: int
    path: str


@dataclass(frozen=True, slots=True)
class ImportedConfig:
    """A SPEC §2 configuration and the warnings about what it leaves out."""

    config: Config
    warnings: tuple[str, ...]


@dataclass(slots=True)
class GatewayDeclaration:
    """One gateway-sender or gateway-receiver as declared, before validation.

    `settings` maps a SPEC §2 field to (raw text, Geode name as written in the file),
    so every error can quote what the user wrote.
    """

    kind: str
    site: int
    where: str
    label: str
    settings: dict[str, tuple[str, str]] = field(default_factory=dict)
    failure_listener: str | None = None


@dataclass(slots=True)
class SiteDeclarations:
    """What one site's file declares; filled while the file is read, then validated."""

    site: int
    path: str
    senders: list[GatewayDeclaration] = field(default_factory=list)
    receiver: GatewayDeclaration | None = None
    warnings: list[str] = field(default_factory=list)


def parse_site_argument(text: str) -> SiteFile:
    """Parse `DSID=FILE` (the `--site` option); DSID is a distributed-system-id 1..255."""
    dsid, sep, path = text.partition("=")
    if not sep or not path or not _INTEGER.fullmatch(dsid.strip()):
        raise GeodeImportError(f"--site {text!r}: expected DSID=FILE, e.g. --site 1=ln-cache.xml")
    site = int(dsid)
    if not 1 <= site <= 255:
        raise GeodeImportError(
            f"--site {text!r}: distributed-system-id must be from 1 to 255 (R1), got {site}"
        )
    return SiteFile(site=site, path=path)


def import_geode_config(site_files: Sequence[SiteFile]) -> ImportedConfig:
    """Read one cache.xml or gfsh script per site; build and validate the SPEC §2 config."""
    if not site_files:
        raise GeodeImportError("no --site DSID=FILE given: name one configuration file per site")
    by_site: dict[int, SiteFile] = {}
    for site_file in site_files:
        if site_file.site in by_site:
            raise GeodeImportError(
                f"--site {site_file.site}={site_file.path}: site {site_file.site} is already "
                f"given as --site {site_file.site}={by_site[site_file.site].path}"
            )
        by_site[site_file.site] = site_file
    sites = sorted(by_site)
    declared = [read_site_file(by_site[site]) for site in sites]
    warnings: list[str] = [w for d in declared for w in d.warnings]

    senders: list[dict[str, Any]] = []
    sender_ids: dict[str, GatewayDeclaration] = {}
    pairs: dict[tuple[int, int], GatewayDeclaration] = {}
    for site_declarations in declared:
        for sender in site_declarations.senders:
            raw = _validated_sender(sender, sites)
            previous = sender_ids.get(raw["id"])
            if previous is not None:
                raise GeodeImportError(
                    f"{sender.where}: {sender.label}: sender id {raw['id']!r} is already used "
                    f"at {previous.where} (site {previous.site}); the model needs sender ids "
                    "unique across all sites (R6): rename one of them"
                )
            pair = (raw["site"], raw["remote"])
            if pair in pairs:
                raise GeodeImportError(
                    f"{sender.where}: {sender.label}: site {pair[0]} already has a sender to "
                    f"site {pair[1]} ({pairs[pair].where}); R6 allows one per pair of sites"
                )
            sender_ids[raw["id"]] = sender
            pairs[pair] = sender
            senders.append(raw)
    receivers = [_validated_receiver(d.receiver) for d in declared if d.receiver is not None]
    with_receiver = {d.site for d in declared if d.receiver is not None}
    for site in sites:
        shippers = sorted(s["id"] for s in senders if s["remote"] == site)
        if shippers and site not in with_receiver:
            shipping = (
                f"sender {shippers[0]} ships"
                if len(shippers) == 1
                else f"senders {', '.join(shippers)} ship"
            )
            warnings.append(
                f"{by_site[site].path}: site {site} declares no gateway-receiver, but "
                f"{shipping} to it; the model gives it a receiver with default settings"
            )
    try:
        config = parse_config({"sites": sites, "senders": senders, "receivers": receivers})
    except ConfigError as exc:  # already checked piecewise above; kept as a safety net
        raise GeodeImportError(f"imported configuration: {exc}") from None
    return ImportedConfig(config=config, warnings=tuple(warnings))


def read_site_file(site_file: SiteFile) -> SiteDeclarations:
    """Read one site's file, as cache.xml or as a gfsh script (by suffix, else by content)."""
    data = read_bytes(site_file.path, "a cache.xml or gfsh file", GeodeImportError)
    suffix = os.path.splitext(site_file.path)[1].lower()
    if suffix == ".xml" or (suffix != ".gfsh" and data.lstrip().startswith(b"<")):
        return read_cache_xml(data, site_file)
    return read_gfsh_script(data, site_file)


# --- cache.xml ---------------------------------------------------------------------------


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
    """Builds `_Element`s from SAX events, keeping each element's line number."""

    def __init__(self) -> None:
        super().__init__()
        self.locator: Locator | None = None
        self.root: _Element | None = None
        self._open: list[_Element] = []

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


def _parse_xml(data: bytes, path: str) -> _Element:
    builder = _TreeBuilder()
    parser = defusedxml.sax.make_parser()
    parser.setFeature(handler.feature_namespaces, True)
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
    except ExternalReferenceForbidden as exc:
        raise GeodeImportError(
            f"{path}:{builder.line()}: refused: the file refers to the external resource "
            f"{exc.sysid!r}; external DTDs and entities are not allowed (use the "
            "cache.xml schema form without <!DOCTYPE>)"
        ) from None
    except DefusedXmlException as exc:
        raise GeodeImportError(f"{path}:{builder.line()}: refused unsafe XML: {exc}") from None
    if builder.root is None:  # pragma: no cover - expat reports a missing root itself
        raise GeodeImportError(f"{path}: no XML element found")
    return builder.root


def read_cache_xml(data: bytes, site_file: SiteFile) -> SiteDeclarations:
    """The gateway-sender and gateway-receiver elements of one cache.xml."""
    path = site_file.path
    root = _parse_xml(data, path)
    namespace = root.namespace
    if root.name != "cache" or (namespace is not None and namespace not in CACHE_NAMESPACES):
        found = f"{{{namespace}}}{root.name}" if namespace else root.name
        raise GeodeImportError(
            f"{path}:{root.line}: root element is <{found}>, expected <cache> with namespace "
            f"{' or '.join(CACHE_NAMESPACES)} or none (a client-cache has no gateways)"
        )
    out = SiteDeclarations(site=site_file.site, path=path)
    for element in root.children:
        if element.namespace != namespace:
            continue  # another schema's extension element: not a gateway
        where = f"{path}:{element.line}"
        if element.name == SENDER:
            out.senders.append(_xml_sender(element, site_file.site, path, out.warnings))
        elif element.name == RECEIVER:
            if out.receiver is not None:
                raise GeodeImportError(
                    f"{where}: a second <gateway-receiver> (the first is at "
                    f"{out.receiver.where}); a site has one receiver"
                )
            out.receiver = _xml_receiver(element, site_file.site, path, out.warnings)
        elif element.name == "gateway-hub":
            out.warnings.append(
                f"{where}: <gateway-hub> (the pre-7.0 WAN) is not modelled; ignored "
                "(declare gateway-sender and gateway-receiver instead)"
            )
    return out


def _xml_attributes(
    element: _Element,
    where: str,
    label: str,
    mapped: Mapping[str, str],
    ignored: Mapping[str, str],
    warnings: list[str],
) -> dict[str, tuple[str, str]]:
    settings: dict[str, tuple[str, str]] = {}
    for name in sorted(element.attributes):
        value = element.attributes[name]
        if name in mapped:
            settings[mapped[name]] = (value, name)
        elif name in ignored:
            warnings.append(f"{where}: {label}: attribute {name} ignored: {ignored[name]}")
        else:
            hint = _did_you_mean(name, [*mapped, *ignored], "")
            raise GeodeImportError(
                f"{where}: {label}: unknown attribute {name}={value!r}; "
                f"<{element.name}> has no such attribute in Geode's cache.xml schema{hint}"
            )
    return settings


def _xml_sender(element: _Element, site: int, path: str, warnings: list[str]) -> GatewayDeclaration:
    where = f"{path}:{element.line}"
    sender_id = element.attributes.get("id")
    label = f"<gateway-sender id={sender_id!r}>" if sender_id is not None else "<gateway-sender>"
    settings = _xml_attributes(element, where, label, _SENDER_FIELDS, _SENDER_IGNORED, warnings)
    declaration = GatewayDeclaration(SENDER, site, where, label, settings)
    for child in element.children:
        child_where = f"{path}:{child.line}"
        if child.name == _FAILURE_LISTENER:
            class_name = _class_name(child) or "(no class-name)"
            declaration.failure_listener = class_name
            warnings.append(
                f"{child_where}: {label}: <{_FAILURE_LISTENER}> {class_name} is modelled "
                'as the dead-letter listener (failure_listener "dlq", R24)'
            )
        elif child.name in _FILTERS:
            warnings.append(
                f"{child_where}: {label}: <{child.name}> ignored: {_FILTERS[child.name]}"
            )
        else:
            raise GeodeImportError(
                f"{child_where}: {label}: unknown element <{child.name}> "
                f"(allowed: <{_FAILURE_LISTENER}>, {', '.join(f'<{f}>' for f in _FILTERS)})"
            )
    for required in ("id", "remote-distributed-system-id"):
        if _SENDER_FIELDS[required] not in settings:
            raise GeodeImportError(f"{where}: {label}: attribute {required} is missing")
    return declaration


def _class_name(element: _Element) -> str:
    for child in element.children:
        if child.name == "class-name":
            return child.text.strip()
    return ""


def _xml_receiver(
    element: _Element, site: int, path: str, warnings: list[str]
) -> GatewayDeclaration:
    where = f"{path}:{element.line}"
    label = "<gateway-receiver>"
    settings = _xml_attributes(element, where, label, _RECEIVER_FIELDS, _RECEIVER_IGNORED, warnings)
    for child in element.children:
        child_where = f"{path}:{child.line}"
        if child.name == "gateway-transport-filter":
            warnings.append(
                f"{child_where}: {label}: <{child.name}> ignored: {_NOT_MODELLED_FILTER}"
            )
        else:
            raise GeodeImportError(
                f"{child_where}: {label}: unknown element <{child.name}> "
                "(allowed: <gateway-transport-filter>)"
            )
    return GatewayDeclaration(RECEIVER, site, where, label, settings)


# --- gfsh --------------------------------------------------------------------------------


def read_gfsh_script(data: bytes, site_file: SiteFile) -> SiteDeclarations:
    """The `create gateway-sender` / `create gateway-receiver` commands of a gfsh script.

    One command per line, `#` starts a comment; options are `--name=value` or
    `--name value`, quoted as in a shell (split with shlex). Other commands are ignored
    with a warning.
    """
    path = site_file.path
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GeodeImportError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "expected a cache.xml or a gfsh script"
        ) from None
    out = SiteDeclarations(site=site_file.site, path=path)
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{path}:{number}"
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise GeodeImportError(f"{where}: cannot split the gfsh command: {exc}") from None
        if not words:
            continue
        command = " ".join(words[:2])
        if command == f"create {SENDER}":
            out.senders.append(_gfsh_sender(words[2:], site_file.site, where, out.warnings))
        elif command == f"create {RECEIVER}":
            if out.receiver is not None:
                raise GeodeImportError(
                    f"{where}: a second 'create gateway-receiver' (the first is at "
                    f"{out.receiver.where}); a site has one receiver"
                )
            out.receiver = _gfsh_receiver(words[2:], site_file.site, where, out.warnings)
        else:
            out.warnings.append(f"{where}: gfsh command {command!r} is not a gateway; ignored")
    return out


def _gfsh_options(words: Sequence[str], where: str, command: str) -> dict[str, str | None]:
    """`--name=value`, `--name value` or a bare `--flag` (value None), in order."""
    options: dict[str, str | None] = {}
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("--") or word == "--":
            raise GeodeImportError(
                f"{where}: {command}: unexpected argument {word!r} "
                "(options are --name=value or --name value)"
            )
        name, equals, value = word[2:].partition("=")
        option_value: str | None = value
        if not equals:
            following = words[index + 1] if index + 1 < len(words) else None
            if following is not None and not following.startswith("--"):
                option_value = following
                index += 1
            else:
                option_value = None
        if name in options:
            raise GeodeImportError(f"{where}: {command}: option --{name} is given twice")
        options[name] = option_value
        index += 1
    return options


def _gfsh_settings(
    options: Mapping[str, str | None],
    where: str,
    label: str,
    mapped: Mapping[str, str],
    ignored: Mapping[str, str],
    warnings: list[str],
    extra: Sequence[str] = (),
) -> dict[str, tuple[str, str]]:
    settings: dict[str, tuple[str, str]] = {}
    for name, value in options.items():
        if name in extra:
            continue
        if name not in mapped and name not in ignored:
            hint = _did_you_mean(name, [*mapped, *ignored, *extra], "--")
            raise GeodeImportError(f"{where}: {label}: unknown option --{name}{hint}")
        if value is None and name not in _GFSH_FLAGS:
            raise GeodeImportError(f"{where}: {label}: option --{name} needs a value")
        if name in mapped:
            assert value is not None  # mapped options are never flags
            settings[mapped[name]] = (value, f"--{name}")
        else:
            warnings.append(f"{where}: {label}: option --{name} ignored: {ignored[name]}")
    return settings


def _gfsh_sender(
    words: Sequence[str], site: int, where: str, warnings: list[str]
) -> GatewayDeclaration:
    options = _gfsh_options(words, where, f"create {SENDER}")
    sender_id = options.get("id")
    label = f"create gateway-sender --id={sender_id}" if sender_id else "create gateway-sender"
    settings = _gfsh_settings(
        options,
        where,
        label,
        _SENDER_FIELDS,
        _GFSH_SENDER_IGNORED,
        warnings,
        extra=(_FAILURE_LISTENER,),
    )
    declaration = GatewayDeclaration(SENDER, site, where, label, settings)
    if _FAILURE_LISTENER in options:
        class_name = options[_FAILURE_LISTENER]
        if not class_name:
            raise GeodeImportError(
                f"{where}: {label}: option --{_FAILURE_LISTENER} needs a class name"
            )
        declaration.failure_listener = class_name
        warnings.append(
            f"{where}: {label}: --{_FAILURE_LISTENER}={class_name} is modelled as the "
            'dead-letter listener (failure_listener "dlq", R24)'
        )
    for required in ("id", "remote-distributed-system-id"):
        if _SENDER_FIELDS[required] not in settings:
            raise GeodeImportError(f"{where}: {label}: option --{required} is missing")
    return declaration


def _gfsh_receiver(
    words: Sequence[str], site: int, where: str, warnings: list[str]
) -> GatewayDeclaration:
    label = f"create {RECEIVER}"
    options = _gfsh_options(words, where, label)
    settings = _gfsh_settings(
        options, where, label, _RECEIVER_FIELDS, _GFSH_RECEIVER_IGNORED, warnings
    )
    return GatewayDeclaration(RECEIVER, site, where, label, settings)


def _did_you_mean(name: str, known: Sequence[str], prefix: str) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""


# --- validation, shared by both formats ---------------------------------------------------


def _integer(declaration: GatewayDeclaration, spec_field: str) -> int:
    text, name = declaration.settings[spec_field]
    if not _INTEGER.fullmatch(text.strip()):
        raise GeodeImportError(
            f"{declaration.where}: {declaration.label}: {name}: must be an integer, got {text!r}"
        )
    return int(text)


def _validated(declaration: GatewayDeclaration, raw: dict[str, Any], sites: list[int]) -> None:
    """Check one sender or receiver with `parse_config`; errors quote the Geode name."""
    key = "senders" if declaration.kind == SENDER else "receivers"
    try:
        parse_config({"sites": sites, key: [raw]})
    except ConfigError as exc:
        message = str(exc)
        match = _FIELD_ERROR.match(message)
        if match is None:
            raise GeodeImportError(f"{declaration.where}: {declaration.label}: {message}") from None
        spec_field, problem = match.groups()
        name = declaration.settings.get(spec_field, ("", spec_field))[1]
        raise GeodeImportError(
            f"{declaration.where}: {declaration.label}: {name}: {problem}"
        ) from None


def _validated_sender(declaration: GatewayDeclaration, sites: list[int]) -> dict[str, Any]:
    raw: dict[str, Any] = {"id": declaration.settings["id"][0], "site": declaration.site}
    for spec_field in ("remote", "batch_size", "batch_time_interval_ms"):
        if spec_field in declaration.settings:
            raw[spec_field] = _integer(declaration, spec_field)
    remote = raw["remote"]
    if remote not in sites:
        name = declaration.settings["remote"][1]
        raise GeodeImportError(
            f"{declaration.where}: {declaration.label}: {name}: site {remote} has no "
            f"--site {remote}=FILE (imported sites: {', '.join(map(str, sites))})"
        )
    if declaration.failure_listener is not None:
        raw["failure_listener"] = "dlq"
    _validated(declaration, raw, sites)
    return raw


def _validated_receiver(declaration: GatewayDeclaration) -> dict[str, Any]:
    raw: dict[str, Any] = {"site": declaration.site}
    for spec_field in ("retry_attempts", "wait_time_between_retry_attempts_ms"):
        if spec_field in declaration.settings:
            raw[spec_field] = _integer(declaration, spec_field)
    _validated(declaration, raw, [declaration.site])
    return raw
