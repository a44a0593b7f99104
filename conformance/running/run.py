"""One run of a trace: the engines, the properties, the words; one result.

Every command that runs a trace runs it here: `replay`, the Spark `check` (one trace at a
time), `shrink`, the Hypothesis machine and the examples of reports. A `TraceRun` takes
the operations one at a time (`step`), so a trace of any length streams through it, and
`finish` returns one `RunResult`: the final state, P1's verdict (the divergence, if any),
P2-P12's verdicts, the counts, the first failure with its signature, and, when asked, the
run in words (`Step`).

With `engine="both"` the model and the impl run in lockstep (P1, `conformance.running.lockstep`).
After a divergence the impl is not stepped again (its state no longer means anything),
and the model runs on alone to the end so that P2-P12 are checked on the whole trace;
`stop_at_failure` instead ends the run at its first failure (shrinking wants exactly
that). A result says when a run, or the impl, stopped before the end, and where.

A failure has one signature (`Signature`): what the bug is, so that one bug makes one
group however many ways it shows. For P2-P12 the property. For P1 the first differing
path, with list indices, entry keys, event ids and the site or sender of a state path
normalized (`observations[].status`, `state.sites.*.entries.*.value`), and the
direction of the difference normalized so that a reversed comparison lands in one group
whichever side says what: for a receiver status (R16) the first decision at which the
sides part (`duplicate` R16.1, `failed` R16.2, `conflict` R16.3, `invalid_delta` R16.4:
"model ok / impl conflict", "model conflict / impl ok" and "model conflict / impl
invalid_delta" are all "conflict decided differently (R16.3)"); for an observation only
one side has, its kind; for other short values the unordered pair. The operation and the
exact values are the signature's *variant*, shown inside the group. Campaigns group by
the signature, shrinking keeps it, reports show it with its variants.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.properties.checker import PropertyChecker, Verdict, Violation
from conformance.running.coverage import (
    CAPPED_SETTLES,
    CROSS_KEY_REORDERING,
    QUEUED_AT_END,
    Coverage,
)
from conformance.running.lockstep import (
    ABSENT,
    Divergence,
    Lockstep,
    Raised,
    applied_or_raised,
    malformed,
    observed_or_raised,
)
from conformance.running.narrative import Narrator
from traces.canonical import canonical_json
from traces.config import Config
from traces.engine import (
    DEFAULT_IMPL,
    ENGINE_FAILURES,
    Engine,
    EngineFactory,
    built,
    load_impl,
    make_engine,
    raised,
    settle_capped,
)
from traces.errors import WanconformError
from traces.observations import Observation
from traces.ops import Op, Settle
from traces.text import plural

ENGINES = ("model", "impl", "both")

_INDEX = re.compile(r"\[\d+\]")
_ENTRY = re.compile(r"\.entries\.[^.\[]+")
_EVENT = re.compile(r"\b(\d+):(\d+)\b")
_EVENT_ID = re.compile(r"\d+:\d+")
_SHORT = 20  # a differing value this short (and not an event id) is part of a signature


@dataclass(frozen=True, slots=True)
class Signature:
    """What kind of failure: the property, and for P1 what differs where (see module).
    Two signatures are equal when their property and detail are: the variant (how this
    occurrence showed) is not part of what a failure is."""

    property: str  # "P1" .. "P7"
    detail: str = ""  # P1: "observations[].status: conflict decided differently (R16.3)"
    variant: str = field(default="", compare=False)  # P1: 'deliver: model "ok", impl ...'

    def __str__(self) -> str:
        return f"{self.property} {self.detail}".strip()


def normalize_path(path: str) -> str:
    """`state.sites.2.entries.k7.queue[3]` -> `state.sites.2.entries.*.queue[]`."""
    return _EVENT.sub("*", _ENTRY.sub(".entries.*", _INDEX.sub("[]", path)))


_DECISIONS = {
    "duplicate": "R16.1",
    "failed": "R16.2",
    "conflict": "R16.3",
    "invalid_delta": "R16.4",
}
"""A receiver's statuses in the order R16 decides them; "ok" passed every decision."""


def _short(value: Any) -> bool:
    return (
        isinstance(value, str | bool | None)
        and len(str(value)) <= _SHORT
        and not _EVENT_ID.fullmatch(str(value))
    )


_TIMING = "batch dispatch and timers (R13, R15, R20, R25)"
_LIFECYCLE = "the sender's lifecycle (R36, R37)"
_FAMILIES = {
    "not_queued": _LIFECYCLE,
    "queue_lost": _LIFECYCLE,
    "lifecycle": _LIFECYCLE,
    "conflated": "conflation (R32-R34)",
    "sent": _TIMING,
    "connection_failed": _TIMING,
    "timeout": _TIMING,
    "forwarded": "forwarding (R22)",
    "acked": "acks (R17-R19, R24)",
    "dropped": "acks (R17-R19, R24)",
    "dlq": "acks (R17-R19, R24)",
    "invalid_delta": "acks (R17-R19, R24)",
    "applied": "applying (R16)",
    "enqueued": "client writes (R9-R11)",
    "skipped": "enabled operations (§3)",
    "alert": "alerts (R38)",
}
"""The rules that make each kind of observation (SPEC §10): one rule decided differently
shows as one family, whichever of its observations came out differently. When two
observations of a step only changed places, the family first in this order is named
(batches go out whenever a queue is flushed, so they are what moves; a sender that
queues or not, loses or conflates, decides what follows, so those come first). A write
queued by a different set of senders is the lifecycle's (R37: a stopped sender queues
nothing). A batch that one side acknowledges where the other's times out is the ack's
(R18: R20's timeout follows only where the ack was not taken). A state that
differs first in a timer (`time` after `settle`, R25; `next_retry_at`; `sent_at`) is a
timer that fired at another moment: the family of what timers make."""
_BY_FAMILY = ("conflated", "not_queued", "queue_lost", "lifecycle")
"""Kinds named by their family even when one was made differently (a conflation `by`
another event, a loss of another reason: one decision of R32-R37)."""
_TIMERS = ("state.time", "state.senders.*.next_retry_at", "state.senders.*.in_flight.sent_at")
Unmatched = tuple[tuple[int, Observation] | None, tuple[int, Observation] | None]
_IDENTITY = ("sender", "site", "event", "batch_id", "key", "events")
"""The fields that say *which* observation it is (the rest say how it went); a batch
is its events."""


def _r16(model: Any, impl: Any) -> str:
    statuses = (*_DECISIONS, "ok")
    first = min(model, impl, key=statuses.index)
    return f"applied status: {first} decided differently ({_DECISIONS[first]})"


def _detail(
    path: str,
    model: Any,
    impl: Any,
    unmatched: Unmatched,
    uneven: tuple[str, ...],
    placed: tuple[str, ...] = (),
    thresholds: Mapping[str, int] | None = None,
) -> str:
    """What differs, the same whichever side has which value (see module)."""
    statuses = (*_DECISIONS, "ok")
    if path.endswith(".status") and model in statuses and impl in statuses:
        return _r16(model, impl)
    if path in _TIMERS:
        return f"observations: {_TIMING} differ"
    found = [item for item in unmatched if item is not None]
    if len(found) == 2 and found[0][1]["kind"] == found[1][1]["kind"]:
        ours, theirs = found[0][1], found[1][1]
        if all(ours.get(name) == theirs.get(name) for name in _IDENTITY):
            status = (ours.get("status"), theirs.get("status"))
            if status[0] != status[1] and status[0] in statuses and status[1] in statuses:
                return _r16(status[0], status[1])
            fields = {  # a field only one has (if null), 1 against true: differ too
                k
                for k in set(ours) | set(theirs)
                if k not in ours
                or k not in theirs
                or canonical_json(ours[k]) != canonical_json(theirs[k])
            }
            if ours["kind"] == "enqueued" and "senders" in fields:
                return f"observations: {_LIFECYCLE} differ"
            if ours["kind"] in _BY_FAMILY:  # which event it names is the decision
                return f"observations: {_FAMILIES[ours['kind']]} differ"
            return f"observations: {ours['kind']}.{min(fields)}"  # the same one, made differently
    acked_or_timed_out = {o["kind"] for _, o in found} == {"acked", "timeout"}
    if len(found) == 2 and acked_or_timed_out and found[0][1]["sender"] == found[1][1]["sender"]:
        return f"observations: {_FAMILIES['acked']} differ"  # the ack decided (R18, R20)
    if found and all(o["kind"] == "alert" for _, o in found) and set(placed) - {"alert"}:
        # R38's alerts follow acks: an alert one side made alone, where the other side
        # made another kind at that place, is named by that kind (a batch that went or
        # came back at another moment, so an event waited longer)
        found = [(0, {"kind": kind}) for kind in placed]
    # R38 alerts on an event that waited more than the threshold: an alert the impl made
    # alone for an event that did wait more on its side is R38 kept; the event left the
    # queue later there (a batch sent or answered at another moment)
    alone = unmatched[1][1] if unmatched[0] is None and unmatched[1] is not None else None
    if (
        alone is not None
        and alone["kind"] == "alert"
        and thresholds is not None
        and alone["queued_ms"] > thresholds.get(alone["sender"], 0) > 0
    ):
        return f"observations: {_TIMING} differ"
    if found:
        earliest = min(index for index, _ in found)
        kinds = {o["kind"] for index, o in found if index == earliest}
        kinds = (kinds & set(uneven)) or kinds  # of two at once, the one made more often
        order = list(_FAMILIES)
        kind = min(kinds, key=lambda k: (order.index(k) if k in order else len(order), k))
        return f"observations: {_FAMILIES.get(kind, kind)} differ"
    if path.startswith("state"):
        return path  # the values are the variant's
    if _short(model) and _short(impl):
        return path + ": " + " / ".join(sorted((canonical_json(model), canonical_json(impl))))
    return path


def p1_signature(
    op: str,
    path: str,
    model: Any,
    impl: Any,
    unmatched: Unmatched = (None, None),
    uneven: tuple[str, ...] = (),
    placed: tuple[str, ...] = (),
    thresholds: Mapping[str, int] | None = None,
) -> Signature:
    """P1's signature from the operation's name, the first difference (its path and the
    two sides' values), each side's first observation the other did not make
    (`conformance.running.lockstep.Divergence.unmatched`), the kinds the two sides
    made at the first differing place (`placed`) and, when known, each sender's
    `alert_threshold_ms`."""
    parts = normalize_path(path).split(".")
    if parts[0] == "state" and len(parts) > 2:
        parts[2] = "*"  # the site or sender id
    normalized = ".".join(parts)
    variant = f"{op} {normalized}"
    if _short(model) and _short(impl):
        variant += f": model {canonical_json(model)}, impl {canonical_json(impl)}"
    detail = _detail(normalized, model, impl, unmatched, uneven, placed, thresholds)
    return Signature("P1", detail, variant)


def divergence_signature(divergence: Divergence, config: Config | None = None) -> Signature:
    """P1's signature of a divergence (see the module's docstring); `config` tells an
    alert R38 makes from one it does not."""
    first = divergence.differences[0] if divergence.differences else None
    if first is None:
        return Signature("P1", divergence.op.op, divergence.op.op)
    place = first.path.split("]", 1)[0] + "].kind" if first.path.startswith("obs") else ""
    placed = tuple(
        str(side)
        for diff in divergence.differences
        if diff.path == place
        for side in (diff.model, diff.impl)
        if isinstance(side, str) and side != ABSENT
    )
    thresholds = None
    if config is not None:
        thresholds = {s.id: s.alert_threshold_ms for s in config.senders}
    return p1_signature(
        divergence.op.op, first.path, first.model, first.impl, divergence.unmatched, (),
        placed, thresholds,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Failure:
    """The first failure of a run: a divergence (P1) or a property violation (P2-P12)."""

    signature: Signature
    index: int  # 0-based operation after which it showed (P7: the last operation)
    where: str
    divergence: Divergence | None = None
    violation: Violation | None = None
    observations: tuple[Observation, ...] = ()  # the model's, of the failing operation

    def describe(self, other: str = "impl") -> str:
        """The failure in words (`other`: what the model ran against: "impl", a user's
        engine as "impl (module:Class)", "the log")."""
        if self.divergence is not None:
            side = other.removeprefix("the ").split(" (")[0]
            return f"P1: model and {other} diverge at " + self.divergence.describe(side)
        assert self.violation is not None
        return str(self.violation)

    def text(self) -> str:
        """Everything the failure names (to find the keys and events involved)."""
        seen = canonical_json(list(self.observations))
        if self.divergence is not None:
            return canonical_json(self.divergence.to_json()) + seen
        assert self.violation is not None
        return self.violation.message + seen


@dataclass(frozen=True, slots=True)
class Step:
    """One operation of a run and what it did (`explain`: also in words)."""

    index: int  # 0-based
    where: str  # "t.jsonl:9"
    op: Op
    observations: list[Observation]  # the model's (or the one engine's)
    impl_observations: list[Observation] | None = None  # with both engines, while in lockstep
    text: str = ""  # `replay --steps`'s line (with `explain`)

    @property
    def skipped(self) -> bool:
        return len(self.observations) == 1 and self.observations[0]["kind"] == "skipped"


@dataclass(slots=True)
class RunResult:
    """What one run of one trace found."""

    name: str  # the trace's name in messages (its path, or its id in a trace set)
    config: Config
    engine: str  # model | impl | both
    impl: str  # the impl's spec ("impl:Engine", or a user's module:Class)
    operations: int  # operations run
    skipped: int
    events: int  # client events (enqueued)
    state: dict[str, Any]  # the final observable state (§10): the model's when it ran
    divergence: Divergence | None
    verdicts: tuple[Verdict, ...]  # P1, then P2-P12 when the properties were checked
    coverage: dict[str, int]  # conformance.running.coverage counts
    failure: Failure | None  # the first failure, P1 or P2-P12
    stopped: str  # "" or where and why the run ended before the end of the trace
    impl_stopped: str  # "" or where the impl stopped (a divergence), the model going on
    seconds: float
    steps: list[Step] | None = None  # with `explain` and no `on_step`
    failure_states: tuple[dict[str, Any], dict[str, Any]] | None = None  # model, impl
    offset: int = 0  # operations before the first run here (a checkpoint's, `--from`)
    ticks: int | None = None  # an event log's: of `operations`, the ticks its merge added

    @property
    def failed(self) -> bool:
        return any(v.status == "failed" for v in self.verdicts)

    def verdict(self, name: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.property == name), None)

    def failures(self) -> list[str]:
        """The signature of each failed property, P1's in full: what campaigns group by."""
        out = []
        for verdict in self.verdicts:
            if verdict.status != "failed":
                continue
            if verdict.property == "P1" and self.divergence is not None:
                out.append(str(divergence_signature(self.divergence, self.config)))
            else:
                out.append(verdict.property)
        return out


def p1_verdict(
    engine: str, divergence: Divergence | None, impl_spec: str = DEFAULT_IMPL
) -> Verdict:
    """P1 (agreement) for a run: held, failed at the divergence, or not checked."""
    if engine != "both":
        return Verdict(
            "P1", "not applicable", f"only the {engine} ran (--engine both compares the two)"
        )
    if divergence is None:
        return Verdict("P1", "held", f"model and {impl_spec} agree at every step")
    first = divergence.differences[0] if divergence.differences else None
    side = impl_spec.removeprefix("the ") if impl_spec.startswith("the ") else "impl"  # "log"
    message = f"model and {impl_spec} diverge" + (
        f": {first.path}: model={canonical_json(first.model)} {side}={canonical_json(first.impl)}"
        if first is not None
        else ""
    )
    return Verdict("P1", "failed", violations=(Violation("P1", message, divergence.where),))


class Alone:
    """A user's engine run alone (`replay --engine impl --impl SPEC`): with no model for P1
    to differ from, what it raises, or returns that is not an engine's answer, is one line
    naming the operation (`where`) and what it did, not a traceback."""

    def __init__(self, engine: Engine, spec: str) -> None:
        self.engine = engine
        self.spec = spec
        self.where = "its initial state"

    def __getattr__(self, name: str) -> Any:  # the optional surface: settle_capped, ...
        if name == "engine":  # not yet set (a copy being built): no endless recursion
            raise AttributeError(name)
        found = getattr(self.engine, name)
        if name != "observe_keys":
            return found
        return lambda keys: self._state("observe_keys", lambda: found(keys))

    def _error(self, problem: str) -> WanconformError:
        return WanconformError(f"--impl {self.spec}: at {self.where}, the engine {problem}")

    def apply(self, op: Op) -> list[Observation]:
        observations = applied_or_raised(self.engine, op)
        if isinstance(observations, Raised):
            raise self._error(observations)
        problem = malformed(observations)
        if problem is not None:
            raise self._error(problem)
        return observations

    def observe(self) -> dict[str, Any]:
        return self._state("observe", self.engine.observe)

    def _state(self, method: str, observe: Callable[[], Any]) -> dict[str, Any]:
        try:
            state = observe()
        except WanconformError:
            raise
        except ENGINE_FAILURES as exc:
            raise self._error(raised(exc)) from None
        if not isinstance(state, dict):
            shown = "None" if state is None else f"a {type(state).__name__}"
            raise self._error(f"returned {shown} from {method}, not a JSON object")
        return state

    def json_state(self, state: dict[str, Any]) -> None:
        """The final state, which is printed and reported, must be JSON (SPEC §10)."""
        try:
            canonical_json(state)
        except (TypeError, ValueError) as exc:
            raise self._error(f"returned a state from observe that is not JSON ({exc})") from None


class TraceRun:
    """One trace being run: `step` each operation in order, then `finish`.

    engine: "model", "impl" (`impl`'s engine alone) or "both" (lockstep, P1).
    impl / impl_spec: the impl's factory and its name (default the project's impl).
    properties: check P2-P12. explain: words for every step (`Step.text`).
    on_step: receives every `Step` as it happens (else, with `explain`, the result keeps
    them). stop_at_failure: end at the first failure. replay: reads the operations run so
    far again, from the first (the lockstep locates a state-only divergence with it; by
    default the run keeps the operations in memory). state_every: see `Lockstep`.
    A run may start in the middle of a trace (`conformance.spark.segments`): `model` and `impl`
    then build the engines from one checkpoint, `offset` is the index of the first
    operation, and `checker` the property checker as it was there. coverage: count
    operations, statuses and outcomes (`RunResult.coverage`). ahead: every operation the
    run will step, read on its own, for the impl to run ahead in a helper process (see
    `Lockstep`; the same result).
    """

    def __init__(
        self,
        name: str,
        config: Config,
        *,
        engine: str = "both",
        impl: EngineFactory | None = None,
        impl_spec: str = DEFAULT_IMPL,
        properties: bool = True,
        explain: bool = False,
        on_step: Callable[[Step], None] | None = None,
        stop_at_failure: bool = False,
        replay: Callable[[], Iterable[Op]] | None = None,
        state_every: int | None = None,
        model: EngineFactory | None = None,
        offset: int = 0,
        checker: PropertyChecker | None = None,
        coverage: bool = True,
        ahead: Callable[[], Iterable[Op]] | None = None,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}")
        self.name = name
        self.config = config
        self.engine_name = engine
        self.impl_spec = impl_spec
        self.started = time.perf_counter()
        loaded = impl or load_impl(impl_spec)
        self._close_impl: Callable[[], None] | None = getattr(loaded, "close", None)

        def factory(config: Config) -> Engine:  # a user's engine that cannot build: one line
            return built(loaded, impl_spec, config)

        self.lockstep: Lockstep | None = None
        self.engine: Engine
        if engine == "both":
            self.lockstep = Lockstep(
                config,
                factory,
                replay,
                state_every,
                model_factory=model,
                offset=offset,
                ahead=ahead,
            )
            self.engine = self.lockstep.model
        elif engine == "impl":
            self.engine = factory(config)
            if impl_spec != DEFAULT_IMPL:
                self.engine = Alone(self.engine, impl_spec)
        else:
            self.engine = (model or (lambda cfg: make_engine("model", cfg)))(config)
        if checker is None and properties:  # P10's second run: of the engine it follows
            followed = factory if engine == "impl" else model or (lambda c: make_engine("model", c))
            checker = PropertyChecker(config, overflow=followed)
        self.checker = checker
        self.narrator = Narrator(config) if explain else None
        self.on_step = on_step
        self.steps: list[Step] | None = [] if explain and on_step is None else None
        self.stop_at_failure = stop_at_failure
        self.coverage = Coverage(config)
        self.count_coverage = coverage  # False: no counts (a segment: its fast pass counts)
        self.operations = offset
        self.offset = offset
        self.skipped = 0
        self.events = 0
        self.failure: Failure | None = None
        self.stopped = ""
        self.impl_stopped = ""
        self.last_violations: list[Violation] = []
        self.failure_states: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._final: dict[str, Any] | None = None  # the observable state at the end

    def observe(self) -> dict[str, Any]:
        """The observable state now: the model's when it runs."""
        return self.engine.observe()

    def _settle_capped(self) -> bool:
        """Did the engine's last settle stop at its cap (R25)? An engine that does not say
        (an optional part of the engine surface, traces/engine.py) is taken not to have."""
        return settle_capped(self.engine, self.impl_spec)

    def _count_capped(self, in_lockstep: bool) -> None:
        """R25: count each engine's settle that stopped at its cap (`CAPPED_SETTLES`)."""
        counts = self.coverage.counts
        capped = self._settle_capped()  # the model's, in lockstep
        lockstep = self.lockstep
        if capped:
            counts[CAPPED_SETTLES + ("model" if lockstep else self.engine_name)] += 1
        if lockstep is None or not in_lockstep:
            return
        # ahead: its observations agreed, so it stopped where the model did
        impl_capped = capped if lockstep.ahead else settle_capped(lockstep.impl, self.impl_spec)
        if impl_capped:
            counts[CAPPED_SETTLES + "impl"] += 1

    @property
    def divergence(self) -> Divergence | None:
        return None if self.lockstep is None else self.lockstep.divergence

    def step(self, where: str, op: Op) -> list[Observation]:
        """Run one operation; the model's observations (or the one engine's)."""
        if self.stopped:
            raise RuntimeError(f"{self.name}: the run {self.stopped}; nothing more is run")
        index = self.operations
        self.operations += 1
        lockstep = self.lockstep
        in_lockstep = lockstep is not None and lockstep.divergence is None
        impl_observations: list[Observation] | None = None
        if lockstep is not None and in_lockstep:
            observations = lockstep.step(op, where)
            impl_observations = lockstep.impl_observations
            if lockstep.divergence is not None:
                self.impl_stopped = where
        else:
            if isinstance(self.engine, Alone):
                self.engine.where = where
            observations = self.engine.apply(op)
        skipped = len(observations) == 1 and observations[0]["kind"] == "skipped"
        self.skipped += skipped
        if self.count_coverage:
            self.coverage.record(op, observations)
            if type(op) is Settle:
                self._count_capped(in_lockstep)
        self.events += sum(1 for obs in observations if obs["kind"] == "enqueued")
        violations: list[Violation] = []
        if self.checker is not None:
            violations = self.checker.after_step(
                op,
                observations,
                self.engine.observe,
                where,
                self._settle_capped,
                getattr(self.engine, "observe_keys", None),
            )
        self.last_violations = violations
        if self.failure is None:
            self._first_failure(index, where, observations, violations, in_lockstep)
        if self.on_step is not None or self.steps is not None:
            text = ""
            if self.narrator is not None:
                capped = type(op) is Settle and self._settle_capped()
                text = self.narrator.line(where, op, observations, self.engine.observe, capped)
            record = Step(index, where, op, observations, impl_observations, text)
            if self.on_step is not None:
                self.on_step(record)
            elif self.steps is not None:
                self.steps.append(record)
        return observations

    def _first_failure(
        self,
        index: int,
        where: str,
        observations: list[Observation],
        violations: list[Violation],
        in_lockstep: bool,
    ) -> None:
        divergence = self.divergence
        if in_lockstep and divergence is not None:
            seen = tuple(observations) if divergence.index == index else ()
            signature = divergence_signature(divergence, self.config)
            self.failure = Failure(
                signature, divergence.index, divergence.where, divergence, None, seen
            )
        elif violations:
            first = violations[0]
            self.failure = Failure(
                Signature(first.property), index, where, None, first, tuple(observations)
            )
        else:
            return
        if self.lockstep is not None and self.failure.index == index:
            impl = self.lockstep.impl
            logged = getattr(impl, "state_logged", None)  # a log: a state now and then
            observed = observed_or_raised(impl) if logged is None or logged() else {}
            impl_state = {} if isinstance(observed, Raised) else observed
            self.failure_states = (self.lockstep.model.observe(), impl_state)
        if self.stop_at_failure:
            self.stopped = f"stopped at {where}, its first failure ({self.failure.signature})"

    def _final_state(self) -> dict[str, Any]:
        """The observable state at the end, observed once (the lockstep's last comparison
        already has the model's when it was the last thing done)."""
        if self._final is None:
            known = None if self.lockstep is None else self.lockstep.model_state
            self._final = known if known is not None else self.engine.observe()
            if isinstance(self.engine, Alone):  # printed (--json), reported: JSON, SPEC §10
                self.engine.json_state(self._final)
        return self._final

    def finish(self, end: str = "end of run") -> RunResult:
        """The final comparison of states (P1) and P7, unless the run stopped; the result."""
        if isinstance(self.engine, Alone):
            self.engine.where = end
        if not self.stopped:
            if self.lockstep is not None and self.lockstep.divergence is None:
                divergence = self.lockstep.finish()
                if divergence is not None and self.failure is None:
                    signature = divergence_signature(divergence, self.config)
                    self.failure = Failure(
                        signature, divergence.index, divergence.where, divergence
                    )
            if self.checker is not None:
                final = self.checker.finish(self._final_state(), end)
                if final and self.failure is None:
                    last = max(0, self.operations - 1)
                    self.failure = Failure(
                        Signature(final[0].property), last, end, violation=final[0]
                    )
        if self.lockstep is not None:
            self.lockstep.close()  # a helper running the impl ahead is not needed now
        if self._close_impl is not None:  # engines' scratch stores (`StoreEngines`)
            self._close_impl()
        verdicts = [p1_verdict(self.engine_name, self.divergence, self.impl_spec)]
        if self.checker is not None:
            verdicts += self.checker.verdicts()
            if self.checker.reordered and self.count_coverage:  # §16.7's "sometimes"
                self.coverage.counts[CROSS_KEY_REORDERING] += self.checker.reordered
        if self.count_coverage:  # a gauge at the end (Geode's eventQueueSize)
            senders = self._final_state()["senders"].values()
            queued = sum(len(d["queue"]) for s in senders for d in s["dispatchers"])
            self.coverage.counts[QUEUED_AT_END] += queued
        return RunResult(
            name=self.name,
            config=self.config,
            engine=self.engine_name,
            impl=self.impl_spec,
            operations=self.operations,
            skipped=self.skipped,
            events=self.events,
            state=self._final_state(),
            divergence=self.divergence,
            verdicts=tuple(verdicts),
            coverage=dict(self.coverage.counts),
            failure=self.failure,
            stopped=self.stopped,
            impl_stopped=self.impl_stopped,
            seconds=round(time.perf_counter() - self.started, 6),
            steps=self.steps,
            failure_states=self.failure_states,
            offset=self.offset,
        )


def run_trace(
    name: str,
    config: Config,
    ops: Iterable[tuple[str, Op]],
    **options: Any,
) -> RunResult:
    """Run every (where, op) of a trace through a `TraceRun` (options as there); its
    result. A run with `stop_at_failure` reads no further than its first failure."""
    run = TraceRun(name, config, **options)
    for where, op in ops:
        run.step(where, op)
        if run.stopped:
            break
    return run.finish()


def stopped_line(result: RunResult, other: str = "the impl") -> str:
    """What a summary says when a run, or the impl (`other`: what the model ran against,
    "the log" for `validate`), did not go to the end ("" if both did)."""
    if result.stopped:
        return f"the run {result.stopped}: {plural(result.operations, 'operation')} run"
    if result.impl_stopped:
        return (
            f"{other} stopped at {result.impl_stopped} (P1); the model ran on alone to the "
            "end, so P2-P12 and the state below are the model's"
        )
    return ""
