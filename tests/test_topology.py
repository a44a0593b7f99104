"""R22 forwarding paths and the R23 verdict: static analysis, CLI, SVG, and the model.

The static analysis (`conformance.properties.topology`) is pinned on the topologies the documents
name: fully connected mesh, ring, star rooted anywhere, chain, and the unsupported
diamond 1->2, 1->3, 2->4, 3->4. A property test replays random small topologies on the
reference model and checks that it agrees with the static verdict.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from itertools import pairwise, permutations
from math import dist
from pathlib import Path

import defusedxml.ElementTree as SafeET
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import conformance.properties.topology as topology
from conformance.properties.topology import (
    Delivery,
    TopologyAnalysis,
    TopologyTooLargeError,
    UnreachablePair,
    analyse_topology,
    delivery_paths,
    sender_graph,
)
from reports.topology_svg import _overlap, _Taken, render_topology_svg
from traces.config import Config, parse_config
from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "traces" / "examples" / "topologies"
GEODE = Path(__file__).resolve().parent / "data" / "geode"


def wan(edges: list[tuple[int, int]], sites: list[int] | None = None) -> Config:
    """A configuration with one sender per edge, named `s{site}to{remote}`."""
    if sites is None:
        sites = sorted({site for edge in edges for site in edge})
    senders = [{"id": f"s{u}to{v}", "site": u, "remote": v} for u, v in edges]
    return parse_config({"sites": sites, "senders": senders})


def mesh(sites: list[int]) -> Config:
    return wan([(u, v) for u in sites for v in sites if u != v], sites)


def star(hub: int, sites: list[int]) -> Config:
    spokes = [s for s in sites if s != hub]
    return wan([edge for s in spokes for edge in ((hub, s), (s, hub))], sites)


DIAMOND = wan([(1, 2), (1, 3), (2, 4), (3, 4)])


def all_paths(analysis: TopologyAnalysis) -> dict[tuple[int, int], tuple[tuple[int, ...], ...]]:
    return {(d.origin, d.site): d.paths for d in analysis.deliveries}


# --- static analysis: exact results ------------------------------------------------------


@pytest.mark.parametrize("sites", [[1, 2, 3], [1, 2, 3, 4]], ids=["mesh3", "mesh4"])
def test_r23_fully_connected_mesh_is_supported_with_direct_paths_only(sites: list[int]) -> None:
    analysis = analyse_topology(mesh(sites))
    assert analysis.supported
    assert analysis.unreachable == ()
    # The origin's recipients set already names every site: nothing is re-forwarded.
    assert all_paths(analysis) == {(o, s): ((o, s),) for o in sites for s in sites if o != s}


def test_r23_ring_is_supported_and_stops_before_the_origin() -> None:
    analysis = analyse_topology(wan([(1, 2), (2, 3), (3, 4), (4, 1)]))
    assert analysis.supported
    assert analysis.unreachable == ()
    ring = [1, 2, 3, 4]
    expected = {}
    for start in range(4):
        order = ring[start:] + ring[:start]
        for length in range(2, 5):
            expected[(order[0], order[length - 1])] = (tuple(order[:length]),)
    assert all_paths(analysis) == expected


def test_r23_bidirectional_ring_of_four_is_unsupported() -> None:
    # Both neighbours of the origin forward to the opposite site: a diamond in disguise.
    analysis = analyse_topology(
        wan([(1, 2), (2, 1), (2, 3), (3, 2), (3, 4), (4, 3), (4, 1), (1, 4)])
    )
    assert not analysis.supported
    assert [(d.origin, d.site, d.paths) for d in analysis.duplicates] == [
        (1, 3, ((1, 2, 3), (1, 4, 3))),
        (2, 4, ((2, 1, 4), (2, 3, 4))),
        (3, 1, ((3, 2, 1), (3, 4, 1))),
        (4, 2, ((4, 1, 2), (4, 3, 2))),
    ]


@pytest.mark.parametrize("hub", [1, 2, 3, 4])
def test_r23_star_rooted_at_any_site_is_supported(hub: int) -> None:
    sites = [1, 2, 3, 4]
    analysis = analyse_topology(star(hub, sites))
    assert analysis.supported
    assert analysis.unreachable == ()
    spokes = [s for s in sites if s != hub]
    expected: dict[tuple[int, int], tuple[tuple[int, ...], ...]]
    expected = {(hub, s): ((hub, s),) for s in spokes}
    for a, b in permutations(spokes, 2):
        expected[(a, hub)] = ((a, hub),)
        expected[(a, b)] = ((a, hub, b),)  # the hub forwards; the spokes never do
    assert all_paths(analysis) == expected


def test_r23_one_way_chain_is_supported_and_reports_unreachable_pairs() -> None:
    analysis = analyse_topology(wan([(1, 2), (2, 3), (3, 4)]))
    assert analysis.supported
    assert all_paths(analysis) == {
        (1, 2): ((1, 2),),
        (1, 3): ((1, 2, 3),),
        (1, 4): ((1, 2, 3, 4),),
        (2, 3): ((2, 3),),
        (2, 4): ((2, 3, 4),),
        (3, 4): ((3, 4),),
    }
    assert analysis.unreachable == tuple(
        UnreachablePair(o, s) for o, s in [(2, 1), (3, 1), (3, 2), (4, 1), (4, 2), (4, 3)]
    )


def test_r23_two_way_chain_is_a_tree_and_supported() -> None:
    analysis = analyse_topology(wan([(1, 2), (2, 1), (2, 3), (3, 2), (3, 4), (4, 3)]))
    assert analysis.supported
    assert analysis.unreachable == ()
    assert all_paths(analysis)[(4, 1)] == ((4, 3, 2, 1),)
    assert all_paths(analysis)[(1, 4)] == ((1, 2, 3, 4),)


def test_r23_diamond_is_unsupported_and_names_both_paths_to_site_4() -> None:
    analysis = analyse_topology(DIAMOND)
    assert not analysis.supported
    assert analysis.duplicates == (Delivery(1, 4, ((1, 2, 4), (1, 3, 4))),)
    assert analysis.to_json() == {
        "supported": False,
        "duplicates": [{"origin": 1, "site": 4, "paths": [[1, 2, 4], [1, 3, 4]]}],
        "unreachable": [
            {"origin": o, "site": s}
            for o, s in [(2, 1), (2, 3), (3, 1), (3, 2), (4, 1), (4, 2), (4, 3)]
        ],
    }
    assert analysis.duplicate_edges() == {(1, 2), (2, 4), (1, 3), (3, 4)}


def test_r22_duplicate_site_forwards_from_both_arrivals() -> None:
    # Site 4 of the diamond forwards to 5 on each arrival; 5 is reached twice as well.
    analysis = analyse_topology(wan([(1, 2), (1, 3), (2, 4), (3, 4), (4, 5)]))
    assert all_paths(analysis)[(1, 5)] == ((1, 2, 4, 5), (1, 3, 4, 5))


def test_r22_recipients_as_received_decide_forwarding_not_reachability() -> None:
    # 1 ships to 2 and 3, so the copy at 2 names 3 as a recipient: 2 does not forward
    # to 3 although 2 -> 3 is an edge. Plain graph paths would count 1 -> 2 -> 3 too.
    analysis = analyse_topology(wan([(1, 2), (1, 3), (2, 3)]))
    assert analysis.supported
    assert all_paths(analysis)[(1, 3)] == ((1, 3),)
    assert all_paths(analysis)[(2, 3)] == ((2, 3),)


def test_no_senders_means_every_pair_is_unreachable() -> None:
    analysis = analyse_topology(parse_config({"sites": [1, 2, 3]}))
    assert analysis.supported
    assert analysis.deliveries == ()
    assert len(analysis.unreachable) == 6


def test_sender_graph_has_one_edge_per_sender_with_its_id() -> None:
    graph = sender_graph(DIAMOND)
    assert sorted(graph.nodes) == [1, 2, 3, 4]
    assert sorted(graph.edges(data="sender")) == [
        (1, 2, "s1to2"),
        (1, 3, "s1to3"),
        (2, 4, "s2to4"),
        (3, 4, "s3to4"),
    ]


def test_enumeration_is_bounded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(topology, "MAX_ARRIVALS_PER_ORIGIN", 2)
    with pytest.raises(TopologyTooLargeError, match="origin 1"):
        delivery_paths(sender_graph(DIAMOND), 1)
    source = write_json(tmp_path / "diamond.json", DIAMOND.to_json())  # one line naming it
    assert run_cli(capsys, "topology", source) == (
        2, "", f"wanconform: error: {source}: origin 1: more than 2 arrivals to enumerate; "
        "the topology is too large for path enumeration\n",
    )  # fmt: skip


# --- property: paths are simple, and the static verdict is the model's --------------------


@st.composite
def random_topologies(draw: st.DrawFn) -> Config:
    """2-5 sites with arbitrary dsids and any set of senders; sender ids in random order."""
    sites = sorted(draw(st.sets(st.integers(1, 12), min_size=2, max_size=5)))
    pairs = [(u, v) for u in sites for v in sites if u != v]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    names = draw(st.permutations(range(len(edges))))  # R22 offers in sorted id order
    senders = [{"id": f"g{names[i]:02d}", "site": u, "remote": v} for i, (u, v) in enumerate(edges)]
    return parse_config({"sites": sites, "senders": senders})


@given(random_topologies())
def test_r22_paths_are_simple_sender_walks(config: Config) -> None:
    graph = sender_graph(config)
    for delivery in analyse_topology(config).deliveries:
        for path in delivery.paths:
            assert path[0] == delivery.origin and path[-1] == delivery.site
            assert len(set(path)) == len(path) <= len(config.sites)
            assert all(graph.has_edge(a, b) for a, b in pairwise(path))


def replay_one_put_per_origin(config: Config) -> Counter[tuple[int, int]]:
    """Put one key per origin, settle, and count each (origin, site) arrival (ok+duplicate).

    Keys differ per origin, so no arrival is a conflict (R16) that would stop forwarding.
    """
    from model import Engine  # the reference model (R1-R39)
    from traces.ops import Put, Settle

    engine = Engine(config)
    origin_of: dict[str, int] = {}
    for origin in config.sites:
        for observation in engine.apply(Put(site=origin, key=f"k{origin}", value={"v": origin})):
            if observation["kind"] == "enqueued":
                origin_of[observation["event"]] = origin
    arrivals: Counter[tuple[int, int]] = Counter()
    for observation in engine.apply(Settle()):
        if observation["kind"] != "applied":
            continue
        assert observation["status"] in ("ok", "duplicate"), observation
        arrivals[(origin_of[observation["event"]], observation["site"])] += 1
    return arrivals


@given(random_topologies())
@example(DIAMOND)
@example(wan([(1, 2), (2, 1), (2, 3), (3, 2), (3, 4), (4, 3), (4, 1), (1, 4)]))
@example(star(2, [1, 2, 3, 4]))
def test_r23_static_verdict_agrees_with_the_reference_model(config: Config) -> None:
    analysis = analyse_topology(config)
    arrivals = replay_one_put_per_origin(config)
    static = all_paths(analysis)
    assert set(arrivals) == set(static)  # the same (origin, site) pairs are reached
    assert all(origin != site for origin, site in arrivals)  # P4: never back to the origin
    model_supported = all(count == 1 for count in arrivals.values())
    assert model_supported == analysis.supported
    for pair, count in arrivals.items():
        # The model forwards only first arrivals (R16 duplicate), so it may see fewer.
        assert 1 <= count <= len(static[pair])


# --- the command line --------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_json(path: Path, document: object) -> str:
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


EXAMPLE_VERDICTS = {
    "mesh-3": 0,
    "mesh-4": 0,
    "ring-4": 0,
    "star-4": 0,
    "chain-4": 0,
    "hybrid-mesh-and-spoke-4": 0,
    "bidirectional-ring-4": 1,
    "diamond": 1,
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_VERDICTS))
def test_cli_example_topologies(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = run_cli(capsys, "topology", str(EXAMPLES / f"{name}.json"), "--json")
    assert code == EXAMPLE_VERDICTS[name]
    assert err == ""
    assert out.count("\n") == 1
    assert json.loads(out)["supported"] is (code == 0)


def test_cli_json_is_one_sorted_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write_json(tmp_path / "diamond.json", DIAMOND.to_json())
    code, out, err = run_cli(capsys, "topology", source, "--json")
    assert (code, err) == (1, "")
    assert (
        out
        == json.dumps(analyse_topology(DIAMOND).to_json(), sort_keys=True, separators=(",", ":"))
        + "\n"
    )
    assert json.loads(out)["duplicates"] == [
        {"origin": 1, "site": 4, "paths": [[1, 2, 4], [1, 3, 4]]}
    ]


def test_cli_accepts_config_wrapper_and_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wrapped = write_json(tmp_path / "wrapped.json", {"config": mesh([1, 2, 3]).to_json()})
    trace = tmp_path / "mesh.jsonl"
    trace.write_text(
        json.dumps({"config": mesh([1, 2, 3]).to_json()})
        + "\n"
        + json.dumps({"op": "put", "site": 1, "key": "k", "value": {"f": 1}})
        + "\n"
        + json.dumps({"op": "settle"})
        + "\n",
        encoding="utf-8",
    )
    # with a byte order mark, as Windows editors write one (docs/COMMANDS.md: accepted)
    marked = tmp_path / "marked.json"
    marked.write_text(json.dumps(mesh([1, 2, 3]).to_json(), indent=2), encoding="utf-8-sig")
    marked_trace = tmp_path / "marked.jsonl"
    marked_trace.write_text(trace.read_text(encoding="utf-8"), encoding="utf-8-sig")
    for source in (wrapped, str(trace), str(marked), str(marked_trace)):
        code, out, _ = run_cli(capsys, "topology", source, "--json")
        assert code == 0
        assert json.loads(out) == {"supported": True, "duplicates": [], "unreachable": []}


def test_cli_table_names_duplicates_and_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "topology", str(EXAMPLES / "diamond.json"))
    assert code == 1
    assert "1 -> 2 -> 4; 1 -> 3 -> 4   <-- DUPLICATE (R23)" in out
    assert "Verdict: UNSUPPORTED (R23)" in out
    assert "unreachable" in out


def test_cli_table_for_a_supported_ring(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "topology", str(EXAMPLES / "ring-4.json"))
    assert code == 0
    assert "1 -> 2 -> 3 -> 4" in out
    assert "Verdict: supported (R23)" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "bad.json:1: not valid JSON"),
        (
            '{"sites": [1, 2], "senders": [{"id": "x", "site": 1, "remote": 9}]}',
            "bad.json: senders[0].remote: site 9 is not in 'sites'",
        ),
        ('{"config": {"sites": []}}', "bad.json: config.sites: must be a non-empty list"),
        ("[1, 2]", "not a JSON configuration or trace; for Geode cache.xml"),
        ("", "empty file"),
        ('{"config": {"sites": [1]}}\n{"op": "bogus"}\n', "bad.json:2:"),
        ('{"sites": [1], "sites": [2]}', "appears twice"),
        (  # was read as a trace: "bad.json:1: ... Expecting property name ... end of the line"
            '{"sites": [1, 2],\n "senders": []\n}\nxx\n',
            "bad.json:4: not valid JSON: Extra data at column 1",
        ),
        (  # the replay's message and line; was "bad.json:2: ... Unterminated string"
            '{"config": {"sites": [1]}}\n{"op": "put", "site": 1, "key": "a\fb", "value": {}}\n',
            "bad.json:2: not valid JSON: Invalid control character at column 35",
        ),
        (  # a lone CR ends no line of a trace (SPEC §12, docs/COMMANDS.md): was accepted
            '{"config": {"sites": [1]}}\r{"op": "settle"}\r',
            "bad.json:1: not valid JSON: Extra data at column 28",
        ),
        (
            '{"sites": [true]}',
            "bad.json: sites[0]: must be an integer from 1 to 255 (R1), got true",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    svg = tmp_path / "out.svg"
    code, out, err = run_cli(capsys, "topology", str(path), "--json", "--svg", str(svg))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("wanconform: error: ")
    assert message in err
    assert sorted(os.listdir(tmp_path)) == ["bad.json"]  # no SVG, no temporary file


def test_a_trace_with_a_line_separator_in_a_key_is_read_as_replay_reads_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # U+2028 unescaped in a string is valid JSON and breaks no JSON Lines line; replay
    # accepted the trace, topology and explore split its line there ("Unterminated string")
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}}\n'
        '{"op": "put", "site": 1, "key": "a\u2028b", "value": {}}\n',
        encoding="utf-8",
    )
    assert run_cli(capsys, "replay", str(path))[0] == 0
    code, out, err = run_cli(capsys, "topology", str(path), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["supported"] is True


def test_cli_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "topology", str(tmp_path / "nope.json"))
    assert (code, out) == (2, "")
    assert err == f"wanconform: error: {tmp_path / 'nope.json'}: no such file\n"


def test_cli_needs_exactly_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "topology")
    assert code == 2 and "neither" in err
    code, _, err = run_cli(capsys, "topology", str(EXAMPLES / "mesh-3.json"), "--site", "1=x.xml")
    assert code == 2 and "both" in err


@pytest.mark.parametrize("flags", [["--define", "PORT=5000"], ["--allow-partial"]])
def test_cli_refuses_geode_only_flags_with_a_configuration(
    capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    # they shape the import of --site files; a configuration has no ${KEY} to fill
    code, out, err = run_cli(capsys, "topology", str(EXAMPLES / "mesh-3.json"), *flags)
    assert (code, out) == (2, "")
    assert err == "wanconform: error: --define and --allow-partial go with --site (Geode files)\n"


def test_cli_topology_of_imported_geode_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "topology",
        "--json",
        "--site",
        f"1={GEODE / 'diamond-1-cache.xml'}",
        "--site",
        f"2={GEODE / 'diamond-2-cache.xml'}",
        "--site",
        f"3={GEODE / 'diamond-3.gfsh'}",
        "--site",
        f"4={GEODE / 'diamond-4.gfsh'}",
    )
    assert code == 1
    assert json.loads(out) == analyse_topology(DIAMOND).to_json()
    assert err == ""  # nothing ignored in these files


def test_cli_import_warnings_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "topology",
        "--json",
        "--site",
        f"1={GEODE / 'ln-cache.xml'}",
        "--site",
        f"2={GEODE / 'ny-cache.xml'}",
    )
    assert code == 0
    assert json.loads(out)["supported"] is True
    assert "wanconform: warning: " in err and "<gateway-event-filter>" in err


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("billion-laughs.xml", "declares the XML entity 'lol'"),
        ("external-entity.xml", "declares the XML entity 'secret'"),
        ("external-dtd.xml", "external DTD 'http://attacker.example/cache.dtd'"),
        ("malformed.xml", "malformed.xml:4: not well-formed XML"),
        ("unknown-option.gfsh", "unknown option --batch-sise (did you mean --batch-size?)"),
    ],
)
def test_cli_hostile_or_bad_geode_file_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, message: str
) -> None:
    svg = tmp_path / "out.svg"
    code, out, err = run_cli(
        capsys,
        "topology",
        "--svg",
        str(svg),
        "--site",
        f"1={GEODE / name}",
        "--site",
        f"2={GEODE / 'ny.gfsh'}",
    )
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err and name in err
    assert not svg.exists()


# --- SVG ---------------------------------------------------------------------------------


def test_svg_is_well_formed_deterministic_and_highlights_duplicates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for out in (first, second):
        code, _, _ = run_cli(capsys, "topology", str(EXAMPLES / "diamond.json"), "--svg", str(out))
        assert code == 1
    data = first.read_bytes()
    assert data == second.read_bytes()
    # no temporary files left; the ledger of what wanconform wrote (traces/outputs.py)
    assert sorted(os.listdir(tmp_path)) == [".wanconform-written.json", "a.svg", "b.svg"]
    root = SafeET.fromstring(data)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    red = [p for p in root.iterfind(".//svg:path", ns) if "duplicate" in p.get("class", "")]
    assert len(red) == 4  # the four hops of 1->2->4 and 1->3->4
    texts = ["".join(t.itertext()) for t in root.iterfind(".//svg:text", ns)]
    assert "site 4 gets each event of site 1 2 times: 1 → 2 → 4; 1 → 3 → 4" in texts
    assert "from site 4: sites 1, 2, 3" in texts
    assert b"http" not in data.replace(b"http://www.w3.org/2000/svg", b"")  # no external refs


def test_svg_escapes_sender_ids() -> None:
    config = parse_config({"sites": [1, 2], "senders": [{"id": '<b>&"x"', "site": 1, "remote": 2}]})
    svg = render_topology_svg(analyse_topology(config))
    root = SafeET.fromstring(svg.encode("utf-8"))
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert '<b>&"x"' in texts
    assert "<b>" not in svg


def test_control_characters_in_sender_ids_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # XML allows no control character, not even as &#1;: the SVG shows it as the table does
    senders = [{"id": "a\x01", "site": 1, "remote": 2}, {"id": "b\n--", "site": 2, "remote": 1}]
    path = write_json(tmp_path / "c.json", {"sites": [1, 2], "senders": senders})
    svg = tmp_path / "c.svg"
    code, out, err = run_cli(capsys, "topology", path, "--svg", str(svg))
    assert code == 0
    assert out.splitlines()[1:3] == ["  sender a\\x01: 1 -> 2", "  sender b\\n--: 2 -> 1"]
    assert err == f"wanconform: wrote {svg}\n"
    root = SafeET.fromstring(svg.read_bytes())
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "a\\x01" in texts and "b\\n--" in texts
    titles = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert "sender a\\x01: site 1 to site 2" in titles


@pytest.mark.parametrize("sites", [[7], [1, 2], [1, 2, 3, 4, 5]])
def test_svg_renders_any_number_of_sites(sites: list[int]) -> None:
    svg = render_topology_svg(analyse_topology(mesh(sites)))
    root = SafeET.fromstring(svg.encode("utf-8"))
    circles = list(root.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == len(sites)
    assert svg == render_topology_svg(analyse_topology(mesh(sites)))


def test_svg_write_failure_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "missing-folder" / "out.svg"
    code, out, err = run_cli(
        capsys, "topology", str(EXAMPLES / "mesh-3.json"), "--svg", str(target)
    )
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "cannot write" in err


def svg_texts(svg: str) -> list[str]:
    root = SafeET.fromstring(svg.encode("utf-8"))
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_cli_svg_says_where_it_wrote(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "ring.svg"
    code, _, err = run_cli(capsys, "topology", str(EXAMPLES / "ring-4.json"), "--svg", str(out))
    assert code == 0
    assert err == f"wanconform: wrote {out}\n"
    assert out.exists()


def test_cli_keeps_the_users_sender_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Two sites whose senders are both called "wan", as Geode's per-site ids allow.
    for site, remote in ((1, 2), (2, 1)):
        (tmp_path / f"{site}.gfsh").write_text(
            f"start server --J=-Dgemfire.distributed-system-id={site}\ncreate gateway-receiver\n"
            f"create gateway-sender --id=wan --remote-distributed-system-id={remote}\n"
            "create region --name=r --gateway-sender-id=wan\n",
            encoding="utf-8",
        )
    out = tmp_path / "two.svg"
    code, table, err = run_cli(
        capsys, "topology", "--site", str(tmp_path / "1.gfsh"), "--site",
        str(tmp_path / "2.gfsh"), "--svg", str(out),
    )  # fmt: skip
    assert code == 0
    assert "  sender 1/wan: 1 -> 2  (Geode id 'wan' at site 1)" in table
    assert "  sender 2/wan: 2 -> 1  (Geode id 'wan' at site 2)" in table
    assert err.count("named '1/wan' in the model") == 1
    texts = svg_texts(out.read_text(encoding="utf-8"))
    assert texts.count("wan") == 2  # both arrows labelled with the id as written
    assert any("SITE/ID in the configuration" in text for text in texts)


def label_boxes(drawing: object) -> list[tuple[float, float, float, float]]:
    from reports.topology_svg import _label_box

    arrows = drawing.arrows  # type: ignore[attr-defined]
    return [_label_box((float(a.label_x), float(a.label_y)), a.label) for a in arrows]


@pytest.mark.parametrize(
    "config",
    [
        wan([(u, u % 12 + 1) for u in range(1, 13)] + [(u % 12 + 1, u) for u in range(1, 13)]),
        star(1, list(range(1, 13))),
    ],
    ids=["bidirectional-ring-12", "star-12"],
)
def test_svg_twelve_sites_labels_overlap_neither_sites_nor_each_other(config: Config) -> None:
    from reports.topology_svg import SITE_RADIUS, _overlap, topology_drawing

    drawing = topology_drawing(analyse_topology(config))
    boxes = label_boxes(drawing)
    sites = [
        (float(s.x) - SITE_RADIUS, float(s.y) - SITE_RADIUS, float(s.x) + SITE_RADIUS,
         float(s.y) + SITE_RADIUS)
        for s in drawing.sites
    ]  # fmt: skip
    assert len(boxes) == len(config.senders)
    for index, box in enumerate(boxes):
        assert all(_overlap(box, site) == 0 for site in sites)
        assert all(_overlap(box, other) == 0 for other in boxes[index + 1 :])
    # Neighbouring sites stay well apart.
    xs = [(float(s.x), float(s.y)) for s in drawing.sites]
    assert min(dist(a, b) for a, b in pairwise([*xs, xs[0]])) > 6 * SITE_RADIUS


def test_svg_bidirectional_pairs_are_arcs_and_one_way_senders_straight() -> None:
    from reports.topology_svg import topology_drawing

    drawing = topology_drawing(analyse_topology(wan([(1, 2), (2, 1), (2, 3)])))
    by_pair = {(a.site, a.remote): a.path for a in drawing.arrows}

    def control_offset(path: str) -> float:
        """How far the curve's control point lies off the straight line start-end."""
        x0, y0, cx, cy, x1, y1 = (float(v) for v in path.split() if v not in ("M", "Q"))
        cross = (x1 - x0) * (cy - y0) - (y1 - y0) * (cx - x0)
        return abs(cross) / dist((x0, y0), (x1, y1))

    assert control_offset(by_pair[(1, 2)]) > 20 and control_offset(by_pair[(2, 1)]) > 20
    assert control_offset(by_pair[(2, 3)]) < 1


def test_svg_marks_duplicate_receivers_and_caps_the_legend() -> None:
    from reports.topology_svg import MAX_LISTED_DUPLICATES

    ring = wan([(u, u % 12 + 1) for u in range(1, 13)] + [(u % 12 + 1, u) for u in range(1, 13)])
    analysis = analyse_topology(ring)
    svg = render_topology_svg(analysis)
    texts = svg_texts(svg)
    listed = [t for t in texts if " gets each event of site " in t]
    assert len(listed) == MAX_LISTED_DUPLICATES
    hidden = len(analysis.duplicates) - MAX_LISTED_DUPLICATES
    assert f"... and {hidden} more (wanconform topology prints them all; hover over a red " \
        "arrow for the duplicate paths through it)" in texts  # fmt: skip
    diamond = SafeET.fromstring(render_topology_svg(analyse_topology(DIAMOND)).encode("utf-8"))
    ns = {"svg": "http://www.w3.org/2000/svg"}
    rings = [c for c in diamond.iterfind(".//svg:circle", ns) if "duplicate" in c.get("class", "")]
    assert len(rings) == 1  # site 4 receives each event of site 1 twice


def test_svg_hover_titles_list_a_few_duplicate_paths_and_count_the_rest() -> None:
    # a bidirectional ring of 255 sites has millions of (hop, duplicate path) pairs: the
    # drawing keeps the first few per hop and a count (it once ran out of memory)
    from reports.topology_svg import MAX_LISTED_DUPLICATES, _duplicate_hops, _path_text

    ring = wan([(u, u % 12 + 1) for u in range(1, 13)] + [(u % 12 + 1, u) for u in range(1, 13)])
    analysis = analyse_topology(ring)
    every: dict[tuple[int, int], list[str]] = {}
    for delivery in analysis.duplicates:
        for path in delivery.paths:
            for hop in pairwise(path):
                every.setdefault(hop, []).append(_path_text(path))
    assert _duplicate_hops(analysis) == {
        hop: (paths[:MAX_LISTED_DUPLICATES], len(paths)) for hop, paths in every.items()
    }
    root = SafeET.fromstring(render_topology_svg(analysis).encode("utf-8"))
    titles = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}title")]
    first = every[(1, 2)]
    assert any(
        t.endswith(f"; on duplicate paths {'; '.join(first[:MAX_LISTED_DUPLICATES])}; and "
                   f"{len(first) - MAX_LISTED_DUPLICATES} more")
        for t in titles
    )  # fmt: skip


coordinate = st.floats(min_value=-500, max_value=1500, allow_nan=False)
boxes = st.tuples(coordinate, coordinate, st.floats(0, 300), st.floats(0, 300)).map(
    lambda b: (b[0], b[1], b[0] + b[2], b[1] + b[3])
)


@given(st.lists(boxes, max_size=40), boxes)
def test_the_label_index_sums_what_a_scan_of_every_placed_box_sums(
    placed: list[tuple[float, float, float, float]], box: tuple[float, float, float, float]
) -> None:
    # The SVG's labels are placed against a grid index of what is placed (a mesh of 80
    # sites drew in 109 s with a scan of every box, 2 s with the index): the same sums,
    # so the same drawing, byte for byte.
    assert _Taken(placed).overlap(box) == sum(_overlap(box, other) for other in placed)


def test_sender_settings_say_geodes_wait_forever() -> None:
    # Geode's socket-read-timeout 0 imports as 2^62 ms (traces/geode/mapping.py): the
    # settings a campaign prints say what it is, not only the number.
    from traces.geode import WAIT_FOREVER_MS
    from wanconform.cmd_topology import sender_settings

    sender = {"id": "ny", "site": 1, "remote": 2, "ack_timeout_ms": WAIT_FOREVER_MS}
    text = sender_settings(parse_config({"sites": [1, 2], "senders": [sender]}))
    assert "ack_timeout_ms 4611686018427387904 (Geode's socket-read-timeout 0: wait forever)" in (
        " ".join(text.split())
    )
