"""`wanconform topology`: is a WAN topology supported (R23)? Which paths duplicate (R22)?

    wanconform topology CONFIG_OR_TRACE [--json] [--svg OUT]
    wanconform topology --site 1=ln-cache.xml,ln.gfsh --site 2=ny.gfsh [--json] [--svg OUT]

The input is a SPEC §2 configuration (`{"sites": ...}` or `{"config": {...}}`), a trace
file (its first line holds the configuration), or each site's Geode files (the options
of `wanconform import`). Exit status: 0 supported, 1 unsupported (a site receives an
event along two paths), 2 bad input. The SVG is written atomically, and only once the
analysis has succeeded; a line on stderr says where it went. Senders keep the names the
user wrote: an id made unique by the import (`1/sender3`) is shown with the Geode id.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import textwrap
from collections.abc import Mapping
from typing import Any

from conformance.properties.topology import (
    TopologyAnalysis,
    TopologyTooLargeError,
    analyse_topology,
)
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.errors import ConfigError, TraceError, WanconformError
from traces.files import read_text
from traces.geode import WAIT_FOREVER_MS
from traces.outputs import declare_outputs, say_written, write_text_atomically
from traces.text import plural, printable, shell_word
from traces.tracefile import BOM, JSON_SPACE, decode_line, json_problem, parse_trace_lines
from wanconform.cmd_import import add_site_options, load_geode_sites

EXIT_SUPPORTED = 0
EXIT_UNSUPPORTED = 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "topology",
        help="check that a WAN topology is supported (R23) and name duplicate paths",
        description=(
            "Simulate R22 forwarding from every origin site and list every path along which "
            "an event reaches each site. The topology is supported when no site is reached "
            "along two paths (R23). Exit 0 supported, 1 unsupported, 2 bad input."
        ),
    )
    parser.add_argument(
        "source",
        nargs="?",
        metavar="CONFIG_OR_TRACE",
        help='a configuration ({"sites": ...} or {"config": {...}}) or a trace file',
    )
    add_site_options(parser, required=False)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print exactly one line of JSON: supported, duplicates, unreachable",
    )
    parser.add_argument("--svg", metavar="OUT", help="also draw the topology as an SVG file")
    declare_outputs(parser, files=["svg"], inputs=["source"], sites=["site"])
    parser.set_defaults(func=run)


def load_config_or_trace(path: str, site_flag: bool = True) -> Config:
    """The configuration of a config file (either form) or of a trace file. `site_flag`:
    the command takes Geode files with `--site` (else a Geode file is to be imported)."""
    # a byte order mark at the start is accepted, as in a trace file (docs/COMMANDS.md)
    text = read_text(path, "a configuration or trace file").removeprefix(BOM)
    if not text.strip():
        raise TraceError(f"{path}: empty file: expected a configuration or a trace")
    if not text.lstrip(" \t\r\n").startswith("{"):
        how = (
            f"give each site's files with --site, e.g. --site {shell_word(f'1={path}')} "
            "--site 2=OTHER"
            if site_flag
            else f"import them first: wanconform import --site {shell_word(f'1={path}')} "
            "--site 2=OTHER "
            "-o CONFIG.json"
        )
        raise TraceError(
            f"{path}: not a JSON configuration or trace; for Geode cache.xml or gfsh files " + how
        )
    try:
        document = decode_line(text)
    except json.JSONDecodeError as exc:
        # a first value on one line, then more: JSON Lines, so a trace, split into lines
        # as the trace reader does (at "\n" alone: U+2028 or a form feed in a string is
        # no line break, and a lone "\r" none either)
        if exc.msg == "Extra data" and "\n" not in text[: exc.pos].strip(JSON_SPACE):
            return parse_trace_lines(text.split("\n"), path).config
        raise TraceError(f"{path}:{exc.lineno}: {json_problem(exc)}") from None
    except ValueError as exc:
        raise TraceError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(document, dict) and set(document) == {"config"}:
        prefix, raw = "config.", document["config"]
    elif isinstance(document, dict) and "sites" in document:
        prefix, raw = "", document
    else:
        raise TraceError(
            f'{path}: not a configuration: expected {{"sites": [...], ...}} or '
            '{"config": {...}} (SPEC §2), or a trace file'
        )
    try:
        return parse_config(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {prefix}{exc}") from None


def _path_text(path: tuple[int, ...]) -> str:
    return " -> ".join(str(site) for site in path)


def sender_settings(config: Config, names: Mapping[str, str] | None = None) -> str:
    """Every sender's settings, defaults included (SPEC §2, §16.1): what a campaign on
    this configuration ran with."""
    lines = ["Sender settings:"]
    for sender in config.senders:
        settings = ", ".join(
            f"{field.name} {json.dumps(getattr(sender, field.name))}"
            + (
                " (Geode's socket-read-timeout 0: wait forever)"
                if field.name == "ack_timeout_ms" and sender.ack_timeout_ms == WAIT_FOREVER_MS
                else ""
            )
            for field in dataclasses.fields(sender)
            if field.name not in ("id", "site", "remote")
        )
        written = (names or {}).get(sender.id, sender.id)
        head = f"  {sender.id} ({sender.site} -> {sender.remote}"
        head += f", Geode id {written!r}): " if written != sender.id else "): "
        lines.append(textwrap.fill(settings, 92, initial_indent=head, subsequent_indent="    "))
    return "\n".join(lines)


def format_table(analysis: TopologyAnalysis, names: Mapping[str, str] | None = None) -> str:
    """The human-readable report: senders, then per origin each site and its paths.

    `names` maps a sender id to the id the user wrote, where the import changed it.
    """
    lines = [f"Topology: sites {', '.join(map(str, analysis.sites))}"]
    for edge in sorted(analysis.senders, key=lambda e: (e.site, e.remote)):
        written = (names or {}).get(edge.sender, edge.sender)
        note = f"  (Geode id {written!r} at site {edge.site})" if written != edge.sender else ""
        sender = printable(edge.sender)  # one line per sender, whatever its id holds
        lines.append(f"  sender {sender}: {edge.site} -> {edge.remote}{note}")
    if not analysis.senders:
        lines.append("  (no senders)")
    for origin in analysis.sites:
        lines.append("")
        lines.append(f"Events written at site {origin}:")
        lines.append(f"  {'site':>6}  {'paths':>5}  along")
        deliveries = {d.site: d for d in analysis.deliveries_from(origin)}
        for site in analysis.sites:
            delivery = deliveries.get(site)
            if site == origin:
                continue
            if delivery is None:
                lines.append(f"  {site:>6}  {0:>5}  unreachable")
                continue
            mark = "   <-- DUPLICATE (R23)" if delivery.is_duplicate else ""
            paths = "; ".join(_path_text(p) for p in delivery.paths)
            lines.append(f"  {site:>6}  {len(delivery.paths):>5}  {paths}{mark}")
    lines.append("")
    if analysis.supported:
        lines.append("Verdict: supported (R23): every reached site receives each event once.")
    else:
        lines.append(
            "Verdict: UNSUPPORTED (R23): "
            f"{plural(len(analysis.duplicates), '(origin, site) pair')} "
            f"{'receives' if len(analysis.duplicates) == 1 else 'receive'} the same event "
            "along more than one path:"
        )
        for delivery in analysis.duplicates:
            paths = "; ".join(_path_text(p) for p in delivery.paths)
            lines.append(f"  from {delivery.origin} to {delivery.site}: {paths}")
    if analysis.unreachable:
        count = len(analysis.unreachable)
        verb = "is" if count == 1 else "are"
        lines.append(f"{plural(count, '(origin, site) pair')} {verb} unreachable.")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if (args.source is None) == (not args.site):
        raise WanconformError(
            "topology: give either CONFIG_OR_TRACE or one --site [DSID=]FILE[,FILE...] per "
            "site, not " + ("both" if args.source is not None else "neither")
        )
    if (args.define or args.allow_partial) and not args.site:  # as generate says it
        raise WanconformError("--define and --allow-partial go with --site (Geode files)")
    names: Mapping[str, str] = {}
    if args.source:
        config = load_config_or_trace(args.source)
    else:
        config, names = load_geode_sites(args.site, args.define, args.allow_partial)
    try:
        analysis = analyse_topology(config)
    except TopologyTooLargeError as exc:  # a limit of this tool, said with what was given
        given = args.source or "the --site configuration"
        raise TopologyTooLargeError(f"{given}: {exc}") from None
    if args.svg:
        if os.path.isdir(args.svg):
            raise WanconformError(f"{args.svg}: is a directory; --svg needs a file name")
        from reports.topology_svg import render_topology_svg  # Jinja2: only for a drawing

        write_text_atomically(args.svg, render_topology_svg(analysis, names))
        say_written(args.svg)
    if args.json:
        print(canonical_json(analysis.to_json()))
    else:
        print(format_table(analysis, names))
    return EXIT_SUPPORTED if analysis.supported else EXIT_UNSUPPORTED
