"""Every branch of the impl's duplicate memory and size code, reached directly (issue 8).

R16.1's memory (`impl/applied.py`) merges ranges when an out-of-order add closes a gap;
the conformance machine reaches those adds only through rare R19 resends, so each branch
of `AppliedRanges.add` is walked here with hand-derived ranges. R4's sizes have two code
paths (`impl/state.py`: field by field when compiled, the JSON encoder when interpreted)
and a test run uses only one of them through the engine: both are called here, on the
machine's own widened values, against `traces.canonical.size`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import impl.state
from conformance.search.strategies import ESCAPED, INT_EDGES, values
from impl.applied import AHEAD_LIMIT, AppliedRanges
from traces.canonical import size as canonical_size


def ranges_after(*seqs: int) -> AppliedRanges:
    memory = AppliedRanges()
    for seq in seqs:
        memory.add(seq)
    return memory


def test_r16_1_empty_memory_holds_nothing() -> None:
    memory = AppliedRanges()
    assert [seq in memory for seq in (0, 1, 5)] == [False, False, False]
    assert (memory.highest(), memory.range_count(), memory.ranges()) == (0, 0, [])


def test_r16_1_in_order_adds_extend_one_range() -> None:
    memory = ranges_after(5, 6, 7)
    assert (memory.ranges(), memory.range_count(), memory.highest()) == ([(5, 7)], 1, 7)


def test_r16_1_a_gap_opens_a_new_highest_range() -> None:
    memory = ranges_after(5, 6, 9)
    assert (memory.ranges(), memory.range_count(), memory.highest()) == ([(5, 6), (9, 9)], 2, 9)
    assert [seq in memory for seq in (4, 5, 6, 7, 8, 9, 10)] == [
        False, True, True, False, False, True, False,
    ]  # fmt: skip


def test_r16_1_adding_a_present_seq_changes_nothing() -> None:
    memory = ranges_after(5, 6, 9, 9, 5, 6)
    assert memory.ranges() == [(5, 6), (9, 9)]


def test_r16_1_extending_the_highest_range_down_with_and_without_closing_the_gap() -> None:
    memory = ranges_after(5, 6, 9, 8)  # 8 joins 9 only: 7 is still missing
    assert memory.ranges() == [(5, 6), (8, 9)]
    memory.add(7)  # closes the gap: one range again
    assert (memory.ranges(), memory.range_count()) == ([(5, 9)], 1)


def test_r16_1_out_of_order_adds_below_the_highest_range_merge_their_neighbours() -> None:
    memory = ranges_after(5, 6, 7, 8, 9, 12, 20)
    assert memory.ranges() == [(5, 9), (12, 12), (20, 20)]
    memory.add(15)  # next to nothing: a range of its own
    assert memory.ranges() == [(5, 9), (12, 12), (15, 15), (20, 20)]
    memory.add(14)  # joins the range on its right only
    assert memory.ranges() == [(5, 9), (12, 12), (14, 15), (20, 20)]
    memory.add(10)  # joins the range on its left only
    assert memory.ranges() == [(5, 10), (12, 12), (14, 15), (20, 20)]
    memory.add(13)  # joins both: they merge
    assert memory.ranges() == [(5, 10), (12, 15), (20, 20)]
    memory.add(4)  # below every range, joins the lowest
    assert memory.ranges() == [(4, 10), (12, 15), (20, 20)]
    memory.add(1)  # below every range, next to nothing
    assert memory.ranges() == [(1, 1), (4, 10), (12, 15), (20, 20)]
    memory.add(12)  # present in a lower range
    assert (memory.range_count(), memory.highest()) == (4, 20)
    present = [seq for seq in range(0, 23) if seq in memory]
    assert present == [1, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 20]


# ---------------------------------------------------------------------- R4 sizes


def both_sizes(value: dict[str, Any]) -> tuple[int, int]:
    """R4 by the compiled impl's field-by-field path and by the interpreted one's encoder."""
    return impl.state._value_size(value), impl.state._encoded_size(value)


def test_r4_integer_sizes_across_digit_boundaries_and_the_64_bit_edges() -> None:
    for number in (*INT_EDGES, 0, 1, -1, 10**19, -(10**19), 2**64):
        expected = len(str(number))  # an integer's JSON text is its decimal digits
        assert impl.state._int_size(number) == expected, number
        assert both_sizes({"n": number}) == (6 + expected, 6 + expected), number  # {"n":…}


def test_r4_string_sizes_count_escapes_and_non_ascii_as_ensure_ascii_writes_them() -> None:
    # Hand-derived JSON lengths with ensure_ascii: quotes + 2 per short escape (\" \\ \n
    # \t \b \f \r), 6 per other control or non-ASCII BMP character (\u00e9), 12 per
    # astral one (a surrogate pair).
    cases = {
        "": 2, "v": 3, '"': 4, "\\": 4, "a\nb": 6, "\t": 4, "\b\f\r": 8, "\x01": 8,
        "\x1f": 8, "\x7f": 8, " ~": 4, "é": 8, "日本": 14, "\uffff": 8, "\U00010000": 14,
        "😀": 14, 'é😀"\\\n': 26,
    }  # fmt: skip
    assert set(ESCAPED) <= set(cases)
    for text, expected in cases.items():
        assert impl.state._string_size(text) == expected, repr(text)
        assert canonical_size(text) == expected, repr(text)
        assert both_sizes({text: None}) == (expected + 7, expected + 7), repr(text)


@given(st.lists(values, max_size=4))
def test_r4_both_size_paths_agree_with_the_canonical_size_on_the_machines_values(
    batch: list[dict[str, Any]],
) -> None:
    for value in batch:
        assert both_sizes(value) == (canonical_size(value), canonical_size(value))
    expected = sum(canonical_size(value) for value in batch)
    field_by_field = sum(impl.state._value_size(value) for value in batch)
    encoded = impl.state._encoded_size(batch) - len(batch) - 1 if batch else 0
    assert (impl.state.total_size(batch), field_by_field, encoded) == (expected,) * 3


@pytest.mark.parametrize("compiled", [True, False])
def test_r4_size_and_total_size_on_either_path(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Interpreted, `_COMPILED` is a module global read at each call, so both branches of
    # `size` and `total_size` run here (compiled, it is a constant and this runs one).
    monkeypatch.setattr(impl.state, "_COMPILED", compiled)
    batch: list[dict[str, Any]] = [{"n": -(2**63), "s": "é😀\n"}, {}, {"f" * 40: 2**63 - 1}]
    expected = [canonical_size(value) for value in batch]
    assert expected == [53, 2, 64]  # {"n":-9223372036854775808,"s":"\u00e9\ud83d\ude00\n"}
    assert [impl.state.size(value) for value in batch] == expected
    assert impl.state.size(None) == 0  # a destroy ships nothing (R4)
    assert impl.state.total_size(batch) == sum(expected)
    assert impl.state.total_size([]) == 0


@given(values, values)
def test_r4_a_delta_counts_its_value_from_the_old_values_size(
    old: dict[str, Any], changes: dict[str, Any]
) -> None:
    # The delta's value is `old` updated by `changes` (R10); its size is counted from the
    # old one's: each changed field's value replaced, a new field added (name, colon, comma).
    # The delta's own size (what it ships, R14) is counted in the same pass.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(impl.state, "_COMPILED", True)  # interpreted too: the counting branch
        counted = impl.state.resized(old, canonical_size(old), changes)
    expected = (canonical_size({**old, **changes}), canonical_size(changes))
    assert counted == (expected if old else (-1, -1))


def test_r4_a_delta_on_chosen_values() -> None:
    old: dict[str, Any] = {"a": 1, "b": "x"}  # {"a":1,"b":"x"}: 15 bytes
    assert canonical_size(old) == 15
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(impl.state, "_COMPILED", True)
        # "x" -> "yyy" (+2), "c":null added (+9: ,"c":null) = 26; the delta
        # {"b":"yyy","c":null} is 20 bytes
        assert impl.state.resized(old, 15, {"b": "yyy", "c": None}) == (26, 20)
        assert impl.state.resized(old, 15, {"a": -100}) == (18, 10)  # 1 -> -100 (+3); {"a":-100}
        assert impl.state.resized(old, 15, {}) == (15, 2)  # {}
        assert impl.state.resized({}, 2, {"a": 1}) == (-1, -1)  # counted in full instead
        assert impl.state.resized(old, -1, {"a": 1}) == (-1, -1)  # old's size not counted


def test_r16_1_numbers_waiting_above_the_highest_range_join_it_or_become_ranges() -> None:
    """Numbers above the highest range and not next to it wait (a parallel sender's
    dispatchers deliver out of order); the range takes them as it reaches them."""
    memory = ranges_after(1, 2, 5, 4, 7)
    assert (memory.ranges(), memory.range_count(), memory.highest()) == (
        [(1, 2), (4, 5), (7, 7)],
        3,
        7,
    )
    assert [seq in memory for seq in range(9)] == [
        False,
        True,
        True,
        False,
        True,
        True,
        False,
        True,
        False,
    ]
    memory.add(3)  # reaches 4 and 5, not 7
    assert (memory.ranges(), memory.range_count(), memory.highest()) == ([(1, 5), (7, 7)], 2, 7)
    memory.add(6)
    assert (memory.ranges(), memory.highest()) == ([(1, 7)], 7)


def test_r16_1_more_than_ahead_limit_waiting_numbers_become_ranges() -> None:
    """A gap that stays open: past AHEAD_LIMIT (4,096) waiting numbers, they become
    ranges, and later adds below and above them merge as ranges do."""
    odd = list(range(3, 2 * (AHEAD_LIMIT + 1) + 2, 2))  # 3, 5, ..., 8195: 4,097 numbers
    memory = ranges_after(1, *odd)
    assert memory.ranges() == [(seq, seq) for seq in [1, *odd]]
    assert memory.range_count() == AHEAD_LIMIT + 2 and memory.highest() == 8195
    memory.add(2)  # joins 1 and 3
    memory.add(8196)  # extends the highest range
    memory.add(8198)
    assert memory.ranges()[:2] == [(1, 3), (5, 5)]
    assert memory.ranges()[-3:] == [(8193, 8193), (8195, 8196), (8198, 8198)]
    assert [seq in memory for seq in (2, 4, 8194, 8196, 8197, 8198)] == [
        True,
        False,
        False,
        True,
        False,
        True,
    ]


def test_r16_1_waiting_numbers_in_a_run_become_one_range() -> None:
    """Ranked past AHEAD_LIMIT, a run of consecutive waiting numbers is one range (the
    ranges stay disjoint and not adjacent, as a checkpoint writes them)."""
    run = list(range(3, AHEAD_LIMIT + 4))  # 3 ... 4099: 4,097 numbers over a gap at 2
    memory = ranges_after(1, *run)
    assert memory.ranges() == [(1, 1), (3, AHEAD_LIMIT + 3)]
    assert memory.range_count() == 2 and memory.highest() == AHEAD_LIMIT + 3
    memory.add(2)
    assert memory.ranges() == [(1, AHEAD_LIMIT + 3)]


def test_r16_1_applied_memory_restored_from_its_checkpoint_ranges() -> None:
    """`from_ranges`: a checkpoint's ranges give back the memory that wrote them, which
    then goes on as that one would."""
    memory = AppliedRanges.from_ranges([[1, 3], [5, 5], [8, 10]])
    assert (memory.ranges(), memory.range_count(), memory.highest()) == (
        [(1, 3), (5, 5), (8, 10)],
        3,
        10,
    )
    assert [seq for seq in range(12) if seq in memory] == [1, 2, 3, 5, 8, 9, 10]
    memory.add(4)  # joins (1, 3) and (5, 5)
    memory.add(7)  # extends the highest range down
    memory.add(11)  # and up
    memory.add(13)  # waits above it
    assert memory.ranges() == [(1, 5), (7, 11), (13, 13)]
    assert memory.highest() == 13
    single = AppliedRanges.from_ranges([[4, 6]])
    assert (single.ranges(), single.highest(), 3 in single, 4 in single) == (
        [(4, 6)],
        6,
        False,
        True,
    )
    empty = AppliedRanges.from_ranges([])
    assert (empty.ranges(), empty.highest(), 1 in empty) == ([], 0, False)
    empty.add(1)
    assert empty.ranges() == [(1, 1)]
