"""`wanconform explore` (issue 19): exhaustive breadth-first exploration to a bound.

Pinned distinct-state counts (with and without symmetry), one of them cross-checked
against a naive enumeration of every path without deduplication; the planted bugs each
found with the shortest trace that can show them (the length derived from the spec in
each case's comment); bad input, the cap (exit 3) and the command end to end.
"""

from __future__ import annotations

import itertools
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.running.narrative import op_text
from conformance.search.explore import (
    Bounds,
    Relabel,
    alphabet,
    canonical_relabel,
    digest,
    explore,
    form_bytes,
    frozen_state,
    key_names,
    keys_apart,
    state_ops,
    summary_lines,
    tick_amounts,
)
from impl import Engine as impl_engine
from model import initial_state, step
from model.checkpoint import to_state_doc
from model.state import State
from tools import planted_bugs
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.ops import OP_NAMES, Op, Put, Tick
from traces.tracefile import read_trace
from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "traces" / "examples"


def sender(**fields: Any) -> dict[str, Any]:
    return {"id": "ny", "site": 1, "remote": 2, **fields}


ONE_WAY = {"sites": [1, 2], "senders": [sender(batch_size=1)]}
"""The smallest configuration that ships: 2 sites, one sender, every write a batch."""


def one_way() -> Config:
    return parse_config(ONE_WAY)


# -- distinct states ------------------------------------------------------------------------


NO_PUTALL = tuple(name for name in OP_NAMES if name != "putall")


@pytest.mark.parametrize(
    ("depth", "keys", "values", "ops", "symmetry", "states", "transitions", "levels"),
    [
        (1, 1, 1, OP_NAMES, False, 12, 13, [1, 11]),
        (2, 1, 1, OP_NAMES, False, 80, 160, [1, 11, 68]),
        (3, 1, 1, OP_NAMES, False, 452, 1120, [1, 11, 68, 372]),
        (2, 2, 2, OP_NAMES, False, 574, 1009, [1, 29, 544]),
        # with putall, only values are interchangeable (R10 writes in key order)
        (2, 2, 2, OP_NAMES, True, 332, 713, [1, 21, 310]),
        # without it, keys too: 3.4x of at most 2! x 2! = 4
        (3, 2, 2, NO_PUTALL, False, 3326, 7549, [1, 21, 272, 3032]),
        (3, 2, 2, NO_PUTALL, True, 965, 2612, [1, 11, 95, 858]),
    ],
)
def test_distinct_state_counts_are_pinned(
    depth: int,
    keys: int,
    values: int,
    ops: tuple[str, ...],
    symmetry: bool,
    states: int,
    transitions: int,
    levels: list[int],
) -> None:
    result = explore(one_way(), Bounds(depth, keys, values, ops, symmetry=symmetry))
    assert (result.states, result.transitions, result.levels) == (states, transitions, levels)
    assert result.found == [] and not result.capped and result.covered_depth == depth


def test_depth_one_is_every_enabled_operation_of_the_initial_state() -> None:
    # From the initial state of ONE_WAY with one key and one value: put and putall...
    # put 1 k1 and put 2 k1 (2), delta/destroy need a live entry (0), no putall of one
    # key, deliver/ack/drop need a message (0), site_down 1, site_down 2 (2), site_up
    # needs a down site (0), fail at each site (1 + 0 and 2 + 0 attempts: 2 per site, 4),
    # settle (nothing to do: the initial state again), tick 1 (no timer is due); v2.0's
    # lifecycle (R36, R37): restart_sender of the idle sender (the initial state again),
    # stop_sender and pause_sender (start and resume need a stopped or paused one): 11 new
    # states, 13 transitions (settle and the restart lead back to the initial state).
    result = explore(one_way(), Bounds(1))
    assert result.levels == [1, 11] and result.transitions == 13


def test_writes_and_deliveries_to_depth_three_are_counted_by_hand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # ONE_WAY, 1 key, 1 value, only put, deliver, deliver_ack. Depth 1: put 1 (A: [1,0,1],
    # batch 1 [1:1] sent, batch_size 1) and put 2 (B: [1,0,2], no sender at 2); deliver
    # and its ack need a message (2 not enabled). Depth 2, from A: put 1 (A1: [2,1,1], R9
    # ts 0 -> 1, queued behind the batch in flight), put 2 (A2), deliver (A3: site 2 holds
    # [1,0,1], the ack in the network); from B: put 1 (= A2), put 2 (B2: [2,1,2]): 4 new.
    # Depth 3: A1 -> put 1, put 2, deliver (3 new); A2 -> put 1 (= A1 + put 2), put 2,
    # deliver (conflict: [1,0,1] loses to [1,0,2], R16.3) (2 new); A3 -> put 1 (= A1 +
    # deliver), put 2, deliver_ack (2 new); B2 -> put 1 (= A2 + put 2), put 2 (1 new).
    result = explore(one_way(), Bounds(3, 1, 1, ("put", "deliver", "deliver_ack")))
    assert result.levels == [1, 2, 4, 8] and result.states == 15
    assert result.transitions == 2 + 5 + 11 and result.skipped == 2 + 3 + 5
    assert result.coverage["status.conflict"] == 1 and result.coverage["kind.acked"] == 1
    # one state is "1 state" in the rate line (stderr), not "1 states"
    config = ROOT / "traces" / "examples" / "batching_by_size.jsonl"
    assert main(["explore", str(config), "--depth", "1", "--max-states", "1"]) == 3
    assert capsys.readouterr().err.startswith("explore: 1 state, 0 transitions in ")


def _checkpoint_text(state: State) -> str:
    return canonical_json(to_state_doc(state))


def test_count_equals_a_naive_enumeration_without_dedup() -> None:
    # Every path of at most 3 operations, each stepped from the initial state with no
    # deduplication at all, and the distinct states named by their canonical checkpoint
    # (docs/CHECKPOINT.md): independent of the search's digests and its visited set.
    config = one_way()
    names = frozenset(OP_NAMES)
    fixed = alphabet(config, 1, 1, names)
    seen = set()
    paths = 0
    layer = [initial_state(config)]
    seen.add(_checkpoint_text(layer[0]))
    for _ in range(3):
        following = []
        for state in layer:
            for op in (*fixed, *state_ops(config, state, names)):
                after, observations = step(config, state, op)
                if observations == [{"kind": "skipped", "op": op.op}]:
                    continue
                paths += 1
                seen.add(_checkpoint_text(after))
                following.append(after)
        layer = following
    assert paths == 2542  # many paths, far fewer states: dedup matters
    assert len(seen) == explore(config, Bounds(3)).states == 452


def _reachable(
    config: Config, depth: int, keys: int, values: int, ops: tuple[str, ...]
) -> list[State]:
    """Every state within `depth` operations, by plain BFS (no symmetry)."""
    names = frozenset(ops)
    fixed = alphabet(config, keys, values, names)
    layer = [initial_state(config)]
    seen = {digest(frozen_state(layer[0])): layer[0]}
    for _ in range(depth):
        following = []
        for state in layer:
            for op in (*fixed, *state_ops(config, state, names)):
                after = step(config, state, op)[0]
                key = digest(frozen_state(after))
                if key not in seen:
                    seen[key] = after
                    following.append(after)
        layer = following
    return list(seen.values())


PARTITIONED = {
    "sites": [1, 2],
    "regions": {site: {"type": "partition", "total_num_buckets": 2} for site in ("1", "2")},
    "senders": [sender(batch_size=1, parallel=True, dispatcher_threads=2)],
}
"""k1 and k2 in buckets 0 and 1 (R28: Java's hash codes 3366 and 3367), so on
dispatchers 0 and 1 of a parallel sender (R29): keys are not interchangeable."""


@pytest.mark.parametrize(
    ("config_json", "depth", "ops", "rename_keys", "orbits"),
    [
        (ONE_WAY, 3, NO_PUTALL, True, 965),
        (ONE_WAY, 2, OP_NAMES, False, 332),
        # (keys were renamed here too: 1,569 states at depth 3 where the values' orbits
        # are 1,887, and even all renamings' 1,577: states missed)
        (PARTITIONED, 2, NO_PUTALL, False, 192),
    ],
)
def test_symmetry_counts_every_orbit_once(
    config_json: dict[str, Any], depth: int, ops: tuple[str, ...], rename_keys: bool, orbits: int
) -> None:
    # The reachable states' orbits under every renaming (2 keys x 2 values: 4; values
    # only with putall, or where a key's name routes it), counted by trying each renaming
    # on each state: exactly the states the reduced search visits (its canonical form
    # is complete here).
    config = parse_config(config_json)
    states = _reachable(config, depth, 2, 2, ops)
    renamings = [
        Relabel(dict(zip(("k1", "k2"), order, strict=True)) if rename_keys else {},
                dict(zip((1, 2), values, strict=True)))
        for order in itertools.permutations(("k1", "k2"))
        for values in itertools.permutations((1, 2))
    ]  # fmt: skip
    found = {min(form_bytes(frozen_state(s, r)) for r in renamings) for s in states}
    assert len(found) == orbits
    assert explore(config, Bounds(depth, 2, 2, ops, symmetry=True)).states == orbits


def test_keys_are_renamed_only_where_nothing_orders_or_routes_them_by_name() -> None:
    def apart(config_json: dict[str, Any], ops: tuple[str, ...] = NO_PUTALL) -> str | None:
        return keys_apart(parse_config(config_json), Bounds(2, 2, 2, ops, symmetry=True))

    assert apart(ONE_WAY) is None
    assert apart(ONE_WAY, OP_NAMES) == "putall writes in key order, R10"
    assert apart(PARTITIONED) == "a key's name picks its bucket in a partitioned region, R28"
    by_key = {"sites": [1, 2], "senders": [sender(dispatcher_threads=2)]}
    assert apart(by_key) == "a key's name picks its dispatcher, R29"
    by_thread = {"sites": [1, 2], "senders": [sender(dispatcher_threads=2, order_policy="thread")]}
    assert apart(by_thread) is None
    bounds = Bounds(1, 2, 2, NO_PUTALL, symmetry=True)
    config = parse_config(PARTITIONED)
    lines = summary_lines("p.json", config, bounds, explore(config, bounds), None)
    [line] = [s for s in lines if s.startswith("symmetry over")]
    assert line.startswith(
        "symmetry over values (not keys: a key's name picks its bucket in a partitioned "
        "region, R28): "
    )


def _swap(op: Op, keys: dict[str, str], values: dict[int, int]) -> Op:
    """`op` with keys and values renamed (a Put or a Tick here)."""
    if isinstance(op, Put):
        return Put(op.site, keys[op.key], {"v": values[int(op.value["v"])]})  # type: ignore[arg-type]
    return op


def _run(config: Config, ops: list[Op]) -> State:
    state = initial_state(config)
    for op in ops:
        state = step(config, state, op)[0]
    return state


def test_symmetric_states_share_one_canonical_form() -> None:
    # Every renaming of keys and values of a run reaches a state with the same canonical
    # form; the plain forms differ.
    config = one_way()
    ops: list[Op] = [Put(1, "k1", {"v": 1}), Put(2, "k2", {"v": 2}), Put(1, "k2", {"v": 1})]
    keys = key_names(2)
    forms = set()
    plain = set()
    for key_order, value_order in itertools.product(
        itertools.permutations(keys), itertools.permutations((1, 2))
    ):
        key_map = dict(zip(keys, key_order, strict=True))
        value_map = dict(zip((1, 2), value_order, strict=True))
        state = _run(config, [_swap(op, key_map, value_map) for op in ops])
        forms.add(digest(frozen_state(state, canonical_relabel(state, keys))))
        plain.add(digest(frozen_state(state)))
    assert len(plain) == 4 and len(forms) == 1


def test_ticks_reach_every_due_time() -> None:
    # ny (batch_size 100, batch time 1000) holds an event written at 0: ticks of 1 ms and
    # to its flush at 1000; once sent (at 1000), to the ack timeout at 1000 + 10000.
    config = parse_config({"sites": [1, 2], "senders": [sender()]})
    state = _run(config, [Put(1, "k1", {"v": 1})])
    assert tick_amounts(config, state) == [1, 1000]
    state = _run(config, [Put(1, "k1", {"v": 1}), Tick(1000)])
    assert tick_amounts(config, state) == [1, 10000]


# -- the planted bugs, each with its shortest trace -------------------------------------------

BUG_CASES = [
    # R20: a write (batch_size 1 ships it at once), the batch lost (drop), then settle
    # ticks to the ack timeout (10 s) and past the retry interval and resends it: the bug
    # resends without possible_duplicate (`sent.events_resent`). Three operations at
    # least: a write, a loss of the batch or its ack (a drop, or a site going down), and
    # time passing twice (timeout, retry), which one settle does; without the loss
    # settle delivers and acks and nothing is resent.
    ("ResendWithoutPossibleDuplicate", {"sites": [1, 2], "senders": [sender(batch_size=1)]},
     OP_NAMES, 1, 3),
    # R19: the delta's base is not site 2's entry. The delta needs a live entry at site 1
    # (a put first), site 2 must hold another tag for k1 (its own write: the put of site
    # 1 then loses the conflict, [1,0,1] < [1,0,2]), the batch of two (batch_size 2) must
    # be delivered and acked (one settle) for R19's decision: 4 operations.
    ("RemoveInvalidDelta", {"sites": [1, 2], "senders": [sender(batch_size=2, delta=True)]},
     OP_NAMES, 1, 4),
    # R22: site 2 must not forward an event of site 1 to site 3, which site 1's own sender
    # c serves: a write at site 1 (batch_size 1: sent at once) and its delivery to site 2.
    # Two operations: nothing is forwarded before a delivery, and nothing delivered before
    # a write.
    ("ForwardToKnownRecipients",
     {"sites": [1, 2, 3], "senders": [
         {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
         {"id": "b", "site": 2, "remote": 3, "batch_size": 1},
         {"id": "c", "site": 1, "remote": 3, "batch_size": 1}]},
     OP_NAMES, 1, 2),
    # R15: with batch_size 100 one event leaves only when it is batch_time_interval_ms
    # (1000) old; settle ticks exactly to that due time: the model sends, the bug (>)
    # does not. A write and time: 2 operations (a write alone flushes nothing).
    ("LateBatchTime", {"sites": [1, 2], "senders": [sender()]}, OP_NAMES, 1, 2),
    # R24: a dead letter needs a write, an injected failure at site 2 and the failed
    # delivery acknowledged (one settle): 3 operations; the record's value is in the
    # model's state only (P1 on the state).
    ("DeadLetterWithoutValue",
     {"sites": [1, 2], "senders": [sender(batch_size=1, failure_listener="dlq")]},
     OP_NAMES, 1, 3),
    # R16.1: an event must reach site 2 again after a later event of its origin was
    # applied there, without having been applied itself. With one key and no listener or
    # delta, the only way: two writes at site 1 in one batch (batch_size 2), the first
    # losing a conflict at site 2 (a write there first) while the second applies, then
    # the batch resent: its ack unprocessed, a tick to the timeout (retry_interval_ms 0:
    # resent in the same tick) and a second delivery (a settle would process the ack
    # instead). 3 writes + deliver + tick + deliver = 6; the model says conflict, the
    # bug duplicate. The alphabet is cut to put, deliver and tick for speed; the other
    # operations cannot shorten it with one key: settle acks, a putall needs two keys
    # (with two, `putall 1 {k1, k2}` makes it 5).
    ("HighWaterMark",
     {"sites": [1, 2], "senders": [sender(batch_size=2, retry_interval_ms=0)]},
     ("put", "deliver", "tick"), 1, 6),
]  # fmt: skip


@pytest.mark.parametrize(
    ("bug", "raw", "ops", "keys", "length"), BUG_CASES, ids=[case[0] for case in BUG_CASES]
)
def test_planted_bug_found_with_its_shortest_trace(
    bug: str, raw: dict[str, Any], ops: tuple[str, ...], keys: int, length: int
) -> None:
    impl = getattr(planted_bugs, bug)
    config = parse_config(raw)
    result = explore(config, Bounds(length, keys, 1, ops), impl)
    assert [found.property for found in result.found] == ["P1"]
    assert len(result.found[0].path) == length
    assert result.covered_depth == length - 1  # every shorter behaviour is clean
    # the real impl agrees with the model everywhere up to that depth
    assert explore(config, Bounds(length, keys, 1, ops), impl_engine).found == []


# -- the command ----------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wanconform", "explore", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--depth", "0"], "--depth: must be a positive integer, got '0'"),
        (["--depth", "two"], "--depth: must be a positive integer, got 'two'"),
        (["--depth", "2", "--keys", "10"], "--keys: at most 9, got 10"),
        (["--depth", "2", "--ops", "put,teleport"], "--ops: unknown operation 'teleport'"),
        (["--depth", "2", "--max-states", "-5"], "--max-states: must be a positive integer"),
        (["--depth", "2", "--impl", "impl:Engine"], "--impl: goes with --engine both"),
        # putall of 2..9 keys over 9 values: 10**9 - 1 - 81 operations, never built
        (
            ["--depth", "1", "--keys", "9", "--values", "9"],
            "explore: putall over 9 keys and 9 values is 999,999,918 operations to try on "
            "every state (at most 100,000 in all)",
        ),
        # 6 keys, 6 values: 7**6 - 1 - 36 = 117,612
        (
            ["--depth", "1", "--keys", "6", "--values", "6", "--ops", "putall"],
            "explore: putall over 6 keys and 6 values is 117,612 operations",
        ),
    ],
)
def test_bad_bounds_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["explore", str(EXAMPLES / "batching_by_size.jsonl"), *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("wanconform: error: " + message) and err.count("\n") == 1


@pytest.mark.parametrize("flag", [["--define", "PORT=5000"], ["--allow-partial"]])
def test_geode_flags_without_site_files_are_one_line(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # with a CONFIG they were silently ignored (generate and campaign refuse them)
    code = main(["explore", str(EXAMPLES / "batching_by_size.jsonl"), "--depth", "1", *flag])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == "wanconform: error: --define and --allow-partial go with --site (Geode files)\n"


def test_unreadable_configuration_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "c.json"
    bad.write_text('{"sites": [1, 1]}')
    assert main(["explore", str(bad), "--depth", "2"]) == 2
    assert main(["explore", str(tmp_path / "missing.json"), "--depth", "2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 2 and "Traceback" not in err
    assert err.splitlines()[1] == f"wanconform: error: {tmp_path / 'missing.json'}: no such file"


def test_clean_run_on_an_example_is_exit_0_and_deterministic(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = str(EXAMPLES / "batching_by_size.jsonl")
    assert main(["explore", trace, "--depth", "3"]) == 0
    first = capsys.readouterr().out
    assert main(["explore", trace, "--depth", "3"]) == 0
    assert capsys.readouterr().out == first  # the same bytes: no timings on stdout
    assert "clean: every behaviour of at most 3 operations explored" in first
    assert "distinct states: 388; transitions: 1,030" in first
    assert "  kind.enqueued" in first and "never reached: " in first
    # one sender, no conflation: P5 and P9 do not apply; P10 compares two runs (never here)
    assert "P2, P12 held after settle from every state; P5 not applicable: " in first
    assert (
        "; P9 not applicable: no sender has enable_batch_conflation; P10 not applicable: " in first
    )


def test_p8_is_not_applicable_under_the_thread_policy_with_two_dispatchers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SPEC §16.7: P8 is "not applicable" when a sender uses order_policy thread with N > 1
    config = tmp_path / "thread.json"
    sender = {"id": "ny", "site": 1, "remote": 2, "dispatcher_threads": 2, "order_policy": "thread"}
    config.write_text(json.dumps({"sites": [1, 2], "senders": [sender]}))
    assert main(["explore", str(config), "--depth", "1", "--keys", "1"]) == 0
    out = capsys.readouterr().out
    assert "; P8 not applicable: order_policy thread with several dispatchers (Example R29)" in out
    # no sender at all: not "thread" (every one of no sender is), as the checker says it
    config.write_text(json.dumps({"sites": [1, 2]}))
    assert main(["explore", str(config), "--depth", "1", "--keys", "1"]) == 0
    out = capsys.readouterr().out
    assert "; P8 not applicable: no sender had two events of one key processed;" in out


def test_cap_is_exit_3_and_says_the_bound_was_not_covered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["explore", str(EXAMPLES / "batching_by_size.jsonl"), "--depth", "5",
                 "--max-states", "100"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 3
    # depth 3 would pass 100 states: the figures are those of the complete levels 0-2
    assert "distinct states: 76; transitions: 158" in out
    assert "CAP REACHED: --max-states 100 passed at depth 3: the bound 5 was NOT covered" in out
    assert "clean" not in out


def test_counterexample_is_written_and_replays(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"sites": [1, 2], "senders": [sender()]}))
    out = tmp_path / "found it"  # a space: the printed command quotes it
    bug = "tools.planted_bugs:LateBatchTime"
    done = _cli(str(config), "--depth", "3", "--engine", "both", "--impl", bug, "--out", str(out))
    assert done.returncode == 1, done.stderr
    # settle's inner tick lands on 1000 for the model (sent) and 1001 for the bug
    assert "P1 at depth 2: model and impl states differ: state.time" in done.stdout
    # the coverage is that of the levels completed: depth 2 was not
    assert "coverage of every behaviour of at most 1 operation (count, " in done.stdout
    trace = read_trace(out / "counterexample.jsonl")
    assert [op.op for op in trace.ops] == ["put", "settle"]
    words = (out / "counterexample.txt").read_text()
    assert "counterexample.jsonl:3 settle" in words and "P1: model and impl diverge" in words
    figures = json.loads((out / "explore.json").read_text())
    assert figures["found"][0]["length"] == 2 and figures["covered_depth"] == 1
    replay = subprocess.run(
        [sys.executable, "-m", "wanconform", "replay", "--engine", "both", "--impl", bug,
         str(out / "counterexample.jsonl")],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert replay.returncode == 1 and "P1: FAILED" in replay.stdout
    # Issue 31 item 5: the printed command names the trace where --out put it, and
    # works from where explore was run.
    command = words.rstrip("\n").splitlines()[-1]
    assert command == (
        f"reproduce: wanconform replay --check-properties --engine both --impl {bug} "
        f"--steps '{out / 'counterexample.jsonl'}'"
    )
    reproduced = subprocess.run(
        [sys.executable, "-m", "wanconform", *shlex.split(command)[2:]],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert reproduced.returncode == 1 and "P1: FAILED" in reproduced.stdout, reproduced.stderr
    again = _cli(str(config), "--depth", "3", "--engine", "both", "--impl", bug, "--out", str(out))
    assert again.returncode == 2 and "give --force" in again.stderr


def test_report_shows_the_exploration_and_its_counterexample(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"sites": [1, 2], "senders": [sender()]}))
    html = tmp_path / "explore.html"
    code = main(["explore", str(config), "--depth", "3", "--engine", "both", "--impl",
                 "tools.planted_bugs:LateBatchTime", "--report", str(html)])  # fmt: skip
    assert code == 1
    text = html.read_text()
    assert '<section id="explore">' in text and "Exhaustive exploration" in text
    assert "stopped at a violation: clean to depth 1" in text
    assert "counterexample.jsonl" in text  # the failing trace, grouped and explained


def test_all_collects_every_violation() -> None:
    config = parse_config({"sites": [1, 2], "senders": [sender()]})
    result = explore(config, Bounds(2, collect_all=True), planted_bugs.LateBatchTime)
    # the write, then time to its batch time: by settle or by a tick to the due time
    assert [[op_text(op) for op in found.path] for found in result.found] == [
        ['put 1 k1 {"v":1}', "settle"],
        ['put 1 k1 {"v":1}', "tick 1000"],
    ]


def _figures(result: Any) -> tuple[Any, ...]:
    return (
        result.states, result.transitions, result.skipped, result.levels, result.capped,
        result.covered_depth, result.coverage, result.first_depth, result.concrete,
        [(found.property, found.message, [op_text(op) for op in found.path])
         for found in result.found],
    )  # fmt: skip


def test_spark_gives_the_local_figures_and_counterexample(spark: Any) -> None:
    # Level-synchronous BFS on local Spark (frontier by state hash, dedup by a shuffle):
    # the same counts, coverage and shortest counterexample as the local search, for a
    # planted bug (P1 on every edge, the impl loaded on the executors), with symmetry,
    # and at the cap.
    from conformance.spark.explore_spark import explore_on_spark

    late = parse_config({"sites": [1, 2], "senders": [sender()]})
    cases = [
        (late, Bounds(2, collect_all=True), "tools.planted_bugs:LateBatchTime"),
        (one_way(), Bounds(2, 2, 2, symmetry=True), None),
        (one_way(), Bounds(5, max_states=20), None),
    ]
    results = []
    for config, bounds, spec in cases:
        local = explore(config, bounds, None if spec is None else planted_bugs.LateBatchTime)
        assert _figures(explore_on_spark(spark, config, bounds, spec)) == _figures(local)
        results.append(local)
    assert [len(r.found) for r in results] == [2, 0, 0]
    assert [r.states for r in results] == [74, 332, 12] and results[2].capped


def test_geode_files_are_explored_as_import_reads_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    geode = ROOT / "tests" / "data" / "geode"
    code = main(["explore", "--site", f"1={geode / 'ln-cache.xml'}",
                 "--site", f"2={geode / 'ny-cache.xml'}", "--depth", "1"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and "wanconform: warning:" in err  # import's warnings, on stderr
    assert out.startswith("explore the --site files: sites 1, 2; 2 senders;")
    assert main(["explore", str(EXAMPLES / "batching_by_size.jsonl"), "--site", "1=x",
                 "--depth", "1"]) == 2  # fmt: skip


EXAMPLE_COUNTS = {
    "batching_by_size": (76, 158),
    "batching_by_time": (76, 158),
    "concurrent_writes_two_sites": (113, 228),
    "delta_and_full_fallback_after_wipe": (80, 160),
    "failed_event_dead_lettered": (76, 158),
    "failed_event_dead_lettered_secure": (76, 158),
    "failed_event_dropped": (76, 158),
    "forwarding_mesh": (372, 835),
    "forwarding_ring": (222, 466),
    "lost_ack_resend": (76, 158),
    "receiver_retries": (86, 184),
    "site_down_and_back": (80, 160),
    "unsupported_diamond": (364, 787),
    "wiped_origin_tags_stay_unique": (80, 160),
}


V2_EXAMPLES = (
    "order_policy_key",
    "order_policy_partition",
    "order_policy_thread",
    "parallel_dispatchers_no_global_order",
    "parallel_round_robin_and_resend",
    "alert_threshold",
    "conflation_delta_to_full",
    "conflation_in_batch_after_timeout",
    "conflation_in_queue",
    "queue_overflow",
    "restart_not_persistent",
    "restart_persistent",
    "stop_parallel_keeps_queue",
    "stop_serial_loses_queue",
    "p8_batch_conflation_reorders",  # its P8 failure needs 15 steps; depth 2 is clean
)
"""SPEC v2.0's examples (§16.3-16.5): explored clean (those of §16.3 also counted
against a plain search)."""


def test_every_example_configuration_explores_clean_to_depth_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert sorted([*EXAMPLE_COUNTS, *V2_EXAMPLES]) == sorted(
        p.stem for p in EXAMPLES.glob("*.jsonl")
    )
    for name in V2_EXAMPLES:
        assert main(["explore", str(EXAMPLES / f"{name}.jsonl"), "--depth", "2"]) == 0, name
        capsys.readouterr()
    outs = {}
    for name, (states, transitions) in EXAMPLE_COUNTS.items():
        assert main(["explore", str(EXAMPLES / f"{name}.jsonl"), "--depth", "2"]) == 0
        outs[name] = capsys.readouterr().out
        assert f"distinct states: {states}; transitions: {transitions} " in outs[name], name
    # the diamond (R23): P4 does not apply, nor P5 (site 4 reaches no one)
    out = outs["unsupported_diamond"]
    assert "P4 not applicable: the topology is unsupported (R23)" in out
    assert "P5 not applicable: not every site reaches every other one" in out


@pytest.mark.parametrize("name", ["parallel_dispatchers_no_global_order", "order_policy_thread"])
def test_r29_r31_exploration_counts_the_states_a_plain_search_finds(name: str) -> None:
    """A parallel configuration of 2 dispatchers (buckets 4) and a serial one routing by
    thread, explored to depth 3: the distinct states are those of a plain breadth-first
    search that names a state by its checkpoint text (docs/CHECKPOINT.md: everything
    that decides the future), not by the search's own digest; every path is clean."""
    from conformance.search.explore import Bounds, alphabet, explore, state_ops
    from model import enabled, initial_state, step
    from model.checkpoint import to_state_doc
    from traces.canonical import canonical_json

    config = read_trace(EXAMPLES / f"{name}.jsonl").config
    result = explore(config, Bounds(depth=3, keys=2))
    assert result.found == [] and not result.capped
    fixed = alphabet(config, 2, 1, Bounds(depth=3).ops)
    names = frozenset(Bounds(depth=3).ops)
    start = initial_state(config)
    seen = {canonical_json(to_state_doc(start))}
    frontier = [start]
    for _ in range(3):
        following = []
        for state in frontier:
            for op in [*fixed, *state_ops(config, state, names)]:
                if not enabled(config, state, op):
                    continue
                after, _ = step(config, state, op)
                text = canonical_json(to_state_doc(after))
                if text not in seen:
                    seen.add(text)
                    following.append(after)
        frontier = following
    assert result.states == len(seen)


def test_r28_r29_exploration_counts_the_branches_of_a_parallel_configuration() -> None:
    # 2 dispatchers, 4 buckets, at site 1: a put there is enqueued with its bucket
    # (R28) on the dispatcher of that bucket (R29, parallel): both from depth 1; no
    # serial route exists in this configuration.
    from conformance.search.explore import Bounds, explore

    config = read_trace(EXAMPLES / "parallel_dispatchers_no_global_order.jsonl").config
    result = explore(config, Bounds(depth=2, keys=2))
    assert result.first_depth["R28.bucket"] == 1 and result.first_depth["R29.parallel"] == 1
    assert result.coverage["R28.bucket"] == result.coverage["R29.parallel"] > 0
    assert all(result.coverage.get(f"R29.{how}", 0) == 0 for how in ("serial", "key", "thread"))


def test_a_node_rebuilt_from_its_path_is_the_node_the_search_kept() -> None:
    # Spark's executors ship paths, not states: Expander.replay(path) must give the
    # state and the property checker the local search carries along that path (the
    # checker's records the same; every expansion the same successors and findings).
    import dataclasses

    from conformance.search.explore import Expander

    shared = {"config", "supported", "_duplicate_paths", "_graph", "_connected", "_paths"}

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return plain(dataclasses.asdict(value))  # type: ignore[arg-type]
        if hasattr(value, "__slots__") and not isinstance(value, str):  # the checker's events
            return plain({name: getattr(value, name) for name in value.__slots__})
        if isinstance(value, dict):
            return sorted((repr(k), plain(v)) for k, v in value.items())
        if isinstance(value, set | frozenset):
            return sorted(repr(v) for v in value)
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    def records(checker: Any) -> Any:
        return plain({k: v for k, v in vars(checker).items() if k not in shared})

    config = parse_config({"sites": [1, 2], "senders": [sender(batch_size=2)]})
    expander = Expander(config, Bounds(3, keys=2))
    root = initial_state(config)
    frontier: list[tuple[tuple[Op, ...], State, Any]] = [((), root, expander.replay(())[1])]
    compared = with_events = 0
    for _ in range(3):
        following = []
        for path, state, checker in frontier:
            carried = expander.expand(path, state, checker)
            rebuilt_state, rebuilt_checker = expander.replay(path)
            assert digest(frozen_state(rebuilt_state)) == digest(frozen_state(state))
            assert records(rebuilt_checker) == records(checker)
            rebuilt = expander.expand(path, rebuilt_state, rebuilt_checker)
            assert [(s.position, s.key) for s in rebuilt.successors] == [
                (s.position, s.key) for s in carried.successors
            ]
            assert rebuilt.found == carried.found
            compared += 1
            with_events += bool(vars(checker)["_events"])
            following += [((*path, s.op), s.state, s.checker) for s in carried.successors]
        frontier = following[::2]  # a sample of each level
    assert compared > 40 and with_events > 20


def test_symmetry_with_nothing_to_reduce_says_why() -> None:
    """Issue 31, item 11: not a bare "reduction factor at least 1.00"."""
    bounds = Bounds(2, 1, 1, symmetry=True)
    result = explore(one_way(), bounds)
    assert result.concrete == result.states
    lines = summary_lines("x", one_way(), bounds, result, None)
    [line] = [s for s in lines if s.startswith("symmetry over")]
    assert line == (
        f"symmetry over keys and values: {result.states:,} distinct concrete states seen as "
        f"{result.states:,} canonical ones: no reduction: no two states reached differ only "
        "by a relabelling (one key and one value: nothing to relabel)"
    )


def test_a_user_engine_that_returns_no_list_is_a_p1_counterexample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forgetting `return` in apply was a traceback; it is P1 at the first operation.
    monkeypatch.setattr(sys, "path", list(sys.path))  # --impl adds the config's folder
    module = f"forgets_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(
        "from impl import Engine\n\n\nclass Forgets(Engine):\n"
        "    def apply(self, op):\n        super().apply(op)\n"
    )
    config = tmp_path / "c.json"
    config.write_text(json.dumps(ONE_WAY))
    argv = ["explore", str(config), "--depth", "2", "--ops", "put", "--engine", "both"]
    assert main([*argv, "--impl", f"{module}:Forgets"]) == 1
    assert (
        "P1 at depth 1: model and impl observations differ: impl returned None from apply, "
        "not a list of observations" in capsys.readouterr().out
    )
