"""P1 Agreement: model and impl stepped in lockstep, compared after every operation.

Used by `wanconform replay --engine both` and by the Hypothesis machine. A divergence
names the operation (index and trace text) and every differing JSON path with both values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config
from traces.ops import Op, op_to_json
from wanconform.engine import Engine, make_engine


@dataclass(frozen=True, slots=True)
class Difference:
    path: str  # e.g. "state.senders.ny.queue[0]" or "observations[2].status"
    model: Any
    impl: Any


@dataclass(frozen=True, slots=True)
class Divergence:
    index: int  # 0-based position of the operation in the trace
    op: Op
    differences: tuple[Difference, ...]

    def describe(self) -> str:
        lines = [f"divergence at operation {self.index}: {canonical_json(op_to_json(self.op))}"]
        for diff in self.differences:
            model, impl = canonical_json(diff.model), canonical_json(diff.impl)
            lines.append(f"  {diff.path}: model={model} impl={impl}")
        return "\n".join(lines)


_ABSENT = "<absent>"


def json_differences(model: Any, impl: Any, path: str) -> Iterator[Difference]:
    """Every path at which two JSON values differ (bool and int are told apart)."""
    if isinstance(model, dict) and isinstance(impl, dict):
        for key in sorted(set(model) | set(impl), key=str):
            yield from json_differences(
                model.get(key, _ABSENT), impl.get(key, _ABSENT), f"{path}.{key}"
            )
    elif isinstance(model, list) and isinstance(impl, list):
        for i in range(max(len(model), len(impl))):
            yield from json_differences(
                model[i] if i < len(model) else _ABSENT,
                impl[i] if i < len(impl) else _ABSENT,
                f"{path}[{i}]",
            )
    elif type(model) is not type(impl) or model != impl:
        yield Difference(path, model, impl)


def compare_step(
    model_observations: list[dict[str, Any]],
    impl_observations: list[dict[str, Any]],
    model_state: dict[str, Any],
    impl_state: dict[str, Any],
) -> tuple[Difference, ...]:
    """P1 for one step: observations first, then the observable state."""
    return (
        *json_differences(model_observations, impl_observations, "observations"),
        *json_differences(model_state, impl_state, "state"),
    )


def first_divergence(
    config: Config, ops: Sequence[Op], impl_factory: Callable[[Config], Engine] | None = None
) -> tuple[dict[str, Any], Divergence | None]:
    """Replay `ops` on the model and the impl (or `impl_factory`'s engine) in lockstep;
    the model's final state and the first divergence, if any."""
    model = make_engine("model", config)
    impl = make_engine("impl", config) if impl_factory is None else impl_factory(config)
    state = model.observe()
    for index, op in enumerate(ops):
        model_observations = model.apply(op)
        impl_observations = impl.apply(op)
        state = model.observe()
        differences = compare_step(model_observations, impl_observations, state, impl.observe())
        if differences:
            return state, Divergence(index, op, differences)
    return state, None
