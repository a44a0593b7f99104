"""The `wanconform` command.

`main(argv) -> int` is the only entry point. Every `WanconformError` (bad trace, bad
config, bad file) becomes one line on stderr and exit status 2, with nothing written to
stdout; argparse's own usage errors also exit 2, and so does a standard output that
cannot be written (`_Stdout`). Every output a command declares is
checked before its work starts (`traces.outputs`). Ctrl-C is one line and exit 130;
SIGTERM (`kill PID`) is taken as Ctrl-C, and exits 143.

Each subcommand lives in its own module `wanconform/cmd_*.py` exposing
`register(subparsers) -> None`; the parser it adds sets `func(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO, cast

from traces.errors import WanconformError
from traces.text import printable
from wanconform.progress import erase

# Here only what `interrupted` and the error line need (quick to import): the rest is
# imported inside `_main`'s handlers, so that Ctrl-C while it loads is one line, exit 130

COMMAND_MODULES = (
    "wanconform.cmd_replay",
    "wanconform.cmd_validate",
    "wanconform.cmd_live",
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
    "wanconform.cmd_explore",
)


SPEC_NOTE = (
    "Section (§), rule (R1-R39) and property (P1-P12) numbers refer to docs/SPEC.md, the "
    "protocol specification in this project's repository."
)


class _Version(argparse.Action):
    """`--version`, looked up only when asked (importlib.metadata is slow to import)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        import importlib.metadata

        print(f"wanconform {importlib.metadata.version('wanconform')}")
        parser.exit()


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option:
    the top-level options take no value), or None (`--help`, `--version`, a typo)."""
    for word in argv:
        if not word.startswith("-"):
            return word if f"wanconform.cmd_{word}" in COMMAND_MODULES else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `argv`, only the named subcommand's module is imported (each
    command imports what it uses: start-up stays quick), else every command's."""
    from wanconform.options import StrictParser

    parser = StrictParser(
        prog="wanconform",
        description="Executable model and conformance harness for WAN gateway replication.",
        epilog=SPEC_NOTE,
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = None if argv is None else chosen_command(argv)
    parser.command = chosen
    only_version = argv is not None and chosen is None and "--version" in argv
    for name in COMMAND_MODULES:
        if (chosen is None and not only_version) or name == f"wanconform.cmd_{chosen}":
            importlib.import_module(name).register(subparsers)
    for subparser in subparsers.choices.values():  # every help text says where § and R are
        epilog = subparser.epilog
        subparser.epilog = SPEC_NOTE if not epilog else f"{epilog} {SPEC_NOTE}"
    return parser


_TERMINATED: list[int] = []
"""The SIGTERM this command received (`_on_terminate`), if any."""


def _on_terminate(signum: int, frame: Any) -> None:
    """SIGTERM is taken as Ctrl-C, through the handler Ctrl-C has now (Spark's, the one
    holding it while the JVM starts, Python's), so that the command stops as it does on
    Ctrl-C: nothing written, no staging directory or JVM left; `interrupted` says so."""
    _TERMINATED.append(signum)
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):  # SIGINT ignored (a background job's): SIGTERM still stops
        raise KeyboardInterrupt
    handler(signal.SIGINT, frame)


class _Stdout:
    """Standard output whose write errors (`> /dev/full`, a full disk) are bad output,
    one line and exit 2, as for any output that cannot be written; a closed pipe stays
    a BrokenPipeError (exit 0). Everything else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        written: int = self._guarded(self._stream.write, text)
        return written

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise WanconformError(f"cannot write standard output: {exc.strerror}") from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    _TERMINATED.clear()
    held = threading.current_thread() is threading.main_thread()  # where handlers can be
    previous = signal.signal(signal.SIGTERM, _on_terminate) if held else None
    stdout = sys.stdout
    sys.stdout = cast(TextIO, _Stdout(stdout))
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout
        if held:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _main(argv: Sequence[str] | None) -> int:
    stores = sys.modules.get("conformance.running.stores")
    if stores is not None:
        stores.OPENED.clear()  # this command's, not an earlier one's in this process
    try:
        from traces.engine import tune_gc
        from traces.outputs import check_outputs
        from wanconform.options import apply_settle_cap

        words = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(words).parse_args(words)
        check_outputs(args)  # before any work: an unwritable output is found first
        apply_settle_cap(args)
        tune_gc()
        code: int = args.func(args)
    except KeyboardInterrupt:
        return interrupted()
    except WanconformError as exc:
        if spark_interrupted():
            return interrupted()
        erase()
        print(f"wanconform: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception:
        if spark_interrupted():  # Ctrl-C during a Spark job may arrive as a Py4J error
            return interrupted()
        raise
    return code


def spark_interrupted() -> bool:
    glue = sys.modules.get("conformance.spark.glue")
    return glue is not None and bool(glue.interrupted())


def interrupted() -> int:
    """Ctrl-C: every output is written whole or not at all (`traces.outputs`), so an
    interrupted command wrote nothing, but to the durable stores it was given (`--dlq-dir`,
    `--queue-dir`), which keep what the run put in them; Spark's JVM is stopped with it.
    Exit 130; after SIGTERM, "terminated" and exit 143 (128 + 15, as a shell reports it)."""
    glue = sys.modules.get("conformance.spark.glue")
    if glue is not None:
        glue.abandon()
    erase()
    stores = sys.modules.get("conformance.running.stores")
    opened = list(getattr(stores, "OPENED", ())) if stores is not None else []
    kept = (
        f" but to the stores in {', '.join(map(str, opened))}, which keep what the run put in them"
        if opened
        else ""
    )
    what, code = ("terminated", 143) if _TERMINATED else ("interrupted", 130)
    print(f"wanconform: {what}: nothing written{kept}", file=sys.stderr, flush=True)
    return code
