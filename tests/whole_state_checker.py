"""The whole-state property checker: the test oracle of the incremental one (issue 32).

`conformance.properties.checker.PropertyChecker` looks, at each `settle`, only at the
keys that changed since it last looked (and those that differed then). This one is the
simple reading of SPEC §11 it must agree with: at every settle it takes the whole
observable state (`observe()`) and compares every key at every site (P5), and reads the
dead letters still held from the state, not from the observations. Everything else
(P2-P4, P6-P8, P12, all event by event) is the checker's own. Tests only: not in the
product path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from conformance.properties.checker import PropertyChecker, Violation
from traces.observations import Observation
from traces.ops import Op


class WholeStateChecker(PropertyChecker):
    """P5 by comparing every key of the whole observable state at every settle."""

    def after_step(
        self,
        op: Op,
        observations: list[Observation],
        observe: Callable[[], dict[str, Any]],
        where: str = "",
        settle_capped: Callable[[], bool] | None = None,
        observe_keys: Callable[[Iterable[str]], dict[str, Any]] | None = None,
    ) -> list[Violation]:
        return super().after_step(op, observations, observe, where, settle_capped, None)

    def _p5(self, state: dict[str, Any], where: str) -> list[Violation]:
        excluded = self._keys_dropped | self._keys_before_wipe
        for sender in state["senders"].values():
            excluded.update(record["key"] for record in sender["dlq"])
        entries = [(site, state["sites"][str(site)]["entries"]) for site in self.config.sites]
        keys = sorted({key for _, held in entries for key in held} - excluded)
        if not keys:
            return []  # checked on nothing
        self._p5_checks += 1
        (first, held), *others = entries
        for site, other in others:
            differing = [key for key in keys if held.get(key) != other.get(key)]
            if differing:
                shown = ", ".join(repr(key) for key in differing[:3])
                more = f" and {len(differing) - 3} more" if len(differing) > 3 else ""
                return [
                    Violation(
                        "P5",
                        f"sites {first} and {site} hold different entries for {shown}{more}",
                        where,
                    )
                ]
        return []
