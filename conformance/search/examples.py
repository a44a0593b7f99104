"""A failure explained: its trace shrunk, the minimal trace run in words, both engines'
sides at the failing operation, and how to reproduce it (the examples of reports).

`explain` shrinks a failing trace (`conformance.search.shrink`) and runs the minimal trace once
more with every step explained (`conformance.running.run`); the `Example` it returns is plain
data (JSON round trip: a results directory keeps it in `examples.json`), which reports
render without running anything.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.running.narrative import describe
from conformance.running.run import Failure, Step, p1_signature, run_trace
from conformance.search.shrink import (
    NothingToShrink,
    budget_text,
    pytest_text,
    replay_command,
    shrink,
)
from traces.config import Config, parse_config
from traces.engine import impl_command, load_impl
from traces.errors import WanconformError
from traces.logfile import check_fields
from traces.observations import FIELDS, Observation
from traces.ops import Op, op_to_json, parse_op
from traces.text import plural, shell_word
from traces.tracefile import trace_text, where

MAX_EXAMPLES = 20  # failure groups, largest first, whose example is shrunk and explained
SHRINK_BUDGET = 30.0
"""Seconds to shrink each group's example (`check`/`campaign --shrink-budget`)."""

Fetch = Callable[[str], "tuple[Config, Sequence[Op], Sequence[int], str] | None"]
"""trace id -> its configuration, operations, their line numbers and a file that holds
the trace ("" if none); None when the trace is not at hand."""

_EVENT_ID = re.compile(r"\bevent (\d+:\d+)")
_OBSERVATION_INDEX = re.compile(r"observations\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class ExampleStep:
    where: str
    op: dict[str, Any]  # the operation as JSON (SPEC §3)
    observations: list[Observation]  # the model's
    impl_observations: list[Observation] | None  # the impl's, while in lockstep
    text: str  # `replay --steps`'s line


@dataclass(frozen=True, slots=True)
class Example:
    """One failure explained (see the module)."""

    signature: str  # the failure group it explains
    trace: str  # the trace's name or id
    source: str  # a file holding the whole trace ("" if none)
    impl: str  # the impl's spec
    config: dict[str, Any]  # SPEC §2
    failure: str  # the minimal trace's failure, described
    original_operations: int
    kept_lines: tuple[int, ...]  # the input's line numbers the minimal trace kept
    stages: tuple[tuple[str, int], ...]  # what each shrinking stage left
    minimal_name: str  # e.g. "resend.min.jsonl"
    minimal_trace: str  # JSON Lines
    steps: tuple[ExampleStep, ...]  # the minimal trace's run, explained
    focus: int  # the failing step's index
    side_path: str  # what `side_model` / `side_impl` are: "observations" or a state path
    side_model: Any
    side_impl: Any
    side_note: str
    event: str  # the event the failure is about ("" if none)
    event_life: tuple[str, ...]  # everything that happened to it, across the sites
    command: str  # shell commands that reproduce it
    pytest: str  # a regression test

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__}
        data["steps"] = [
            {name: getattr(step, name) for name in ExampleStep.__slots__} for step in self.steps
        ]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Example:
        """`to_json`'s data back, of `SCHEMA_FILE`'s shape (`read_results` checks it) and
        valid in its parts: the configuration, each step's operation in it, each model
        observation of SPEC §10's shape, `focus` one of the steps; or ValueError naming
        the first that is not (a report draws it all without running anything)."""
        config = _valid(lambda: parse_config(data["config"]), "config")
        steps = tuple(_step(index, step, config) for index, step in enumerate(data["steps"]))
        if data["focus"] >= max(len(steps), 1):
            raise ValueError(f"focus: {data['focus']} is not a step (0..{len(steps) - 1})")
        values = {name: data[name] for name in cls.__slots__}
        values["kept_lines"] = tuple(data["kept_lines"])
        values["stages"] = tuple((name, left) for name, left in data["stages"])
        values["event_life"] = tuple(data["event_life"])
        values["steps"] = steps
        return cls(**values)


SCHEMA_FILE = Path(__file__).with_name("examples.schema.json")
"""The shape of a results directory's examples.json: `{"examples": [Example.to_json()],
"notes": {...}}`."""


def _valid(parse: Callable[[], Any], where: str) -> Any:
    try:
        return parse()
    except WanconformError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _step(index: int, data: dict[str, Any], config: Config) -> ExampleStep:
    """One of `Example.to_json`'s steps back (see `Example.from_json`)."""
    at = f"steps.{index}"
    _valid(lambda: parse_op(data["op"], config), f"{at}.op")
    for number, observation in enumerate(data["observations"]):
        where = f"{at}.observations.{number}"
        kind = observation.get("kind")
        if not isinstance(kind, str) or kind not in FIELDS:
            raise ValueError(f"{where}: kind: not an observation's kind")
        check_fields(where, kind, observation)
    return ExampleStep(**data)


def reproduce(source: str, impl: str, minimal_name: str, failure: Failure) -> str:
    """The commands that shrink the trace and replay the minimal one, with the impl."""
    stem = Path(source).stem
    command = impl_command(impl)
    quoted = " ".join(map(shell_word, (source, "-o", minimal_name, "--impl", impl)))
    return f"{command} shrink {quoted} --pytest {shell_word(f'test_{stem}.py')}\n" + replay_command(
        impl, failure.signature.property != "P1", minimal_name
    )


MODEL_AS_IMPL = "model:Engine"
"""The model as an `--impl` (`load_impl` loads it as any engine)."""


def explain(
    signature: str,
    trace: str,
    config: Config,
    ops: Sequence[Op],
    lines: Sequence[int],
    impl_spec: str,
    source: str = "",
    budget: float | None = SHRINK_BUDGET,
    progress: Callable[[str], None] | None = None,
) -> tuple[Example | None, str]:
    """Shrink a failing trace (within `budget` seconds) and explain its first failure:
    the example, or why there is none. `lines` are the operations' line numbers in the
    input; `source` a file that holds it (for the reproduce commands). A property (P2-P12)
    is checked on the model's run, whatever the impl does: its example is shrunk and shown
    with the model as the impl too, so that an impl that diverges first (P1, another
    group) does not hide it."""
    if not signature.startswith("P1"):
        impl_spec = MODEL_AS_IMPL
    factory = load_impl(impl_spec)
    try:
        shrunk = shrink(config, ops, factory, progress, budget=budget)
    except NothingToShrink:
        return None, "no example: the trace no longer fails"
    note = ""
    if str(shrunk.failure.signature) != signature:
        note = f"the trace's first failure is {shrunk.failure.signature}"
    if shrunk.out_of_budget:
        note = (note + "; " if note else "") + (
            f"shrinking stopped at its budget of {budget_text(budget or 0)}: the shortest failing "
            f"trace found by then, {plural(len(shrunk.kept), 'operation')} of "
            f"{len(ops):,} (--shrink-budget gives it more)"
        )
    minimal = shrunk.ops(ops)
    name = f"{Path(source or trace).stem}.min.jsonl"
    result = run_trace(
        name,
        shrunk.config,
        [(where(name, i + 2), op) for i, op in enumerate(minimal)],  # line 1: config
        impl=factory,
        impl_spec=impl_spec,
        explain=True,
        state_every=1,
    )
    failure = result.failure or shrunk.failure
    steps = result.steps or []
    focus = min(failure.index, len(steps) - 1)
    side_path, side_model, side_impl, side_note = _sides(failure, steps[focus], result)
    if note:
        side_note += f" ({note})"
    event = failure_event(failure)
    life = tuple(
        f"{step.where} {describe(obs, shrunk.config)}"  # `ny d0`, as the narrative says
        for step in steps
        for obs in step.observations
        if event and mentions(obs, event)
    )
    text = trace_text(shrunk.config, minimal)
    example = Example(
        signature=signature,
        trace=trace,
        source=source,
        impl=impl_spec,
        config=shrunk.config.to_json(),
        failure=shrunk.failure.describe(),
        original_operations=len(ops),
        kept_lines=tuple(lines[i] for i in shrunk.kept),
        stages=tuple(shrunk.stages),
        minimal_name=name,
        minimal_trace=text,
        steps=tuple(
            ExampleStep(s.where, op_to_json(s.op), s.observations, s.impl_observations, s.text)
            for s in steps
        ),
        focus=focus,
        side_path=side_path,
        side_model=side_model,
        side_impl=side_impl,
        side_note=side_note,
        event=event if life else "",
        event_life=life,
        command=reproduce(source or trace, impl_spec, name, shrunk.failure),
        pytest=pytest_text(text, impl_spec, shrunk.failure, name),
    )
    return example, ""


def _sides(failure: Failure, step: Step, result: Any) -> tuple[str, Any, Any, str]:
    """What the report shows side by side at the failing step, and what it is."""
    impl_observations = step.impl_observations if step.impl_observations is not None else []
    divergence = failure.divergence
    if divergence is None:
        note = f"{failure.describe()} (model and impl agree on this operation)"
        return "observations", step.observations, impl_observations, note
    paths = [d.path for d in divergence.differences]
    if paths and paths[0].startswith("observations"):
        note = "the observations of this operation, model and impl"
        return "observations", step.observations, impl_observations, note
    prefix = common_prefix(paths)
    model_state, impl_state = result.failure_states or ({}, {})
    note = f"the observable state under {prefix} after this operation"
    return prefix, lookup(model_state, prefix), lookup(impl_state, prefix), note


def common_prefix(paths: list[str]) -> str:
    """The deepest dotted path above every differing path (at most three levels:
    `state.senders.ny`)."""
    parts = [p.replace("[", ".[").split(".") for p in paths]
    prefix: list[str] = []
    for column in zip(*parts, strict=False):
        if len(set(column)) != 1:
            break
        prefix.append(column[0])
    return ".".join(prefix[:3]).replace(".[", "[") or "state"


def lookup(state: Any, path: str) -> Any:
    for part in path.split(".")[1:]:
        state = state.get(part, {}) if isinstance(state, dict) else {}
    return state


def failure_event(failure: Failure) -> str:
    """The event a failure is about: the one a violation names, or the event of the
    first differing observation of a divergence ("" if none)."""
    if failure.violation is not None:
        found = _EVENT_ID.search(failure.violation.message)
        return found.group(1) if found else ""
    differences = failure.divergence.differences if failure.divergence else ()
    index = _OBSERVATION_INDEX.match(differences[0].path) if differences else None
    if index is not None and int(index.group(1)) < len(failure.observations):
        observation = failure.observations[int(index.group(1))]
        events = observation.get("events") or [observation.get("event", "")]
        return str(events[0])
    return ""


def mentions(obs: Observation, event: str) -> bool:
    """Does an observation concern `event` (its own, or in a batch, ack or timeout)?"""
    return obs.get("event") == event or any(
        event in obs.get(name, ()) for name in ("events", "removed")
    )


def failure_groups(
    rows: Sequence[Mapping[str, Any]],
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Result rows (`conformance.spark.results`) grouped by failure signature, the largest
    group first (then by signature): the one grouping of summaries, examples, reports."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        for signature in row["failures"]:
            groups.setdefault(signature, []).append(row)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def _cell(text: str) -> Any:
    """A value of a result row's divergence (canonical JSON, possibly cut)."""
    try:
        return json.loads(text)
    except ValueError:
        return text  # cut: long, so never part of a variant


def group_variants(signature: str, members: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """How a P1 group's failures showed (`conformance.running.run.Signature.variant`: the
    operation and the two values), with how many traces each, most frequent first."""
    counts: Counter[str] = Counter()
    if not signature.startswith("P1"):
        return []
    for row in members:
        divergence = row["divergence"]
        if divergence is None or not divergence["differences"]:
            continue
        first = divergence["differences"][0]
        op = json.loads(divergence["op"])["op"]
        found = p1_signature(op, first["path"], _cell(first["model"]), _cell(first["impl"]))
        counts[found.variant] += 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def explain_groups(
    rows: Sequence[Mapping[str, Any]],
    fetch: Fetch,
    impl_spec: str,
    progress: Callable[[str], None] | None = None,
    budget: float | None = SHRINK_BUDGET,
) -> tuple[list[Example], dict[str, str]]:
    """The examples of the `MAX_EXAMPLES` largest failure groups (each the group's first
    trace, shrunk within `budget` seconds and explained), and for a group without one,
    why. The groups are named first, before any shrinking."""
    say = progress or (lambda line: None)
    examples: list[Example] = []
    notes: dict[str, str] = {}
    groups = failure_groups(rows)
    for signature, members in groups:
        first = members[0]["trace_id"]
        say(f"failure group {signature}: {plural(len(members), 'trace')} (first {first})")
    if groups:
        shown = min(len(groups), MAX_EXAMPLES)
        limit = "no limit" if budget is None else f"at most {budget_text(budget)} each"
        say(f"shrinking the example of {plural(shown, 'group')} ({limit}; --shrink-budget)")
    for signature, members in groups[:MAX_EXAMPLES]:
        trace_id = members[0]["trace_id"]
        fetched = fetch(trace_id)
        if fetched is None:
            notes[signature] = "no example: the trace is not at hand"
            continue
        config, ops, lines, source = fetched
        say(f"explaining {signature} with {trace_id}")
        example, note = explain(
            signature, trace_id, config, ops, lines, impl_spec, source, budget, say
        )
        if example is None:
            notes[signature] = note
        else:
            examples.append(example)
    return examples, notes
