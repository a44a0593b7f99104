"""Importing Geode cache.xml, gfsh and gemfire.properties into a SPEC §2 config (R6, R7).

tests/data/geode/ holds a two-site WAN (ln = site 1, ny = site 2) and the unsupported
diamond of R23, each written as cache.xml and as gfsh (both forms must give the same
configuration), and in real/ files in the shapes of real material: the geode-examples
WAN scripts (continuations, `--J=-Dgemfire.distributed-system-id`), a transcript pasted
from the docs (`gfsh>` prompts, output lines, an option on its own line), GemFire 7.0 and
8.0 DTD-header cache.xml files (regions, a conflict resolver, `${...}` placeholders) and a
three-site mesh whose senders are named after their remote at every site.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from traces.canonical import canonical_json
from traces.config import Config, ReceiverConfig, RegionConfig, SenderConfig, parse_config
from traces.errors import ConfigError
from traces.geode import (
    WAIT_FOREVER_MS,
    GeodeImportError,
    ImportedConfig,
    SiteArgument,
    import_geode_config,
    parse_define,
    parse_site_argument,
)
from traces.geode.gfsh import script_commands
from traces.ops import PauseSender, ResumeSender, StartSender, StopSender
from wanconform.cli import main

GEODE = Path(__file__).resolve().parent / "data" / "geode"
REAL = GEODE / "real"
FOREVER = WAIT_FOREVER_MS

GEODE_THREADS = 5
"""SPEC §16.9: an unset dispatcher-threads is Geode's DEFAULT_DISPATCHER_THREADS, 5."""

TWO_SITES = Config(
    sites=(1, 2),
    senders=(
        # ny-cache.xml sets no dispatcher-threads: Geode's default 5 (SPEC §16.9)
        SenderConfig(
            id="ln",
            site=2,
            remote=1,
            batch_size=100,
            ack_timeout_ms=FOREVER,
            dispatcher_threads=GEODE_THREADS,
        ),
        # ln-cache.xml / ln.gfsh: enable-persistence (SPEC §16.9)
        SenderConfig(
            id="ny",
            site=1,
            remote=2,
            batch_size=50,
            batch_time_interval_ms=500,
            ack_timeout_ms=FOREVER,
            failure_listener="dlq",
            enable_persistence=True,
        ),
    ),
    receivers=(
        ReceiverConfig(site=1, retry_attempts=3, wait_time_between_retry_attempts_ms=100),
        ReceiverConfig(site=2, retry_attempts=-1),
    ),
)

DIAMOND = Config(
    sites=(1, 2, 3, 4),
    senders=tuple(  # no dispatcher-threads in the files: Geode's default 5 (SPEC §16.9)
        SenderConfig(
            id=name, site=site, remote=remote, ack_timeout_ms=FOREVER, dispatcher_threads=5
        )
        for name, site, remote in [
            ("one-to-three", 1, 3),
            ("one-to-two", 1, 2),
            ("three-to-four", 3, 4),
            ("two-to-four", 2, 4),
        ]
    ),
    receivers=tuple(ReceiverConfig(site=s) for s in (1, 2, 3, 4)),
)


def sample(text: str, folder: Path = GEODE) -> SiteArgument:
    """`--site` with paths relative to `folder`: "1=a.xml,b.gfsh" or "a.gfsh"."""
    dsid, sep, names = text.rpartition("=")
    paths = ",".join(str(folder / name) for name in names.split(","))
    return parse_site_argument(f"{dsid}={paths}" if sep else paths)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def import_texts(
    tmp_path: Path, *sites: tuple[int, str, str], allow_partial: bool = False
) -> ImportedConfig:
    """Import (dsid, file name, text) sites written into tmp_path."""
    arguments = [
        SiteArgument(f"{dsid}={name}", dsid, (write(tmp_path, name, text),))
        for dsid, name, text in sites
    ]
    return import_geode_config(arguments, allow_partial=allow_partial)


def expect_error(tmp_path: Path, message: str, *sites: tuple[int, str, str]) -> str:
    with pytest.raises(GeodeImportError) as caught:
        import_texts(tmp_path, *sites)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    return text


def cache(body: str) -> str:
    return (
        '<?xml version="1.0"?>\n<cache xmlns="http://geode.apache.org/schema/cache">\n'
        f"{body}\n</cache>\n"
    )


def region(ids: str) -> str:
    return f'<region name="r"><region-attributes gateway-sender-ids="{ids}"/></region>'


RECEIVER = (2, "2.xml", cache("<gateway-receiver/>"))
"""Site 2 with a receiver and nothing else: the remote of most error cases."""


def sender_xml(attributes: str, ids: str = "a") -> tuple[int, str, str]:
    """Site 1 with one sender shipping to site 2, attached to a region."""
    return (1, "1.xml", cache(f"<gateway-sender {attributes}/>\n{region(ids)}"))


# --- the sample files ----------------------------------------------------------------------


def test_two_site_cache_xml_imports_exactly() -> None:
    imported = import_geode_config([sample("1=ln-cache.xml"), sample("2=ny-cache.xml")])
    assert imported.config == TWO_SITES


def test_two_site_gfsh_gives_the_same_config() -> None:
    imported = import_geode_config([sample("1=ln.gfsh"), sample("2=ny.gfsh")])
    assert imported.config == TWO_SITES


def test_formats_can_be_mixed_per_site() -> None:
    imported = import_geode_config([sample("1=ln.gfsh"), sample("2=ny-cache.xml")])
    assert imported.config == TWO_SITES


@pytest.mark.parametrize("form", ["{n}-cache.xml", "{n}.gfsh"])
def test_r23_diamond_imports_in_both_forms_without_warnings(form: str) -> None:
    files = [sample(f"{n}=" + form.format(n=f"diamond-{n}")) for n in (1, 2, 3, 4)]
    imported = import_geode_config(files)
    assert imported.config == DIAMOND
    assert imported.warnings == ()


def test_settings_equal_to_the_model_do_not_warn_and_unmodelled_ones_do() -> None:
    # ln-cache.xml says parallel="false", enable-batch-conflation="false",
    # dispatcher-threads="1", maximum-queue-memory="100" and enable-persistence="true" (all
    # mapped, SPEC §16.9: no warning) and names a disk store, whose capacity SPEC §16.10
    # does not model (one warning).
    warnings = import_geode_config([sample("1=ln-cache.xml"), sample("2=ny-cache.xml")]).warnings
    ln = str(GEODE / "ln-cache.xml")
    assert warnings == (
        f"{ln}:7: <gateway-sender id='ny'>: disk-store-name=wan: the model's queue overflows "
        "(R35) and persists (R36) to a disk without limit; a disk store's capacity, running "
        "out of disk and oplog compaction are not modelled (SPEC §16.10)",
        f"{ln}:11: <gateway-sender id='ny'>: <gateway-event-filter> com.example.AuditFilter: "
        "Geode lets this class drop or change events before they are queued; the model ships "
        "every event unchanged (event and substitution filters are not modelled, SPEC "
        "§16.10)",
        f"{ln}:14: <gateway-sender id='ny'>: <gateway-event-failure-listener> "
        "com.example.FileGatewayEventFailureListener: the dead-letter proposal's listener, "
        'which Geode 1.15 does not have (SPEC §13); modelled as failure_listener "dlq" (R24)',
    )


@pytest.mark.parametrize(
    ("attributes", "warned"),
    [
        ('manual-start="true"', "manual-start=true: the sender begins stopped (manual_start"),
        ('enable-persistence="true" disk-synchronous="false"',
         "disk-synchronous=false: Geode writes the persistent queue to disk asynchronously"),
        ('disk-store-name="d"', "disk-store-name=d: the model's queue overflows (R35)"),
    ],
)  # fmt: skip
def test_settings_that_change_behaviour_warn_with_what_the_model_does(
    tmp_path: Path, attributes: str, warned: str
) -> None:
    imported = import_texts(
        tmp_path, sender_xml(f'id="a" remote-distributed-system-id="2" {attributes}'), RECEIVER
    )
    assert len(imported.warnings) == 1
    assert imported.warnings[0].startswith(f"{tmp_path / '1.xml'}:3: <gateway-sender id='a'>: ")
    assert warned in imported.warnings[0]


# --- item 1, 9: the geode-examples WAN scripts -------------------------------------------


def test_geode_examples_wan_scripts_import_with_dsid_from_the_scripts() -> None:
    # `\` continuations, tab-indented continuation lines, quoted values, a trailing
    # blank, and the dsid in --J=-Dgemfire.distributed-system-id (ln is 2, ny is 1).
    imported = import_geode_config(
        [
            sample("start-ln.gfsh,ln-region.gfsh", REAL),
            sample("start-ny.gfsh,ny-region.gfsh", REAL),
        ]
    )
    # SPEC §16.9: the examples' senders are parallel, with Geode's default 5 dispatchers
    # and order policy key, on PARTITION_REDUNDANT regions of Geode's default 113 buckets;
    # nothing differs from Geode, so nothing warns.
    assert imported.config == Config(
        sites=(1, 2),
        senders=tuple(
            SenderConfig(
                id=name,
                site=site,
                remote=remote,
                ack_timeout_ms=FOREVER,
                parallel=True,
                dispatcher_threads=5,
                order_policy="key",
            )
            for name, site, remote in [("ln", 1, 2), ("ny", 2, 1)]
        ),
        receivers=(ReceiverConfig(site=1), ReceiverConfig(site=2)),
        regions={1: RegionConfig("partition", 113), 2: RegionConfig("partition", 113)},
    )
    assert imported.warnings == ()


def test_continuation_joins_lines_and_the_command_starts_at_its_first_line() -> None:
    text = (REAL / "start-ln.gfsh").read_text(encoding="utf-8")
    commands = script_commands(text, "start-ln.gfsh", [])
    assert [line for line, _ in commands] == [6, 11, 16, 19, 21]
    # Each `\` is dropped, the next line joined with a space, its tab read as a space.
    assert commands[0][1] == (
        "start locator --name=locator-ln --port=10332 --locators=localhost[10332] "
        "--mcast-port=0 --log-level=config   --J=-Dgemfire.remote-locators=localhost[10331] "
        "--J=-Dgemfire.distributed-system-id=2   --J=-Dgemfire.jmx-manager-start=true "
        "--J=-Dgemfire.jmx-manager-http-port=8082   --J=-Dgemfire.jmx-manager-port=1092"
    )


def test_dsid_on_the_command_line_must_agree_with_the_script() -> None:
    with pytest.raises(GeodeImportError) as caught:
        import_geode_config([sample("1=start-ln.gfsh", REAL), sample("2=start-ny.gfsh", REAL)])
    assert str(caught.value) == (
        f"{REAL / 'start-ln.gfsh'}:6: --J=-Dgemfire.distributed-system-id=2, but the command "
        f"line says --site 1={REAL / 'start-ln.gfsh'}: the two must agree"
    )


def test_one_script_configuring_two_clusters_is_refused(tmp_path: Path) -> None:
    # the senders its regions name exist before it (gfsh's create region checks them)
    senders = write(tmp_path, "senders.gfsh", "".join(
        f"create gateway-sender --id={i} --remote-distributed-system-id=2\n" for i in ("ln", "ny")
    ))  # fmt: skip
    first = parse_site_argument(f"1={senders},{REAL / 'start-wan.gfsh'}")
    with pytest.raises(GeodeImportError, match=r"start-wan\.gfsh:6: connect --locator="):
        import_geode_config([first, sample("start-ln.gfsh", REAL)])


def test_a_file_ending_inside_a_continued_command_never_runs_it(tmp_path: Path) -> None:
    warnings: list[str] = []
    commands = script_commands("create gateway-receiver\ncreate gateway-sender \\\n", "f", warnings)
    assert commands == [(1, "create gateway-receiver")]
    assert warnings == ["f:2: the file ends inside a command continued with '\\'; gfsh never "
                        "runs it; ignored"]  # fmt: skip


# --- item 2: pasted transcripts, empty files ---------------------------------------------


def test_docs_transcript_reads_prompted_commands_and_skips_output() -> None:
    imported = import_geode_config(
        [sample("1=docs-transcript.gfsh", REAL), sample("2=gemfire7-dtd-cache.xml", REAL)]
    )
    assert imported.config.sender("sender2") == SenderConfig(
        id="sender2", site=1, remote=2, batch_size=200, ack_timeout_ms=FOREVER
    )
    assert imported.config.receiver(1) == ReceiverConfig(site=1)
    transcript = str(REAL / "docs-transcript.gfsh")
    dtd = str(REAL / "gemfire7-dtd-cache.xml")
    dropped = (
        "Geode's receiver fails these events (region not found) and the sender drops them "
        "after logging it; the model applies them to the remote site's one region (R1)"
    )
    assert [w for w in imported.warnings if transcript in w] == [
        f"{transcript}:7: an option line with no '\\' ending the line before it: gfsh would "
        "run it as a command of its own and fail; read as part of the command at line 6",
        # the two files are of different examples: neither has the other's region
        f"{transcript}:12: region '/customers' ships through create gateway-sender "
        f"--id=sender2, but site 2 ({dtd}) creates no region '/customers' (its regions: "
        f"/orders); {dropped}",
        f"{dtd}:10: region '/orders' ships through <gateway-sender id='ln'>, but site 1 "
        f"({transcript}) creates no region '/orders' (its regions: /customers); {dropped}",
    ]


def test_option_line_in_a_plain_script_joins_the_command_above(tmp_path: Path) -> None:
    imported = import_texts(
        tmp_path,
        (1, "1.gfsh", "create gateway-sender --id=a\n--remote-distributed-system-id=2\n"),
        RECEIVER,
    )
    assert imported.config.sender("a").remote == 2
    assert any("1.gfsh:2: an option line" in w for w in imported.warnings)


@pytest.mark.parametrize(
    "text", ["", "# only a comment\n", "connect --locator=localhost[10334]\nlist members\n"]
)
def test_a_site_without_any_gateway_is_an_error(tmp_path: Path, text: str) -> None:
    message = expect_error(
        tmp_path, "site 1 declares no gateway-sender and no gateway-receiver", (1, "1.gfsh", text)
    )
    assert message.endswith("(--allow-partial imports the rest)")


def test_allow_partial_accepts_sites_without_gateways_as_warnings(tmp_path: Path) -> None:
    imported = import_texts(tmp_path, (1, "1.gfsh", ""), RECEIVER, allow_partial=True)
    assert imported.config.senders == ()
    assert imported.warnings == (
        f"{tmp_path / '1.gfsh'}: site 1 declares no gateway-sender and no gateway-receiver: "
        "nothing of it is a WAN gateway",
        "no gateway-sender to import: events never leave their site",
    )


def test_receivers_only_is_an_error_without_allow_partial(tmp_path: Path) -> None:
    expect_error(tmp_path, "no gateway-sender to import", RECEIVER)


# --- item 3: regions, conflict resolver, concurrency checks --------------------------------


def test_gemfire_dtd_files_import_with_regions_resolver_and_placeholders() -> None:
    imported = import_geode_config(
        [sample("2=gemfire7-dtd-cache.xml", REAL), sample("1=gemfire8-dtd-cache.xml", REAL)],
        defines={"REMOTE_DS_ID_1": "2"},
    )
    assert imported.config.senders == (
        # no dispatcher-threads in gemfire7-dtd-cache.xml: Geode's default 5 (SPEC §16.9)
        SenderConfig(
            id="ln", site=2, remote=1, batch_size=10, ack_timeout_ms=45000, dispatcher_threads=5
        ),
        SenderConfig(id="ny", site=1, remote=2, ack_timeout_ms=30000),
    )  # "unused" is on no region: Geode ships nothing through it
    seven, eight = str(REAL / "gemfire7-dtd-cache.xml"), str(REAL / "gemfire8-dtd-cache.xml")
    assert imported.warnings == (
        f"{eight}:5: <gateway-conflict-resolver> com.example.MyGatewayConflictResolver: Geode "
        "lets this class decide between conflicting events of different sites; the model "
        "always applies R16.3 (higher timestamp wins, then higher dsid; custom "
        "GatewayConflictResolvers are not modelled, SPEC §16.10)",
        f"{eight}:12: region '/orders': gateway-sender-ids names 'retired', which site 1 does "
        "not have; Geode ships nothing through it; ignored",
        f"{eight}:10: <gateway-sender id='unused'>: no region of site 1 names it in "
        "gateway-sender-ids, so Geode ships nothing through it; left out (the model would "
        "ship every write)",
        f"{seven}:11: region '/orders': concurrency-checks-enabled=false: Geode then applies "
        "every arriving event without comparing versions, so the last arrival wins; the model "
        "always resolves conflicts by version (R16.3)",
        f"{eight}:8: <gateway-sender id='ny'>: socket-read-timeout=5000 is below Geode's "
        "minimum of 30000 ms: Geode uses 30000, and so does the model (ack_timeout_ms)",
    )


def test_a_site_that_creates_no_region_warns_that_every_write_ships(tmp_path: Path) -> None:
    imported = import_texts(
        tmp_path,
        (1, "1.xml", cache('<gateway-sender id="a" remote-distributed-system-id="2"/>')),
        RECEIVER,
    )
    assert [s.id for s in imported.config.senders] == ["a"]
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}: site 1: the files create no region, so which regions ship "
        "through 1 sender a is not known; the model ships every write of the site through "
        "them (Geode ships only the regions whose gateway-sender-ids name a sender)",
    )


def test_regions_with_different_senders_warn(tmp_path: Path) -> None:
    body = (
        '<gateway-sender id="a" remote-distributed-system-id="2"/>'
        '<gateway-sender id="b" remote-distributed-system-id="3"/>'
        '<region name="x"><region-attributes gateway-sender-ids="a"/>'
        '<region name="y"><region-attributes gateway-sender-ids="b"/></region></region>'
    )
    imported = import_texts(
        tmp_path, (1, "1.xml", cache(body)), RECEIVER, (3, "3.xml", cache("<gateway-receiver/>"))
    )
    assert [s.id for s in imported.config.senders] == ["a", "b"]
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}: site 1: regions ship through different senders (/x: a; /x/y: "
        "b); the model has one region per site (R1), whose writes every one of these senders "
        "ships",
    )


def test_gfsh_alter_region_changes_the_senders(tmp_path: Path) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=/r --type=REPLICATE\n"
        "alter region --name=r --gateway-sender-id=a\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert [s.id for s in imported.config.senders] == ["a"]
    assert imported.warnings == ()


def test_gfsh_alter_region_with_a_bare_gateway_sender_id_removes_every_sender(
    tmp_path: Path,
) -> None:
    # gfsh's specifiedDefaultValue for alter region --gateway-sender-id is "", not "true"
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create gateway-sender --id=true --remote-distributed-system-id=3\n"
        "create region --name=/r --type=REPLICATE --gateway-sender-id=a,true\n"
        "alter region --name=r --gateway-sender-id\n"
    )
    remote = (3, "3.xml", cache("<gateway-receiver/>"))
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER, remote, allow_partial=True)
    assert imported.config.senders == ()
    where = f"{tmp_path / '1.gfsh'}"
    assert imported.warnings[:2] == (
        f"{where}:1: create gateway-sender --id=a: no region of site 1 names it in "
        "gateway-sender-ids, so Geode ships nothing through it; left out (the model would "
        "ship every write)",
        f"{where}:2: create gateway-sender --id=true: no region of site 1 names it in "
        "gateway-sender-ids, so Geode ships nothing through it; left out (the model would "
        "ship every write)",
    )


# --- item 4: a remote site without a receiver ----------------------------------------------


def test_sender_to_a_site_without_receiver_is_an_error(tmp_path: Path) -> None:
    text = expect_error(
        tmp_path,
        "1.xml:3: <gateway-sender id='a'>: site 2 (",
        sender_xml('id="a" remote-distributed-system-id="2"'),
        (2, "2.gfsh", "create gateway-sender --id=b --remote-distributed-system-id=1\n"),
    )
    assert text.endswith(
        "2.gfsh) declares no gateway-receiver, so this sender can never connect "
        "(--allow-partial imports the rest)"
    )


def test_allow_partial_leaves_out_senders_that_can_never_connect(tmp_path: Path) -> None:
    imported = import_texts(
        tmp_path,
        (1, "1.gfsh", "create gateway-receiver\n"
         "create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create region --name=r --gateway-sender-id=a\n"),
        (2, "2.gfsh", "create gateway-sender --id=b --remote-distributed-system-id=1\n"
         "create region --name=r --gateway-sender-id=b\n"),
        allow_partial=True,
    )  # fmt: skip
    assert [s.id for s in imported.config.senders] == ["b"]
    assert any(
        "gateway-sender --id=a: site 2" in w and "never connect" in w for w in imported.warnings
    )


# --- item 5: socket-read-timeout -> ack_timeout_ms (R20) -----------------------------------


@pytest.mark.parametrize(
    ("attribute", "ack_timeout_ms"),
    [("", FOREVER), ('socket-read-timeout="0"', FOREVER), ('socket-read-timeout="30000"', 30000),
     ('socket-read-timeout="29999"', 30000), ('socket-read-timeout="120000"', 120000)],
)  # fmt: skip
def test_r20_socket_read_timeout_is_the_ack_timeout(
    tmp_path: Path, attribute: str, ack_timeout_ms: int
) -> None:
    imported = import_texts(
        tmp_path, sender_xml(f'id="a" remote-distributed-system-id="2" {attribute}'), RECEIVER
    )
    assert imported.config.sender("a").ack_timeout_ms == ack_timeout_ms


def test_wait_forever_stays_a_64_bit_integer_after_any_send_time() -> None:
    assert FOREVER + (2**62 - 1) < 2**63


# --- item 6: GemFire DTDs are not fetched, other external DTDs are refused ------------------


def test_gemfire_dtd_is_accepted_and_never_fetched(tmp_path: Path) -> None:
    header = (
        '<?xml version="1.0"?>\n<!DOCTYPE cache PUBLIC "-//GemStone Systems, Inc.//GemFire '
        'Declarative Caching 8.0//EN" "http://www.gemstone.com/dtd/cache8_0.dtd">\n'
    )
    imported = import_texts(
        tmp_path,
        (1, "1.xml", header + f'<cache><gateway-sender id="a" remote-distributed-system-id="2"/>'
         f"{region('a')}</cache>"),
        RECEIVER,
    )  # fmt: skip
    assert [s.id for s in imported.config.senders] == ["a"]


def test_undeclared_entity_in_a_dtd_file_is_refused(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.xml:3: refused: reference to the undeclared entity &x;",
        (1, "1.xml", '<!DOCTYPE cache PUBLIC "-//GemStone Systems, Inc.//GemFire Declarative '
         'Caching 7.0//EN" "http://www.gemstone.com/dtd/cache7_0.dtd">\n<cache>\n'
         '<gateway-sender id="&x;" remote-distributed-system-id="2"/></cache>'),
    )  # fmt: skip


# --- item 7: alter and destroy ---------------------------------------------------------------


def test_mesh_alter_destroy_defines_variables_and_per_site_ids() -> None:
    imported = import_geode_config(
        [
            sample("mesh-1.gfsh", REAL),
            sample("mesh-2.gfsh,mesh-2.properties", REAL),
            sample("3=mesh-3.gfsh", REAL),
        ],
        defines={"OLD_REMOTE": "1"},
    )
    # No dispatcher-threads in the scripts: Geode's default 5 (SPEC §16.9). Site 1's
    # region is PARTITION_REDUNDANT (its parallel sender needs one, R27), so site 1 is
    # partitioned with Geode's default 113 buckets.
    assert imported.config.senders == tuple(
        SenderConfig(id=f"{site}/sender{remote}", site=site, remote=remote,
                     batch_size=500 if (site, remote) == (2, 1) else 100, ack_timeout_ms=FOREVER,
                     dispatcher_threads=5)
        for site, remote in [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)]
    )  # fmt: skip
    assert imported.config.regions == {1: RegionConfig("partition", 113)}
    assert imported.sender_names["2/sender1"] == "sender1"
    mesh1 = str(REAL / "mesh-1.gfsh")
    assert (
        f"{mesh1}:4: create gateway-sender --id=sender3: sender id 'sender3' is used at sites "
        "1, 2 (Geode's ids are per site, a trace's are global): named '1/sender3' in the model"
    ) in imported.warnings
    # R6: of a serial and a parallel sender to site 3, the serial one is kept (§16.10); the
    # parallel one's own differences are not reported, it is not imported at all.
    assert [w for w in imported.warnings if "sender3-parallel" in w] == [
        f"{mesh1}:5: create gateway-sender --id=sender3-parallel: site 1 also has the serial "
        "sender 'sender3' to site 3; R6 allows one per pair of sites: the parallel sender is "
        "left out, the serial one kept"
    ]
    assert len(imported.warnings) == 7


def test_alter_and_destroy_need_an_existing_sender(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.gfsh:1: alter gateway-sender --id=x: no such gateway-sender at this site (senders "
        "so far: none)",
        (1, "1.gfsh", "alter gateway-sender --id=x --batch-size=5\n"),
    )
    expect_error(
        tmp_path,
        "destroy gateway-sender --id=x: no such gateway-sender at this site",
        (1, "1.gfsh", "destroy gateway-sender --id=x\n"),
    )


def test_gfsh_alters_a_cache_xml_given_before_it(tmp_path: Path) -> None:
    xml = write(
        tmp_path, "1.xml", cache(f'<gateway-sender id="a" remote-distributed-system-id="2"/>'
                                 f"{region('a')}"),
    )  # fmt: skip
    gfsh = write(tmp_path, "1.gfsh", "alter gateway-sender --id=a --batch-time-interval=7\n")
    remote = write(tmp_path, "2.xml", cache("<gateway-receiver/>"))
    imported = import_geode_config(
        [parse_site_argument(f"1={xml},{gfsh}"), parse_site_argument(f"2={remote}")]
    )
    assert imported.config.sender("a").batch_time_interval_ms == 7


def test_destroy_gateway_receiver_leaves_the_site_unreachable(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "declares no gateway-receiver, so this sender can never connect",
        sender_xml('id="a" remote-distributed-system-id="2"'),
        (2, "2.gfsh", "create gateway-receiver\ndestroy gateway-receiver\n"
         "create gateway-sender --id=b --remote-distributed-system-id=1\n"),
    )  # fmt: skip


# --- item 8: per-site ids and two senders to one remote -----------------------------------


def test_two_serial_senders_to_one_remote_are_an_r6_error(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.gfsh:2: create gateway-sender --id=b: site 1 already has a sender to site 2",
        (1, "1.gfsh", "create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create gateway-sender --id=b --remote-distributed-system-id=2\n"),
        RECEIVER,
    )  # fmt: skip


def test_one_id_twice_in_one_site_is_an_error(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.gfsh:2: create gateway-sender --id=a: gateway-sender 'a' already exists at",
        (1, "1.gfsh", "create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create gateway-sender --id=a --remote-distributed-system-id=3\n"),
    )  # fmt: skip


# --- item 9: placeholders, #, ; -------------------------------------------------------------


def test_undefined_placeholder_is_an_error_naming_define(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.xml:3: <gateway-sender id='a'>: remote-distributed-system-id: placeholder "
        "${REMOTE_DS_ID_1} has no value; give it with --define REMOTE_DS_ID_1=VALUE",
        sender_xml('id="a" remote-distributed-system-id="${REMOTE_DS_ID_1}"'),
    )


def test_an_undefined_placeholder_in_a_command_that_configures_nothing_is_no_error(
    tmp_path: Path,
) -> None:
    """gfsh fills it with "" and `connect`, `deploy` or `list members` change no gateway,
    so only the placeholders of commands that configure one need a --define."""
    script = (
        "connect --locator=${LOCATOR}\n"
        "deploy --jar=${JAR}\n"
        "list members --group=${GROUP}\n"
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert [(s.id, s.site, s.remote) for s in imported.config.senders] == [("a", 1, 2)]
    for configures in (
        "set variable --name=R --value=${UNSET}",
        "create ${UNSET} --id=b --remote-distributed-system-id=2",
        "start server --name=${UNSET}",
    ):
        expect_error(
            tmp_path,
            "1.gfsh:5: gfsh command: placeholder ${UNSET} has no value; give it with "
            "--define UNSET=VALUE",
            (1, "1.gfsh", f"{script}{configures}\n"),
            RECEIVER,
        )


def test_hash_inside_a_value_and_semicolons(tmp_path: Path) -> None:
    imported = import_texts(
        tmp_path,
        (1, "1.gfsh", "create gateway-receiver; create gateway-sender --id=ny#2 "
         "--remote-distributed-system-id=2 ;create region --name=r --gateway-sender-id=ny#2\n"),
        (2, "2.gfsh", "create gateway-receiver\ncreate gateway-sender --id=semi\\;colon "
         "--remote-distributed-system-id=1;create region --name=r "
         "--gateway-sender-id=semi\\;colon\n"),
    )  # fmt: skip
    assert [s.id for s in imported.config.senders] == ["ny#2", "semi;colon"]
    assert imported.config.receiver(1) == ReceiverConfig(site=1)


def test_gfsh_gateway_commands_that_only_show_or_rebalance_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`list gateways` and friends (the docs' multi-site transcript runs them) change no
    configuration: the site imports as without them. So does `start gateway-receiver`,
    which a `manual-start` receiver's warning names."""
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
        "list gateways\nstatus gateway-sender --id=a\nstatus gateway-receiver\n"
        "load-balance gateway-sender --id=a\nstart gateway-receiver\n"
    )
    sites = ["--site", f"1={write(tmp_path, '1.gfsh', script)}"]
    sites += ["--site", f"2={write(tmp_path, '2.xml', RECEIVER[2])}"]
    assert main(["import", *sites]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["senders"][0]["id"] == "a"
    assert err == ""
    write(tmp_path, "1.gfsh", script + "stop gateway-recever\n")
    assert main(["import", *sites]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {tmp_path / '1.gfsh'}:8: unknown gfsh command "
        "'stop gateway-recever' (did you mean stop gateway-receiver?)\n"
    )


def test_gfsh_destroy_region_needs_the_region_and_takes_its_subregions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=r --type=REPLICATE\n"
        "create region --name=/r/sub --type=PARTITION --gateway-sender-id=a\n"
        "create region --name=s --type=REPLICATE --gateway-sender-id=a\n"
        "destroy region --name=/r\ndestroy region --name=gone --if-exists\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    # /r/sub went with /r: the one region that ships, /s, is replicated, and no warning
    # says that shipping regions differ
    assert (imported.warnings, imported.config.regions) == ((), {})
    path = write(tmp_path, "1.gfsh", script + "destroy region --name=gone\n")
    remote = write(tmp_path, "2.xml", RECEIVER[2])
    assert main(["import", "--site", f"1={path}", "--site", f"2={remote}"]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {path}:7: destroy region --name=/gone: no such region at this "
        "site (regions so far: /s; gfsh: 'Could not find a Region with Region path "
        '"/gone"\'; add --if-exists to allow that)\n'
    )


def test_an_id_written_as_another_site_s_model_name_is_renamed_too(tmp_path: Path) -> None:
    """SPEC §13: `x` at sites 1 and 2 becomes `1/x` and `2/x`; site 2's own `1/x` then
    becomes `2/1/x`, so the three model ids differ and each keeps its Geode id."""
    one = "create gateway-receiver\ncreate gateway-sender --id=x --remote-distributed-system-id=2\n"
    two = (
        "create gateway-receiver\n"
        "create gateway-sender --id=x --remote-distributed-system-id=1\n"
        "create gateway-sender --id=1/x --remote-distributed-system-id=3\n"
    )
    imported = import_texts(
        tmp_path, (1, "1.gfsh", one), (2, "2.gfsh", two), (3, "3.gfsh", "create gateway-receiver\n")
    )
    routes = {(s.id, s.site, s.remote) for s in imported.config.senders}
    assert routes == {("1/x", 1, 2), ("2/x", 2, 1), ("2/1/x", 2, 3)}
    assert imported.sender_names == {"1/x": "x", "2/x": "x", "2/1/x": "1/x"}


def test_gfsh_create_region_needs_its_parent_region(tmp_path: Path) -> None:
    """gfsh's `create region --name=/a/b` refuses to create b when /a does not exist
    ("Parent region for ... does not exist."), so /b never ships through sender a."""
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=r --type=REPLICATE\n"
        "create region --name=/x/sub --type=REPLICATE --gateway-sender-id=a\n"
    )
    expect_error(
        tmp_path,
        "1.gfsh:3: create region --name=/x/sub: region '/x' does not exist at this site "
        "(gfsh: 'Parent region for \"/x/sub\" does not exist.'; regions so far: /r)",
        (1, "1.gfsh", script),
        RECEIVER,
    )


def test_a_subregion_of_a_partitioned_region_is_refused_as_geode_refuses_it(
    tmp_path: Path,
) -> None:
    """Geode's PartitionedRegion.createSubregion throws UnsupportedOperationException: a
    region nested in a partitioned one never exists, whether cache.xml or gfsh asks."""
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=p --type=PARTITION_REDUNDANT\n"
        "create region --name=/p/sub --type=REPLICATE --gateway-sender-id=a\n"
    )
    expect_error(
        tmp_path,
        "1.gfsh:3: create region --name=/p/sub: a subregion of the partitioned region '/p' "
        f"({tmp_path / '1.gfsh'}:2); Geode's partitioned regions have no subregions",
        (1, "1.gfsh", script),
        RECEIVER,
    )
    xml = cache(
        '<gateway-sender id="a" remote-distributed-system-id="2"/>\n'
        '<region name="p" refid="PARTITION">\n'
        '  <region name="sub"><region-attributes gateway-sender-ids="a"/></region>\n'
        "</region>"
    )
    expect_error(
        tmp_path,
        "1.xml:5: <region name='/p/sub'>: a subregion of the partitioned region '/p' "
        f"({tmp_path / '1.xml'}:4)",
        (1, "1.xml", xml),
        RECEIVER,
    )
    # under a replicated region, a subregion (partitioned or not) is created
    fine = script.replace("--name=p --type=PARTITION_REDUNDANT", "--name=p --type=REPLICATE")
    fine = fine.replace("--name=/p/sub --type=REPLICATE", "--name=/p/sub --type=PARTITION")
    imported = import_texts(tmp_path, (1, "1.gfsh", fine), RECEIVER)
    regions = imported.config.regions  # Geode's default total-num-buckets: 113
    assert {site: (r.type, r.total_num_buckets) for site, r in regions.items()} == {
        1: ("partition", 113)
    }


def test_a_properties_key_given_twice_has_its_last_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Java's Properties.load keeps the last value of a key; another file of the site that
    # names another dsid is still an error.
    props = write(tmp_path, "gemfire.properties", "distributed-system-id=3\n# override\n"
                  "distributed-system-id = 1\n")  # fmt: skip
    script = write(tmp_path, "1.gfsh", "create gateway-sender --id=a "
                   "--remote-distributed-system-id=2\ncreate region --name=r "
                   "--type=REPLICATE --gateway-sender-id=a\n")  # fmt: skip
    remote = write(tmp_path, "2.xml", RECEIVER[2])
    assert main(["import", "--site", f"{props},{script}", "--site", f"2={remote}"]) == 0
    assert json.loads(capsys.readouterr().out)["senders"][0]["site"] == 1
    other = write(tmp_path, "other.properties", "distributed-system-id=4\n")
    assert main(["import", "--site", f"{props},{other}", "--site", f"2={remote}"]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {other}:1: distributed-system-id=4, but {props}:3 sets "
        "distributed-system-id=1: the files of one site name two distributed systems\n"
    )


def test_an_empty_output_path_is_named_by_its_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # os.path.abspath("") is the current folder: it was "': is a directory"
    sites = ["--site", str(GEODE / "ln.gfsh"), "--site", f"2={GEODE / 'ny.gfsh'}"]
    assert main(["import", *sites, "-o", str(tmp_path / "c.json"), "--trace", ""]) == 2
    assert (
        capsys.readouterr().err == "wanconform: error: --trace: an empty path; give a file name\n"
    )
    assert os.listdir(tmp_path) == []


def test_define_argument() -> None:
    assert parse_define("A.b-1=x=y") == ("A.b-1", "x=y")
    with pytest.raises(GeodeImportError, match="expected KEY=VALUE"):
        parse_define("novalue")


# --- errors: one line naming file, line, element and attribute ------------------------------


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ('id="a" remote-distributed-system-id="2" batch-size="0"',
         "1.xml:3: <gateway-sender id='a'>: batch-size: must be >= 1, got 0"),
        ('id="a" remote-distributed-system-id="2" batch-size="ten"',
         "1.xml:3: <gateway-sender id='a'>: batch-size: must be an integer, got 'ten'"),
        ('id="a" remote-distributed-system-id="2" batch-time-interval="-5"',
         "batch-time-interval: must be >= 0, got -5"),
        ('id="a" remote-distributed-system-id="3"',
         "remote-distributed-system-id: site 3 has no --site (imported sites: 1, 2)"),
        ('id="a" remote-distributed-system-id="1"',
         "remote-distributed-system-id: a sender cannot ship to its own site 1 (R6)"),
        ('id="" remote-distributed-system-id="2"',
         "<gateway-sender id=''>: id: must be a non-empty"),
        ('remote-distributed-system-id="2"', "<gateway-sender>: attribute id is missing"),
        ('id="a"', "attribute remote-distributed-system-id is missing"),
        ('id="a" remote-distributed-system-id="2" batch-sise="5"',
         "unknown attribute batch-sise='5'; <gateway-sender> has no such attribute in Geode's "
         "cache.xml schema (did you mean batch-size?)"),
        ('id="a" remote-distributed-system-id="2" parallel="yes"',
         "<gateway-sender id='a'>: parallel: must be true or false, got 'yes'"),
        ('id="a" remote-distributed-system-id="2" socket-read-timeout="-1"',
         "socket-read-timeout: must be >= 0 (0 = wait forever), got -1"),
        ('id="a" remote-distributed-system-id="2" dispatcher-threads="0"',
         "dispatcher-threads: must be >= 1, got 0"),
    ],
)  # fmt: skip
def test_cache_xml_sender_errors(tmp_path: Path, attributes: str, message: str) -> None:
    expect_error(tmp_path, message, sender_xml(attributes), RECEIVER)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('<gateway-sender id="a" remote-distributed-system-id="2">\n<event-listener/>\n'
         "</gateway-sender>", "1.xml:4: <gateway-sender id='a'>: unknown element <event-listener>"),
        ('<gateway-receiver retry-attempts="-2"/>',
         "1.xml:3: <gateway-receiver>: retry-attempts: must be >= -1, got -2"),
        ('<gateway-receiver wait-time-between-retry-attempts="soon"/>',
         "wait-time-between-retry-attempts: must be an integer, got 'soon'"),
        ("<gateway-receiver/>\n<gateway-receiver/>", "1.xml:4: a second <gateway-receiver>"),
        ("<gateway-receiver><gateway-transport-filter/><foo/></gateway-receiver>",
         "<gateway-receiver>: unknown element <foo>"),
    ],
)  # fmt: skip
def test_cache_xml_errors(tmp_path: Path, body: str, message: str) -> None:
    expect_error(tmp_path, message, (1, "1.xml", cache(body)), RECEIVER)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("create gateway-sender --id=a --remote-distributed-system-id=2 --batch-size=0",
         "1.gfsh:1: create gateway-sender --id=a: --batch-size: must be >= 1, got 0"),
        ("create gateway-sender --id=a --remote-distributed-system-id=two",
         "--remote-distributed-system-id: must be an integer, got 'two'"),
        ("create gateway-sender --id=a", "option --remote-distributed-system-id is missing"),
        ("create gateway-sender --remote-distributed-system-id=2", "option --id is missing"),
        ("create gateway-sender --id=a --remote-distributed-system-id=2 --batch-size",
         "option --batch-size needs a value"),
        ("create gateway-sender --id=a --id=b --remote-distributed-system-id=2",
         "option --id is given twice"),
        ("create gateway-sender --id=a --remote-distributed-system-id=2 stray",
         "unexpected argument 'stray'"),
        ("create gateway-sender --id='a --remote-distributed-system-id=2",
         "1.gfsh:1: create gateway-sender: option --id: the value 'a has no closing quote"),
        ("create gateway-sender --id=a --remote-distributed-system-id=2 "
         "--gateway-event-failure-listener=",
         "option --gateway-event-failure-listener needs a class name"),
        ("create gateway-receiver --retry-attempts=3 --retry-attempt=4",
         "unknown option --retry-attempt (did you mean --retry-attempts?)"),
        ("create gateway-receiver\ncreate gateway-receiver",
         "1.gfsh:2: a second create gateway-receiver"),
        ("create gateway-sendr --id=a", "1.gfsh:1: unknown gfsh command 'create gateway-sendr' "
         "(did you mean create gateway-sender?)"),
        ("CREATE GATEWAY-SENDER --id=a --remote-distributed-system-id=2",
         "1.gfsh:1: unknown gfsh command 'CREATE GATEWAY-SENDER' (gfsh's commands are lower "
         "case: create gateway-sender)"),
        ("Create Region --name=r", "1.gfsh:1: unknown gfsh command 'Create Region' (gfsh's "
         "commands are lower case: create region)"),
        ("set variable --name=X", "1.gfsh:1: set variable: needs --name and --value"),
        ("create gateway-sender --id=a --remote-distributed-system-id=${}",
         "1.gfsh:1: gfsh command: placeholder ${} names no variable"),
        ("create gateway-receiver\nalter region --name=r --gateway-sender-id=a",
         "1.gfsh:2: alter region --name=/r: no such region at this site"),
    ],
)  # fmt: skip
def test_gfsh_errors(tmp_path: Path, line: str, message: str) -> None:
    expect_error(tmp_path, message, (1, "1.gfsh", line + "\n"), RECEIVER)


def test_wrong_root_element(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.xml:1: root element is <{http://geode.apache.org/schema/cache}client-cache>",
        (1, "1.xml", '<client-cache xmlns="http://geode.apache.org/schema/cache"/>'),
    )
    expect_error(
        tmp_path, "root element is <{urn:nope}cache>", (1, "1.xml", '<cache xmlns="urn:nope"/>')
    )


def test_gateway_hub_is_reported_not_imported(tmp_path: Path) -> None:
    imported = import_texts(
        tmp_path, (1, "1.xml", cache('<gateway-hub id="old"/>')), RECEIVER, allow_partial=True
    )
    assert imported.config.senders == ()
    assert any("<gateway-hub> (the pre-7.0 WAN) is not modelled" in w for w in imported.warnings)


def test_gfsh_unmodelled_queue_settings_warn_once_each(tmp_path: Path) -> None:
    line = (
        "create gateway-sender --id=a --remote-distributed-system-id=2 "
        "--enable-persistence --maximum-queue-memory=64 --disk-store-name=d "
        "--disk-synchronous=false\n"
        "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
    )
    warnings = import_texts(tmp_path, (1, "1.gfsh", line), RECEIVER).warnings
    prefix = f"{tmp_path / '1.gfsh'}:1: create gateway-sender --id=a: "
    # --enable-persistence and --maximum-queue-memory are mapped (SPEC §16.9) and do not
    # warn; a disk store and asynchronous disk writes are not modelled (SPEC §16.10)
    assert [w.split(": ", 3)[2] for w in warnings] == [
        "--disk-store-name=d",
        "--disk-synchronous=false",
    ]
    assert all(w.startswith(prefix) and w.endswith("SPEC §16.10)") for w in warnings)


def test_pdx_warns_that_type_propagation_is_not_modelled(tmp_path: Path) -> None:
    body = '<pdx read-serialized="true"/>\n<gateway-receiver/>'
    imported = import_texts(tmp_path, (1, "1.xml", cache(body)), RECEIVER, allow_partial=True)
    assert imported.warnings[0].startswith(f"{tmp_path / '1.xml'}:3: <pdx>: ")
    assert "PDX type propagation is not modelled, SPEC §16.10" in imported.warnings[0]


@pytest.mark.parametrize(
    ("element", "meant"),
    [("gateway-sendr", "gateway-sender"), ("gateway-reciever", "gateway-receiver"),
     ("regoin", "region")],
)  # fmt: skip
def test_a_misspelled_cache_element_is_an_error_with_did_you_mean(
    tmp_path: Path, element: str, meant: str
) -> None:
    body = f'<{element} id="a" remote-distributed-system-id="2"/>\n' + region("a")
    expect_error(
        tmp_path,
        f"1.xml:3: unknown element <{element}> in <cache> (did you mean <{meant}>?)",
        (1, "1.xml", cache(body)),
        RECEIVER,
    )


def test_other_cache_elements_are_read_without_complaint(tmp_path: Path) -> None:
    body = (
        '<disk-store name="d"/>\n<cache-server port="0"/>\n'
        '<gateway-sender id="a" remote-distributed-system-id="2"/>\n' + region("a")
    )
    imported = import_texts(tmp_path, (1, "1.xml", cache(body)), RECEIVER)
    assert [s.id for s in imported.config.senders] == ["a"]
    assert imported.warnings == ()


def test_elements_of_other_namespaces_are_skipped(tmp_path: Path) -> None:
    body = (
        '<x:gateway-sender xmlns:x="urn:other" id="zz" remote-distributed-system-id="9"/>'
        '<gateway-sender id="a" remote-distributed-system-id="2"/>' + region("a")
    )
    imported = import_texts(tmp_path, (1, "1.xml", cache(body)), RECEIVER)
    assert [s.id for s in imported.config.senders] == ["a"]


def test_non_utf8_gfsh(tmp_path: Path) -> None:
    path = tmp_path / "bad.gfsh"
    path.write_bytes(b"create gateway-receiver --retry-attempts=\xff\n")
    with pytest.raises(GeodeImportError, match=r"bad\.gfsh: not UTF-8 text"):
        import_geode_config([parse_site_argument(f"1={path}")])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("billion-laughs.xml", "billion-laughs.xml:3: refused: the file declares the XML entity"),
        ("external-entity.xml", "external-entity.xml:3: refused: the file declares the XML entity"),
        ("external-dtd.xml", "external-dtd.xml:2: refused: the file refers to the external DTD "
         "'http://attacker.example/cache.dtd'"),
        ("malformed.xml", "malformed.xml:4: not well-formed XML: mismatched tag"),
    ],
)  # fmt: skip
def test_hostile_and_malformed_xml_is_refused(name: str, message: str) -> None:
    with pytest.raises(GeodeImportError) as caught:
        import_geode_config([sample(f"1={name}"), sample("2=ny.gfsh")])
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_and_directory_files(tmp_path: Path) -> None:
    with pytest.raises(GeodeImportError, match=r"nope\.xml: no such file"):
        import_geode_config([parse_site_argument(f"1={tmp_path / 'nope.xml'}")])
    with pytest.raises(GeodeImportError, match="is a directory"):
        import_geode_config([parse_site_argument(f"1={tmp_path}")])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1=", "expected [DSID=]FILE[,FILE...]"),
        ("1=a.xml,", "expected [DSID=]FILE[,FILE...]"),
        ("0=a.xml", "must be from 1 to 255 (R1), got 0"),
        ("256=a.xml", "must be from 1 to 255 (R1), got 256"),
    ],
)
def test_site_argument_errors(text: str, message: str) -> None:
    with pytest.raises(GeodeImportError, match=re.escape(message)):
        parse_site_argument(text)


def test_site_argument_forms() -> None:
    assert parse_site_argument("12=a=b.xml") == SiteArgument("12=a=b.xml", 12, ("a=b.xml",))
    assert parse_site_argument("a.xml,b.gfsh") == SiteArgument(
        "a.xml,b.gfsh", None, ("a.xml", "b.gfsh")
    )


def test_site_without_any_dsid_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "a.gfsh", "create gateway-receiver\n")
    with pytest.raises(GeodeImportError, match="no distributed-system-id: none of the files"):
        import_geode_config([parse_site_argument(path)])


def test_same_site_twice_is_an_error() -> None:
    with pytest.raises(GeodeImportError, match="site 1 is already given"):
        import_geode_config([sample("1=ln.gfsh"), sample("1=ny.gfsh")])


def test_import_errors_are_config_errors() -> None:
    assert issubclass(GeodeImportError, ConfigError)


def test_imported_config_round_trips_through_parse_config() -> None:
    config = import_geode_config([sample("1=ln-cache.xml"), sample("2=ny-cache.xml")]).config
    assert parse_config(json.loads(canonical_json(config.to_json()))) == config


# --- SPEC §16.9: parallel senders, dispatcher threads, order policy, queue memory, regions --


PARALLEL_SITES = Config(
    sites=(1, 2),
    senders=(
        # parallel-partner-cache.xml: dispatcher-threads="2" order-policy="partition"
        # maximum-queue-memory="64" (MB: 64 * 1,048,576 bytes)
        SenderConfig(
            id="ln",
            site=2,
            remote=1,
            ack_timeout_ms=FOREVER,
            parallel=True,
            dispatcher_threads=2,
            order_policy="partition",
            maximum_queue_memory_bytes=67_108_864,
        ),
        # parallel-cache.xml: no dispatcher-threads, order-policy or maximum-queue-memory:
        # Geode's defaults 5, KEY and 100 MB
        SenderConfig(
            id="ny",
            site=1,
            remote=2,
            batch_size=200,
            batch_time_interval_ms=500,
            ack_timeout_ms=FOREVER,
            parallel=True,
            dispatcher_threads=5,
            order_policy="key",
            maximum_queue_memory_bytes=104_857_600,
        ),
    ),
    receivers=(ReceiverConfig(site=1), ReceiverConfig(site=2)),
    # PARTITION_REDUNDANT without partition-attributes: Geode's 113 buckets; the partner's
    # named region-attributes say total-num-buckets="7"
    regions={1: RegionConfig("partition", 113), 2: RegionConfig("partition", 7)},
)


def test_parallel_senders_on_partitioned_regions_import_exactly_without_warnings() -> None:
    imported = import_geode_config(
        [sample("1=parallel-cache.xml"), sample("2=parallel-partner-cache.xml")]
    )
    assert imported.config == PARALLEL_SITES
    assert imported.warnings == ()


def test_cli_import_writes_regions_and_parallel_senders(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_path = tmp_path / "config.json"
    code = main(
        ["import", "--site", f"1={GEODE / 'parallel-cache.xml'}", "--site",
         f"2={GEODE / 'parallel-partner-cache.xml'}", "-o", str(out_path)]
    )  # fmt: skip
    assert code == 0
    assert "warning" not in capsys.readouterr().err
    written = json.loads(out_path.read_text(encoding="utf-8"))
    assert written["regions"] == {
        "1": {"type": "partition", "total_num_buckets": 113},
        "2": {"type": "partition", "total_num_buckets": 7},
    }
    assert parse_config(written) == PARALLEL_SITES


def partitioned(region_body: str, sender: str = "") -> tuple[int, str, str]:
    """Site 1 with sender a (to site 2) and the region `region_body`."""
    text = f'<gateway-sender id="a" remote-distributed-system-id="2" {sender}/>\n{region_body}'
    return (1, "1.xml", cache(text))


@pytest.mark.parametrize(
    ("region_body", "buckets"),
    [
        ('<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="a">'
         '<partition-attributes total-num-buckets="13"/></region-attributes></region>', 13),
        ('<region name="r"><region-attributes data-policy="persistent-partition" '
         'gateway-sender-ids="a"/></region>', 113),
        ('<region name="r"><region-attributes data-policy="partition" gateway-sender-ids="a">'
         '<partition-attributes redundant-copies="1" total-num-buckets="251"/>'
         "</region-attributes></region>", 251),
        # partition-attributes without a data policy: Geode makes the region partitioned
        ('<region name="r"><region-attributes gateway-sender-ids="a">'
         '<partition-attributes total-num-buckets="5"/></region-attributes></region>', 5),
        ('<region name="r" refid="PARTITION_PROXY"><region-attributes gateway-sender-ids="a"/>'
         "</region>", 113),
        ('<region-attributes id="base" refid="PARTITION_REDUNDANT_PERSISTENT_OVERFLOW">'
         '<partition-attributes total-num-buckets="3"/></region-attributes>'
         '<region-attributes id="wan" refid="base" gateway-sender-ids="a"/>'
         '<region name="r" refid="wan"/>', 3),
    ],
)  # fmt: skip
def test_partition_region_forms_and_total_num_buckets(
    tmp_path: Path, region_body: str, buckets: int
) -> None:
    imported = import_texts(tmp_path, partitioned(region_body, 'parallel="true"'), RECEIVER)
    assert imported.config.regions == {1: RegionConfig("partition", buckets)}
    assert imported.config.sender("a").parallel is True
    assert imported.warnings == ()


@pytest.mark.parametrize(
    "region_body",
    [
        '<region name="r" refid="REPLICATE_PERSISTENT"><region-attributes gateway-sender-ids="a"/>'
        "</region>",
        '<region name="r"><region-attributes data-policy="replicate" gateway-sender-ids="a"/>'
        "</region>",
    ],
)
def test_replicated_regions_stay_the_default(tmp_path: Path, region_body: str) -> None:
    imported = import_texts(tmp_path, partitioned(region_body), RECEIVER)
    assert imported.config.regions == {}
    assert imported.config.sender("a") == SenderConfig(
        id="a", site=1, remote=2, ack_timeout_ms=FOREVER, dispatcher_threads=5
    )


@pytest.mark.parametrize(
    ("attributes", "threads", "policy"),
    [
        ("", 5, "key"),  # Geode's DEFAULT_DISPATCHER_THREADS and DEFAULT_ORDER_POLICY
        ('dispatcher-threads="1"', 1, "key"),
        ('dispatcher-threads="2" order-policy="key"', 2, "key"),
        ('dispatcher-threads="2" order-policy="KEY"', 2, "key"),
        ('dispatcher-threads="3" order-policy="thread"', 3, "thread"),
        ('dispatcher-threads="3" order-policy="Thread"', 3, "thread"),
        ('dispatcher-threads="4" order-policy="partition"', 4, "partition"),
        ('dispatcher-threads="4" order-policy="PARTITION"', 4, "partition"),
    ],
)
def test_serial_dispatcher_threads_and_each_order_policy(
    tmp_path: Path, attributes: str, threads: int, policy: str
) -> None:
    imported = import_texts(
        tmp_path, sender_xml(f'id="a" remote-distributed-system-id="2" {attributes}'), RECEIVER
    )
    assert imported.config.sender("a") == SenderConfig(
        id="a",
        site=1,
        remote=2,
        ack_timeout_ms=FOREVER,
        dispatcher_threads=threads,
        order_policy=policy,
    )
    assert imported.warnings == ()


@pytest.mark.parametrize(("written", "policy"), [("key", "key"), ("PARTITION", "partition")])
def test_parallel_order_policies_key_and_partition(
    tmp_path: Path, written: str, policy: str
) -> None:
    body = '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="a"/></region>'
    imported = import_texts(
        tmp_path, partitioned(body, f'parallel="true" order-policy="{written}"'), RECEIVER
    )
    assert imported.config.sender("a").order_policy == policy


@pytest.mark.parametrize(
    ("attribute", "queue_bytes"),
    [("", 104_857_600), ('maximum-queue-memory="0"', 0), ('maximum-queue-memory="1"', 1_048_576),
     ('maximum-queue-memory="100"', 104_857_600), ('maximum-queue-memory="2048"', 2_147_483_648)],
)  # fmt: skip
def test_maximum_queue_memory_is_megabytes(
    tmp_path: Path, attribute: str, queue_bytes: int
) -> None:
    imported = import_texts(
        tmp_path, sender_xml(f'id="a" remote-distributed-system-id="2" {attribute}'), RECEIVER
    )
    assert imported.config.sender("a").maximum_queue_memory_bytes == queue_bytes
    assert imported.warnings == ()


@pytest.mark.parametrize("flag", ["--parallel", "--parallel=true"])
def test_gfsh_parallel_sender_as_written(tmp_path: Path, flag: str) -> None:
    script = (
        f"create gateway-sender --id=ny --remote-distributed-system-id=2 {flag} "
        "--dispatcher-threads=3 --order-policy=PARTITION --maximum-queue-memory=10\n"
        "create region --name=orders --type=PARTITION --total-num-buckets=17 "
        "--gateway-sender-id=ny\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert imported.config.senders == (
        SenderConfig(
            id="ny",
            site=1,
            remote=2,
            ack_timeout_ms=FOREVER,
            parallel=True,
            dispatcher_threads=3,
            order_policy="partition",
            maximum_queue_memory_bytes=10_485_760,
        ),
    )
    assert imported.config.regions == {1: RegionConfig("partition", 17)}
    assert imported.warnings == ()


@pytest.mark.parametrize(
    ("region", "buckets"),
    [("--type=partition-redundant", 113),  # gfsh's EnumConverter: '-' as '_', upper-cased
     ("--type=PARTITION_REDUNDANT_PERSISTENT --total-num-buckets=31", 31),
     ("--type=PARTITION_HEAP_LRU", 113)],
)  # fmt: skip
def test_gfsh_region_types(tmp_path: Path, region: str, buckets: int) -> None:
    script = (
        "create gateway-sender --id=ny --remote-distributed-system-id=2 --parallel\n"
        f"create region --name=orders {region} --gateway-sender-id=ny\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert imported.config.regions == {1: RegionConfig("partition", buckets)}


def test_gfsh_template_region_copies_the_type(tmp_path: Path) -> None:
    script = (
        "create gateway-sender --id=ny --remote-distributed-system-id=2 --parallel\n"
        "create region --name=base --type=PARTITION --total-num-buckets=9\n"
        "create region --name=orders --template-region=/base --gateway-sender-id=ny\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert imported.config.regions == {1: RegionConfig("partition", 9)}


def test_parallel_sender_on_a_replicated_region_is_an_error_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = GEODE / "parallel-replicated-cache.xml"
    code = main(["import", "--site", f"2={path}", "--site", f"1={GEODE / 'parallel-cache.xml'}"])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"wanconform: error: {path}:12: region '/orders': parallel gateway sender 'ln' cannot "
        f"be used with a replicated region (refid=REPLICATE at {path}:11; Geode: 'Parallel "
        "Gateway Sender ln can not be used with replicated region /orders'; SPEC R27)\n"
    )


def test_parallel_sender_on_a_region_without_a_type_is_an_error(tmp_path: Path) -> None:
    # Geode's default data policy (NORMAL) is not a partition one: a DistributedRegion
    expect_error(
        tmp_path,
        "1.xml:4: region '/r': parallel gateway sender 'a' cannot be used with a replicated "
        "region (it declares no PARTITION type; Geode: 'Parallel Gateway Sender a can not be "
        "used with replicated region /r'; SPEC R27)",
        sender_xml('id="a" remote-distributed-system-id="2" parallel="true"'),
        RECEIVER,
    )


def test_gfsh_alter_region_adding_a_parallel_sender_to_a_replicated_region_is_an_error(
    tmp_path: Path,
) -> None:
    script = (
        "create gateway-sender --id=ny --remote-distributed-system-id=2 --parallel\n"
        "create region --name=orders --type=REPLICATE\n"
        "alter region --name=orders --gateway-sender-id=ny\n"
    )
    expect_error(
        tmp_path,
        "1.gfsh:3: region '/orders': parallel gateway sender 'ny' cannot be used with a "
        "replicated region (--type=REPLICATE at ",
        (1, "1.gfsh", script),
        RECEIVER,
    )


def test_parallel_sender_with_order_policy_thread_is_an_error_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "1.xml",
        cache('<gateway-sender id="ln" remote-distributed-system-id="2" parallel="true"\n'
              '                order-policy="THREAD"/>\n'
              '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="ln"/>'
              "</region>"),
    )  # fmt: skip
    remote = write(tmp_path, "2.xml", cache("<gateway-receiver/>"))
    assert main(["import", "--site", f"1={path}", "--site", f"2={remote}"]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {path}:3: <gateway-sender id='ln'>: order-policy=THREAD: a "
        "parallel sender cannot use the thread order policy (Geode: 'Parallel Gateway Sender "
        "ln can not be created with OrderPolicy THREAD'; SPEC R27)\n"
    )


def test_a_sender_setting_beyond_a_java_int_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2 "
        "--batch-time-interval=2147483648\ncreate region --name=r --type=REPLICATE "
        "--gateway-sender-id=a\n"
    )
    path = write(tmp_path, "1.gfsh", script)
    remote = write(tmp_path, "2.xml", RECEIVER[2])
    assert main(["import", "--site", f"1={path}", "--site", f"2={remote}"]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {path}:1: create gateway-sender --id=a: --batch-time-interval: "
        "must be from -2147483648 to 2147483647 (a Java int), got 2147483648\n"
    )


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ('order-policy="fifo"', "order-policy: must be KEY, THREAD or PARTITION, got 'fifo'"),
        ('dispatcher-threads="2000"',
         "dispatcher-threads: at most 1024 (wanconform keeps every dispatcher's state, R29), "
         "got 2000"),
        # Geode holds each integer setting of a sender in a Java int
        ('batch-size="2147483648"',
         "batch-size: must be from -2147483648 to 2147483647 (a Java int), got 2147483648"),
        ('socket-read-timeout="99999999999999999999"',
         "socket-read-timeout: must be from -2147483648 to 2147483647 (a Java int), got "
         "99999999999999999999"),
        ('maximum-queue-memory="-1"',
         "maximum-queue-memory: must be from 0 to 2147483647 megabytes (a Java int), got -1"),
        ('maximum-queue-memory="lots"', "maximum-queue-memory: must be an integer, got 'lots'"),
    ],
)  # fmt: skip
def test_sender_v2_setting_errors(tmp_path: Path, attributes: str, message: str) -> None:
    expect_error(
        tmp_path,
        f"1.xml:3: <gateway-sender id='a'>: {message}",
        sender_xml(f'id="a" remote-distributed-system-id="2" {attributes}'),
        RECEIVER,
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="a">'
         '<partition-attributes total-num-buckets="0"/></region-attributes></region>',
         "1.xml:4: region '/r': total-num-buckets: must be from 1 to 2147483647"),
        ('<region name="r"><region-attributes data-policy="replicate" gateway-sender-ids="a">'
         '<partition-attributes total-num-buckets="7"/></region-attributes></region>',
         "1.xml:4: <region name='/r'>: <partition-attributes> on a region whose data-policy "
         "is 'replicate'"),
    ],
)  # fmt: skip
def test_region_type_errors(tmp_path: Path, body: str, message: str) -> None:
    expect_error(tmp_path, message, partitioned(body), RECEIVER)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('<region name="r" refid="PARTITON"><region-attributes gateway-sender-ids="a"/></region>',
         "1.xml:4: <region name='/r'>: refid: 'PARTITON' names no <region-attributes id> of "
         "this file and no Geode region shortcut (did you mean PARTITION?)"),
        ('<region name="r" refid="NO_SUCH_THING"><region-attributes gateway-sender-ids="a"/>'
         "</region>",
         "1.xml:4: <region name='/r'>: refid: 'NO_SUCH_THING' names no <region-attributes id> "
         "of this file and no Geode region shortcut"),
        ('<region refid="REPLICATE"><region-attributes gateway-sender-ids="a"/></region>',
         "1.xml:4: <region>: attribute name is missing"),
        ('<region name="r" refid="REPLICATE"><region/></region>',
         "1.xml:4: <region> in <region name='/r'>: attribute name is missing"),
        ('<region name="r"><region-attributes data-policy="replicated" gateway-sender-ids="a"/>'
         "</region>",
         "1.xml:4: <region name='/r'>: data-policy: 'replicated' is not a Geode data policy "
         "(did you mean replicate?)"),
    ],
)  # fmt: skip
def test_a_region_type_geode_does_not_know_is_an_error(
    tmp_path: Path, body: str, message: str
) -> None:
    # Geode refuses a refid that names nothing, and its schema any other data policy.
    site = (1, "1.xml", cache(f'<gateway-sender id="a" remote-distributed-system-id="2"/>\n{body}'))
    expect_error(tmp_path, message, site, RECEIVER)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('<region-attributes id="a" refid="b" gateway-sender-ids="a"/>\n'
         '<region-attributes id="b" refid="a"/>\n<region name="r" refid="a"/>',
         "1.xml:4: <region-attributes id='a'>: refid: 'b' names the <region-attributes id> "
         "at {path}:5, not one defined before this element (Geode reads cache.xml in order: "
         "'Cannot reference non-existing region attributes named b')"),
        ('<region-attributes id="a" refid="a" gateway-sender-ids="a"/>\n'
         '<region name="r" refid="a"/>',
         "1.xml:4: <region-attributes id='a'>: refid: 'a' names the <region-attributes id> "
         "at {path}:4, not one defined before"),
        ('<region name="r" refid="later"/>\n'
         '<region-attributes id="later" gateway-sender-ids="a"/>',
         "1.xml:4: <region name='/r'>: refid: 'later' names the <region-attributes id> at "
         "{path}:5, not one defined before"),
    ],
)  # fmt: skip
def test_a_refid_names_only_region_attributes_defined_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str
) -> None:
    # Geode looks a refid up when the referring element starts: a cycle, a refid naming its
    # own element and a forward reference all fail with 'Cannot reference non-existing'.
    site = cache(f'<gateway-sender id="a" remote-distributed-system-id="2"/>\n{body}')
    path = write(tmp_path, "1.xml", site)
    remote = write(tmp_path, "2.xml", RECEIVER[2])
    assert main(["import", "--site", f"1={path}", "--site", f"2={remote}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"wanconform: error: {tmp_path}/{message.format(path=path)}")
    assert err.count("\n") == 1


def test_a_refid_names_the_latest_region_attributes_of_its_id_at_any_depth(
    tmp_path: Path,
) -> None:
    # Geode registers every <region-attributes id>, nested in a region or not, when it
    # ends; a second one of an id replaces the first for what follows.
    body = (
        '<region name="a" refid="REPLICATE"><region-attributes id="ship" '
        'gateway-sender-ids="a"/></region>\n<region name="b" refid="ship"/>\n'
        '<region-attributes id="ship" refid="ship" data-policy="partition"/>\n'
        '<region name="c" refid="ship"/>'
    )
    site = cache(f'<gateway-sender id="a" remote-distributed-system-id="2"/>\n{body}')
    imported = import_texts(tmp_path, (1, "1.xml", site), RECEIVER)
    assert imported.config.regions == {1: RegionConfig(type="partition", total_num_buckets=113)}
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}: site 1: the regions that ship through its senders differ "
        "(partitioned: /c (113 buckets); replicated: /a, /b); the model has one region per "
        "site (R1, R27): partitioned with 113 buckets, as /c, the first partitioned one",
    )


@pytest.mark.parametrize(
    ("body", "written"),
    [
        ('<region name="r" refid="LOCAL_PERSISTENT"><region-attributes gateway-sender-ids="a"/>'
         "</region>", "1.xml:4: region '/r': refid LOCAL_PERSISTENT"),
        ('<region name="r" refid="LOCAL"><region-attributes gateway-sender-ids="a"/></region>',
         "1.xml:4: region '/r': refid LOCAL"),
        ('<region name="r"><region-attributes data-policy="normal" gateway-sender-ids="a"/>'
         "</region>", "1.xml:4: region '/r': data-policy normal"),
    ],
)  # fmt: skip
def test_a_data_policy_the_model_does_not_have_is_read_as_replicated_with_a_warning(
    tmp_path: Path, body: str, written: str
) -> None:
    site = (1, "1.xml", cache(f'<gateway-sender id="a" remote-distributed-system-id="2"/>\n{body}'))
    imported = import_texts(tmp_path, site, RECEIVER)
    assert imported.config.regions == {}  # replicated, the default
    assert imported.warnings == (
        f"{tmp_path}/{written}: only replicate and partition data policies are modelled "
        "(SPEC §16.10), not a local, normal or preloaded region; read as replicated",
    )


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("create gateway-sender --id=a --remote-distributed-system-id=2 --dispatcher-threads=2",
         "1.gfsh:1: create gateway-sender --id=a: --dispatcher-threads=2 needs --order-policy "
         "(gfsh: 'Must specify --order-policy when --dispatcher-threads is larger than 1.')"),
        # a bad value an alter wrote is named with the alter
        ("create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
         "alter gateway-sender --id=a --alert-threshold=-1",
         "1.gfsh:3: alter gateway-sender --id=a: --alert-threshold: must be from 0 to "
         "2147483647 ms (a Java int), got -1"),
        # ... and so is one that R27's own checks (parse_config) refuse
        ("create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
         "alter gateway-sender --id=a --batch-size=0",
         "1.gfsh:3: alter gateway-sender --id=a: --batch-size: must be >= 1, got 0"),
        # gfsh checks it before it looks at --parallel (CreateGatewaySenderCommand)
        ("create gateway-sender --id=a --remote-distributed-system-id=2 --parallel "
         "--dispatcher-threads=3",
         "1.gfsh:1: create gateway-sender --id=a: --dispatcher-threads=3 needs --order-policy "
         "(gfsh: 'Must specify --order-policy when --dispatcher-threads is larger than 1.')"),
        ("create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create region --name=r --type=REPLICATE --total-num-buckets=7 --gateway-sender-id=a",
         "1.gfsh:2: create region --name=/r: --total-num-buckets can be used only for creating "
         "a Partitioned Region"),
        ("create gateway-sender --id=a --remote-distributed-system-id=2\n"
         "create region --name=r --type=PARTITON --gateway-sender-id=a",
         "1.gfsh:2: create region --name=/r: --type: 'PARTITON' is not a Geode region shortcut "
         "(did you mean PARTITION?)"),
    ],
)  # fmt: skip
def test_gfsh_v2_errors(tmp_path: Path, script: str, message: str) -> None:
    expect_error(tmp_path, message, (1, "1.gfsh", script + "\n"), RECEIVER)


@pytest.mark.parametrize(
    "attributes",
    [
        'parallel="true"',
        'parallel="true" dispatcher-threads="5"',
        'dispatcher-threads="5" order-policy="key"',
        'maximum-queue-memory="5"',
        'order-policy="partition"',
    ],
)
def test_settings_mapped_since_v2_no_longer_warn(tmp_path: Path, attributes: str) -> None:
    body = '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="a"/></region>'
    imported = import_texts(tmp_path, partitioned(body, attributes), RECEIVER)
    assert imported.warnings == ()


def test_r6_serial_kept_as_a_real_serial_sender_parallel_alone_imports_parallel(
    tmp_path: Path,
) -> None:
    body = (
        '<gateway-sender id="s" remote-distributed-system-id="2"/>\n'
        '<gateway-sender id="p" remote-distributed-system-id="2" parallel="true"/>\n'
        '<gateway-sender id="q" remote-distributed-system-id="3" parallel="true"/>\n'
        '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="s,p,q"/>'
        "</region>"
    )
    imported = import_texts(
        tmp_path, (1, "1.xml", cache(body)), RECEIVER, (3, "3.xml", cache("<gateway-receiver/>"))
    )
    assert imported.config.senders == (
        SenderConfig(
            id="q", site=1, remote=3, ack_timeout_ms=FOREVER, parallel=True, dispatcher_threads=5
        ),
        SenderConfig(id="s", site=1, remote=2, ack_timeout_ms=FOREVER, dispatcher_threads=5),
    )
    assert imported.config.regions == {1: RegionConfig("partition", 113)}
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}:4: <gateway-sender id='p'>: site 1 also has the serial sender "
        "'s' to site 2; R6 allows one per pair of sites: the parallel sender is left out, the "
        "serial one kept",
    )


def test_two_parallel_senders_to_one_remote_are_an_r6_error(tmp_path: Path) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2 --parallel\n"
        "create gateway-sender --id=b --remote-distributed-system-id=2 --parallel\n"
        "create region --name=r --type=PARTITION --gateway-sender-id=a,b\n"
    )
    expect_error(
        tmp_path,
        "1.gfsh:2: create gateway-sender --id=b: site 1 already has a sender to site 2",
        (1, "1.gfsh", script),
        RECEIVER,
    )


def test_regions_of_different_types_partitioned_by_the_parallel_sender_warn_once(
    tmp_path: Path,
) -> None:
    body = (
        '<gateway-sender id="a" remote-distributed-system-id="2"/>\n'
        '<gateway-sender id="p" remote-distributed-system-id="3" parallel="true"/>\n'
        '<region name="customers" refid="REPLICATE"><region-attributes gateway-sender-ids="a"/>'
        "</region>\n"
        '<region name="events" refid="PARTITION"><region-attributes gateway-sender-ids="a">'
        '<partition-attributes total-num-buckets="11"/></region-attributes></region>\n'
        '<region name="orders" refid="PARTITION"><region-attributes gateway-sender-ids="a,p">'
        '<partition-attributes total-num-buckets="7"/></region-attributes></region>'
    )
    imported = import_texts(
        tmp_path, (1, "1.xml", cache(body)), RECEIVER, (3, "3.xml", cache("<gateway-receiver/>"))
    )
    assert imported.config.regions == {1: RegionConfig("partition", 7)}
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}: site 1: regions ship through different senders (/customers: "
        "a; /orders: a, p); the model has one region per site (R1), whose writes every one of "
        "these senders ships",
        f"{tmp_path / '1.xml'}: site 1: the regions that ship through its senders differ "
        "(partitioned: /events (11 buckets), /orders (7 buckets); replicated: /customers); the "
        "model has one region per site (R1, R27): partitioned with 7 buckets, as /orders, the "
        "region of parallel sender p",
    )


def test_serial_senders_on_regions_of_different_types_take_the_first_partitioned(
    tmp_path: Path,
) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=customers --type=REPLICATE --gateway-sender-id=a\n"
        "create region --name=orders --type=PARTITION_REDUNDANT --gateway-sender-id=a\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert imported.config.regions == {1: RegionConfig("partition", 113)}
    assert imported.warnings == (
        f"{tmp_path / '1.gfsh'}: site 1: the regions that ship through its senders differ "
        "(partitioned: /orders (113 buckets); replicated: /customers); the model has one "
        "region per site (R1, R27): partitioned with 113 buckets, as /orders, the first "
        "partitioned one",
    )


def test_a_region_on_no_kept_sender_does_not_decide_the_type(tmp_path: Path) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=customers --type=REPLICATE --gateway-sender-id=a\n"
        "create region --name=local --type=PARTITION\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert imported.config.regions == {}
    assert imported.warnings == ()


def test_a_parallel_sender_at_a_site_without_regions_reads_it_as_partitioned(
    tmp_path: Path,
) -> None:
    imported = import_texts(
        tmp_path,
        (1, "1.gfsh", "create gateway-sender --id=p --remote-distributed-system-id=2 --parallel\n"),
        RECEIVER,
    )
    assert imported.config.regions == {1: RegionConfig("partition", 113)}
    assert imported.config.sender("p").parallel is True
    assert imported.warnings[-1] == (
        f"{tmp_path / '1.gfsh'}: site 1: parallel sender p and no region: the site's region "
        "is read as partitioned with Geode's default 113 buckets, the only kind a parallel "
        "sender ships (R27)"
    )


# --- wanconform import ----------------------------------------------------------------------


def test_cli_import_writes_canonical_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_path = tmp_path / "config.json"
    code = main(
        ["import", "--site", f"1={GEODE / 'ln-cache.xml'}", "--site",
         f"2={GEODE / 'ny-cache.xml'}", "-o", str(out_path)]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == ""
    # the disk store (SPEC §16.10; persistence and queue memory are mapped, §16.9), the
    # filter and the listener
    assert captured.err.count("wanconform: warning: ") == 3
    assert captured.err.endswith(f"wanconform: wrote {out_path}\n")
    text = out_path.read_text(encoding="utf-8")
    assert text == canonical_json(TWO_SITES.to_json()) + "\n"
    assert sorted(os.listdir(tmp_path)) == [".wanconform-written.json", "config.json"]
    assert main(["topology", str(out_path), "--json"]) == 0


def test_cli_import_examples_with_defines_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["import", "--site", f"2={REAL / 'gemfire7-dtd-cache.xml'}", "--site",
         f"1={REAL / 'gemfire8-dtd-cache.xml'}", "--define", "REMOTE_DS_ID_1=2"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out)["senders"][1]["ack_timeout_ms"] == 30000


def test_cli_import_error_leaves_output_untouched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_path = tmp_path / "config.json"
    sites = ["--site", f"1={GEODE / 'ln-cache.xml'}", "--site", f"2={GEODE / 'ny-cache.xml'}"]
    assert main(["import", *sites, "-o", str(out_path)]) == 0  # an earlier output
    previous = out_path.read_text(encoding="utf-8")
    capsys.readouterr()
    code = main(
        ["import", "--site", f"1={GEODE / 'billion-laughs.xml'}", "--site",
         f"2={GEODE / 'ny.gfsh'}", "-o", str(out_path), "--force"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("wanconform: error: ") and "billion-laughs.xml:3" in captured.err
    assert out_path.read_text(encoding="utf-8") == previous
    assert sorted(os.listdir(tmp_path)) == [".wanconform-written.json", "config.json"]


def test_cli_import_empty_file_is_exit_2_and_allow_partial_is_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = write(tmp_path, "empty.gfsh", "")
    args = ["import", "--site", f"1={empty}", "--site", f"2={GEODE / 'ny.gfsh'}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty.gfsh: site 1 declares no gateway-sender" in err
    assert main([*args, "--allow-partial"]) == 0
    assert "wanconform: warning: " in capsys.readouterr().err


def test_cli_import_bad_site_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "--site", "1="]) == 2
    assert capsys.readouterr().err == (
        "wanconform: error: --site '1=': expected [DSID=]FILE[,FILE...], e.g. --site "
        "1=ln-cache.xml,ln.gfsh\n"
    )


# --- SPEC §16.9: conflation, persistence, alerts, manual start; gfsh sender operations ----


@pytest.mark.parametrize(
    ("form", "value", "expected"),
    [
        ("xml", " true ", True),  # xsd:boolean collapses blanks
        ("xml", "0", False),
        ("gfsh", "TRUE", True),  # gfsh: equalsIgnoreCase (1.15), Boolean.parseBoolean (2)
        ("gfsh", "No", False),  # Spring Shell's BooleanConverter (1.15); false in Geode 2 too
        ("xml", "TRUE", "must be true or false, got 'TRUE'"),  # not in xsd:boolean: refused
        ("xml", "1",
         "must be true or false, got '1' (Geode's schema lets it through, but CacheXmlParser "
         "reads every value other than true as false (Boolean.parseBoolean); write true)"),
        ("gfsh", "1",
         "must be true or false, got '1' (Geode 1.15's gfsh reads it as true, Geode 2's "
         "(Boolean.parseBoolean) as false; write true)"),
        ("gfsh", "yes", "must be true or false, got 'yes' (Geode 1.15's gfsh reads it"),
    ],
)  # fmt: skip
def test_booleans_are_read_as_geode_reads_them(
    tmp_path: Path, form: str, value: str, expected: bool | str
) -> None:
    if form == "xml":
        site = sender_xml(f'id="a" remote-distributed-system-id="2" parallel="{value}"')
        where, name = "1.xml:3: <gateway-sender id='a'>: parallel", "parallel"
    else:
        site = (
            1,
            "1.gfsh",
            f"create gateway-sender --id=a --remote-distributed-system-id=2 --parallel={value}\n"
            "create region --name=r --type=PARTITION --gateway-sender-id=a\n",
        )
        where, name = "1.gfsh:1: create gateway-sender --id=a: --parallel", "--parallel"
    if isinstance(expected, str):
        expect_error(tmp_path, f"{where}: {expected}", site, RECEIVER)
        return
    if form == "xml":  # a parallel sender needs a partitioned region (R27)
        partitioned = site[2].replace('<region name="r">', '<region name="r" refid="PARTITION">')
        site = (1, "1.xml", partitioned)
    imported = import_texts(tmp_path, site, RECEIVER)
    sender = imported.config.sender("a")
    assert sender is not None and sender.parallel is expected, name


def test_a_region_the_remote_site_lacks_warns_that_geode_drops_its_events(
    tmp_path: Path,
) -> None:
    # GatewayReceiverCommand: "Region /r was not found during batch create request"; the
    # sender logs the BatchException and removes the batch as acknowledged.
    other = (2, "2.gfsh", "create gateway-receiver\ncreate region --name=s --type=REPLICATE\n")
    imported = import_texts(tmp_path, sender_xml('id="a" remote-distributed-system-id="2"'), other)
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}:4: region '/r' ships through <gateway-sender id='a'>, but "
        f"site 2 ({tmp_path / '2.gfsh'}) creates no region '/r' (its regions: /s); Geode's "
        "receiver fails these events (region not found) and the sender drops them after "
        "logging it; the model applies them to the remote site's one region (R1)",
    )
    # a remote site that creates region /r, or no region at all, gives no warning
    for text in ("create region --name=r --type=REPLICATE\n", ""):
        site = (2, "2.gfsh", "create gateway-receiver\n" + text)
        imported = import_texts(
            tmp_path, sender_xml('id="a" remote-distributed-system-id="2"'), site
        )
        assert imported.warnings == ()


@pytest.mark.parametrize(
    ("before", "message"),
    [
        ("", "(senders so far: none); gfsh refuses the command: 'There are no GatewaySenders "
             "defined currently in the system.'"),
        ("create gateway-sender --id=b --remote-distributed-system-id=2\n",
         "(senders so far: b); gfsh refuses the command: 'Specify valid gateway-sender-id. "
         "Unknown Gateway Sender(s): \"a\".'"),
    ],
)  # fmt: skip
def test_gfsh_create_region_needs_its_senders_to_exist(
    tmp_path: Path, before: str, message: str
) -> None:
    # before: accepted silently when the sender was created after the region
    script = (
        f"{before}create region --name=r --type=REPLICATE --gateway-sender-id=a,b\n"
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
    )
    line = 2 if before else 1
    expect_error(
        tmp_path,
        f"1.gfsh:{line}: create region --name=/r: --gateway-sender-id names no sender of "
        f"this site so far {message}",
        (1, "1.gfsh", script),
        RECEIVER,
    )


def test_a_backslash_followed_by_a_blank_does_not_continue_the_line(tmp_path: Path) -> None:
    # Gfsh.executeScript continues only when the line ends with '\\'; gfsh then fails on
    # the '\\' word, as the import does, now saying why
    script = "create gateway-sender --id=a \\ \n  --remote-distributed-system-id=2\n"
    expect_error(
        tmp_path,
        "1.gfsh:1: create gateway-sender: unexpected argument '\\\\' (a '\\' continues a "
        "command only as the last character of its line (gfsh's executeScript): is a blank "
        "after it?)",
        (1, "1.gfsh", script),
        RECEIVER,
    )


def test_an_unknown_region_attribute_is_refused_as_geode_s_schema_does(tmp_path: Path) -> None:
    # before: gateway-sender-id (no s) was ignored silently, and the region shipped nothing
    site = (1, "1.xml", cache(
        '<gateway-sender id="a" remote-distributed-system-id="2"/>\n'
        '<region name="r"><region-attributes gateway-sender-id="a"/></region>'
    ))  # fmt: skip
    expect_error(
        tmp_path,
        "1.xml:4: <region name='/r'>: unknown attribute gateway-sender-id='a'; "
        "<region-attributes> has no such attribute in Geode's cache.xml schema (did you "
        "mean gateway-sender-ids?)",
        site,
        RECEIVER,
    )
    site = (1, "1.xml", cache(
        '<gateway-sender id="a" remote-distributed-system-id="2"/>\n'
        '<region name="r" refid="REPLICATE" gateway-sender-ids="a"/>'
    ))  # fmt: skip
    expect_error(
        tmp_path,
        "1.xml:4: <region name='/r'>: unknown attribute gateway-sender-ids='a'; <region> has "
        "only name and refid in Geode's cache.xml schema (the rest goes in <region-attributes>)",
        site,
        RECEIVER,
    )


def test_gfsh_stop_gateway_receiver_is_skipped_with_a_warning(tmp_path: Path) -> None:
    # a real gfsh command (StopGatewayReceiverCommand); before: "unknown gfsh command"
    two = "create gateway-receiver\nstop gateway-receiver --member=ny-1\n"
    imported = import_texts(tmp_path, sender_xml('id="a" remote-distributed-system-id="2"'),
                            (2, "2.gfsh", two))  # fmt: skip
    assert [s.id for s in imported.config.senders] == ["a"]
    assert len(imported.warnings) == 1
    assert imported.warnings[0].endswith(
        "2.gfsh:2: stop gateway-receiver: Geode's receiver then refuses connections until "
        "'start gateway-receiver', and the senders of other sites retry their batches; the "
        "model has no operation that stops a receiver (R37 acts on senders): it keeps "
        "accepting batches; ignored"
    )
    expect_error(
        tmp_path,
        "2.gfsh:1: stop gateway-receiver: this site has no gateway-receiver (gfsh reports "
        "it not available)",
        sender_xml('id="a" remote-distributed-system-id="2"'),
        (2, "2.gfsh", "stop gateway-receiver\ncreate gateway-receiver\n"),
    )


def test_cache_xml_gateway_sender_ids_keep_blanks_as_geode_does(tmp_path: Path) -> None:
    # CacheXmlParser splits "a, b" with StringTokenizer(","): ids 'a' and ' b'; ' b' names
    # no sender, so b ships nothing and is left out. gfsh trims: "a, b" names a and b.
    two = '<gateway-sender id="a" remote-distributed-system-id="2"/>\n'
    two += '<gateway-sender id="b" remote-distributed-system-id="3"/>\n'
    xml = (1, "1.xml", cache(two + region("a, b")))
    third = (3, "3.xml", cache("<gateway-receiver/>"))
    imported = import_texts(tmp_path, xml, RECEIVER, third, allow_partial=True)
    assert [s.id for s in imported.config.senders] == ["a"]
    assert imported.warnings[0].endswith(
        "1.xml:5: region '/r': gateway-sender-ids names ' b', which site 1 does not have; "
        "Geode ships nothing through it; ignored (Geode does not trim the blanks around 'b' "
        "in cache.xml; write the ids without them)"
    )
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create gateway-sender --id=b --remote-distributed-system-id=3\n"
        'create region --name=r --type=REPLICATE --gateway-sender-id="a, b"\n'
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER, third)
    assert [s.id for s in imported.config.senders] == ["a", "b"]
    assert imported.warnings == ()


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("create region --name=r --type=REPLICATE --if-not-exists=0",
         "1.gfsh:3: create region --name=/r: region '/r' already exists at "),
        ("destroy gateway-sender --id=gone --if-exists=no",
         "1.gfsh:3: destroy gateway-sender --id=gone: no such gateway-sender at this site"),
        ("destroy region --name=gone --if-exists=false",
         "1.gfsh:3: destroy region --name=/gone: no such region at this site"),
        ("destroy region --name=gone --if-exists=1",
         "1.gfsh:3: destroy region --name=/gone: --if-exists: must be true or false, got '1'"),
    ],
)  # fmt: skip
def test_gfsh_if_exists_flags_read_false_as_false(
    tmp_path: Path, script: str, message: str
) -> None:
    # before: any value but "false" (0, no, ...) set these flags, "--if-exists=false" too
    text = (
        "create gateway-sender --id=a --remote-distributed-system-id=2\n"
        "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
        f"{script}\n"
    )
    expect_error(tmp_path, message, (1, "1.gfsh", text), RECEIVER)


@pytest.mark.parametrize(
    ("attribute", "fields"),
    [
        ("enable-batch-conflation=true", {"enable_batch_conflation": True}),
        ("enable-batch-conflation=false", {"enable_batch_conflation": False}),
        ("enable-persistence=true", {"enable_persistence": True}),
        ("enable-persistence=0", {"enable_persistence": False}),  # xsd:boolean's 0, gfsh's too
        ("enable-persistence=false", {"enable_persistence": False}),
        ("maximum-queue-memory=100", {"maximum_queue_memory_bytes": 104_857_600}),  # 100 MB
        ("maximum-queue-memory=0", {"maximum_queue_memory_bytes": 0}),
        ("alert-threshold=2500", {"alert_threshold_ms": 2500}),
        ("alert-threshold=0", {"alert_threshold_ms": 0}),  # Geode's default: off (R38)
        ("manual-start=true", {"manual_start": True}),
        ("manual-start=false", {"manual_start": False}),
    ],
)
@pytest.mark.parametrize("form", ["xml", "gfsh"])
def test_second_half_attributes_map_to_the_r27_fields(
    tmp_path: Path, form: str, attribute: str, fields: dict[str, object]
) -> None:
    name, value = attribute.split("=")
    if form == "xml":
        site = sender_xml(f'id="a" remote-distributed-system-id="2" {name}="{value}"')
    else:
        site = (
            1,
            "1.gfsh",
            f"create gateway-sender --id=a --remote-distributed-system-id=2 --{name}={value}\n"
            "create region --name=r --type=REPLICATE --gateway-sender-id=a\n",
        )
    imported = import_texts(tmp_path, site, RECEIVER)
    expected = SenderConfig(id="a", site=1, remote=2, ack_timeout_ms=FOREVER, dispatcher_threads=5)
    assert imported.config.sender("a") == dataclasses.replace(expected, **fields)  # type: ignore[arg-type]
    # only manual-start="true" still warns (SPEC §16.9); the rest no longer does
    assert len(imported.warnings) == (1 if attribute == "manual-start=true" else 0)


@pytest.mark.parametrize(
    "flag", ["--enable-batch-conflation", "--enable-persistence", "--manual-start"]
)
def test_gfsh_bare_flags_are_true(tmp_path: Path, flag: str) -> None:
    script = (
        f"create gateway-sender --id=a --remote-distributed-system-id=2 {flag}\n"
        "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
    )
    sender = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER).config.sender("a")
    field = flag.removeprefix("--").replace("-", "_")
    assert getattr(sender, field) is True


def test_unset_second_half_attributes_are_geodes_defaults(tmp_path: Path) -> None:
    sender = import_texts(
        tmp_path, sender_xml('id="a" remote-distributed-system-id="2"'), RECEIVER
    ).config.sender("a")
    # Geode: DEFAULT_BATCH_CONFLATION false, DEFAULT_PERSISTENCE_ENABLED false,
    # DEFAULT_MAXIMUM_QUEUE_MEMORY 100 MB, DEFAULT_ALERT_THRESHOLD 0, DEFAULT_MANUAL_START false
    assert (
        sender.enable_batch_conflation,
        sender.enable_persistence,
        sender.maximum_queue_memory_bytes,
        sender.alert_threshold_ms,
        sender.manual_start,
    ) == (False, False, 104_857_600, 0, False)


def test_manual_start_warns_that_early_events_are_not_queued(tmp_path: Path) -> None:
    imported = import_texts(
        tmp_path,
        sender_xml('id="a" remote-distributed-system-id="2" manual-start="true"'),
        RECEIVER,
    )
    assert imported.warnings == (
        f"{tmp_path / '1.xml'}:3: <gateway-sender id='a'>: manual-start=true: the sender "
        "begins stopped (manual_start, R37), as in Geode: events written before start_sender "
        "are not queued, so never reach the remote site (Geode deprecates manual start as "
        "likely to cause data loss); no 'start gateway-sender' in the files: it stays "
        "stopped until a trace's start_sender",
    )
    assert imported.operations == ()


@pytest.mark.parametrize(
    ("attributes", "warns"),
    [
        ('disk-synchronous="true" enable-persistence="true"', False),  # Geode's default
        ('disk-synchronous="false"', False),  # no persistence: overflow only, counted (R35)
        ('disk-synchronous="false" enable-persistence="true"', True),
        # no transactions in the model (§16.10); Geode allows it with one dispatcher thread
        ('group-transaction-events="true" dispatcher-threads="1"', False),
        ('enforce-threads-connect-same-receiver="true" socket-buffer-size="1024"', False),
    ],
)
def test_what_section_16_10_keeps_out_warns_only_where_it_changes_something(
    tmp_path: Path, attributes: str, warns: bool
) -> None:
    imported = import_texts(
        tmp_path, sender_xml(f'id="a" remote-distributed-system-id="2" {attributes}'), RECEIVER
    )
    expected = (
        f"{tmp_path / '1.xml'}:3: <gateway-sender id='a'>: disk-synchronous=false: Geode "
        "writes the persistent queue to disk asynchronously, so a crash can lose the events "
        "not yet written; the model's restart_sender keeps every queued event (R36; "
        "disk-synchronous false is not modelled, SPEC §16.10)"
    )
    assert imported.warnings == ((expected,) if warns else ())


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ('alert-threshold="-1"',
         "alert-threshold: must be from 0 to 2147483647 ms (a Java int), got -1"),
        ('alert-threshold="1.5"', "alert-threshold: must be an integer, got '1.5'"),
        ('alert-threshold="2147483648"',
         "alert-threshold: must be from 0 to 2147483647 ms (a Java int), got 2147483648"),
        ('enable-batch-conflation="yes"',
         "enable-batch-conflation: must be true or false, got 'yes'"),
        ('enable-persistence="1"', "enable-persistence: must be true or false, got '1'"),
        ('manual-start=""', "manual-start: must be true or false, got ''"),
        ('disk-synchronous="no"', "disk-synchronous: must be true or false, got 'no'"),
    ],
)  # fmt: skip
def test_second_half_bad_values_are_errors(tmp_path: Path, attributes: str, message: str) -> None:
    expect_error(
        tmp_path,
        f"1.xml:3: <gateway-sender id='a'>: {message}",
        sender_xml(f'id="a" remote-distributed-system-id="2" {attributes}'),
        RECEIVER,
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--maximum-queue-memory=-5",
         "--maximum-queue-memory: must be from 0 to 2147483647 megabytes (a Java int), got -5"),
        ("--alert-threshold=soon", "--alert-threshold: must be an integer, got 'soon'"),
        ("--enable-persistence=maybe", "--enable-persistence: must be true or false, got 'maybe'"),
    ],
)  # fmt: skip
def test_gfsh_second_half_bad_values_are_errors(tmp_path: Path, option: str, message: str) -> None:
    script = f"create gateway-sender --id=a --remote-distributed-system-id=2 {option}\n"
    expect_error(
        tmp_path,
        f"1.gfsh:1: create gateway-sender --id=a: {message}",
        (1, "1.gfsh", script),
        RECEIVER,
    )


def test_a_bad_alert_threshold_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "1.xml",
        cache('<gateway-sender id="a" remote-distributed-system-id="2"\n'
              '                alert-threshold="-10"/>\n' + region("a")),
    )  # fmt: skip
    remote = write(tmp_path, "2.xml", cache("<gateway-receiver/>"))
    out = tmp_path / "config.json"
    assert main(["import", "--site", f"1={path}", "--site", f"2={remote}", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"wanconform: error: {path}:3: <gateway-sender id='a'>: alert-threshold: must be from "
        "0 to 2147483647 ms (a Java int), got -10\n"
    )
    assert not out.exists()


def test_gfsh_alter_gateway_sender_sets_the_alert_threshold(tmp_path: Path) -> None:
    script = (
        "create gateway-sender --id=a --remote-distributed-system-id=2 --alert-threshold=100\n"
        "alter gateway-sender --id=a --alert-threshold=750\n"
        "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
    )
    imported = import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)
    assert imported.config.sender("a").alert_threshold_ms == 750


LIFECYCLE_SITE = (
    "create gateway-sender --id=a --remote-distributed-system-id=2{flags}\n"
    "create region --name=r --type=REPLICATE --gateway-sender-id=a\n"
)


def lifecycle(tmp_path: Path, flags: str, *commands: str) -> ImportedConfig:
    script = LIFECYCLE_SITE.format(flags=flags) + "".join(f"{c}\n" for c in commands)
    return import_texts(tmp_path, (1, "1.gfsh", script), RECEIVER)


@pytest.mark.parametrize(
    ("flags", "commands", "operations"),
    [
        # manual start, then the script starts it: that start is the operation (§16.9)
        (" --manual-start", ["start gateway-sender --id=a --clean-queues"],
         [StartSender("a", clean_queues=True)]),
        (" --manual-start", ["start gateway-sender --id=a"], [StartSender("a")]),
        (" --manual-start", ["start gateway-sender --id=a --clean-queues=false"],
         [StartSender("a")]),
        # a running sender: Geode answers 'already started' and cleans nothing
        ("", ["start gateway-sender --id=a --clean-queues"], []),
        ("", ["stop gateway-sender --id=a", "start gateway-sender --id=a --clean-queues"],
         [StopSender("a"), StartSender("a", clean_queues=True)]),
        ("", ["pause gateway-sender --id=a", "pause gateway-sender --id=a",
              "resume gateway-sender --id=a", "resume gateway-sender --id=a"],
         [PauseSender("a"), ResumeSender("a")]),
        # stopped (manual start): nothing to pause, stop or resume
        (" --manual-start=true", ["pause gateway-sender --id=a", "stop gateway-sender --id=a",
                                  "resume gateway-sender --id=a"], []),
        ("", ["pause gateway-sender --id=a", "stop gateway-sender --id=a --members=server1"],
         [PauseSender("a"), StopSender("a")]),
    ],
)  # fmt: skip
def test_gfsh_sender_commands_become_operations_where_r37_enables_them(
    tmp_path: Path, flags: str, commands: list[str], operations: list[object]
) -> None:
    imported = lifecycle(tmp_path, flags, *commands)
    assert list(imported.operations) == operations


def test_manual_start_warning_names_the_start_that_becomes_the_operation(tmp_path: Path) -> None:
    imported = lifecycle(tmp_path, " --manual-start", "start gateway-sender --id=a --clean-queues")
    path = tmp_path / "1.gfsh"
    assert imported.warnings == (
        f"{path}:1: create gateway-sender --id=a: --manual-start=true: the sender begins "
        "stopped (manual_start, R37), as in Geode: events written before start_sender are not "
        "queued, so never reach the remote site (Geode deprecates manual start as likely to "
        f"cause data loss); {path}:3: 'start gateway-sender --id=a --clean-queues' becomes "
        "the operation start_sender",
    )


def test_destroying_a_sender_drops_its_commands(tmp_path: Path) -> None:
    imported = lifecycle(
        tmp_path,
        "",
        "stop gateway-sender --id=a",
        "alter region --name=r --gateway-sender-id",
        "destroy gateway-sender --id=a",
        "create gateway-sender --id=a --remote-distributed-system-id=2 --manual-start",
        "alter region --name=r --gateway-sender-id=a",
        "start gateway-sender --id=a",
    )
    assert imported.operations == (StartSender("a"),)


def test_a_sender_a_region_still_names_cannot_be_destroyed(tmp_path: Path) -> None:
    """Geode's `AbstractGatewaySender.destroy` refuses a sender that is still in a
    region's gateway-sender-ids, so the sender stays and ships; the import must not
    drop it."""
    script = (
        "create region --name=q --type=REPLICATE\n"
        "alter region --name=q --gateway-sender-id=a\n"
        "destroy gateway-sender --id=a\n"
    )
    path = tmp_path / "1.gfsh"
    expect_error(
        tmp_path,
        f"{path}:5: destroy gateway-sender --id=a: the gateway-sender-ids of /r ({path}:2), "
        f"/q ({path}:4) still name it; Geode refuses it ('could not be destroyed as it is "
        "still used by region(s)'): take it off those regions first (alter region "
        "--gateway-sender-id)",
        (1, "1.gfsh", LIFECYCLE_SITE.format(flags="") + script),
        RECEIVER,
    )


def test_operations_name_the_model_ids_and_skip_senders_left_out(tmp_path: Path) -> None:
    both = (
        "create gateway-receiver\n"
        "create gateway-sender --id=s --remote-distributed-system-id={remote} --manual-start\n"
        "create gateway-sender --id=idle --remote-distributed-system-id={remote}\n"
        "create region --name=r --type=REPLICATE --gateway-sender-id=s\n"
        "start gateway-sender --id=s\n"
        "stop gateway-sender --id=idle\n"
    )
    imported = import_texts(
        tmp_path, (1, "1.gfsh", both.format(remote=2)), (2, "2.gfsh", both.format(remote=1))
    )
    # `s` at both sites becomes 1/s and 2/s (SPEC §13); `idle` ships no region: left out
    assert imported.operations == (StartSender("1/s"), StartSender("2/s"))


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("start gateway-sender --id=b",
         "1.gfsh:3: start gateway-sender --id=b: no such gateway-sender at this site (senders "
         "so far: a); gfsh reports it not available"),
        ("pause gateway-sender", "1.gfsh:3: pause gateway-sender: option --id is missing"),
        ("start gateway-sender --id=a --clean-queues=maybe",
         "1.gfsh:3: start gateway-sender --id=a: --clean-queues: must be true or false, got "
         "'maybe'"),
        ("stop gateway-sender --id=a --clean-queues",
         "1.gfsh:3: stop gateway-sender: unknown option --clean-queues"),
    ],
)  # fmt: skip
def test_gfsh_sender_command_errors(tmp_path: Path, command: str, message: str) -> None:
    script = LIFECYCLE_SITE.format(flags="") + command + "\n"
    expect_error(tmp_path, message, (1, "1.gfsh", script), RECEIVER)


def test_cli_import_trace_writes_the_configuration_then_the_operations(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config_path, trace_path = tmp_path / "config.json", tmp_path / "start.jsonl"
    sites = ["--site", str(GEODE / "ln-manual-start.gfsh"), "--site", f"2={GEODE / 'ny.gfsh'}"]
    code = main(["import", *sites, "-o", str(config_path), "--trace", str(trace_path)])
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("wanconform: warning: ") == 1 and "--manual-start=true" in err
    config = json.loads(config_path.read_text(encoding="utf-8"))
    assert config["senders"][1] == {
        "ack_timeout_ms": FOREVER, "alert_threshold_ms": 500, "batch_size": 100,
        "batch_time_interval_ms": 1000, "delta": False, "dispatcher_threads": 5,
        "dlq_secure": False, "enable_batch_conflation": True, "failure_listener": None,
        "id": "ny", "manual_start": True, "remote": 2, "retry_interval_ms": 5000, "site": 1,
    }  # fmt: skip
    lines = trace_path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"config": config}
    assert lines[1:] == [
        '{"clean_queues":true,"op":"start_sender","sender":"ny"}',
        '{"op":"pause_sender","sender":"ny"}',
        '{"op":"resume_sender","sender":"ny"}',
    ]
    assert main(["replay", str(trace_path)]) == 0  # a valid SPEC §12 trace


def test_cli_import_without_trace_names_the_operations_it_leaves_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sites = ["--site", str(GEODE / "ln-manual-start.gfsh"), "--site", f"2={GEODE / 'ny.gfsh'}"]
    assert main(["import", *sites]) == 0
    err = capsys.readouterr().err
    assert (
        "wanconform: warning: the gfsh files' gateway-sender commands give 3 operations "
        '({"clean_queues":true,"op":"start_sender","sender":"ny"}, '
        '{"op":"pause_sender","sender":"ny"}, {"op":"resume_sender","sender":"ny"}); the '
        "configuration does not hold them: --trace FILE writes them after it\n"
    ) in err
    assert main(["topology", "--json", *sites]) == 0
    assert "which this command does not use (wanconform import --trace FILE writes them" in (
        capsys.readouterr().err
    )


def test_cli_import_trace_without_operations_is_the_configuration_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace_path = tmp_path / "t.jsonl"
    sites = ["--site", f"1={GEODE / 'ln.gfsh'}", "--site", f"2={GEODE / 'ny.gfsh'}"]
    assert main(["import", *sites, "--trace", str(trace_path)]) == 0
    out = capsys.readouterr().out
    assert trace_path.read_text(encoding="utf-8") == '{"config":' + out.rstrip("\n") + "}\n"


# --- a region created twice (Geode refuses it; the import must not silently keep the last) ---


def test_cache_xml_region_declared_twice_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    # Geode's cache.xml fails with RegionExistsException; before, the second <region>
    # silently replaced the first and a PARTITION site imported as replicated.
    body = (
        '<gateway-sender id="a" remote-distributed-system-id="2"/>\n'
        '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="a"/></region>\n'
        '<region name="r" refid="REPLICATE"><region-attributes gateway-sender-ids="a"/></region>'
    )
    text = expect_error(
        tmp_path, "region '/r' already exists at ", (1, "1.xml", cache(body)), RECEIVER
    )
    assert text.startswith(f"{tmp_path / '1.xml'}:5: ")
    assert text.endswith(
        f"already exists at {tmp_path / '1.xml'}:4; Geode refuses to create a region twice"
    )


def test_gfsh_create_region_twice_is_an_error_unless_if_not_exists(tmp_path: Path) -> None:
    first = (
        "create gateway-sender --id=ny --remote-distributed-system-id=2\n"
        "create region --name=orders --type=PARTITION --total-num-buckets=7 "
        "--gateway-sender-id=ny\n"
    )
    again = "create region --name=/orders --type=REPLICATE --gateway-sender-id=ny\n"
    text = expect_error(
        tmp_path, "region '/orders' already exists at ", (1, "1.gfsh", first + again), RECEIVER
    )
    assert text.startswith(f"{tmp_path / '1.gfsh'}:3: create region --name=/orders: ")
    # gfsh skips a create region --if-not-exists of an existing region: the first one stays.
    skipped = first + again.replace("\n", " --if-not-exists\n")
    imported = import_texts(tmp_path, (1, "1.gfsh", skipped), RECEIVER)
    assert imported.config.regions == {1: RegionConfig("partition", 7)}
    # A region destroyed first may be created again.
    recreated = first + "destroy region --name=orders\n" + again
    imported = import_texts(tmp_path, (1, "1.gfsh", recreated), RECEIVER)
    assert imported.config.regions == {}


def test_gfsh_template_region_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    # gfsh refuses it ("Template region ... does not exist."); before, the template was
    # ignored and the region read as replicated, so a parallel sender on it failed with a
    # misleading "replicated region" error (and a serial one imported silently).
    script = (
        "create gateway-sender --id=ny --remote-distributed-system-id=2 --parallel\n"
        "create region --name=orders --template-region=/base --gateway-sender-id=ny\n"
    )
    text = expect_error(
        tmp_path,
        "--template-region: region '/base' does not exist",
        (1, "1.gfsh", script),
        RECEIVER,
    )
    assert text.startswith(f"{tmp_path / '1.gfsh'}:2: create region --name=/orders: ")


# --- group-transaction-events: what Geode refuses -----------------------------------------


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        # GatewaySenderFactoryImpl.create(): a serial sender with dispatcher threads > 1,
        # Geode's default 5 included
        ('group-transaction-events="true"',
         "group-transaction-events=true: a serial sender with dispatcher-threads 5 (Geode's "
         "default) cannot group transaction events: set dispatcher-threads to 1 (Geode: "
         "'SerialGatewaySender a cannot be created with group transaction events set to "
         "true when dispatcher threads is greater than 1')"),
        ('group-transaction-events="true" dispatcher-threads="2" order-policy="key"',
         "group-transaction-events=true: a serial sender with dispatcher-threads 2 cannot "
         "group transaction events"),
        # ... and any sender with batch conflation
        ('group-transaction-events="true" dispatcher-threads="1" enable-batch-conflation="true"',
         "group-transaction-events=true: not with enable-batch-conflation true (Geode: "
         "'GatewaySender a cannot be created with both group transaction events set to true "
         "and batch conflation enabled')"),
    ],
)  # fmt: skip
def test_group_transaction_events_that_geode_refuses_is_an_error(
    tmp_path: Path, attributes: str, message: str
) -> None:
    expect_error(
        tmp_path,
        f"1.xml:3: <gateway-sender id='a'>: {message}",
        sender_xml(f'id="a" remote-distributed-system-id="2" {attributes}'),
        RECEIVER,
    )


def test_group_transaction_events_geode_accepts_imports_silently(tmp_path: Path) -> None:
    # A parallel sender (any dispatcher threads) and a serial one with one thread.
    imported = import_texts(
        tmp_path,
        (
            1,
            "1.xml",
            cache(
                '<gateway-receiver/><gateway-sender id="p" remote-distributed-system-id="2" '
                'parallel="true" '
                'group-transaction-events="true"/>\n'
                '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="p"/>'
                "</region>"
            ),
        ),
        (
            2,
            "2.xml",
            cache(
                '<gateway-receiver/><gateway-sender id="s" remote-distributed-system-id="1" '
                'dispatcher-threads="1" group-transaction-events="true"/>\n'
                '<region name="r" refid="PARTITION"><region-attributes gateway-sender-ids="s"/>'
                "</region>"
            ),
        ),
    )
    assert imported.warnings == ()
    assert [(s.id, s.parallel, s.dispatcher_threads) for s in imported.config.senders] == [
        ("p", True, GEODE_THREADS),
        ("s", False, 1),
    ]


def test_docs_alter_group_transaction_events_on_a_default_serial_sender_is_an_error() -> None:
    # Geode's docs example alter (line 11) on a serial sender with 5 dispatcher threads.
    path = REAL / "docs-group-transaction-events.gfsh"
    with pytest.raises(GeodeImportError) as caught:
        import_geode_config([sample("1=docs-group-transaction-events.gfsh", REAL),
                             sample("2=ny-cache.xml")])  # fmt: skip
    assert str(caught.value) == (
        f"{path}:11: alter gateway-sender --id=sender1: --group-transaction-events=true: a "
        "serial sender with dispatcher-threads 5 (Geode's default) cannot group transaction "
        "events: set dispatcher-threads to 1 (Geode: 'SerialGatewaySender sender1 cannot be "
        "created with group transaction events set to true when dispatcher threads is "
        "greater than 1')"
    )


# --- alter gateway-sender --gateway-event-filter ------------------------------------------


def test_docs_alter_gateway_event_filter_clear_removes_the_filters() -> None:
    # Geode's AlterGatewaySenderCommand: the value CLEAR (any case) empties the event
    # filter list, so no event filter is left to warn about (transport filters never warn).
    imported = import_geode_config(
        [sample("2=docs-event-filter-clear.gfsh", REAL), sample("1=ln-cache.xml")]
    )
    assert [w for w in imported.warnings if "remoteA" in w and "Geode lets this class" in w] == []
    sender = next(s for s in imported.config.senders if s.id == "remoteA")
    assert (sender.site, sender.remote, sender.parallel) == (2, 1, True)


@pytest.mark.parametrize("value", ["clear", "Clear"])
def test_alter_gateway_event_filter_replaces_cache_xml_filters_and_names_the_alter(
    tmp_path: Path, value: str
) -> None:
    site = cache(
        '<gateway-sender id="a" remote-distributed-system-id="2">\n'
        "<gateway-event-filter><class-name>com.x.A</class-name></gateway-event-filter>\n"
        "</gateway-sender>\n" + region("a")
    )
    script = (
        "alter gateway-sender --id=a --gateway-event-filter=com.x.B\n"
        f"alter gateway-sender --id=a --gateway-event-filter={value}\n"
    )
    arguments = [
        SiteArgument(
            "1=...", 1, (write(tmp_path, "1.xml", site), write(tmp_path, "1.gfsh", script))
        ),
        SiteArgument("2=2.xml", 2, (write(tmp_path, "2.xml", cache("<gateway-receiver/>")),)),
    ]
    assert import_geode_config(arguments).warnings == ()
    # without the CLEAR line, the alter's filter replaces the cache.xml one, named by the alter
    write(tmp_path, "1.gfsh", script.splitlines()[0] + "\n")
    assert import_geode_config(arguments).warnings == (
        f"{tmp_path / '1.gfsh'}:1: alter gateway-sender --id=a: --gateway-event-filter "
        "com.x.B: Geode lets this class drop or change events before they are queued; the "
        "model ships every event unchanged (event and substitution filters are not modelled, "
        "SPEC §16.10)",
    )
