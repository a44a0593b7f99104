"""`wanconform import`: a real Geode WAN configuration in, a SPEC §2 configuration out.

    wanconform import --site 1=ln-cache.xml --site 2=ny.gfsh -o config.json

Reads one cache.xml or gfsh script per site (`traces.geode`, R6/R7 via
`traces.config.parse_config`), prints what the model leaves out as warnings on stderr,
and writes the configuration as canonical JSON, atomically. The `--site` option and the
helpers here are shared with `wanconform topology`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config
from traces.geode import import_geode_config, parse_site_argument
from wanconform.errors import WanconformError

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


def write_text_atomically(path: str, text: str) -> None:
    """Write a whole file or nothing: a temporary file in the same folder, then rename."""
    target = Path(path)
    folder = target.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise WanconformError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        umask = os.umask(0)  # mkstemp makes the file 0600; give it the usual mode
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise WanconformError(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
