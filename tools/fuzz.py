"""`make fuzz`: a million generated bad inputs through the command line, counted by outcome.

    python -m tools.fuzz --inputs 1000000 --seed 1 --workers 2 --out out/fuzz
    python -m tools.fuzz --seed 1 --only 48213         # one input again, in this process

Every input is a `Case`: files (name -> bytes) and the argv of one `wanconform` command
on them. It is run exactly as the command line runs it, `wanconform.cli.main(argv)` in
the worker's process (cwd = a scratch directory holding the files, stdout and stderr
captured), and judged (`judge`):

    accepted     exit 0 or 1, no traceback: the input happened to be valid
    rejected     exit 2, stderr exactly one line "wanconform: error: ...", stdout empty,
                 no file left behind
    traceback    an exception escaped main, or stderr holds "Traceback"
    hang         the input ran longer than --timeout seconds (its worker is killed)
    crash        the worker process died (a segfault, an abort)
    not-one-line exit 2 with anything but one line "wanconform: error: ..." on stderr
    output-on-error, left-behind, bad-exit   exit 2 with stdout, exit 2 leaving a file
                 the input did not hold, an exit status other than 0, 1, 2

Input i is made from `random.Random(f"{seed}:{i}")` alone: the same seed and index give
the same bytes on any machine and in any worker. Inputs are valid files from the
repository (`Corpus`: the example traces, topologies, Geode files) mutated by bytes
(flips, truncations, insertions) and by structure (JSON values of the wrong type, huge
numbers, unicode, deep nesting, missing or extra fields, lines duplicated, removed or
swapped; XML attributes and elements; gfsh options; Parquet columns missing, extra or
of the wrong type; dead-letter frames with a valid checksum around a bad payload;
checkpoints, mutated by structure and by bytes, through `replay --from`; event-log
directories of 1-3 process files, written compactly as a system writes them, through
`validate DIR`).

An input kind is one function `(Random, Corpus) -> Case` registered in `KINDS` with its
share of the inputs; a new input (a checkpoint file, say) is one more such function.
Each failing input is written to OUT/KIND-OUTCOME-INDEX/ (its files, `command`, what
stdout and stderr said) to reproduce with `cd OUT/... && wanconform $(cat command)`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import queue
import random
import re
import shutil
import struct
import sys
import tempfile
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

from wanconform.options import StrictParser, int_at_least

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "traces" / "examples"
GEODE = ROOT / "tests" / "data" / "geode"

ACCEPTED, REJECTED = "accepted", "rejected"
OUTCOMES_OK = (ACCEPTED, REJECTED)
FAILURES = (
    "traceback",
    "hang",
    "crash",
    "not-one-line",
    "output-on-error",
    "left-behind",
    "bad-exit",
    "generator",  # the generator itself failed (a bug of tools/fuzz.py)
)


@dataclass(frozen=True)
class Case:
    """One input: the files it consists of and the command that reads them."""

    kind: str
    files: dict[str, bytes]  # relative path -> content (a directory is made of its files)
    argv: list[str]  # relative to the directory holding the files
    outputs: tuple[str, ...] = ()  # what the command writes (absent after a rejection)


# -- mutations ----------------------------------------------------------------------------

# JSON values a parser meets in bad files: wrong types, limits, unicode. RAW values are
# spliced into the JSON text as they are (not valid Python values, or too deep to dump).
INTERESTING: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2, 3, 255, 256, 65536, 2**31 - 1, 2**31, 2**53 + 1,
    2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, 1.5, -0.0, 1e308, 0.1, "", " ", "x",
    "1", "-1", "true", "null", "\u0000", "é", "\u202e", "🙂", "a" * 300, "x\ny", "%41",
    "../x", "a/b", "ny", "ln", [], [1], [[]], {}, {"a": 1}, [None], {"op": "put"},
)  # fmt: skip
RAW: tuple[str, ...] = (
    "1" + "0" * 5000, "-" + "9" * 400, "1e999999", "-1e-999999", "NaN", "Infinity",
    "-Infinity", "[" * 3000 + "]" * 3000, '{"a":' * 3000 + "1" + "}" * 3000,
    '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', "0x10", "01", "1.", ".5", "+1", "tru",
)  # fmt: skip
FIELD_NAMES = (
    "op", "site", "sender", "key", "value", "ms", "sites", "senders", "receivers", "id",
    "remote", "config", "batch_size", "ack_timeout_ms", "delta", "observed", "state",
    "events", "kind", "entries", "event_id", "recipients", "exception", "dlq_secure",
    "failure_listener", "retry_interval_ms", "batch_time_interval_ms", "time", "queue",
)  # fmt: skip
OP_NAMES = (
    "put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "drop",
    "drop_ack", "site_down", "site_up", "fail", "settle", "redeliver",
)  # fmt: skip
BYTES_TO_INSERT = (
    b"\x00", b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\r", b"\n", b"\r\n", b"{", b"}", b"[",
    b"]", b'"', b"\\", b",", b":", b" ", b"\t", b"<", b">", b"&", b"=", b"--", b"#",
    b"\xe2\x80\xae", b"\xf0\x9f\x99\x82", b"&lt;", b"${", b"%",
)  # fmt: skip


class Raw:
    """A placeholder for a RAW value inside a JSON document."""

    def __init__(self, text: str) -> None:
        self.text = text


def interesting(rng: random.Random) -> Any:
    if rng.random() < 0.2:
        return Raw(rng.choice(RAW))
    return rng.choice(INTERESTING)


def dump_json(document: Any, rng: random.Random, compact: bool = False) -> str:
    """JSON text of a document holding `Raw` placeholders, spliced in; `compact`: without
    spaces, as orjson writes (what a system writes)."""
    raws: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(value.text)
            return f"\x00RAW{len(raws) - 1}\x00"
        raise TypeError(type(value).__name__)

    separators = (",", ":") if compact else None
    text = json.dumps(
        document, default=default, ensure_ascii=rng.random() < 0.5, separators=separators
    )
    for index, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{index}\x00"), raw, 1)
    return text


def containers(document: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, Any, Any]]:
    """(container, key, value) for every value below `document`."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield document, key, value
            yield from containers(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield document, index, value
            yield from containers(value, (*path, index))


def mutate_document(document: Any, rng: random.Random) -> Any:
    """One structural change somewhere in a JSON document (in place where possible)."""
    places = list(containers(document))
    if not places or rng.random() < 0.05:
        return interesting(rng)
    container, key, value = rng.choice(places)
    choice = rng.random()
    if choice < 0.35:
        container[key] = interesting(rng)
    elif choice < 0.5:  # a field removed or an item dropped
        del container[key]
    elif choice < 0.62 and isinstance(container, dict):  # an extra or renamed field
        name = rng.choice(FIELD_NAMES) if rng.random() < 0.7 else rng.choice(("", "x", "é"))
        if rng.random() < 0.5:
            container[name] = container.pop(key)
        else:
            container[name] = interesting(rng)
    elif choice < 0.7 and key == "op":  # another operation with this one's fields
        container[key] = rng.choice(OP_NAMES)
    elif choice < 0.8 and isinstance(value, int) and not isinstance(value, bool):
        container[key] = rng.choice((value + 1, value - 1, -value, value * 1000, value + 2**32))
    elif choice < 0.88 and isinstance(value, str):
        container[key] = value[: rng.randrange(len(value) + 1)] + rng.choice(("", "x", "é"))
    elif choice < 0.94 and isinstance(container, list):  # an item repeated
        container.insert(key, json.loads(json.dumps(value, default=lambda _: None)))
    else:  # wrapped in a list or an object
        container[key] = [value] if rng.random() < 0.5 else {"value": value}
    return document


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """One byte-level change: a flip, an insertion, a deletion, a cut, a copy."""
    size = len(data)
    at = rng.randrange(size + 1)
    choice = rng.random()
    if choice < 0.2 and size:
        at = min(at, size - 1)
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
    if choice < 0.35 and size:
        at = min(at, size - 1)
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
    if choice < 0.55:
        return data[:at] + rng.choice(BYTES_TO_INSERT) + data[at:]
    if choice < 0.7:
        return data[:at] + data[at + rng.randrange(1, 40) :]
    if choice < 0.85:  # truncated, like a file cut by a crash
        return data[:at]
    span = data[at : at + rng.randrange(1, 80)]
    return data[:at] + span * rng.randrange(1, 4) + data[at:]


def mutate_lines(lines: list[bytes], rng: random.Random, pool: Sequence[bytes]) -> list[bytes]:
    """One change of a file's lines: removed, repeated, swapped, blank, from another file."""
    lines = list(lines)
    choice = rng.random()
    at = rng.randrange(len(lines) + 1)
    if choice < 0.25 and lines:
        del lines[min(at, len(lines) - 1)]
    elif choice < 0.45 and lines:
        lines.insert(at, lines[min(at, len(lines) - 1)])
    elif choice < 0.65 and len(lines) > 1:
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
    elif choice < 0.8:
        lines.insert(at, rng.choice((b"", b" ", b"\t", b"\r", b"#", b"{}", b"[]", b"null")))
    elif pool:
        lines.insert(at, rng.choice(pool))
    return lines


def mutate_jsonl(data: bytes, rng: random.Random, pool: Sequence[bytes]) -> bytes:
    """1-3 changes to a JSON Lines file: of a line's structure, of lines, of bytes."""
    lines = data.split(b"\n")
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        choice = rng.random()
        if choice < 0.55 and lines:
            index = rng.randrange(len(lines))
            try:
                text = dump_json(mutate_document(json.loads(lines[index]), rng), rng)
            except (ValueError, RecursionError):  # not JSON (any more), or too deep
                continue
            lines[index] = text.encode("utf-8", "surrogatepass")
        elif choice < 0.75:
            lines = mutate_lines(lines, rng, pool)
        else:
            lines = mutate_bytes(b"\n".join(lines), rng).split(b"\n")
    return b"\n".join(lines)


# -- the corpus: valid inputs from the repository -----------------------------------------


@dataclass
class Corpus:
    traces: list[bytes]
    configs: list[bytes]
    logs: list[bytes]
    geode: list[tuple[list[tuple[str, list[tuple[str, bytes]]]], list[str]]]  # sites, defines
    trace_set: dict[str, Any]  # table name -> pyarrow Table, of a valid set of two traces
    dlq: list[tuple[str, bytes]]  # (file name, bytes) of a valid store's files
    lines: list[bytes] = field(default_factory=list)  # every line of every trace and log
    checkpoints: list[tuple[bytes, bytes]] = field(default_factory=list)  # (trace, its state)
    # event logs of runs (docs/LOG.md): per run, its processes' lines written compactly
    # (file name -> header and lines) and the longest tick of its trace
    event_runs: list[tuple[dict[str, list[bytes]], int]] = field(default_factory=list)


def make_log(trace: Path) -> bytes:
    """The log a correct system writes for a trace (docs/LOG.md): the impl's observations,
    and its state after every third operation."""
    from impl import Engine
    from traces.ops import op_to_json
    from traces.tracefile import read_trace

    source = read_trace(trace)
    engine = Engine(source.config)
    lines: list[dict[str, Any]] = [{"config": source.config.to_json()}]
    for index, op in enumerate(source.ops):
        line = op_to_json(op) | {"observed": engine.apply(op)}
        if index % 3 == 0:
            line["state"] = engine.observe()
        lines.append(line)
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


GEODE_SITES: tuple[tuple[tuple[tuple[str, list[str]], ...], list[str]], ...] = (
    # sites that import cleanly: ((dsid, [files]) per site, --define arguments)
    ((("1", ["ln-cache.xml"]), ("2", ["ny-cache.xml"])), []),
    ((("", ["ln.gfsh"]), ("2", ["ny.gfsh"])), []),
    (tuple((str(n), [f"diamond-{n}-cache.xml"]) for n in (1, 2, 3, 4)), []),
    (tuple((str(n), [f"diamond-{n}.gfsh"]) for n in (1, 2, 3, 4)), []),
    (
        (
            ("", ["real/mesh-1.gfsh"]),
            ("", ["real/mesh-2.gfsh", "real/mesh-2.properties"]),
            ("3", ["real/mesh-3.gfsh"]),
        ),
        ["OLD_REMOTE=1"],
    ),
    (
        (
            ("", ["real/start-ln.gfsh", "real/ln-region.gfsh"]),
            ("", ["real/start-ny.gfsh", "real/ny-region.gfsh"]),
        ),
        [],
    ),
    (
        (("2", ["real/gemfire7-dtd-cache.xml"]), ("1", ["real/gemfire8-dtd-cache.xml"])),
        ["REMOTE_DS_ID_1=2"],
    ),
    ((("1", ["real/docs-transcript.gfsh"]), ("2", ["real/gemfire7-dtd-cache.xml"])), []),
)


def build_corpus(scratch: Path) -> Corpus:
    import pyarrow.parquet as pq

    from traces.parquet import jsonl_to_parquet
    from wanconform.cli import main

    trace_paths = sorted(EXAMPLES.glob("*.jsonl"))
    traces = [p.read_bytes() for p in trace_paths]
    configs = [p.read_bytes() for p in sorted((EXAMPLES / "topologies").glob("*.json"))]
    configs += [t.split(b"\n", 1)[0] for t in traces]
    logs = [make_log(p) for p in trace_paths]
    geode = [
        (
            [(dsid, [(name, (GEODE / name).read_bytes()) for name in names]) for dsid, names in s],
            defines,
        )
        for s, defines in GEODE_SITES
    ]
    target = scratch / "corpus-set"
    jsonl_to_parquet(
        [EXAMPLES / "lost_ack_resend.jsonl", EXAMPLES / "forwarding_ring.jsonl"], target
    )
    trace_set = {t: pq.read_table(next((target / t).glob("*.parquet"))) for t in ("configs", "ops")}
    store = scratch / "corpus-dlq"
    store.mkdir()
    # stderr too: `--dlq-dir` says where the store is, a line per worker otherwise
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        trace = str(EXAMPLES / "failed_event_dead_lettered.jsonl")
        main(["replay", trace, "--engine", "impl", "--dlq-dir", str(store)])
    dlq = [(p.name, p.read_bytes()) for p in sorted(store.rglob("*.dlq"))]
    lines = [line for text in traces + logs for line in text.split(b"\n") if line]
    checkpoints = []
    for path in trace_paths:  # each example's state halfway, as `replay --checkpoint` writes
        half = scratch / f"half-{path.name}"
        text = path.read_bytes().split(b"\n")
        half.write_bytes(b"\n".join(text[: max(2, len(text) // 2)]) + b"\n")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["replay", str(half), "--engine", "both", "--checkpoint", f"{half}.json"])
        checkpoints.append((path.read_bytes(), Path(f"{half}.json").read_bytes()))
    return Corpus(
        traces, configs, logs, geode, trace_set, dlq, lines, checkpoints, make_event_runs()
    )


EVENT_PROFILES = ("faults", "steady", "multisite", "lifecycle", "parallel", "dlq", "chaos")


def make_event_runs() -> list[tuple[dict[str, list[bytes]], int]]:
    """Event logs a correct system writes (`event_log_of`), compactly as orjson writes
    them (what `validate`'s fast path reads): a few runs of each profile, with `at` and
    without."""
    import orjson

    from conformance.generation.profiles import generate_trace
    from conformance.running.events import event_log_of
    from traces.ops import Settle

    runs = []
    for number, profile in enumerate(EVENT_PROFILES):
        for seed in (1, 2):
            config, stream = generate_trace(seed, f"e{number}", profile, 60)
            ops = [op for op in stream if type(op) is not Settle]
            logs = event_log_of(config, ops, finer=seed == 1)
            longest = max([op.ms for op in ops if hasattr(op, "ms")], default=0)
            files = {
                f"{name}.jsonl": [orjson.dumps(x) for x in lines] for name, lines in logs.items()
            }
            runs.append((files, longest))
    return runs


# -- the input kinds: (Random, Corpus) -> Case --------------------------------------------


def trace_replay(rng: random.Random, corpus: Corpus) -> Case:
    """A mutated trace through `replay` with some of its options."""
    data = mutate_jsonl(rng.choice(corpus.traces), rng, corpus.lines)
    flags = [f for f in ("--steps", "--json", "--check-properties") if rng.random() < 0.3]
    engine = rng.choice(("model", "impl", "both", "both"))
    files = {"t.jsonl": data}
    argv = ["replay", "t.jsonl", "--engine", engine, *flags]
    if rng.random() < 0.1:  # two traces: every one is validated before any output
        files["u.jsonl"] = rng.choice(corpus.traces)
        argv.insert(1 + rng.randrange(2), "u.jsonl")
    return Case("trace", files, argv)


def trace_convert(rng: random.Random, corpus: Corpus) -> Case:
    """A mutated trace converted to a Parquet set: nothing may be left behind on error."""
    data = mutate_jsonl(rng.choice(corpus.traces), rng, corpus.lines)
    return Case(
        "trace-convert", {"t.jsonl": data}, ["convert", "t.jsonl", "--out", "set"], ("set",)
    )


def config_topology(rng: random.Random, corpus: Corpus) -> Case:
    """A mutated SPEC §2 configuration (either form) through `topology`."""
    data = rng.choice(corpus.configs)
    if rng.random() < 0.85:
        data = mutate_jsonl(data, rng, corpus.configs)
    flags = ["--json"] if rng.random() < 0.5 else []
    if rng.random() < 0.2:  # the drawing too: ids and sites as the user wrote them
        return Case(
            "config", {"c.json": data}, ["topology", "c.json", "--svg", "t.svg"], ("t.svg",)
        )
    return Case("config", {"c.json": data}, ["topology", "c.json", *flags])


def log_validate(rng: random.Random, corpus: Corpus) -> Case:
    """A mutated system log (docs/LOG.md) through `validate`."""
    data = mutate_jsonl(rng.choice(corpus.logs), rng, corpus.lines)
    flags = [f for f in ("--json", "--check-properties", "--steps") if rng.random() < 0.3]
    return Case("log", {"l.jsonl": data}, ["validate", "l.jsonl", *flags])


def mutate_event_line(line: bytes, rng: random.Random, compact: bool) -> bytes:
    """One change to an event log line's fields (docs/LOG.md): a wrong type, an out of
    range value, a key twice, a fraction, a huge integer, a process's own field, a
    state, `at` removed, `t` running back; or any change of its structure."""
    import orjson

    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(raw, dict):
        return line
    choice = rng.random()
    name = rng.choice(("t", "at", "batch_id", "dispatcher", "sender", "site", "op", "observed"))
    if choice < 0.3:
        raw = mutate_document(raw, rng)
    elif choice < 0.45:
        raw[name] = interesting(rng)
    elif choice < 0.52:
        raw[f"_{rng.choice(('x', 'mine', 't', ''))}"] = interesting(rng)
    elif choice < 0.58:
        raw["state"] = rng.choice(({}, [], None, 1, {"sites": {}}))
    elif choice < 0.66:
        raw.pop("at", None)
    elif choice < 0.74 and isinstance(raw.get("t"), int):
        raw["t"] = max(0, raw["t"] - rng.choice((1, 5, 1000)))
        if isinstance(raw.get("at"), int) and rng.random() < 0.5:
            raw["at"] = max(0, raw["at"] - rng.choice((1, 5, 1000)))
    elif choice < 0.82 and isinstance(raw.get(name), int) and not isinstance(raw[name], bool):
        raw[name] = rng.choice(
            (float(raw[name]), raw[name] + 0.5, -raw[name] - 1, 2**63, 2**64, 10**30, 0)
        )
    elif choice < 0.9 and raw:  # a key twice: the first or the last one holds
        text = dump_json(raw, rng, compact)
        key = rng.choice(sorted(raw))
        value = dump_json(interesting(rng), rng, compact)
        member = json.dumps(key) + (":" if compact else ": ") + value
        return f"{{{member},{text[1:]}".encode("utf-8", "surrogatepass")
    else:  # an observation's integer made a fraction or huge
        places = [(c, k) for c, k, v in containers(raw.get("observed")) if type(v) is int]
        if places:
            container, key = rng.choice(places)
            container[key] = rng.choice((float(container[key]), 2**64, -1, 1e30, 1e-7, Raw("1e3")))
    return dump_json(raw, rng, compact).encode("utf-8", "surrogatepass")


def event_log_validate(rng: random.Random, corpus: Corpus) -> Case:
    """A run's event logs (docs/LOG.md), 1-3 process files written compactly as a live
    system writes them (or with spaces), mutated (fields, lines within and between
    files, bytes), through `validate DIR`."""
    run, longest = rng.choice(corpus.event_runs)
    names = sorted(run)
    chosen = sorted(rng.sample(names, min(len(names), rng.choice((1, 2, 3, 3)))))
    if len(names) <= 3 and rng.random() < 0.7:
        chosen = names  # the whole run: valid before its mutations
    compact = rng.random() < 0.8
    files = {}
    for name in chosen:
        lines = list(run[name])
        if not compact:
            lines = [json.dumps(json.loads(line)).encode() for line in lines]
        files[name] = lines
    pool = [line for name in chosen for line in files[name][1:]]
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        name = rng.choice(chosen)
        lines = files[name]
        choice = rng.random()
        if choice < 0.5 and len(lines) > 1:
            index = rng.randrange(1, len(lines))
            lines[index] = mutate_event_line(lines[index], rng, compact)
        elif choice < 0.6:
            lines[0] = mutate_event_line(lines[0], rng, compact)  # the header
        elif choice < 0.8:
            files[name] = mutate_lines(lines, rng, pool)
        elif choice < 0.9 and len(chosen) > 1:  # a line moved to another process's file
            other = rng.choice([n for n in chosen if n != name])
            if len(lines) > 1:
                line = lines.pop(rng.randrange(1, len(lines)))
                files[other].insert(rng.randrange(1, len(files[other]) + 1), line)
        else:
            data = mutate_bytes(b"\n".join(lines), rng)
            files[name] = data.split(b"\n")
    written = {f"run/{name}": b"\n".join(lines) + b"\n" for name, lines in files.items()}
    flags = [[f] for f in ("--json", "--check-properties", "--steps") if rng.random() < 0.3]
    if rng.random() < 0.4:
        late = rng.choice((0, longest, longest, 1, 10**6, 2**63 - 1, rng.randrange(1000)))
        flags.append(["--max-late-ms", str(late)])
    rng.shuffle(flags)
    return Case("events", written, ["validate", "run", *(f for flag in flags for f in flag)])


def checkpoint_replay(rng: random.Random, corpus: Corpus) -> Case:
    """A mutated checkpoint (docs/CHECKPOINT.md) through `replay --from`, or a valid one
    with a mutated trace; sometimes writing a checkpoint of the end too."""
    trace, checkpoint = rng.choice(corpus.checkpoints)
    if rng.random() < 0.8:
        if rng.random() < 0.6:
            document = mutate_document(json.loads(checkpoint), rng)
            checkpoint = dump_json(document, rng).encode("utf-8", "surrogatepass")
        else:
            checkpoint = mutate_bytes(checkpoint, rng)
    else:
        trace = mutate_jsonl(trace, rng, corpus.lines)
    engine = rng.choice(("model", "impl", "both"))
    argv = ["replay", "--from", "c.json", "t.jsonl", "--engine", engine]
    outputs: tuple[str, ...] = ()
    if rng.random() < 0.3:
        argv += ["--checkpoint", "end.json"]
        outputs = ("end.json",)
    if rng.random() < 0.2:
        argv.append("--json")
    return Case("checkpoint", {"t.jsonl": trace, "c.json": checkpoint}, argv, outputs)


XML_ATTRIBUTE = re.compile(rb'([\w:-]+)="([^"]*)"')
XML_ELEMENT = re.compile(rb"<([\w:-]+)[^<>]*/>|<([\w:-]+)[^<>]*>.*?</\2>", re.S)
XML_VALUES = (
    b"", b"-1", b"0", b"1", b"2", b"256", b"99999999999999999999", b"1.5", b"abc", b"true",
    b"false", b"${X}", b"${", b"&amp;", b"&bogus;", b"\xc3\xa9", b"ny", b"ln", b"1,2", b" 2 ",
)  # fmt: skip


def mutate_xml(data: bytes, rng: random.Random) -> bytes:
    """An attribute's value, name or presence; an element removed, repeated or renamed."""
    choice = rng.random()
    attributes = list(XML_ATTRIBUTE.finditer(data))
    elements = list(XML_ELEMENT.finditer(data))
    if choice < 0.4 and attributes:
        match = rng.choice(attributes)
        start, end = match.span(2)
        return data[:start] + rng.choice(XML_VALUES) + data[end:]
    if choice < 0.5 and attributes:
        match = rng.choice(attributes)
        return data[: match.start()] + data[match.end() :]
    if choice < 0.6 and attributes:  # a misspelled or repeated attribute
        match = rng.choice(attributes)
        name = match.group(1)
        new = name[:-1] if rng.random() < 0.5 else name
        return (
            data[: match.end()] + b" " + new + b'="' + match.group(2) + b'"' + data[match.end() :]
        )
    if choice < 0.85 and elements:
        match = rng.choice(elements)
        if rng.random() < 0.4:
            return data[: match.start()] + data[match.end() :]
        if rng.random() < 0.6:
            return data[: match.end()] + match.group(0) + data[match.end() :]
        name = match.group(1) or match.group(2)
        typo = name[: len(name) // 2] + name[len(name) // 2 + 1 :]
        return data.replace(b"<" + name, b"<" + typo, 1).replace(b"</" + name, b"</" + typo, 1)
    return mutate_bytes(data, rng)


GFSH_OPTION = re.compile(rb"--([\w.-]+)(?:(=| )(\"[^\"]*\"|[^\s-][^\s]*))?")


def mutate_gfsh(data: bytes, rng: random.Random) -> bytes:
    """An option's value, name or presence; lines removed, repeated or swapped."""
    choice = rng.random()
    options = list(GFSH_OPTION.finditer(data))
    if choice < 0.4 and options:
        match = rng.choice(options)
        value = rng.choice((*XML_VALUES, b'"', b"'", b"\\", b"--x", b"a b"))
        if match.group(3) is not None:
            start, end = match.span(3)
            return data[:start] + value + data[end:]
        return data[: match.end()] + b"=" + value + data[match.end() :]
    if choice < 0.5 and options:
        match = rng.choice(options)
        return data[: match.start()] + data[match.end() :]
    if choice < 0.6 and options:
        match = rng.choice(options)
        copy = match.group(0)
        if rng.random() < 0.5:
            copy = copy.replace(match.group(1), match.group(1)[:-1], 1)
        return data[: match.end()] + b" " + copy + data[match.end() :]
    if choice < 0.8:
        lines = data.split(b"\n")
        extra = (b"create gateway-sender", b"\\", b"create region --name=", b"gfsh>", b"#")
        return b"\n".join(mutate_lines(lines, rng, extra))
    return mutate_bytes(data, rng)


def mutate_properties(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        lines = data.split(b"\n")
        extra = (b"distributed-system-id=", b"distributed-system-id=x", b"=", b"\\", b"a")
        return b"\n".join(mutate_lines(lines, rng, extra))
    return mutate_bytes(data, rng)


def geode_import(rng: random.Random, corpus: Corpus) -> Case:
    """Geode sites (cache.xml, gfsh, gemfire.properties), one file mutated, through
    `import` (or `topology --site`, which reads them the same way)."""
    sites, defines = rng.choice(corpus.geode)
    files: dict[str, bytes] = {}
    arguments = [argument for define in defines for argument in ("--define", define)]
    for number, (dsid, named) in enumerate(sites):
        names = []
        for name, data in named:
            local = f"s{number}-{Path(name).name}"
            files[local] = data
            names.append(local)
        arguments += ["--site", f"{dsid}={','.join(names)}" if dsid else ",".join(names)]
    for _ in range(rng.choice((1, 1, 2))):
        target = rng.choice(sorted(files))
        if target.endswith(".xml"):
            files[target] = mutate_xml(files[target], rng)
        elif target.endswith(".properties"):
            files[target] = mutate_properties(files[target], rng)
        else:
            files[target] = mutate_gfsh(files[target], rng)
    if rng.random() < 0.1:
        arguments.append("--allow-partial")
    if rng.random() < 0.1:  # the value of a ${X} a mutation may have put in a file
        arguments += ["--define", "X=" + rng.choice(("1", "2", "", "ny", "${X}", "1e3", "é"))]
    if rng.random() < 0.25:
        return Case("geode", files, ["import", *arguments])  # to stdout
    if rng.random() < 0.35:
        return Case("geode", files, ["import", *arguments, "-o", "c.json"], ("c.json",))
    return Case("geode", files, ["topology", *arguments, "--json"])


def mutate_frames(files: list[tuple[str, bytes]], rng: random.Random) -> list[tuple[str, bytes]]:
    """A dead-letter store's files (docs/DLQ_STORE.md): a frame's payload changed behind a
    valid checksum, frames removed or repeated, or bytes of a file changed."""
    name, data = files[rng.randrange(len(files))]
    frames = []
    at = 0
    while at + 12 <= len(data):
        (length,) = struct.unpack(">I", data[at + 4 : at + 8])
        frames.append(data[at + 12 : at + 12 + length])
        at += 12 + length
    choice = rng.random()
    if choice < 0.5 and frames:
        index = rng.randrange(len(frames))
        document = mutate_document(json.loads(frames[index]), rng)
        frames[index] = dump_json(document, rng).encode("utf-8", "surrogatepass")
    elif choice < 0.7 and frames:
        frames = [f.replace(b"\n", b"") for f in mutate_lines(frames, rng, [b"{}", b"[]"])]
    elif choice < 0.8:
        name = rng.choice(("x%.dlq", "%ZZ.dlq", "é.dlq", ".dlq", "ny.dlq.compacting", "a.txt"))
    else:
        return [(n, mutate_bytes(d, rng) if n == name else d) for n, d in files]
    framed = b"".join(b"WDLQ" + struct.pack(">II", len(f), zlib.crc32(f)) + f for f in frames)
    return [(n, d) for n, d in files if n != name] + [(name, framed)]


def dlq_store(rng: random.Random, corpus: Corpus) -> Case:
    """A damaged dead-letter store through `dlq` (which never changes it)."""
    files = mutate_frames(corpus.dlq, rng)
    flags = rng.choice(([], ["--counts"], ["--format", "jsonl", "-o", "x.jsonl"]))
    outputs = ("x.jsonl",) if "-o" in flags else ()
    return Case("dlq", {f"store/{n}": d for n, d in files}, ["dlq", "store", *flags], outputs)


def mutate_table(table: Any, rng: random.Random) -> Any:
    """A Parquet table with a column missing, extra, of another type, or bad cells."""
    import pyarrow as pa

    names = table.column_names
    choice = rng.random()
    if choice < 0.15:  # by position: an earlier mutation may have doubled a name
        return table.remove_column(rng.randrange(len(names)))
    if choice < 0.25:
        extra = pa.array([rng.random() for _ in range(table.num_rows)])
        return table.append_column(rng.choice(("extra", *names)), extra)
    if choice < 0.45:
        index = rng.randrange(len(names))
        column = table.column(index).to_pylist()
        kind = rng.choice(("int32", "float64", "binary", "bool", "null", "string", "list"))
        try:
            if kind == "string":
                array = pa.array([None if v is None else str(v) for v in column], pa.string())
            elif kind == "binary":
                array = pa.array([str(v).encode() for v in column], pa.binary())
            elif kind == "list":
                array = pa.array([[v] for v in column])
            elif kind == "null":
                array = pa.nulls(len(column))
            else:
                array = pa.array([v if isinstance(v, int) else len(str(v)) for v in column])
                array = array.cast(kind, safe=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            array = pa.nulls(len(column))
        return table.set_column(index, names[index], array)
    rows = table.to_pylist()
    if not rows:
        return table
    row = rng.choice(rows)
    name = rng.choice(names)
    if choice < 0.8:
        value = row[name]
        if isinstance(value, str) and value.startswith("{"):  # a JSON cell: mutated inside
            document = mutate_document(json.loads(value), rng)
            row[name] = dump_json(document, rng)
        elif isinstance(value, str):
            row[name] = rng.choice(("", "a/b", "..", ".", "x" * 300, "é", "\x00", value * 2))
        else:
            row[name] = rng.choice((None, 0, -1, 1, 2, 10**12, 2**63 - 1, -(2**63)))
    elif choice < 0.9:
        rows.insert(rng.randrange(len(rows) + 1), dict(row))
    else:
        rows.remove(row)
    try:
        return pa.Table.from_pylist(rows, schema=table.schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return table


def parquet_convert(rng: random.Random, corpus: Corpus) -> Case:
    """A damaged Parquet trace set (SPEC §12) converted to JSON Lines, the command that
    reads a set without Spark."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from traces.parquet import MARKER

    tables = dict(corpus.trace_set)
    files: dict[str, bytes] = {MARKER: b'{"kind":"wanconform trace set","version":1}\n'}
    for _ in range(rng.choice((1, 1, 2))):
        name = rng.choice(sorted(tables))
        tables[name] = mutate_table(tables[name], rng)
    for name, table in tables.items():
        sink = io.BytesIO()
        try:
            pq.write_table(table, sink)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # nulls in a non-nullable column
            sink = io.BytesIO()
            pq.write_table(corpus.trace_set[name], sink)
        files[f"{name}/part-00000.parquet"] = sink.getvalue()
    choice = rng.random()
    if choice < 0.1:  # damage to the files themselves
        target = rng.choice(sorted(files))
        files[target] = mutate_bytes(files[target], rng)
    elif choice < 0.15:
        del files[rng.choice(sorted(files))]
    elif choice < 0.2:
        files[f"{rng.choice(sorted(tables))}/part-00001.parquet"] = rng.choice((b"", b"PAR1"))
    files = {f"set/{name}": data for name, data in files.items()}
    return Case("parquet", files, ["convert", "set", "--out", "out"], ("out",))


KINDS: dict[str, tuple[int, Callable[[random.Random, Corpus], Case]]] = {
    # name: (inputs in each 100, the function making one)
    "trace": (30, trace_replay),
    "trace-convert": (7, trace_convert),
    "config": (10, config_topology),
    "log": (12, log_validate),
    "events": (10, event_log_validate),
    "geode": (18, geode_import),
    "dlq": (6, dlq_store),
    "parquet": (1, parquet_convert),
    "checkpoint": (6, checkpoint_replay),
}


def schedule(kinds: Sequence[str]) -> list[str]:
    """The kind of input i is schedule[i % len(schedule)]: the shares, interleaved."""
    slots = [(k + 0.5) / KINDS[name][0] for name in kinds for k in range(KINDS[name][0])]
    named = [name for name in kinds for _ in range(KINDS[name][0])]
    return [name for _, name in sorted(zip(slots, named, strict=True), key=lambda p: p[0])]


def make_case(seed: int, index: int, kinds: Sequence[str], corpus: Corpus) -> Case:
    order = schedule(kinds)
    rng = random.Random(f"{seed}:{index}")
    return KINDS[order[index % len(order)]][1](rng, corpus)


# -- running one input as the command line does -------------------------------------------


@dataclass(frozen=True)
class Outcome:
    outcome: str
    code: object
    stdout: str
    stderr: str


def judge(code: object, stdout: str, stderr: str, left_behind: Sequence[str]) -> str:
    if "Traceback" in stderr:
        return "traceback"
    if code in (0, 1):
        return ACCEPTED
    if code != 2:
        return "bad-exit"
    lines = stderr.splitlines()  # any line break: \r, \x0b, \u2028 ... as a terminal might
    if len(lines) != 1 or not lines[0].startswith("wanconform: error: "):
        return "not-one-line"
    if stdout:
        return "output-on-error"
    if left_behind:
        return "left-behind"
    return REJECTED


def run_case(case: Case, folder: Path, entry: Callable[[list[str]], int] | None = None) -> Outcome:
    """Run `case` in `folder` (emptied first) as `wanconform ARGV` would, in process."""
    if entry is None:
        from wanconform.cli import main

        entry = main
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, data in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    before = set(os.listdir(folder))
    # as a terminal's streams are: UTF-8, stdout strict, stderr escaping what it cannot encode
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code: object = entry(list(case.argv))
            except SystemExit as exc:
                code = exc.code
    except Exception:
        code = None
        print(traceback.format_exc(), file=err)
    finally:
        os.chdir(cwd)
    stdout, stderr = written(out, out_bytes), written(err, err_bytes)
    if code is None:
        return Outcome("traceback", None, stdout, stderr)
    left = sorted(set(os.listdir(folder)) - before) if code == 2 else []
    return Outcome(judge(code, stdout, stderr, left), code, stdout, stderr)


def written(stream: io.TextIOWrapper, data: io.BytesIO) -> str:
    try:
        stream.flush()
    except UnicodeEncodeError as exc:  # what a print left in the buffer: a traceback
        return f"Traceback: {exc}"
    return data.getvalue().decode("utf-8", "replace")


def save_failure(out: Path, index: int, case: Case, outcome: Outcome, seed: int) -> Path:
    """OUT/KIND-OUTCOME-INDEX/: the input's files, its command, what it printed."""
    folder = out / f"{case.kind}-{outcome.outcome}-{index}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, data in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (folder / "command").write_text(" ".join(case.argv) + "\n")
    (folder / "result.txt").write_text(
        f"outcome: {outcome.outcome}\nexit: {outcome.code}\nseed {seed}, input {index}: "
        f"python -m tools.fuzz --seed {seed} --only {index}\n"
        f"--- stdout\n{outcome.stdout[:4000]}\n--- stderr\n{outcome.stderr[:20000]}\n",
        encoding="utf-8",
        errors="backslashreplace",
    )
    return folder


# -- workers: two processes, each input under a time cap ----------------------------------


@dataclass
class Totals:
    by_kind: Counter[tuple[str, str]] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # the folders written

    def add(self, other: Totals) -> None:
        self.by_kind.update(other.by_kind)
        self.failures += other.failures

    @property
    def inputs(self) -> int:
        return sum(self.by_kind.values())

    def count(self, outcome: str) -> int:
        return sum(n for (_, o), n in self.by_kind.items() if o == outcome)


def worker(
    seed: int,
    kinds: Sequence[str],
    out: str,
    tasks: Any,
    results: Any,
    current: Synchronized,  # type: ignore[type-arg]
) -> None:
    """Run the chunks of `tasks` ((start, end) or None to stop); put a Totals per chunk.
    `current` holds the index being run (-1 once it is judged and kept), for the
    parent's watchdog: a worker that dies with an index set has crashed on that input."""
    fast_parser()
    scratch = Path(tempfile.mkdtemp(prefix="wanconform-fuzz-", dir=scratch_root()))
    corpus = build_corpus(scratch)
    parent = os.getppid()
    while True:
        try:
            task = tasks.get(timeout=1)
        except queue.Empty:
            if os.getppid() != parent:
                break  # the run was killed: no one is waiting for this worker
            continue
        if task is None:
            break
        start, end = task
        totals = Totals()
        for index in range(start, end):
            current.value = index
            try:
                case = make_case(seed, index, kinds, corpus)
            except Exception:  # a bug of this file, not of wanconform: shown, not hidden
                case = Case("generator", {}, [])
                outcome = Outcome("generator", None, "", traceback.format_exc())
            else:
                outcome = run_case(case, scratch / "input")
            totals.by_kind[case.kind, outcome.outcome] += 1
            if outcome.outcome not in (ACCEPTED, REJECTED):
                totals.failures.append(str(save_failure(Path(out), index, case, outcome, seed)))
            current.value = -1  # judged and kept: a death from here on loses no input
        results.put((start, end, totals))
    shutil.rmtree(scratch, ignore_errors=True)


def fast_parser() -> None:
    """Build the command line's parser once per worker, not once per input (argparse
    takes ~10 ms to build it; a command line process builds it once too). `main`'s
    parsing and error handling are the command line's own."""
    from wanconform import cli

    real = cli.build_parser
    built: dict[object, argparse.ArgumentParser] = {}

    def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
        key = None if argv is None else (cli.chosen_command(argv), "--version" in argv)
        if key not in built:
            built[key] = real(argv)
        return built[key]

    cli.build_parser = build_parser


def scratch_root() -> str | None:
    """Memory-backed scratch space where there is some (the inputs are small files)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def run_fuzz(
    inputs: int,
    seed: int,
    workers: int,
    timeout: float,
    out: Path,
    kinds: Sequence[str],
    chunk: int = 200,
    report: Callable[[str], None] = print,
    start: int = 0,
) -> Totals:
    """Inputs start..start+inputs-1 over `workers` processes. A worker whose input runs
    longer than `timeout` seconds (or that dies) is replaced; that input is counted as a
    hang (or crash) and the rest of its chunk is run again by another worker."""
    out.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("fork")
    tasks: Any = context.Queue()
    # Written through at once: a Queue's feeder thread could still hold a finished chunk's
    # totals when its worker crashes on the next input (os._exit), and that chunk would
    # wait forever. A worker is killed only inside an input, never while it writes here.
    results: Any = context.SimpleQueue()
    pending: set[tuple[int, int]] = set()
    for first in range(start, start + inputs, chunk):
        pending.add((first, min(first + chunk, start + inputs)))
        tasks.put((first, min(first + chunk, start + inputs)))
    slots: list[Any] = []
    processes: list[Any] = []
    seen_since: list[tuple[int, float]] = []

    def spawn(slot: int) -> None:
        current = context.Value("q", -1)
        process = context.Process(
            target=worker, args=(seed, list(kinds), str(out), tasks, results, current)
        )
        process.start()
        if slot < len(processes):
            processes[slot], slots[slot], seen_since[slot] = process, current, (-1, time.time())
        else:
            processes.append(process)
            slots.append(current)
            seen_since.append((-1, time.time()))

    for slot in range(workers):
        spawn(slot)
    totals = Totals()
    began = time.monotonic()
    last_report = began
    corpus: Corpus | None = None
    start_up_deaths = 0
    while pending:
        if results.empty():
            time.sleep(0.2)
        else:
            first, end, part = results.get()
            pending.discard((first, end))
            totals.add(part)
        for slot, process in enumerate(processes):
            index = slots[slot].value
            if seen_since[slot][0] != index:
                seen_since[slot] = (index, time.time())
            running = time.time() - seen_since[slot][1]
            died = not process.is_alive()
            if index < 0 or not (died or running > timeout):
                if died and index < 0 and pending:
                    start_up_deaths += 1  # died between inputs (start-up): start another
                    if start_up_deaths > 2 * workers:
                        raise RuntimeError("fuzz workers die before their first input")
                    spawn(slot)
                continue
            process.kill()
            process.join()
            outcome = "crash" if died else "hang"
            if corpus is None:
                corpus = build_corpus(Path(tempfile.mkdtemp(dir=scratch_root())))
            case = make_case(seed, index, kinds, corpus)
            chunk_of = next(c for c in pending if c[0] <= index < c[1])
            pending.discard(chunk_of)
            part = Totals()
            part.by_kind[case.kind, outcome] += 1
            result = Outcome(outcome, process.exitcode, "", f"ran over {timeout} s or died")
            part.failures.append(str(save_failure(out, index, case, result, seed)))
            totals.add(part)
            for rest in ((chunk_of[0], index), (index + 1, chunk_of[1])):
                if rest[0] < rest[1]:
                    pending.add(rest)
                    tasks.put(rest)
            spawn(slot)
        if time.monotonic() - last_report > 30:
            last_report = time.monotonic()
            rate = totals.inputs / (last_report - began)
            report(f"  {totals.inputs:,} inputs, {rate:,.0f}/s, {len(totals.failures)} failing")
    for _ in processes:
        tasks.put(None)
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    return totals


def summary(totals: Totals, seconds: float, kinds: Sequence[str]) -> str:
    outcomes = [ACCEPTED, REJECTED, *FAILURES]
    width = max(len(k) for k in kinds)
    lines = [
        f"{totals.inputs:,} inputs in {seconds:,.0f} s: {totals.inputs / seconds:,.0f} inputs/s",
        f"{'kind':<{width}}  " + "  ".join(f"{o:>9}" for o in outcomes[:4]) + "  other",
    ]
    for kind in kinds:
        counts = [totals.by_kind[kind, o] for o in outcomes]
        lines.append(
            f"{kind:<{width}}  "
            + "  ".join(f"{n:>9,}" for n in counts[:4])
            + f"  {sum(counts[4:]):,}"
        )
    failing = len(totals.failures)
    lines.append(
        "failures: "
        + (", ".join(f"{o} {totals.count(o):,}" for o in FAILURES) if failing else "none")
    )
    return "\n".join(lines)


def _seconds(text: str) -> float:
    """An argparse type: seconds, more than 0 (a 0 s cap makes every input a hang)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = StrictParser(prog="python -m tools.fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int_at_least(1), default=1_000_000)
    parser.add_argument("--start", type=int_at_least(0), default=0, help="the first input's index")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int_at_least(1), default=2)
    parser.add_argument("--timeout", type=_seconds, default=10.0, help="seconds per input")
    parser.add_argument("--out", type=Path, default=Path("out/fuzz"))
    parser.add_argument("--kinds", default=",".join(KINDS), help="of: " + ", ".join(KINDS))
    parser.add_argument(
        "--only", type=int_at_least(0), help="run input ONLY in this process and show it"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = args.kinds.split(",")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        print(f"unknown kind {unknown[0]!r}: choose from {', '.join(KINDS)}", file=sys.stderr)
        return 2
    if args.only is not None:
        scratch = Path(tempfile.mkdtemp(dir=scratch_root()))
        case = make_case(args.seed, args.only, kinds, build_corpus(scratch))
        outcome = run_case(case, scratch / "input")
        folder = save_failure(args.out, args.only, case, outcome, args.seed)
        print(f"{case.kind}: {' '.join(case.argv)} -> {outcome.outcome} (exit {outcome.code})")
        print(f"stderr: {outcome.stderr.strip()[:2000]}\nfiles: {folder}")
        shutil.rmtree(scratch, ignore_errors=True)
        return 0 if outcome.outcome in (ACCEPTED, REJECTED) else 1
    print(
        f"fuzzing: {args.inputs:,} inputs from seed {args.seed}, {args.workers} workers, "
        f"{args.timeout:g} s per input; failing inputs go to {args.out}/"
    )
    began = time.monotonic()
    totals = run_fuzz(
        args.inputs, args.seed, args.workers, args.timeout, args.out, kinds, start=args.start
    )
    print(summary(totals, time.monotonic() - began, kinds))
    return 1 if totals.failures else 0


if __name__ == "__main__":
    sys.exit(main())
