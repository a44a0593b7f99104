"""Shrinking a failing trace to a 1-minimal trace that fails the same way (issue 10).

A trace fails when model and impl diverge (P1, `conformance.running.lockstep`) or a property of
SPEC §11 is violated (P2-P12, `conformance.properties.checker`), whichever shows first. Its
failure has a *signature*: the property, and for P1 the kind of divergence
(observations or state) and the first differing path with list indices, entry keys and
event ids normalized (`observations[].events_resent`, `state.sites.2.entries.*.value`).
Shrinking keeps the signature; a candidate that fails differently does not count.

Stages, cheapest first, each a trial that is kept only if the trace still fails with the
signature (after each, the trace is cut after its failure, which may come earlier):
1. cut after the first failure;
2. keep the shortest suffix that fails (doubling, then bisection), which is cheap when
   the failure needs only the last operations;
3. keep only the client writes of the keys involved in the failure (named by the failing
   operation, the differing paths, or the events the failure names);
4. remove the skipped operations (a skipped operation changes nothing, SPEC §3);
5. remove every operation of one key, sender or site at a time (when there are few);
6. ddmin (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
   2002) down to a 1-minimal trace: removing any one operation loses the failure;
7. prune the configuration: remove each site (with its senders, the senders to it, its
   receiver and the operations that name any of them), then each sender (with its
   operations), then reset each receiver's settings to the defaults, keeping every
   removal after which the trace still fails the same way; then ddmin again if anything
   was removed (with or without operations: an operation that only the removed part
   needed, R22's forwarding say, is needless now). What is left is what the failure needs.
Every kept operation is an operation of the input (no operation is rewritten), so the
result names the input lines it kept; `Shrunk.config` is the pruned configuration.

A budget (seconds) bounds the stages after the first run: when it runs out, the result is
the shortest trace found so far that fails the same way (every stage keeps only such
traces), and `Shrunk.out_of_budget` says so.
"""

from __future__ import annotations

import math
import re
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.running.run import Failure, Signature, Step, TraceRun
from traces.config import Config, parse_config
from traces.engine import EngineFactory, impl_command, impl_directory
from traces.errors import ConfigError, WanconformError
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
    Op,
    Put,
    PutAll,
    SiteDown,
    SiteUp,
)
from traces.text import plural, shell_word

Progress = Callable[[str], None]

MAX_GROUPS = 64  # stage 4 runs only when the trace has at most this many keys+senders+sites
CACHE_BELOW = 20_000  # candidates shorter than this are remembered (ddmin retries some)

_EVENT = re.compile(r"\b(\d+):(\d+)\b")


def budget_text(seconds: float) -> str:
    """A budget in messages: whole seconds, or its first digits below one second (a
    budget of 0.001 s is not "0 s", which `--shrink-budget` reads as no limit)."""
    return f"{seconds:,.0f} s" if seconds >= 1 else f"{seconds:.2g} s"


class _OutOfBudget(Exception):
    """The shrinking budget ran out (caught in `shrink`)."""


class NothingToShrink(WanconformError):
    """The trace neither diverges nor violates a property: there is no failure to keep."""


def find_failure(
    config: Config,
    ops: Sequence[Op],
    impl_factory: EngineFactory | None = None,
    skipped: list[int] | None = None,
    names: Sequence[str] | None = None,
    events: dict[str, str] | None = None,
) -> Failure | None:
    """Run `ops` (`conformance.running.run`, both engines, P2-P12) up to their first
    failure; the failure. `skipped` collects the indices of skipped operations, `events`
    the key each event wrote; `names` names the operations in messages (default
    "operation N")."""

    def collect(step: Step) -> None:
        if skipped is not None and step.skipped:
            skipped.append(step.index)
        if events is not None:
            events.update(
                (o["event"], o["key"]) for o in step.observations if o["kind"] == "enqueued"
            )

    watching = skipped is not None or events is not None
    run = TraceRun(
        "trace",
        config,
        impl=impl_factory,
        stop_at_failure=True,
        on_step=collect if watching else None,
    )
    for index, op in enumerate(ops):
        run.step(names[index] if names is not None else f"operation {index + 1}", op)
        if run.stopped:
            break
    return run.finish().failure


@dataclass(slots=True)
class Shrunk:
    """The result: the minimal trace's operations (as indices into the input), its
    failure, and what each stage removed."""

    config: Config
    original: int  # operations in the input
    kept: list[int]  # indices of the input operations kept, in order
    failure: Failure  # the failure of the minimal trace
    first_failure: Failure  # the failure of the input
    stages: list[tuple[str, int]] = field(default_factory=list)  # (stage, operations left)
    tests: int = 0  # candidate traces run
    out_of_budget: bool = False  # the budget ran out: `kept` is the best found by then

    def ops(self, source: Sequence[Op]) -> list[Op]:
        return [source[i] for i in self.kept]


def _key_of(op: Op) -> str | None:
    match op:
        case Put(key=key) | Delta(key=key) | Destroy(key=key) | Fail(key=key):
            return key
    return None


def _site_of(op: Op) -> int | None:
    """The site an operation names (a client write's, a fault's), if any."""
    site = getattr(op, "site", None)
    return site if isinstance(site, int) else None


def _sender_of(op: Op) -> str | None:
    """The sender an operation names (network operations), if any."""
    sender = getattr(op, "sender", None)
    return sender if isinstance(sender, str) else None


def _groups(config: Config, ops: Sequence[Op], kept: list[int]) -> dict[str, list[int]]:
    """Positions in `kept` of the operations of each key, sender and site."""
    groups: dict[str, list[int]] = {}
    for position, index in enumerate(kept):
        op = ops[index]
        match op:
            case Deliver(sender=s) | DeliverAck(sender=s) | Drop(sender=s) | DropAck(sender=s):
                label = f"sender {s}"
            case SiteDown(site=site) | SiteUp(site=site):
                label = f"site {site}"
            case PutAll():
                label = f"putall at site {op.site}"
            case _:
                key = _key_of(op)
                label = "" if key is None else f"key {key}"
        if label:
            groups.setdefault(label, []).append(position)
    return groups


class _Shrinker:
    def __init__(
        self,
        config: Config,
        ops: Sequence[Op],
        impl_factory: EngineFactory | None,
        progress: Progress,
        deadline: float | None = None,
    ) -> None:
        self.config = config
        self.ops = ops
        self.impl_factory = impl_factory
        self.progress = progress
        self.deadline = deadline  # time.monotonic() after which no candidate is run
        self.tests = 0
        self.signature: Signature | None = None
        self._cache: dict[tuple[int, ...], tuple[list[int], Failure] | None] = {}
        self.best: tuple[list[int], Failure, Config] | None = None  # shortest failing so far

    def run(
        self, kept: list[int], skipped: list[int] | None = None, config: Config | None = None
    ) -> Failure | None:
        self.tests += 1
        return find_failure(
            config or self.config, [self.ops[i] for i in kept], self.impl_factory, skipped
        )

    def test(
        self, kept: list[int], config: Config | None = None
    ) -> tuple[list[int], Failure] | None:
        """Does `kept` fail with the signature (on `config`, default the current one)?
        Then `kept` cut after its failure."""
        cache_key = tuple(kept) if len(kept) < CACHE_BELOW and config is None else None
        if cache_key is not None and cache_key in self._cache:
            return self._cache[cache_key]
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _OutOfBudget
        failure = self.run(kept, config=config)
        result = None
        if failure is not None and failure.signature == self.signature:
            result = (kept[: failure.index + 1], failure)
            if self.best is None or len(result[0]) < len(self.best[0]):
                self.best = (result[0], failure, config or self.config)
        if cache_key is not None:
            self._cache[cache_key] = result
        return result

    def prune_config(self, kept: list[int]) -> list[int]:
        """Stage 7: remove the sites, senders and receiver settings the failure does not
        need (see the module's docstring)."""

        def attempt(document: dict[str, Any], gone_sites: set[int], gone_senders: set[str]) -> None:
            nonlocal kept
            try:
                config = parse_config(document)
            except ConfigError:
                return  # e.g. no site left
            candidate = [
                index
                for index in kept
                if _site_of(self.ops[index]) not in gone_sites
                and _sender_of(self.ops[index]) not in gone_senders
            ]
            result = self.test(candidate, config)
            if result is not None:
                kept, self.config = result[0], config
                self._cache.clear()  # remembered results were on the previous config

        for site in list(self.config.sites):
            document = self.config.to_json()
            gone = {s["id"] for s in document["senders"] if site in (s["site"], s["remote"])}
            document["sites"] = [x for x in document["sites"] if x != site]
            document["senders"] = [s for s in document["senders"] if s["id"] not in gone]
            document["receivers"] = [r for r in document["receivers"] if r["site"] != site]
            if "regions" in document:  # a partitioned site's region goes with it (R28)
                document["regions"] = {
                    k: v for k, v in document["regions"].items() if k != str(site)
                }
            attempt(document, {site}, gone)
        for sender in [s.id for s in self.config.senders]:
            document = self.config.to_json()
            document["senders"] = [s for s in document["senders"] if s["id"] != sender]
            attempt(document, set(), {sender})
        for site in list(self.config.sites):
            document = self.config.to_json()
            default = parse_config({"sites": [site]}).receiver(site).to_json()
            receivers = document["receivers"]
            if next(r for r in receivers if r["site"] == site) != default:
                document["receivers"] = [r for r in receivers if r["site"] != site] + [default]
                attempt(document, set(), set())
        return kept

    def suffix(self, kept: list[int]) -> list[int]:
        """The shortest failing suffix, by doubling then bisection: a failure that needs
        only the last operations costs time in proportion to them, not to the trace."""
        size, known = 16, len(kept)
        while size < len(kept):
            result = self.test(kept[-size:])
            if result is not None:
                known = size
                break
            size *= 2
        low = size // 2  # every suffix this short or shorter was tried (or too short)
        while known - low > 1 and known < len(kept):
            middle = (low + known) // 2
            if self.test(kept[-middle:]) is not None:
                known = middle
            else:
                low = middle
        if known == len(kept):
            return kept
        result = self.test(kept[-known:])
        assert result is not None
        return result[0]

    def without_skipped(self, kept: list[int]) -> list[int]:
        skipped: list[int] = []
        self.run(kept, skipped)
        if not skipped:
            return kept
        drop = set(skipped)
        candidate = [index for position, index in enumerate(kept) if position not in drop]
        result = self.test(candidate)
        return kept if result is None else result[0]

    def involved_keys(self, kept: list[int], failure: Failure, written: dict[str, str]) -> set[str]:
        """Keys named by the failing operation, the failure's paths, and its events."""
        text = failure.text()
        keys: set[str] = set()
        failing = self.ops[kept[failure.index]] if 0 <= failure.index < len(kept) else None
        if failing is not None and _key_of(failing) is not None:
            keys.add(_key_of(failing) or "")
        if failure.divergence is not None:
            for diff in failure.divergence.differences:
                match = re.search(r"\.entries\.([^.\[]+)", diff.path)
                if match:
                    keys.add(match.group(1))
        events = {f"{m.group(1)}:{m.group(2)}" for m in _EVENT.finditer(text)}
        keys.update(written[event] for event in events if event in written)
        return keys

    def only_keys(self, kept: list[int], keys: set[str]) -> list[int]:
        def wanted(op: Op) -> bool:
            if isinstance(op, PutAll):
                return bool(keys & set(op.entries))
            key = _key_of(op)
            return key is None or key in keys

        candidate = [index for index in kept if wanted(self.ops[index])]
        if len(candidate) == len(kept):
            return kept
        result = self.test(candidate)
        return kept if result is None else result[0]

    def by_groups(self, kept: list[int]) -> list[int]:
        groups = _groups(self.config, self.ops, kept)
        if len(groups) > MAX_GROUPS:
            return kept
        for label in sorted(groups, key=lambda name: (-len(groups[name]), name)):
            drop = {kept[p] for p in _groups(self.config, self.ops, kept).get(label, [])}
            if not drop:
                continue
            result = self.test([index for index in kept if index not in drop])
            if result is not None:
                kept = result[0]
        return kept

    def ddmin(self, kept: list[int]) -> list[int]:
        """Zeller's ddmin: try each chunk and each complement at granularity n, refine
        until n = len; the result is 1-minimal."""
        granularity = 2
        while len(kept) >= 2:
            size = math.ceil(len(kept) / granularity)
            chunks = [kept[i : i + size] for i in range(0, len(kept), size)]
            reduced = False
            for chunk in chunks:
                result = self.test(chunk)
                if result is not None:
                    kept, granularity, reduced = result[0], 2, True
                    break
            if not reduced:
                for i in range(len(chunks)):
                    complement = [x for j, chunk in enumerate(chunks) if j != i for x in chunk]
                    result = self.test(complement)
                    if result is not None:
                        kept, granularity, reduced = result[0], max(granularity - 1, 2), True
                        break
            if not reduced:
                if granularity >= len(kept):
                    break
                granularity = min(2 * granularity, len(kept))
        return kept


def shrink(
    config: Config,
    ops: Sequence[Op],
    impl_factory: EngineFactory | None = None,
    progress: Progress | None = None,
    names: Sequence[str] | None = None,
    budget: float | None = None,
) -> Shrunk:
    """Shrink a failing trace (see the module's docstring); `NothingToShrink` if it does
    not fail. `progress` gets one line per stage. `budget`: seconds for the stages after
    the first run (None: no limit)."""
    say = progress or (lambda line: None)
    shrinker = _Shrinker(config, ops, impl_factory, say)
    skipped: list[int] = []
    written: dict[str, str] = {}  # event -> key
    first = find_failure(config, ops, impl_factory, skipped, names, written)
    shrinker.tests += 1
    if first is None:
        raise NothingToShrink("nothing to shrink: model and impl agree and P2-P12 hold")
    shrinker.signature = first.signature
    ordinal = f"operation {first.index + 1:,} of {len(ops):,}"  # and its line, if named
    shown = ordinal if first.where.startswith("operation ") else f"{first.where} ({ordinal})"
    say(f"failure: {first.signature} at {shown}")
    kept = list(range(first.index + 1))
    result = Shrunk(config, len(ops), kept, first, first)
    shrinker.best = (kept, first, config)
    if budget is not None:
        shrinker.deadline = time.monotonic() + budget
    try:
        _stages(shrinker, result, written, say)
    except _OutOfBudget:
        assert shrinker.best is not None
        result.kept, result.failure, result.config = shrinker.best
        result.tests, result.out_of_budget = shrinker.tests, True
        say(
            f"the budget of {budget_text(budget or 0)} ran out: kept the shortest failing "
            "trace found, "
            f"{plural(len(result.kept), 'operation')} ({plural(shrinker.tests, 'trace')} run)"
        )
    return result


def _stages(shrinker: _Shrinker, result: Shrunk, written: dict[str, str], say: Progress) -> None:
    """The stages after the first failure (the module's docstring), into `result`."""
    kept, first = result.kept, result.first_failure

    def stage(name: str, candidate: list[int]) -> None:
        nonlocal kept
        kept = candidate
        result.stages.append((name, len(kept)))
        say(f"{name}: {plural(len(kept), 'operation')} ({plural(shrinker.tests, 'trace')} run)")

    stage("cut after the first failure", kept)
    stage("kept the shortest failing suffix", shrinker.suffix(kept))
    keys = shrinker.involved_keys(kept, first, written)
    named = f"{', '.join(sorted(keys)[:10])}{' ...' if len(keys) > 10 else ''}"
    say(f"keys involved: {named or 'none named by the failure, so every key is kept'}")
    if keys:
        stage(f"kept only the {plural(len(keys), 'key')} involved", shrinker.only_keys(kept, keys))
    stage("removed skipped operations", shrinker.without_skipped(kept))
    stage("removed keys, senders and sites", shrinker.by_groups(kept))
    stage("ddmin", shrinker.ddmin(kept))
    unpruned = shrinker.config
    stage("pruned sites, senders and receivers", shrinker.prune_config(kept))
    if shrinker.config is not unpruned:  # an operation the removed part needed may not be
        stage("ddmin", shrinker.ddmin(kept))
    final = shrinker.test(kept)
    assert final is not None, "shrinking lost the failure"
    result.kept, result.failure, result.tests = kept, final[1], shrinker.tests
    result.config = shrinker.config


def replay_command(impl_spec: str, properties: bool, trace: str, start: str = "") -> str:
    """The `replay` command that shows a failure on `trace`: P1 with the impl beside the
    model, a property (`properties`: P2-P12) with `--check-properties` too (without it,
    replay checks P1 only and passes a trace whose failure is a property). `start`: what
    runs wanconform from here (default `impl_command`'s)."""
    checked = " --check-properties" if properties else ""
    return (
        f"{start or impl_command(impl_spec)} replay --engine both --impl "
        f"{shell_word(impl_spec)}{checked} --steps {shell_word(trace)}"
    )


def pytest_text(trace: str, impl_spec: str, failure: Failure, name: str) -> str:
    """A regression test that fails while the impl `impl_spec` shows `failure` on the
    minimal trace `trace` (its JSON Lines text) and passes once it is fixed."""
    test_name = re.sub(r"\W+", "_", f"{failure.signature.property} {name}").strip("_").lower()
    lines = "".join(f"    {line!r},\n" for line in trace.splitlines())
    directory = impl_directory(impl_spec) if impl_spec else None  # found next to the trace
    engine = "load_impl(IMPL)" if directory is None else f"load_impl(IMPL, [{directory!r}])"
    if failure.signature.property == "P1":
        body = (
            f"    divergence = first_divergence(trace.config, trace.ops, {engine})\n"
            '    assert divergence is None, "P1: " + divergence.describe()\n'
        )
        imports = "from conformance.running.lockstep import first_divergence\n"
    else:
        body = (
            f"    failure = find_failure(trace.config, trace.ops, {engine})\n"
            "    assert failure is None, failure.describe()\n"
        )
        imports = "from conformance.search.shrink import find_failure\n"
    heading = f"Regression test written by `wanconform shrink`: {failure.signature} on {name}."
    return (  # the docstring within ruff's default line length, 88
        textwrap.fill(heading, width=88, initial_indent='"""', break_on_hyphens=False)
        + "\n\nIt fails while the engine IMPL shows this failure on the minimal trace below.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        f"{imports}"
        "from traces.engine import load_impl\n"
        "from traces.tracefile import parse_trace_lines\n\n"
        f"IMPL = {impl_spec!r}\n"
        "TRACE = (  # noqa: E501\n"
        f"{lines}"
        ")\n\n\n"
        f"def test_{test_name}() -> None:\n"
        f"    trace = parse_trace_lines(TRACE, {name!r})\n"
        f"{body}"
    )
