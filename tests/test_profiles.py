"""Generated traces: a pure function of (seed, trace id, profile, ops), few skipped ops."""

from __future__ import annotations

import random
from itertools import islice
from pathlib import Path
from types import MappingProxyType

import pytest

from conformance.generation.profiles import (
    PROFILES,
    generate_rows,
    generate_trace,
    trace_ids,
    trace_seed,
)
from conformance.properties.checker import fully_connected
from conformance.properties.topology import analyse_topology
from impl import Engine
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.generate import steady_ops, steady_rows, steady_workload
from traces.ops import Delta, Op, Put, PutAll, Settle, SiteUp, op_to_json, parse_op
from traces.tracefile import op_line, trace_text

MAX_SKIPPED_SHARE = 0.12  # measured 0-10% per profile (README); a regression shows here


def text(seed: int, trace_id: str, profile: str, ops: int) -> str:
    config, stream = generate_trace(seed, trace_id, profile, ops)
    return trace_text(config, list(stream))


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_trace_is_a_pure_function_of_its_arguments(profile: str) -> None:
    first = text(3, f"{profile}-000001", profile, 400)
    assert text(3, f"{profile}-000001", profile, 400) == first
    assert text(4, f"{profile}-000001", profile, 400) != first  # the seed matters
    assert text(3, f"{profile}-000002", profile, 400) != first  # and the trace id
    assert len(first.splitlines()) == 401  # the configuration and exactly 400 operations


def test_the_trace_seed_hashes_all_its_arguments() -> None:
    seeds = {
        trace_seed(0, "t", "chaos", 10, GIVEN),
        trace_seed(0, "t", "chaos", 10),
        trace_seed(1, "t", "chaos", 10),
        trace_seed(0, "u", "chaos", 10),
        trace_seed(0, "t", "faults", 10),
        trace_seed(0, "t", "chaos", 11),
    }
    assert len(seeds) == 6


def test_trace_ids_take_the_profiles_in_turn() -> None:
    assert trace_ids(["steady", "dlq"], 3) == [
        ("steady-000000", "steady"),
        ("dlq-000001", "dlq"),
        ("steady-000002", "steady"),
    ]


def test_steady_is_the_bench_workload() -> None:
    config, stream = generate_trace(0, "steady-000000", "steady", 3000)
    bench_config, _ = steady_workload(1)
    assert config == bench_config
    ops = list(stream)
    assert [op.op for op in ops[:3]] == ["put", "put", "put"]
    assert [op.op for op in ops[100:103]] == ["deliver", "deliver_ack", "tick"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_few_operations_are_skipped(profile: str) -> None:
    skipped = total = 0
    for index in range(8):
        config, stream = generate_trace(9, f"{profile}-{index}", profile, 500)
        engine = Engine(config)
        for op in stream:
            total += 1
            skipped += engine.apply(op) == [{"kind": "skipped", "op": op.op}]
    assert total == 4000
    assert skipped / total <= MAX_SKIPPED_SHARE


def test_multisite_draws_every_shape_and_flags_the_diamond() -> None:
    sizes, unsupported = set(), 0
    for index in range(60):
        config, _ = generate_trace(0, f"multisite-{index}", "multisite", 10)
        sizes.add(len(config.sites))
        if not analyse_topology(config).supported:
            unsupported += 1
            assert len(config.sites) == 4  # the diamond (R23)
    assert sizes == {3, 4, 5, 6}
    assert 0 < unsupported < 20


def test_dlq_uses_the_listener_secure_mode_and_every_retry_setting() -> None:
    listeners, secure, retries = set(), False, set()
    for index in range(40):
        config, stream = generate_trace(0, f"dlq-{index}", "dlq", 200)
        listeners |= {s.failure_listener for s in config.senders}
        secure = secure or any(s.dlq_secure for s in config.senders)
        retries |= {r.retry_attempts for r in config.receivers}
        assert any(op.op == "fail" for op in stream)
    assert listeners == {None, "dlq"}
    assert secure
    assert retries == {-1, 0, 1, 2, 3}


def test_faults_lose_messages_and_wipe_sites() -> None:
    kinds: set[str] = set()
    wipes = 0
    for index in range(10):
        config, stream = generate_trace(0, f"faults-{index}", "faults", 400)
        assert fully_connected(config) or len(config.sites) == 3  # pair both ways, or chain
        for op in stream:
            kinds.add(op.op)
            wipes += getattr(op, "wipe", False)
    assert {"drop", "drop_ack", "site_down", "site_up", "settle", "tick"} <= kinds
    assert wipes > 0


# -- the fast rows are the reference lines, byte for byte ---------------------------------


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_generate_rows_are_the_canonical_lines_of_generate_trace(profile: str) -> None:
    for index in range(3):
        trace_id = f"{profile}-{index:06d}"
        config, stream = generate_trace(5, trace_id, profile, 1500)
        ops = list(stream)
        rows_config, stream_rows = generate_rows(5, trace_id, profile, 1500)
        rows = list(stream_rows)
        assert rows_config == config
        assert [row[4] for row in rows] == trace_text(config, ops).splitlines()[1:]
        typed = [(op.op, *(getattr(op, f, None) for f in ("site", "sender", "key"))) for op in ops]
        assert [row[:4] for row in rows] == typed


@pytest.mark.parametrize(("keys", "batch_size", "seed"), [(10, 3, 1), (16, 100, 2), (17, 7, 3)])
def test_steady_rows_draw_what_steady_ops_draws(keys: int, batch_size: int, seed: int) -> None:
    # key counts around a power of two: the rejection sampling of randrange differs there
    ops = list(islice(steady_ops(random.Random(seed), keys, batch_size), 3000))
    rows = list(islice(steady_rows(random.Random(seed), keys, batch_size), 3000))
    assert [row[4] for row in rows] == [canonical_json(op_to_json(op)) for op in ops]
    assert {row[0] for row in rows} == {"put", "delta", "deliver", "deliver_ack", "tick"}


@pytest.mark.parametrize(
    "op",
    [
        Put(1, "k", {"a": "é", "b": 1}),  # non-ASCII: json.dumps escapes it (R4)
        Put(1, "k", {"a": "𝄞"}),  # outside the BMP: a surrogate pair
        Put(1, "k", {"a": "\x7f"}),  # DEL: escaped by json.dumps only
        Put(1, "k", {"a": "line\nbreak", "b": 'quote"d', "c": "back\\slash"}),
        Put(1, "k", MappingProxyType({"b": True, "a": None})),  # a Mapping that is no dict
        PutAll(2, {"z": {"b": -(2**63)}, "a": {"c": 2**63 - 1}}),
        Delta(1, "k\u2028", {"f": 0}),
        SiteUp(3, True),
        Settle(),
    ],
)
def test_op_line_is_canonical_json_of_op_to_json(op: Op) -> None:
    assert op_line(op) == canonical_json(op_to_json(op))


# -- on a configuration given by the user (issue 16: --config / --site) -------------------

GIVEN = parse_config(
    {
        "sites": [5, 7, 200],
        "senders": [
            {"id": "east", "site": 5, "remote": 7, "batch_size": 3, "ack_timeout_ms": 700},
            {"id": "west", "site": 7, "remote": 200, "batch_size": 1, "delta": True},
            {"id": "back", "site": 200, "remote": 5, "failure_listener": "dlq"},
        ],
        "receivers": [{"site": 200, "retry_attempts": 2}],
    }
)
"""A one-way ring of three sites with odd dsids, none of which a profile draws alone."""

MIXES = {
    "steady": {"put", "delta", "tick", "deliver", "deliver_ack"},
    "faults": {"put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "drop",
               "drop_ack", "site_down", "site_up", "settle"},
    "multisite": {"put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "drop",
                  "drop_ack", "settle"},
    "dlq": {"put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "fail",
            "settle", "redeliver"},
    "chaos": {"put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "drop",
              "drop_ack", "site_down", "site_up", "settle", "fail", "redeliver"},
    "parallel": {"put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "drop",
                 "drop_ack", "site_down", "site_up", "settle"},
    "lifecycle": {"put", "delta", "destroy", "putall", "tick", "deliver", "deliver_ack", "drop",
                  "drop_ack", "site_down", "site_up", "settle", "fail", "redeliver",
                  "restart_sender", "stop_sender", "start_sender", "pause_sender",
                  "resume_sender"},
}  # fmt: skip


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_on_a_given_config_the_profile_decides_only_the_mix(profile: str) -> None:
    config, stream = generate_trace(2, f"{profile}-000003", profile, 1500, GIVEN)
    assert config is GIVEN  # kept exactly: sites, senders, batch sizes, timeouts
    ops = [op_to_json(op) for op in stream]
    assert len(ops) == 1500
    assert {op["op"] for op in ops} == MIXES[profile]
    assert {op["site"] for op in ops if "site" in op} <= {5, 7, 200}
    assert {op["sender"] for op in ops if "sender" in op} == {"east", "west", "back"}
    engine = Engine(GIVEN)
    skipped = 0
    for document in ops:
        observations = engine.apply(parse_op(document, GIVEN))
        skipped += bool(observations) and observations[0]["kind"] == "skipped"
    assert skipped <= MAX_SKIPPED_SHARE * len(ops)


@pytest.mark.parametrize("profile", ["steady", "chaos"])
def test_on_a_given_config_a_trace_is_a_pure_function_of_its_arguments(profile: str) -> None:
    def text(seed: int, config: Config | None) -> str:
        made, stream = generate_trace(seed, f"{profile}-000001", profile, 300, config)
        return trace_text(made, list(stream))

    first = text(3, GIVEN)
    assert text(3, GIVEN) == first
    assert text(4, GIVEN) != first
    other = parse_config({**GIVEN.to_json(), "sites": [5, 7, 200, 201]})
    assert text(3, other) != first  # the configuration is part of the trace's seed
    rows_config, rows = generate_rows(3, f"{profile}-000001", profile, 300, GIVEN)
    assert rows_config is GIVEN
    assert "\n".join(row[4] for row in rows) + "\n" == first.split("\n", 1)[1]


def test_a_profile_the_given_configuration_leaves_idle_is_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 31, item 10: `--profile dlq` on a configuration with no dead-letter listener
    makes no dead letter: said once, before any work."""
    from wanconform.cli import build_parser
    from wanconform.cmd_generate import check_generation_arguments

    examples = Path(__file__).resolve().parent.parent / "traces" / "examples"
    plain = str(examples / "batching_by_size.jsonl")
    for config, profiles, expected in [
        (plain, "steady,dlq,parallel", ["dlq", "parallel"]),
        (plain, "steady", []),
        (str(examples / "failed_event_dead_lettered.jsonl"), "dlq", []),
    ]:
        words = ["generate", "--config", config, "--profile", profiles, "--out", "x"]
        check_generation_arguments(build_parser(words).parse_args(words))
        warned = [line.split()[3] for line in capsys.readouterr().err.splitlines()]
        assert warned == expected
    words = ["generate", "--config", plain, "--profile", "dlq", "--out", "x"]
    check_generation_arguments(build_parser(words).parse_args(words))
    assert capsys.readouterr().err == (
        f"wanconform: warning: profile dlq on the configuration of {plain}: no sender has a "
        "dead-letter failure listener (failure_listener dlq, R24), so its injected failures "
        "are dropped (R18) and no dead letter is written\n"
    )


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("chaos,", "an empty name in 'chaos,'"),
        ("steady,,dlq", "an empty name in 'steady,,dlq'"),
        ("", "give at least one profile"),
        ("steady,chaoss", None),  # the unknown one, by check_profile
    ],
)
def test_an_empty_or_unknown_profile_in_the_list_is_refused(
    given: str, problem: str | None
) -> None:
    # as explore --ops refuses `put,,tick`: a typo is not dropped without a word
    from conformance.generation.profiles import PROFILES
    from traces.errors import WanconformError
    from wanconform.cmd_generate import profile_list

    with pytest.raises(WanconformError) as caught:
        profile_list(given)
    names = ", ".join(PROFILES)
    expected = (
        f"--profile: {problem} (one of {names})"
        if problem
        else f"--profile: unknown profile 'chaoss' (one of {names})"
    )
    assert str(caught.value) == expected
    assert profile_list(" steady , dlq,steady") == ["steady", "dlq", "steady"]  # in turn
