"""The `wanconform` command.

`main(argv) -> int` is the only entry point. Every `WanconformError` (bad trace, bad
config, bad file) becomes one line on stderr and exit status 2, with nothing written to
stdout; argparse's own usage errors also exit 2.

Each subcommand lives in its own module `wanconform/cmd_*.py` exposing
`register(subparsers) -> None`; the parser it adds sets `func(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

from traces.errors import WanconformError
from traces.text import printable

COMMAND_MODULES = (
    "wanconform.cmd_replay",
    "wanconform.cmd_validate",
    "wanconform.cmd_dlq",
    "wanconform.cmd_bench",
    "wanconform.cmd_topology",
    "wanconform.cmd_import",
    "wanconform.cmd_convert",
    "wanconform.cmd_generate",
    "wanconform.cmd_check",
    "wanconform.cmd_campaign",
    "wanconform.cmd_shrink",
    "wanconform.cmd_report",
)


SPEC_NOTE = (
    "Section (§), rule (R1-R25) and property (P1-P7) numbers refer to docs/SPEC.md, the "
    "protocol specification in this project's repository."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wanconform",
        description="Executable model and conformance harness for WAN gateway replication.",
        epilog=SPEC_NOTE,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"wanconform {importlib.metadata.version('wanconform')}",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for subparser in subparsers.choices.values():  # every help text says where § and R are
        epilog = subparser.epilog
        subparser.epilog = SPEC_NOTE if not epilog else f"{epilog} {SPEC_NOTE}"
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except WanconformError as exc:
        print(f"wanconform: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return code
