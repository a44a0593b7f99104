"""One run of an event log (docs/LOG.md, "Event logs"; `traces.eventlog`) against the
driven model (`model.driven`).

`EventRun` is what `replay_sources` runs: its `ops()` is the merged log, its
`model_engine` the driven model and its `log_engine` the system as its log tells it. The
lines several processes logged at one instant (one `t`, or `t` and `at`) are taken in an
order in which the model agrees with every one, found by a depth-first search from the
model's state (`EventRun.arrange`); when there is none, the longest agreeing start, and
the run reports the disagreement after it. The search sees one instant: steps of one
instant that agree in two orders but do not commute, and that only a later instant tells
apart, can be taken in the wrong order (a system should log `at`, docs/LOG.md).
`event_log_of` writes the event logs of a trace, as a system that takes every step when
it is due would.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from conformance.running.lockstep import same_observations
from model.driven import DrivenEngine, driven_step, message_batch
from model.sender import flush_due, timeout_due
from model.state import State
from model.step import initial_state, step
from traces.config import Config
from traces.eventlog import FORM, VERSION, EventLine, EventLogSource
from traces.logfile import LogEntry, LoggedEngine
from traces.observations import Observation
from traces.ops import (
    NETWORK_OPS,
    Deliver,
    DeliverAck,
    Drop,
    DropAck,
    Flush,
    Op,
    Settle,
    SiteDown,
    SiteUp,
    Tick,
    Timeout,
    op_to_json,
)

SEARCH_STEPS = 10_000
"""Model steps one instant's search for an order may take (`EventRun.arrange`)."""


_TRIAL: dict[type[Any], int] = {
    Deliver: 0,
    DeliverAck: 0,
    Drop: 0,
    DropAck: 0,
    Timeout: 2,
    SiteDown: 3,
    SiteUp: 3,
}
"""`EventRun.arrange`'s order of trial (others: 1): what takes a message from the network
first (only other lines can take it away), then the sites' own steps, then timeouts, then
a site going down or up."""


class EventRun:
    """The merged log, the driven model and the log's engine of one run (a `Source`)."""

    def __init__(self, source: EventLogSource) -> None:
        self.source = source
        self.name = source.name
        self.config = source.config
        self.model: DrivenEngine | None = None
        self._entry: LogEntry | None = None
        self._prepared: dict[int, tuple[State, State, list[Observation]]] = {}

    @property
    def op_count(self) -> int | None:
        """The run's operations, ticks included, once its lines have all been read."""
        return self.source.op_count

    @property
    def ticks(self) -> int:
        return self.source.ticks

    def model_engine(self, config: Config) -> DrivenEngine:
        self.model = DrivenEngine(config)
        return self.model

    def log_engine(self, config: Config) -> LoggedEngine:
        return LoggedEngine(config, self._entries())

    def _entries(self) -> Iterator[LogEntry]:
        while True:
            assert self._entry is not None
            yield self._entry

    def arrange(self, block: list[list[EventLine]]) -> list[EventLine]:
        """An order of one instant's lines (each process's in its own order) in which
        the model agrees with every line, found by a depth-first search from its state
        now; when there is none within `SEARCH_STEPS` model steps, the longest agreeing
        start found, then the rest process by process (the run reports the disagreement
        there). At each point it tries the processes' next lines in `_TRIAL`'s order: a
        line that changes what the other processes' lines find (a timeout, a site going
        down or up) is taken when theirs need it, so it is seldom undone."""
        sequences = [lines for lines in block if lines]
        if len(sequences) < 2 or self.model is None:
            return [line for lines in sequences for line in lines]
        total = sum(len(lines) for lines in sequences)
        config = self.config
        cursors = [0] * len(sequences)

        def candidates() -> list[int]:
            ready = [i for i, lines in enumerate(sequences) if cursors[i] < len(lines)]
            return sorted(
                ready, key=lambda i: _TRIAL.get(type(sequences[i][cursors[i]].entry.op), 1)
            )

        path: list[EventLine] = []
        made: list[list[Observation]] = []  # the model's observations of each
        taken_from: list[int] = []  # the process of each line of `path`
        best: list[EventLine] = []
        # Per line taken, the state before it and the processes left to try there.
        stack: list[tuple[State, list[int]]] = [(self.model.state, candidates())]
        budget = SEARCH_STEPS
        while stack and len(path) < total and budget > 0:
            state, untried = stack[-1]
            while untried:
                index = untried.pop(0)
                line = sequences[index][cursors[index]]
                budget -= 1
                if not _same_batch(state, line):
                    continue
                after, observations = driven_step(config, state, line.entry.op)
                if same_observations(observations, line.entry.observed):
                    cursors[index] += 1
                    path.append(line)
                    made.append(observations)
                    taken_from.append(index)
                    if len(path) > len(best):
                        best = list(path)
                    stack.append((after, candidates()))
                    break
            else:  # no process's next line agrees here: undo the last line taken
                stack.pop()
                if path:
                    path.pop()
                    made.pop()
                    cursors[taken_from.pop()] -= 1
        if len(path) == total:  # the model will take these very steps: no need to redo them
            self._prepared = {
                id(line.entry): (stack[number][0], stack[number + 1][0], made[number])
                for number, line in enumerate(path)
            }
            return path
        taken = {id(line) for line in best}
        return best + [line for lines in sequences for line in lines if id(line) not in taken]

    def ops(self) -> Iterator[tuple[int | str, Op]]:
        for where, entry, batch in self.source.steps(self.arrange):
            self._entry = entry
            prepared = self._prepared.pop(id(entry), None)
            if self.model is not None:
                if prepared is not None:
                    self.model.prepared = (entry.op, *prepared)
                if type(entry.op) in NETWORK_OPS:  # its batch must be the model's message
                    self.model.message = batch  # (docs/LOG.md); `apply` clears it
            yield where, entry.op


def _same_batch(state: State, line: EventLine) -> bool:
    """Does the message a network line takes (its `batch_id`) fit the model's network? (A
    drop observes nothing: without this, any batch would do.)"""
    op = line.entry.op
    if not isinstance(op, (Deliver, DeliverAck, Drop, DropAck)):
        return True
    return message_batch(state, op) == line.batch_id


def process_of(config: Config, op: Op) -> str:
    """The process that logs `op` in `event_log_of`'s logs: a site's own steps, a sender's
    at its site, a delivery at the receiving site; drops by the network."""
    site = getattr(op, "site", None)
    if site is not None:
        return f"site-{site}"
    if type(op) in (Drop, DropAck):
        return "network"
    sender = config.sender(op.sender)  # type: ignore[union-attr]
    return f"site-{sender.remote if type(op) is Deliver else sender.site}"


def event_log_of(
    config: Config, ops: Iterable[Op], finer: bool = True
) -> dict[str, list[dict[str, Any]]]:
    """The event logs a system that took every step the moment the model's rules make it
    due would write for a trace without `settle` (docs/LOG.md): per process, its header
    and lines. Each step's observations are the deterministic model's (`model.step`) cut
    into the operation's own and those of the timeouts and flushes after it, which become
    `timeout` and `flush` lines; a skipped operation is not logged (a system logs what
    it did). `finer`: each line's `at` is its place in the run (the finest clock there
    is), so the merge puts the lines back in the run's order. An AssertionError if the
    driven model, taking those steps, does not make exactly the deterministic model's
    observations (one model, two modes)."""
    state = driven = initial_state(config)
    lanes = [(s, i) for s in config.senders for i in range(s.dispatcher_threads)]
    header = {"log": FORM, "version": VERSION, "config": config.to_json()}
    logs: dict[str, list[dict[str, Any]]] = {}

    def log(op: Op, observed: list[Observation], batch_id: int | None = None) -> None:
        process = process_of(config, op)
        lines = logs.setdefault(process, [{**header, "process": process}])
        line = {"t": driven.time, **op_to_json(op), "observed": observed}
        if finer:
            line["at"] = sum(len(lines) - 1 for lines in logs.values())
        if batch_id is not None:
            line["batch_id"] = batch_id
        lines.append(line)

    for op in ops:
        assert type(op) is not Settle, "a trace with settle has no event log"
        state, expected = step(config, state, op)
        if expected == [{"kind": "skipped", "op": op.op}]:
            continue
        made: list[Observation] = []
        batch_id = None
        if isinstance(op, (Deliver, DeliverAck, Drop, DropAck)):
            batch_id = message_batch(driven, op)
            assert batch_id is not None
        driven, observed = driven_step(config, driven, op)
        made += observed
        if type(op) is not Tick:
            log(op, observed, batch_id)
        timed: list[Op] = []
        if type(op) is Tick:
            timed += [Timeout(s.id, i) for s, i in lanes if _due(timeout_due(driven, s, i), driven)]
        for timeout in timed:
            driven, observed = driven_step(config, driven, timeout)
            made += observed
            log(timeout, observed)
        for sender, index in lanes:
            if _due(flush_due(driven, sender, index), driven):
                flush = Flush(sender.id, index)
                driven, observed = driven_step(config, driven, flush)
                made += observed
                log(flush, observed)
        assert made == expected, (op, made, expected)
    return logs


def _due(when: int | None, state: State) -> bool:
    return when is not None and when <= state.time
