"""`wanconform dlq DIR`: an operator's view of a durable dead-letter store (R24, R26).

    wanconform dlq DIR [--sender S] [--key K] [--exception E]      list the records
    wanconform dlq DIR --counts                                     count by exception
    wanconform dlq DIR --format jsonl|csv|parquet -o FILE            export them
    wanconform dlq DIR --redeliver [--sender S] [--event ID ...] -o OPS.jsonl

The store is read, never changed (a torn tail is left for the writer to cut). The
`--redeliver` file holds the `redeliver` operations (SPEC §3, R26) an operator would run,
one per sender with the selected event ids, to append to a trace and continue the run.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from impl.dlq_store import SUFFIX, StoreError, read_store, sender_file
from traces.canonical import canonical_json
from traces.errors import WanconformError
from traces.outputs import atomic_file, declare_outputs, write_text_atomically
from traces.text import plural, printable, shell_word

COLUMNS = ("sender", "event_id", "key", "op", "exception", "version", "value", "recipients")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dlq",
        help="list, count, export or redeliver the records of a dead-letter store",
        description=(
            "Read a dead-letter store written with --dlq-dir (docs/DLQ_STORE.md): list its "
            "records (sender, event, key, op, exception, version, value or 'secure'), "
            "filtered; count them by exception; export them; or write the redeliver "
            "operations (R26) that would send them again. The store is never changed."
        ),
        epilog="Exit status: 0 done (also when the filters select no record: stderr says "
        "so), 2 bad input (a missing, unreadable or damaged store).",
    )
    parser.add_argument(
        "store",
        metavar="DIR",
        help="a store directory, or the --dlq-dir DIR of a run (holding one trace's store)",
    )
    repeat = "(repeat it for several; different filters must all match)"
    parser.add_argument("--sender", action="append", default=[], help=f"only this sender {repeat}")
    parser.add_argument("--key", action="append", default=[], help=f"only this key {repeat}")
    parser.add_argument(
        "--exception", action="append", default=[], help=f"only this exception {repeat}"
    )
    parser.add_argument("--event", action="append", default=[], help=f"only this event id {repeat}")
    parser.add_argument("--counts", action="store_true", help="count the records by exception")
    parser.add_argument(
        "--format", choices=("text", "jsonl", "csv", "parquet"), default="text",
        help="text (default), or an export: JSON lines, CSV or Parquet (needs -o)",
    )  # fmt: skip
    parser.add_argument(
        "--redeliver", action="store_true", help="write the redeliver operations (needs -o)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="where to write")
    declare_outputs(parser, files=["output"], inputs=["store"])
    parser.set_defaults(func=run)


def _row(record: dict[str, Any]) -> dict[str, str]:
    return {
        "sender": str(record["sender"]),
        "event_id": str(record["event_id"]),
        "key": str(record["key"]),
        "op": str(record["op"]),
        "exception": str(record["exception"]),
        "version": canonical_json(record["version"]),
        "value": canonical_json(record["value"]) if "value" in record else "secure",
        "recipients": canonical_json(record.get("recipients", [])),
    }


def store_folder(directory: str) -> Path:
    """The store to read: `directory` itself, or the one store under it (`--dlq-dir DIR`
    puts each trace's store in DIR/TRACE/); one line naming them when it holds several."""
    path = Path(directory)
    try:
        if not path.is_dir() or any(p.suffix == SUFFIX for p in path.iterdir()):
            return path  # read_store says what is wrong with it, if anything
        stores = sorted(
            p.name
            for p in path.iterdir()
            if p.is_dir() and any(q.suffix == SUFFIX for q in p.iterdir())
        )
    except OSError as exc:  # a folder in it that is not the user's to read
        raise StoreError(f"{exc.filename}: cannot read it: {exc.strerror}") from None
    if len(stores) == 1:
        return path / stores[0]
    if len(stores) > 1:
        shown = ", ".join(stores[:5]) + (", ..." if len(stores) > 5 else "")
        raise WanconformError(
            f"{directory}: holds the stores of {plural(len(stores), 'trace')} ({shown}); "
            f"give one, e.g. `wanconform dlq {shell_word(str(path / stores[0]))}`"
        )
    return path


def run(args: argparse.Namespace) -> int:
    exporting = args.format != "text"
    if args.redeliver and (exporting or args.counts):
        other = "--counts" if args.counts else f"--format {args.format}"
        raise WanconformError(f"dlq: --redeliver writes redeliver operations; not with {other}")
    if args.counts and exporting:
        raise WanconformError(f"dlq: --counts prints the counts; not with --format {args.format}")
    if (args.redeliver or exporting) and not args.output:
        asked = "--redeliver" if args.redeliver else f"--format {args.format}"
        raise WanconformError(f"dlq: {asked} needs -o FILE")
    if args.output and not (args.redeliver or exporting):
        raise WanconformError(
            "dlq: -o FILE goes with --format jsonl|csv|parquet or --redeliver (the listing "
            "and --counts print)"
        )
    if args.output and os.path.isdir(args.output):
        raise WanconformError(f"{args.output}: is a directory; -o needs a file name")
    folder = store_folder(args.store)
    store = read_store(folder, _say)
    held = sorted({r["sender"] for records in store.values() for r in records})
    unknown = [s for s in args.sender if sender_file(s) not in store and s not in held]
    if unknown:  # a sender with a log and no records is known; so is one a record names
        raise WanconformError(
            f"{folder}: holds no log of sender {unknown[0]!r} (it has records of "
            f"{', '.join(held) if held else 'no sender'})"
        )
    records = [
        record
        for _, held in sorted(store.items())
        for record in held
        if (not args.sender or record["sender"] in args.sender)
        and (not args.key or record["key"] in args.key)
        and (not args.exception or record["exception"] in args.exception)
        and (not args.event or record["event_id"] in args.event)
    ]
    _say_what_matched_nothing(args, folder, store, records)
    if args.redeliver:
        by_sender: dict[str, list[str]] = {}
        for record in records:
            by_sender.setdefault(record["sender"], []).append(record["event_id"])
        ops = [
            canonical_json({"op": "redeliver", "sender": sender, "events": ids})
            for sender, ids in sorted(by_sender.items())
        ]
        write_text_atomically(args.output, "".join(line + "\n" for line in ops))
        print(
            f"{printable(args.output)}: {plural(len(ops), 'redeliver operation')} for "
            f"{plural(len(records), 'record')}"
        )
        return 0
    rows = [_row(record) for record in records]
    if args.format == "jsonl":
        write_text_atomically(args.output, "".join(canonical_json(r) + "\n" for r in records))
    elif args.format == "csv":
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        write_text_atomically(args.output, text.getvalue())
    elif args.format == "parquet":
        _write_parquet(rows, Path(args.output))
    if args.format != "text":
        print(f"{printable(args.output)}: {plural(len(rows), 'record')}")
        return 0
    if args.counts:
        for exception, count in sorted(Counter(r["exception"] for r in rows).items()):
            print(f"{count:>8}  {printable(exception)}")
        print(f"{len(rows):>8}  {'record' if len(rows) == 1 else 'records'} in all")
        return 0
    shown = COLUMNS[:-1]  # each column as wide as its widest value, the last not padded
    rows = [{c: printable(row[c]) for c in shown} for row in rows]  # one line per record
    widths = {c: max([len(c), *(len(row[c]) for row in rows)]) for c in shown}
    print("  ".join(f"{c:<{widths[c]}}" for c in shown).rstrip())
    for row in rows:
        print("  ".join(f"{row[c]:<{widths[c]}}" for c in shown).rstrip())
    print(plural(len(rows), "record"))
    return 0


def _say_what_matched_nothing(
    args: argparse.Namespace,
    folder: Path,
    store: dict[str, list[dict[str, Any]]],
    records: list[dict[str, Any]],
) -> None:
    """One line on stderr for each `--key`, `--event` or `--exception` that no record of
    the store has (a typo selects nothing, and would go unnoticed), or, when they all have
    one, for filters that together select none. Selecting nothing is no error (exit 0)."""
    every = [record for held in store.values() for record in held]
    missing = [
        f"{name} {value!r}"
        for name, field, values in (
            ("key", "key", args.key),
            ("event", "event_id", args.event),
            ("exception", "exception", args.exception),
        )
        for value in values
        if not any(record[field] == value for record in every)
    ]
    for what in missing:
        _say(f"no dead letter with {what} in {folder}")
    filtered = args.sender or args.key or args.event or args.exception
    if filtered and not records and not missing:
        _say(f"no dead letter in {folder} matches all the filters")


def _say(line: str) -> None:
    """A notice on stderr, one line whatever the store's name holds."""
    print(f"wanconform: {printable(line)}", file=sys.stderr)


def _write_parquet(rows: list[dict[str, str]], target: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(column, pa.string()) for column in COLUMNS])  # also with no rows
    table = pa.table({column: [row[column] for row in rows] for column in COLUMNS}, schema=schema)
    with atomic_file(target) as temporary, open(temporary, "wb") as stream:
        pq.write_table(table, stream)  # a stream: pyarrow takes only UTF-8 paths, Python any
