"""`wanconform import`: a real Geode WAN configuration in, a SPEC §2 configuration out.

    wanconform import --site 1=ln-cache.xml,ln.gfsh --site ny.gfsh \\
        --define REMOTE_DS_ID_1=2 -o config.json [--trace start.jsonl]

Reads each site's cache.xml, gfsh and gemfire.properties files (`traces.geode`, R6/R7
via `traces.config.parse_config`), prints on stderr where the model differs from Geode,
and writes the configuration as canonical JSON, atomically. gfsh's `start`, `stop`,
`pause` and `resume gateway-sender` are operations (R37, SPEC §16.9): `--trace` writes
them after the configuration as a SPEC §12 trace, the prefix of every run of the
imported system. The options and helpers here are shared with `wanconform topology`,
`generate` and `explore`, which use the configuration only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config
from traces.geode import ImportedConfig, import_geode_config, parse_define, parse_site_argument
from traces.ops import op_to_json
from traces.outputs import declare_outputs, say_written, write_text_atomically
from traces.text import plural, printable
from traces.tracefile import write_trace

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


def read_geode_sites(
    site_arguments: Sequence[str], define_arguments: Sequence[str], allow_partial: bool
) -> ImportedConfig:
    """Import the `--site` files; print the warnings on stderr."""
    defines = dict(parse_define(text) for text in define_arguments)
    imported = import_geode_config(
        [parse_site_argument(text) for text in site_arguments],
        defines=defines,
        allow_partial=allow_partial,
    )
    for warning in imported.warnings:
        print(f"wanconform: warning: {printable(warning)}", file=sys.stderr)
    return imported


def load_geode_sites(
    site_arguments: Sequence[str], define_arguments: Sequence[str], allow_partial: bool
) -> tuple[Config, Mapping[str, str]]:
    """Import the `--site` files for a command that uses the configuration only; print the
    warnings on stderr, and one more if the gfsh files hold sender operations.

    Returns the configuration and, per model sender id, the id the user wrote.
    """
    imported = read_geode_sites(site_arguments, define_arguments, allow_partial)
    if imported.operations:
        print(
            f"wanconform: warning: {_operations_left_out(imported)}, which this command does "
            "not use (wanconform import --trace FILE writes them after the configuration)",
            file=sys.stderr,
        )
    return imported.config, imported.sender_names


def _operations_left_out(imported: ImportedConfig) -> str:
    """Which operations the gfsh files give (SPEC §16.9), in trace form."""
    listed = ", ".join(canonical_json(op_to_json(op)) for op in imported.operations)
    count = plural(len(imported.operations), "operation")
    return f"the gfsh files' gateway-sender commands give {count} ({listed})"


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
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="also write a SPEC §12 trace: the configuration, then the operations of the gfsh "
        "files' start (--clean-queues: clean_queues true), stop, pause and resume "
        "gateway-sender commands, in site order, each where R37 enables it (none: the "
        "configuration alone); without it, such operations are named in a warning",
    )
    declare_outputs(parser, files=["output", "trace"], stdout=["output"], sites=["site"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    imported = read_geode_sites(args.site, args.define, args.allow_partial)
    if imported.operations and args.trace is None:
        print(
            f"wanconform: warning: {_operations_left_out(imported)}; the configuration "
            "does not hold them: --trace FILE writes them after it",
            file=sys.stderr,
        )
    text = canonical_json(imported.config.to_json()) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_text_atomically(args.output, text)
        say_written(args.output)
    if args.trace is not None:
        write_trace(args.trace, imported.config, imported.operations)
        say_written(args.trace)
    return 0
