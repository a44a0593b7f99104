"""P1 Agreement: model and impl stepped in lockstep, in time linear in the trace.

The one lockstep of the project, used by every run of a trace with both engines
(`conformance.running.run`). After every operation the two engines'
observations are compared (cheap: a few small dicts). The observable state (SPEC §10) is
compared on a schedule: after an operation once the operations since the last state
comparison cost, together, about what a comparison costs (`STATE_BYTES_PER_OPERATION`
bytes of canonical state per operation), so the amortized cost of an operation does not
depend on the number of keys; and always at the end (`finish`).

A difference that shows only in the state is still located exactly: the last state that
agreed is known (index `lo`), the difference is seen at `hi`; the model's state at `lo`
is kept (it is immutable: keeping it costs nothing), and the segment `lo..hi` is
bisected: at its midpoint the model steps on from `lo` and a fresh impl replays the
trace from its start, both reading the operations again from `replay` (which re-reads
the source), and their states are compared. Only the operations' names are kept for
the segment, so memory follows the engines' state, not the segment's length. The first
operation after which the states differ is the divergence. This assumes what P1
already demands: the engines are deterministic.

A transient state-only difference, one that appears and disappears again between two
scheduled comparisons without changing any observation, is not seen; callers whose
states are small by construction (the Hypothesis machine) compare after every step.

With a second CPU the impl can run ahead in a helper process (`ahead`,
`conformance.running.ahead`): the same schedule, digests compared instead of observations and
states, and at the first digest that differs the impl brought into this process, so
that everything above happens here, exactly as it would have.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from conformance.running.ahead import STATE, Ahead
from conformance.running.ahead import possible as ahead_possible
from traces.canonical import canonical_json
from traces.config import Config
from traces.engine import (
    ENGINE_FAILURES,
    Engine,
    EngineFactory,
    gc_paused,
    make_engine,
    raised,
)
from traces.errors import WanconformError
from traces.observations import Observation
from traces.ops import Op, op_to_json
from traces.text import printable

STATE_BYTES_PER_OPERATION = 5
"""Schedule of state comparisons: the next one comes after len(canonical state) / this
many operations (at least one). Measured: observing both engines and comparing costs
about 0.09 µs per byte of canonical state, so this adds about 0.45 µs per operation
whatever the state's size (2% of the model's step). A state-only difference is still
located exactly (by bisection); the spacing only bounds what locating it re-runs."""


MAX_DIFFERENCES = 50
"""A divergence lists at most this many differing paths (and says how many there were)."""


@dataclass(frozen=True, slots=True)
class Difference:
    path: str  # e.g. "state.senders.ny.queue[0]" or "observations[2].status"
    model: Any
    impl: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "model": self.model, "impl": self.impl}


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first operation after which model and impl differ."""

    index: int  # 0-based position of the operation in the trace
    where: str  # the operation's name in messages, e.g. "t.jsonl:9"
    op: Op
    differences: tuple[Difference, ...]
    total: int  # how many differing paths there were (differences may be cut)
    # The model's first observation of the step that the impl did not make (as many
    # times), and the impl's that the model did not, with their index in the step; None
    # for none, and both when the state differs first (when both sides made the same
    # observations in another order: the first of each out of place). What the failure's signature
    # names (`conformance.running.run`).
    unmatched: tuple[tuple[int, Observation] | None, tuple[int, Observation] | None] = (
        None,
        None,
    )
    uneven: tuple[str, ...] = ()  # the kinds of observation one side made more often

    def describe(self, side: str = "impl") -> str:
        """In words; `side` names what the model ran against ("impl", or "log")."""
        lines = [f"{self.where}: divergence at {canonical_json(op_to_json(self.op))}"]
        for diff in self.differences:  # a path holds keys as written: shown escaped
            model, impl = canonical_json(diff.model), canonical_json(diff.impl)
            lines.append(f"  {printable(diff.path)}: model={model} {side}={impl}")
        if self.total > len(self.differences):
            lines.append(f"  ... {self.total - len(self.differences)} more differing paths")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "where": self.where,
            "op": op_to_json(self.op),
            "differences": [d.to_json() for d in self.differences],
            "total": self.total,
        }


ABSENT = "<absent>"


def json_differences(model: Any, impl: Any, path: str) -> Iterator[Difference]:
    """Every path at which two JSON values differ (bool and int are told apart)."""
    if isinstance(model, dict) and isinstance(impl, dict):
        for key in sorted(set(model) | set(impl), key=str):
            yield from json_differences(
                model.get(key, ABSENT), impl.get(key, ABSENT), f"{path}.{key}"
            )
    elif isinstance(model, list) and isinstance(impl, list):
        for i in range(max(len(model), len(impl))):
            yield from json_differences(
                model[i] if i < len(model) else ABSENT,
                impl[i] if i < len(impl) else ABSENT,
                f"{path}[{i}]",
            )
    elif type(model) is not type(impl) or model != impl:
        yield Difference(path, model, impl)


def same_observations(model: list[Observation], impl: list[Observation]) -> bool:
    """Exact equality of two observation lists, bool and int told apart.

    orjson writes the same bytes for equal plain JSON data with keys in the same order,
    and tells True from 1 and 1.0 from 1, in about 60% of the time msgspec takes here
    (which was three times faster than `marshal`); anything else (another key order, a
    value orjson cannot encode) falls back to the exact walk.
    """
    try:
        if _JSON(model) == _JSON(impl):
            return True
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    return next(json_differences(model, impl, "observations"), None) is None


_JSON = orjson.dumps
_SORTED_MSGSPEC = msgspec.json.Encoder(order="sorted").encode


def sorted_json(value: Any) -> bytes:
    """JSON text with sorted keys: equal for equal JSON values whatever their key order,
    bool, int and float told apart. orjson's (its fastest option: keys must be strings,
    ints fit in 64 bits); else msgspec's (any int), else canonical JSON's (int keys),
    marked by a leading byte so that texts of two encoders never meet (a TypeError if
    none can encode the value)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    try:
        return b"\0" + _SORTED_MSGSPEC(value)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        pass
    try:
        return b"\1" + canonical_json(value).encode()
    except (ValueError, OverflowError) as exc:
        raise TypeError(f"not JSON: {exc}") from None


class ObservationDigest:
    """A digest of every observation of a run, step after step: equal digests mean equal
    observation lists at every step (BLAKE2b, 128 bits: two different histories share a
    digest with a chance of 2^-128). Each step's list is hashed as `sorted_json` (the
    same observations in any key order hash alike; bool, int and float told apart), its
    length first, so that steps cannot run into one another."""

    def __init__(self) -> None:
        self._hash = hashlib.blake2b(digest_size=16)
        self.steps = 0

    def add(self, observations: list[Observation]) -> None:
        text = sorted_json(observations)
        self._hash.update(len(text).to_bytes(8, "little"))
        self._hash.update(text)
        self.steps += 1

    def hexdigest(self) -> str:
        return f"{self.steps}:{self._hash.hexdigest()}"


def same_state(model: dict[str, Any], impl: dict[str, Any]) -> tuple[bool, int]:
    """Are two observable states exactly equal (bool, int and float told apart, key
    order ignored)? And the size in bytes of the model's `sorted_json` (4-5 times faster
    than `canonical_json` on large states). What is not JSON is left to the exact walk."""
    model_text = sorted_json(model)
    try:
        return model_text == sorted_json(impl), len(model_text)
    except TypeError:
        return next(json_differences(model, impl, "state"), None) is None, len(model_text)


def _cut(differences: Iterator[Difference]) -> tuple[tuple[Difference, ...], int]:
    found = list(differences)
    return tuple(found[:MAX_DIFFERENCES]), len(found)


class Raised(str):
    """What a user's engine raised, in words (`traces.engine.raised`): a type of its own,
    so that a `str` its `apply` or `observe` returned is not taken for it."""


def observed_or_raised(impl: Engine) -> Any:
    """The impl's observable state, or what it raised (a user's engine that fails there
    differs there, as one that raises in `apply`)."""
    try:
        return impl.observe()
    except WanconformError:  # bad input (a log's), not the engine's failure
        raise
    except ENGINE_FAILURES as exc:
        return Raised(raised(exc))


def applied_or_raised(impl: Engine, op: Op) -> list[Observation] | Raised:
    """The impl's observations of `op` (what its `apply` returned: see `malformed`), or
    what it raised (a user's engine that fails in `apply` differs there: P1)."""
    try:
        return impl.apply(op)
    except WanconformError:  # bad input (a log's), not the engine's failure
        raise
    except ENGINE_FAILURES as exc:
        return Raised(raised(exc))


def malformed(observations: Any) -> str | None:
    """What is wrong with what a (user's) engine's `apply` returned, if it is not a list
    of observations, JSON objects: said as the impl's side of a P1 difference."""
    if not isinstance(observations, list | tuple):
        shown = "None" if observations is None else f"a {type(observations).__name__}"
        return f"returned {shown} from apply, not a list of observations"
    for index, observation in enumerate(observations):
        if not isinstance(observation, dict):
            kind = type(observation).__name__
            return f"returned a list from apply whose item {index} is {kind}, not a JSON object"
    try:
        canonical_json(observations)
    except (TypeError, ValueError) as exc:
        return f"returned an observation from apply that is not JSON ({exc})"
    return None


def _state_differences(model: Any, impl: Any) -> tuple[tuple[Difference, ...], int]:
    if isinstance(impl, Raised):  # no path to compare
        return (Difference("state", "its observable state", impl),), 1
    differences, total = _cut(json_differences(model, impl, "state"))
    return tuple(_shown(d) for d in differences), total


def _shown(difference: Difference) -> Difference:
    """`difference`, its impl side said in words when it is not JSON (a user's engine's
    observe() returned, say, a set): a divergence is printed and written as JSON."""
    try:
        canonical_json(difference.impl)
    except (TypeError, ValueError) as exc:
        return Difference(difference.path, difference.model, f"observed what is not JSON ({exc})")
    return difference


class Lockstep:
    """Model and impl on one configuration, stepped together (P1).

    `replay()` must yield the operations stepped so far again, from the first (it is
    called only to locate a state-only difference); `state_every` fixes the number of
    operations between state comparisons (default: the cost-based schedule).
    `model_factory` builds the model (default: the initial state); with it and the impl's
    factory building both from one checkpoint, the lockstep starts in the middle of a
    trace: `offset` is then the index of its first operation (`replay()` yields the
    operations from there). `ahead()`, with `replay`, yields every operation the lockstep
    will step, from the first, read on its own (a new reader of the trace): then, where a
    second CPU allows, the impl runs ahead in a helper process (`conformance.running.ahead`) and
    only digests are compared here, with the same result. Not for an impl whose states are
    logged now and then (a log): its caller leaves `ahead` out, as `replay` does.
    """

    def __init__(
        self,
        config: Config,
        impl_factory: EngineFactory | None = None,
        replay: Callable[[], Iterable[Op]] | None = None,
        state_every: int | None = None,
        model_factory: EngineFactory | None = None,
        offset: int = 0,
        ahead: Callable[[], Iterable[Op]] | None = None,
    ) -> None:
        self.config = config
        self._impl_factory: EngineFactory = impl_factory or (lambda cfg: make_engine("impl", cfg))
        self._replay = replay
        self._recorded: list[Op] | None = [] if replay is None else None  # to replay
        self._state_every = state_every
        self._offset = offset
        self.model = (model_factory or (lambda cfg: make_engine("model", cfg)))(config)
        self._impl: Engine | None = None  # None while the helper runs it
        self._ahead: Ahead | None = None
        # An impl that has a state only now and then (a log, `traces.logfile`) says so:
        # the states are compared exactly where it has one, and nowhere else.
        self._state_logged: Callable[[], bool] | None = None
        if ahead is not None and replay is not None and ahead_possible():
            self._ahead = Ahead(config, self._impl_factory, ahead, sorted_json, self._due_after)
        else:
            self._impl = self._impl_factory(config)
            self._state_logged = getattr(self._impl, "state_logged", None)
        self.divergence: Divergence | None = None
        self.impl_observations: list[Observation] = []  # the impl's, of the last step
        self.operations = offset  # operations stepped (from the trace's first)
        self._agreed_index = offset - 1  # the last operation after which the states agreed
        self._agreed_model = copy.copy(self.model)  # the model then (its state is immutable)
        # The names of the operations since then (the operations themselves are read
        # again from `replay` when needed: memory follows the state, not the segment).
        self._wheres: list[str] = []
        self._due = 0  # operations until the next state comparison
        # The model's observable state at the last comparison, while no operation has
        # been stepped since (the run's result reuses it instead of observing again).
        self.model_state: dict[str, Any] | None = None
        if self._state_logged is None:
            self._compare_state(at_start=True)

    @property
    def impl(self) -> Engine:
        """The impl, in this process (one that ran ahead is brought here first)."""
        if self._impl is None:
            return self._impl_here(self.operations - 1)
        return self._impl

    @property
    def ahead(self) -> bool:
        """Whether the impl still runs ahead in a helper process."""
        return self._ahead is not None

    def step(self, op: Op, where: str = "") -> list[Observation]:
        """Apply `op` to both engines; the model's observations. After a divergence
        (see `divergence`) nothing more is stepped."""
        if self.divergence is not None:
            raise RuntimeError("lockstep: the engines diverged; nothing more is stepped")
        index = self.operations
        self.operations += 1
        self.model_state = None
        if self._recorded is not None:
            self._recorded.append(op)
        model_observations = self.model.apply(op)
        ahead = self._ahead
        if ahead is not None and ahead.next_step_is(model_observations):
            impl_observations = model_observations  # equal, as their digests are
        else:  # one process, or the helper's record is not the model's: see here
            impl = self._impl_here(index - 1) if ahead is not None else self.impl
            applied = applied_or_raised(impl, op)
            if isinstance(applied, Raised):  # the impl failed here: they differ here
                self.impl_observations = []
                failed = Difference("observations", model_observations, applied)
                self.divergence = Divergence(index, _named(where, index), op, (failed,), 1)
                return model_observations
            impl_observations = applied
        self.impl_observations = impl_observations
        if self._state_logged is None:  # a log's states differ only where logged: no search
            self._wheres.append(where)  # named when a divergence needs it (`_named`)
        if impl_observations is not model_observations and not same_observations(
            model_observations, impl_observations
        ):
            self.divergence = self._observations_diverged(
                index, _named(where, index), op, model_observations, impl_observations
            )
            if malformed(impl_observations) is not None:  # nothing to show of it
                self.impl_observations = []
            return model_observations
        if self._state_logged is not None:
            if self._state_logged():
                self._compare_logged_state(index, _named(where, index), op)
            return model_observations
        self._due -= 1
        if self._due <= 0:
            self._compare_state()
        return model_observations

    def finish(self) -> Divergence | None:
        """Compare the final states (if not just compared); the divergence, if any. The
        helper, if any, is stopped."""
        if self.divergence is None and self._wheres and self._state_logged is None:
            self._compare_state()
        self.close()
        return self.divergence

    def close(self) -> None:
        """Stop the helper, if the impl runs ahead (`impl` can still bring it here)."""
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None

    def _impl_here(self, index: int) -> Engine:
        """Stop the helper; the impl in this process, replayed to after operation `index`."""
        self.close()
        self._impl = self._impl_at(index)
        return self._impl

    def _due_after(self, size: int) -> int:
        """Operations to the next state comparison after one of `size` bytes."""
        return max(1, self._state_every or size // STATE_BYTES_PER_OPERATION)

    def _compare_logged_state(self, index: int, where: str, op: Op) -> None:
        """A logged state: equal to the model's now, or the divergence is here (what the
        system did between two logged states is not known, so this is the first place a
        difference can be seen)."""
        with gc_paused():
            model, impl = self.model.observe(), observed_or_raised(self.impl)
            same = same_state(model, impl)[0]
        if not same:
            differences, total = _state_differences(model, impl)
            self.divergence = Divergence(index, where, op, differences, total)

    # -- the observable state -------------------------------------------------------------

    def _compare_state(self, at_start: bool = False) -> None:
        """Compare the states now. States that differ before any operation (an impl
        built wrong) are compared again after the first one, where the divergence is
        then found: the first operation after which they differ."""
        with gc_paused():
            model_state = self.model.observe()
            same, size = self._same_state(model_state)
        if not same and at_start:
            self._due = 0
            return
        if same:
            self.model_state = model_state
            self._agreed_index = self.operations - 1
            self._agreed_model = copy.copy(self.model)
            self._wheres.clear()
            self._due = self._due_after(size)
            return
        self.divergence = self._locate()

    def _same_state(self, model_state: dict[str, Any]) -> tuple[bool, int]:
        """`same_state` of the model's and the impl's observable states now (the impl
        ahead: the digest of its state, and the impl brought here if it differs)."""
        if self._ahead is not None:
            text = sorted_json(model_state)
            if self._ahead.next_is(STATE, text):
                return True, len(text)
            self._impl_here(self.operations - 1)
        return same_state(model_state, observed_or_raised(self.impl))

    def _ops(self, start: int, stop: int) -> Iterator[Op]:
        """The trace's operations start..stop-1, read again."""
        ops = self._recorded if self._replay is None else self._replay()
        assert ops is not None
        return itertools.islice(ops, start - self._offset, stop - self._offset)

    def _model_at(self, index: int) -> Engine:
        """The model after the operations 0..index (index >= the last agreement)."""
        model = copy.copy(self._agreed_model)
        for op in self._ops(self._agreed_index + 1, index + 1):
            model.apply(op)
        return model

    def _impl_at(self, index: int) -> Engine:
        """A fresh impl that has applied the trace's operations 0..index."""
        impl = self._impl_factory(self.config)
        for op in self._ops(self._offset, index + 1):
            impl.apply(op)
        return impl

    def _locate(self, hi: int | None = None) -> Divergence:
        """Bisect the segment since the last agreement for the first operation after
        which the states differ (they agree at `lo`, differ at `hi`: by default the
        last operation stepped)."""
        lo = self._agreed_index
        hi = self.operations - 1 if hi is None else hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if same_state(self._model_at(mid).observe(), observed_or_raised(self._impl_at(mid)))[0]:
                lo = mid
            else:
                hi = mid
        # The states agree after `lo` and differ after `hi == lo + 1`.
        model, impl = self._model_at(hi), self._impl_at(hi)
        [op] = self._ops(hi, hi + 1)
        differences, total = _state_differences(model.observe(), observed_or_raised(impl))
        where = _named(self._wheres[hi - self._agreed_index - 1], hi)
        return Divergence(hi, where, op, differences, total)

    def _observations_diverged(
        self, index: int, where: str, op: Op, model: list[Observation], impl: list[Observation]
    ) -> Divergence:
        """The observations of operation `index` differ; but if the states already
        differed before it (unseen since the last comparison), that came first."""
        if self._state_logged is None and index - 1 > self._agreed_index:
            before = index - 1
            model_state = self._model_at(before).observe()
            if not same_state(model_state, observed_or_raised(self._impl_at(before)))[0]:
                return self._locate(before)
        problem = malformed(impl)
        if problem is not None:
            return Divergence(index, where, op, (Difference("observations", model, problem),), 1)
        differences, total = _cut(json_differences(model, impl, "observations"))
        unmatched = (_first_unmatched(model, impl, False), _first_unmatched(impl, model, False))
        if unmatched == (None, None):  # the same observations in another order
            unmatched = (_first_unmatched(model, impl, True), _first_unmatched(impl, model, True))
        counts = Counter(o["kind"] for o in model)
        counts.subtract(o["kind"] for o in impl)
        uneven = tuple(sorted(kind for kind, count in counts.items() if count))
        return Divergence(index, where, op, differences, total, unmatched, uneven)


def _named(where: str, index: int) -> str:
    """The name of operation `index` in messages: `where` as the caller gave it, else
    its ordinal."""
    return where or f"operation {index + 1}"


def _first_unmatched(
    ours: list[Observation], theirs: list[Observation], in_order: bool
) -> tuple[int, Observation] | None:
    """The first of `ours` (and its index) left over once each of `theirs` has matched
    an equal one; `in_order`: the first that is not where `theirs` has it."""
    if in_order:
        for index, observation in enumerate(ours):
            if index >= len(theirs) or theirs[index] != observation:
                return index, observation
        return None
    left = Counter(canonical_json(o) for o in theirs)
    for index, observation in enumerate(ours):
        text = canonical_json(observation)
        if left[text] == 0:
            return index, observation
        left[text] -= 1
    return None


def first_divergence(
    config: Config, ops: Iterable[Op], impl_factory: EngineFactory | None = None
) -> Divergence | None:
    """Step `ops` (held in memory: tests, shrinking) in lockstep; the first divergence."""
    lockstep = Lockstep(config, impl_factory)
    for op in ops:
        lockstep.step(op)
        if lockstep.divergence is not None:
            return lockstep.divergence
    return lockstep.finish()
