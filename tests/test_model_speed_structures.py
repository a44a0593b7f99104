"""The model's persistent containers (model/state.py): `AppliedIds` (R16.1's memory) and
`Seq` (R12's queues with R31's out-of-order removals, R24's dead letters), each against
hand-derived values and, with Hypothesis, against a plain Python set or list; and the
model against the impl on long steady traces whose sequence numbers cross several bitmap
blocks (R16.1, P1)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from immutables import Map

from conformance.running.lockstep import first_divergence
from model import state
from model.state import BLOCK, RECORDS, AppliedIds, Seq
from traces.generate import steady_workload

Blocks = Map[tuple[int, int], int]


def test_r16_1_applied_ids_hand_derived() -> None:
    empty = AppliedIds()
    one = empty.add((1, 5))
    assert (1, 5) in one
    assert (1, 4) not in one and (1, 6) not in one and (2, 5) not in one
    assert (1, 5) not in empty  # adding never changes the set added to
    assert one.blocks == Blocks({(1, 0): 1 << 5})
    # BLOCK is 1024: seq 1023 is the last bit of block 0, 1024 and 1025 the first two of block 1.
    assert BLOCK == 1024
    edge = one.add((1, 1023)).add((1, 1024)).add((1, 1025)).add((3, 1024))
    assert edge.blocks == Blocks({(1, 0): (1 << 5) | (1 << 1023), (1, 1): 0b11, (3, 1): 0b1})
    assert [seq for seq in range(2050) if (1, seq) in edge] == [5, 1023, 1024, 1025]
    assert [seq for seq in range(2050) if (3, seq) in edge] == [1024]
    assert edge.add((1, 1024)) == edge  # adding a member changes nothing


@given(
    st.lists(st.tuples(st.booleans(), st.integers(1, 3), st.integers(0, 5 * BLOCK)), max_size=200)
)
def test_r16_1_applied_ids_is_a_set_of_event_ids(
    actions: list[tuple[bool, int, int]],
) -> None:
    ids = AppliedIds()
    plain: set[tuple[int, int]] = set()
    history = [(ids, frozenset(plain))]
    for is_add, origin, seq in actions:
        if is_add:
            ids = ids.add((origin, seq))
            plain.add((origin, seq))
            history.append((ids, frozenset(plain)))
        assert ((origin, seq) in ids) == ((origin, seq) in plain)
    for version, members in history:  # every earlier version still holds what it held
        assert all(member in version for member in members)
        assert all((o, s - 1) in version for o, s in members if (o, s - 1) in members)


def test_seq_hand_derived() -> None:
    empty: Seq[str] = Seq()
    abc = empty.append("a").append("b").append("c")
    assert list(abc) == ["a", "b", "c"] and len(abc) == 3 and abc.head() == "a"
    assert abc.first(2) == [(0, "a"), (1, "b")] and len(abc.first(9)) == 3
    # An acknowledged batch of two leaves one event (R18): the head moves past them.
    acked = abc.remove([0, 1])
    assert list(acked) == ["c"] and acked.start == 2 and acked.head() == "c"
    # A batch of two flagged on a timeout (R20) is replaced in place.
    flagged = abc.replace({0: "A", 1: "B"})
    assert list(flagged) == ["A", "B", "c"] and flagged.start == 0
    # R19: of a batch of three, the middle one stays (converted) at the head.
    kept = abc.replace({1: "b'"}).remove([0, 2])
    assert list(kept) == ["b'"] and kept.start == 1 and kept.head() == "b'"
    assert list(kept.append("d")) == ["b'", "d"]
    assert list(kept.append("d").positioned()) == [(1, "b'"), (3, "d")]
    # R31: a parallel batch leaves out of order; the holes are skipped.
    holes = abc.append("d").remove([1, 3])
    assert list(holes) == ["a", "c"] and holes.first(5) == [(0, "a"), (2, "c")]
    assert list(abc) == ["a", "b", "c"] and list(empty) == []  # nothing built is changed


@st.composite
def seq_actions(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(["append", "remove", "replace"]),
                st.integers(0, 6),
                st.integers(0, 6),
            ),
            max_size=60,
        )
    )


@given(seq_actions())
def test_seq_is_a_list_of_positioned_items(actions: list[tuple[str, int, int]]) -> None:
    seq: Seq[int] = Seq()
    plain: list[tuple[int, int]] = []  # (position, item)
    history = [(seq, list(plain))]
    counter = 0
    for action, first, second in actions:
        if action == "append":
            counter += 1
            plain = [*plain, (seq.end, counter)]
            seq = seq.append(counter)
        elif action == "remove":  # any two of the live items
            chosen = [plain[i][0] for i in {first, second} if i < len(plain)]
            seq = seq.remove(chosen)
            plain = [(p, item) for p, item in plain if p not in chosen]
        elif plain:
            position = plain[first % len(plain)][0]
            seq = seq.replace({position: -second})
            plain = [(p, -second if p == position else item) for p, item in plain]
        history.append((seq, list(plain)))
        assert list(seq.positioned()) == plain and len(seq) == len(plain)
        assert list(seq) == [item for _, item in plain]
        assert seq.first(3) == plain[:3]
        if plain:
            assert seq.head() == plain[0][1] and seq.start == plain[0][0]
    for version, items in history:
        assert list(version.positioned()) == items


def test_p1_model_and_impl_agree_on_steady_traces_across_applied_blocks() -> None:
    """2,240 events of one origin (seqs past 2 * BLOCK), with model and impl compared
    after every operation (observations and observable state)."""
    config, ops = steady_workload(3_200, keys=20, seed=0, batch_size=7)
    assert sum(op.op in ("put", "delta") for op in ops) > 2 * BLOCK
    divergence = first_divergence(config, ops)
    assert divergence is None, divergence.describe()


def test_records_replace_as_namedtuple_does() -> None:
    """model/state.py's straight `_replace` against what NamedTuple's own builds: every
    field changed alone and all at once, on every record class; nothing else changes."""
    named = {c for c in vars(state).values() if isinstance(c, type) and hasattr(c, "_fields")}
    assert named == set(RECORDS)  # every record class has the straight `_replace`
    record: Any
    for record in RECORDS:
        fields = record._fields
        original = record(*(f"old {name}" for name in fields))
        for name in fields:
            changed = original._replace(**{name: f"new {name}"})
            assert type(changed) is record
            assert changed == tuple(
                f"new {field}" if field == name else f"old {field}" for field in fields
            )
        everything = original._replace(**{name: f"new {name}" for name in fields})
        assert everything == tuple(f"new {field}" for field in fields)
        assert original == tuple(f"old {field}" for field in fields)  # never changed
        assert original._replace() == original
        with pytest.raises(TypeError):
            original._replace(no_such_field=1)
