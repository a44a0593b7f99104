"""Which files make up which site: `--site [DSID=]FILE[,FILE...]` and `--define KEY=VALUE`.

A site (one distributed system, R1) is configured by one or more files, read in the
order given, each adding to or changing what the earlier ones declared (a gfsh script's
`alter`/`destroy` apply to a cache.xml given before it):

- `*.xml` (or a file starting with `<`): a cache.xml (`traces.geode.cachexml`);
- `*.properties`: a `gemfire.properties`, read for `distributed-system-id` only;
- anything else: a gfsh script or transcript (`traces.geode.gfsh`).

The dsid is taken where Geode takes it: `distributed-system-id` in gemfire.properties
or `--J=-Dgemfire.distributed-system-id=N` on a gfsh `start locator` / `start server`.
A cache.xml has none. `DSID=` on the command line names it when no file does; when both
do, they must agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import javaproperties

from traces.files import read_bytes
from traces.geode.cachexml import read_cache_xml
from traces.geode.declarations import GeodeImportError, SiteDeclarations, Written
from traces.geode.gfsh import read_gfsh_script

DSID_KEY = "distributed-system-id"
_DSID_PREFIX = re.compile(r"\s*([+-]?[0-9]+)\s*=")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True, slots=True)
class SiteArgument:
    """One `--site` argument: the dsid it names (if any) and the site's files, in order."""

    text: str
    site: int | None
    paths: tuple[str, ...]


def _dsid_in_range(value: int, context: str) -> int:
    if not 1 <= value <= 255:
        raise GeodeImportError(
            f"{context}: distributed-system-id must be from 1 to 255 (R1), got {value}"
        )
    return value


def parse_site_argument(text: str) -> SiteArgument:
    """Parse `[DSID=]FILE[,FILE...]` (the `--site` option)."""
    site: int | None = None
    rest = text
    match = _DSID_PREFIX.match(text)
    if match is not None:
        site = _dsid_in_range(int(match.group(1)), f"--site {text!r}")
        rest = text[match.end() :]
    paths = tuple(path for path in rest.split(","))
    if not rest or any(not path.strip() for path in paths):
        raise GeodeImportError(
            f"--site {text!r}: expected [DSID=]FILE[,FILE...], e.g. --site 1=ln-cache.xml,ln.gfsh"
        )
    return SiteArgument(text=text, site=site, paths=paths)


def parse_define(text: str) -> tuple[str, str]:
    """Parse `KEY=VALUE` (the `--define` option)."""
    key, sep, value = text.partition("=")
    if not sep or not _KEY.fullmatch(key):
        raise GeodeImportError(
            f"--define {text!r}: expected KEY=VALUE, e.g. --define REMOTE_DS_ID_1=2"
        )
    return key, value


def read_site(argument: SiteArgument, defines: Mapping[str, str]) -> tuple[int, SiteDeclarations]:
    """Read one site's files in order; return its dsid and what the files declare."""
    declared = SiteDeclarations(files=list(argument.paths))
    for path in argument.paths:
        data = read_bytes(path, "a cache.xml, gfsh or gemfire.properties file", GeodeImportError)
        suffix = os.path.splitext(path)[1].lower()
        if suffix == ".xml" or (suffix not in (".gfsh", ".properties") and _looks_xml(data)):
            read_cache_xml(data, path, declared, defines)
        elif suffix == ".properties":
            _read_properties(data, path, declared)
        else:
            read_gfsh_script(data, path, declared, defines)
    return _site_id(argument, declared), declared


def _looks_xml(data: bytes) -> bool:
    return data.lstrip().startswith(b"<")


def _read_properties(data: bytes, path: str, declared: SiteDeclarations) -> None:
    """The `distributed-system-id` of a gemfire.properties (Java properties syntax; a key
    given twice in one file has its last value, as `Properties.load` keeps it)."""
    dsid: Written | None = None
    try:
        text = data.decode("latin-1")  # the encoding of Java's Properties.load
        line = 1
        for entry in javaproperties.parse(text):
            if isinstance(entry, javaproperties.KeyValue) and entry.key == DSID_KEY:
                dsid = Written(DSID_KEY, entry.value, f"{path}:{line}")
            line += entry.source.count("\n")
    except javaproperties.InvalidUEscapeError as exc:
        raise GeodeImportError(f"{path}: not a Java properties file: {exc}") from None
    if dsid is not None:
        declared.set_dsid(dsid)


def _site_id(argument: SiteArgument, declared: SiteDeclarations) -> int:
    found = declared.dsid
    if found is None:
        if argument.site is None:
            raise GeodeImportError(
                f"--site {argument.text!r}: no distributed-system-id: none of the files "
                "sets it (gemfire.properties distributed-system-id, or gfsh start "
                "locator/server --J=-Dgemfire.distributed-system-id=N); give it as "
                f"--site DSID={argument.text}"
            )
        return argument.site
    text = found.value.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise GeodeImportError(f"{found.where}: {found.name}: must be an integer, got {text!r}")
    site = _dsid_in_range(int(text), f"{found.where}: {found.name}")
    if argument.site is not None and argument.site != site:
        raise GeodeImportError(
            f"{found.where}: {found.name}={site}, but the command line says --site "
            f"{argument.text}: the two must agree"
        )
    return site


def read_sites(
    arguments: Sequence[SiteArgument], defines: Mapping[str, str]
) -> dict[int, SiteDeclarations]:
    """Read every site; two arguments for one dsid are an error."""
    if not arguments:
        raise GeodeImportError(
            "no --site given: name each site's files, e.g. --site 1=ln-cache.xml,ln.gfsh"
        )
    sites: dict[int, SiteDeclarations] = {}
    given: dict[int, SiteArgument] = {}
    for argument in arguments:
        site, declared = read_site(argument, defines)
        if site in given:
            raise GeodeImportError(
                f"--site {argument.text}: site {site} is already given as --site "
                f"{given[site].text} (list all files of a site in one --site, "
                "separated by commas)"
            )
        given[site] = argument
        sites[site] = declared
    return sites
