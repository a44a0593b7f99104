"""`wanconform convert`: JSON Lines traces <-> a Parquet trace set (SPEC §12), lossless."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from traces.errors import WanconformError
from traces.outputs import check_arrow_path, declare_outputs
from traces.text import plural, printable


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="convert JSON Lines traces to a Parquet trace set, or back",
        description=(
            "Given .jsonl trace files, write one Parquet trace set (trace id = file name "
            "without .jsonl). Given a trace set directory, write one canonical TRACE_ID.jsonl "
            "per trace. Either way nothing is lost; the output appears whole or not at all."
        ),
    )
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="trace files, or one set")
    parser.add_argument("--out", "-o", required=True, help="output directory")
    declare_outputs(parser, directories=["out"], inputs=["sources"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from traces.parquet import jsonl_to_parquet, parquet_to_jsonl

    sources = [Path(s) for s in args.sources]
    if len(sources) == 1 and sources[0].is_dir():
        count = parquet_to_jsonl(sources[0], args.out)
        print(f"{printable(args.out)}: {plural(count, 'JSON Lines trace')}")
        return 0
    check_arrow_path(args.out)  # a trace set: pyarrow writes it (JSON Lines: any path)
    for source in sources:
        if source.is_dir():
            raise WanconformError(
                f"{source}: a directory among trace files (convert one trace set at a time)"
            )
    operations = jsonl_to_parquet(sources, args.out)
    counts = f"{plural(len(sources), 'trace')}, {plural(operations, 'operation')}"
    print(f"{printable(args.out)}: trace set of {counts}")
    return 0
