"""`wanconform import`: a real Geode WAN configuration in, a SPEC §2 configuration out.

    wanconform import --site 1=ln-cache.xml,ln.gfsh --site ny.gfsh \\
        --define REMOTE_DS_ID_1=2 -o config.json

Reads each site's cache.xml, gfsh and gemfire.properties files (`traces.geode`, R6/R7
via `traces.config.parse_config`), prints on stderr where the model differs from Geode,
and writes the configuration as canonical JSON, atomically. The options and helpers
here are shared with `wanconform topology`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config
from traces.geode import import_geode_config, parse_define, parse_site_argument
from traces.outputs import declare_outputs, write_text_atomically

SITE_HELP = (
    "one site's Geode files, separated by commas and read in the order given (a gfsh "
    "alter or destroy acts on what an earlier file created): cache.xml (.xml), gfsh "
    "script or transcript (.gfsh or any other name), gemfire.properties (.properties). "
    "DSID= gives the site's distributed-system-id (1..255); it may be left out when a "
    "file sets it (distributed-system-id in gemfire.properties, or start locator/server "
    "--J=-Dgemfire.distributed-system-id=N in gfsh). Repeat once per site, e.g. "
    "--site 1=ln-cache.xml,ln.gfsh --site ny.gfsh"
)


def add_site_options(parser: argparse.ArgumentParser, required: bool) -> None:
    """`--site`, `--define` and `--allow-partial`: shared by import and topology."""
    parser.add_argument(
        "--site",
        action="append",
        default=[],
        required=required,
        metavar="[DSID=]FILE[,FILE...]",
        help=SITE_HELP,
    )
    parser.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the value of a ${KEY} placeholder in the files (what Geode fills from system "
        "properties or gfsh variables at startup); repeatable",
    )
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="import what can be imported: leave out, with a warning, senders that can "
        "never connect (their remote site has no gateway-receiver) and accept sites or "
        "whole inputs without any gateway; without it these are errors",
    )


def load_geode_sites(
    site_arguments: Sequence[str], define_arguments: Sequence[str], allow_partial: bool
) -> tuple[Config, Mapping[str, str]]:
    """Import the `--site` files; print the warnings on stderr.

    Returns the configuration and, per model sender id, the id the user wrote.
    """
    defines = dict(parse_define(text) for text in define_arguments)
    imported = import_geode_config(
        [parse_site_argument(text) for text in site_arguments],
        defines=defines,
        allow_partial=allow_partial,
    )
    for warning in imported.warnings:
        print(f"wanconform: warning: {warning}", file=sys.stderr)
    return imported.config, imported.sender_names


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import Geode cache.xml / gfsh gateway settings as a SPEC §2 configuration",
        description=(
            "Read the gateway senders, receivers and regions of each site's Geode files and "
            "write the SPEC §2 configuration as canonical JSON. Where the model behaves "
            "differently from Geode, a warning on stderr says how. Exit 0 imported, 2 bad "
            "input (nothing is written)."
        ),
    )
    add_site_options(parser, required=True)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help="where to write the configuration (default: standard output)",
    )
    declare_outputs(parser, files=["output"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config, _ = load_geode_sites(args.site, args.define, args.allow_partial)
    text = canonical_json(config.to_json()) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_text_atomically(args.output, text)
        print(f"wanconform: wrote {args.output}", file=sys.stderr)
    return 0
