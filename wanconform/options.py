"""Options several commands share, declared once."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from traces.config import INT64_MAX
from traces.engine import SETTLE_CAP, SETTLE_CAP_VARIABLE


class StrictParser(argparse.ArgumentParser):
    """argparse's parser, strict and brief: an option must be written whole (`--engin`
    is not `--engine`), and a wrong command line is one line on stderr, exit 2, which
    names the command and where its help is (not argparse's usage block). Also the
    project's tools' (`python -m tools.fuzz`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.command: str | None = None  # the top level's: the subcommand named, if any

    def error(self, message: str) -> NoReturn:
        # Unknown options reach the top level: they belong to the subcommand named.
        prog = self.prog if self.command is None else f"{self.prog} {self.command}"
        print(f"{prog}: error: {message} (see: {prog} --help)", file=sys.stderr)
        sys.exit(2)


def int_at_least(least: int) -> Callable[[str], int]:
    """An argparse type: an integer from `least` to 2^63 - 1, in ASCII digits (a sign
    and surrounding spaces allowed)."""

    def parse(text: str) -> int:
        digits = text.strip().removeprefix("-").removeprefix("+")
        if not (digits.isascii() and digits.isdigit()):
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
        number = int(text)
        if number < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {number}")
        if number > INT64_MAX:
            raise argparse.ArgumentTypeError(f"must be at most {INT64_MAX}, got {number}")
        return number

    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def add_settle_cap(parser: argparse.ArgumentParser) -> None:
    """`--settle-cap N`: R25's cap on a settle's inner operations, for both engines."""
    parser.add_argument(
        "--settle-cap",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"stop each settle after N inner operations (default {SETTLE_CAP:,}, R25's): "
        "an engine that never settles is then found sooner; the model stops at the same "
        "count, and every settle that stops there is reported",
    )


def add_shrink_budget(parser: argparse.ArgumentParser, default: float, what: str) -> None:
    """`--shrink-budget SECONDS`: how long shrinking may take (0: no limit)."""
    parser.add_argument(
        "--shrink-budget",
        type=_seconds,
        default=default,
        action=_Noted,
        metavar="SECONDS",
        help=f"shrink {what} for at most SECONDS (default {default:,.0f}; 0: no limit), "
        "then keep the shortest failing trace found, and say so",
    )


class _Noted(argparse.Action):
    """Stores the value, and notes that the option was given (`given`)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.given = {*getattr(namespace, "given", ()), self.dest}


def given(args: argparse.Namespace, dest: str) -> bool:
    """Was an option stored by `_Noted` (--shrink-budget) given on the command line, not
    left at its default? (One that cannot take effect is refused, not ignored.)"""
    return dest in getattr(args, "given", ())


def _seconds(text: str) -> float | None:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return seconds or None


def apply_settle_cap(args: argparse.Namespace) -> None:
    """Give `--settle-cap` to the engines this process, its helpers and Spark's executors
    build (`traces.engine.settle_cap`)."""
    cap = getattr(args, "settle_cap", None)
    if cap is not None:
        os.environ[SETTLE_CAP_VARIABLE] = str(cap)
