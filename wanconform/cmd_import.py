"""`wanconform import`: a real Geode WAN configuration in, a SPEC §2 configuration out.

    wanconform import --site 1=ln-cache.xml --site 2=ny.gfsh -o config.json

Reads one cache.xml or gfsh script per site (`traces.geode`, R6/R7 via
`traces.config.parse_config`), prints what the model leaves out as warnings on stderr,
and writes the configuration as canonical JSON, atomically. The `--site` option and the
helpers here are shared with `wanconform topology`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config
from traces.files import write_text_atomically
from traces.geode import import_geode_config, parse_site_argument

SITE_HELP = (
    "one site's Geode configuration: DSID is its distributed-system-id (1..255), FILE its "
    "cache.xml or gfsh script (.xml / .gfsh, else detected); repeat once per site"
)


def add_site_option(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument(
        "--site",
        action="append",
        default=[],
        required=required,
        metavar="DSID=FILE",
        help=SITE_HELP,
    )


def load_geode_sites(site_arguments: Sequence[str]) -> Config:
    """Import the `--site` files; print the import warnings on stderr."""
    imported = import_geode_config([parse_site_argument(text) for text in site_arguments])
    for warning in imported.warnings:
        print(f"wanconform: warning: {warning}", file=sys.stderr)
    return imported.config


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import Geode cache.xml / gfsh gateway settings as a SPEC §2 configuration",
        description=(
            "Read the gateway-sender and gateway-receiver declarations of one cache.xml or "
            "gfsh script per site and write the SPEC §2 configuration as canonical JSON. "
            "Settings the model does not cover are listed as warnings on stderr."
        ),
    )
    add_site_option(parser, required=True)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help="where to write the configuration (default: standard output)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = load_geode_sites(args.site)
    text = canonical_json(config.to_json()) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_text_atomically(args.output, text)
    return 0
