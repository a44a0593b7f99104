"""Importing Geode cache.xml and gfsh gateway settings into a SPEC §2 config (R6, R7).

The sample files in tests/data/geode/ are a two-site WAN (ln = site 1, ny = site 2) and
the unsupported diamond of R23, each written as cache.xml and as gfsh; both forms must
give the same configuration.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from traces.canonical import canonical_json
from traces.config import Config, ReceiverConfig, SenderConfig, parse_config
from traces.geode import (
    GeodeImportError,
    ImportedConfig,
    SiteFile,
    import_geode_config,
    parse_site_argument,
)
from wanconform.cli import main
from wanconform.errors import ConfigError

GEODE = Path(__file__).resolve().parent / "data" / "geode"

TWO_SITES = Config(
    sites=(1, 2),
    senders=(
        SenderConfig(id="ln", site=2, remote=1, batch_size=100),
        SenderConfig(
            id="ny",
            site=1,
            remote=2,
            batch_size=50,
            batch_time_interval_ms=500,
            failure_listener="dlq",
        ),
    ),
    receivers=(
        ReceiverConfig(site=1, retry_attempts=3, wait_time_between_retry_attempts_ms=100),
        ReceiverConfig(site=2, retry_attempts=-1),
    ),
)

DIAMOND = Config(
    sites=(1, 2, 3, 4),
    senders=(
        SenderConfig(id="one-to-three", site=1, remote=3),
        SenderConfig(id="one-to-two", site=1, remote=2),
        SenderConfig(id="three-to-four", site=3, remote=4),
        SenderConfig(id="two-to-four", site=2, remote=4),
    ),
    receivers=tuple(ReceiverConfig(site=s) for s in (1, 2, 3, 4)),
)


def sample(site: int, name: str) -> SiteFile:
    return SiteFile(site=site, path=str(GEODE / name))


def import_files(tmp_path: Path, **files: str) -> ImportedConfig:
    """Write `site<N>=text` files into tmp_path and import them (suffix from the name)."""
    sites = []
    for key, text in files.items():
        site, _, suffix = key.partition("_")
        path = tmp_path / f"{site}.{suffix}"
        path.write_text(text, encoding="utf-8")
        sites.append(SiteFile(site=int(site.removeprefix("site")), path=str(path)))
    return import_geode_config(sites)


def expect_error(tmp_path: Path, message: str, **files: str) -> str:
    with pytest.raises(GeodeImportError) as caught:
        import_files(tmp_path, **files)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    return text


RECEIVER_XML = '<cache xmlns="http://geode.apache.org/schema/cache"><gateway-receiver/></cache>'


def cache(body: str) -> str:
    return f'<?xml version="1.0"?>\n<cache xmlns="http://geode.apache.org/schema/cache">\n{body}\n</cache>\n'


# --- the sample files --------------------------------------------------------------------


def test_two_site_cache_xml_imports_exactly() -> None:
    imported = import_geode_config([sample(1, "ln-cache.xml"), sample(2, "ny-cache.xml")])
    assert imported.config == TWO_SITES


def test_two_site_gfsh_gives_the_same_config() -> None:
    imported = import_geode_config([sample(1, "ln.gfsh"), sample(2, "ny.gfsh")])
    assert imported.config == TWO_SITES


def test_formats_can_be_mixed_per_site() -> None:
    imported = import_geode_config([sample(1, "ln.gfsh"), sample(2, "ny-cache.xml")])
    assert imported.config == TWO_SITES


@pytest.mark.parametrize("form", ["{n}-cache.xml", "{n}.gfsh"])
def test_diamond_imports_in_both_forms(form: str) -> None:
    files = [sample(n, form.format(n=f"diamond-{n}")) for n in (1, 2, 3, 4)]
    imported = import_geode_config(files)
    assert imported.config == DIAMOND
    assert imported.warnings == ()


def test_unmodelled_settings_are_reported_with_file_and_line() -> None:
    warnings = import_geode_config([sample(1, "ln-cache.xml"), sample(2, "ny-cache.xml")]).warnings
    ln = str(GEODE / "ln-cache.xml")
    for attribute in (
        "parallel",
        "enable-batch-conflation",
        "dispatcher-threads",
        "maximum-queue-memory",
        "enable-persistence",
        "disk-store-name",
    ):
        assert any(
            w.startswith(f"{ln}:7: <gateway-sender id='ny'>: attribute {attribute} ignored")
            for w in warnings
        ), attribute
    assert any(f"{ln}:11:" in w and "<gateway-event-filter> ignored" in w for w in warnings)
    assert any(
        f"{ln}:14:" in w and "com.example.FileGatewayEventFailureListener" in w and "R24" in w
        for w in warnings
    )
    assert any(f"{ln}:18: <gateway-receiver>: attribute start-port ignored" in w for w in warnings)
    assert not any("ny-cache.xml" in w for w in warnings)  # nothing unmodelled there


def test_gfsh_warnings_cover_ignored_options_and_other_commands() -> None:
    warnings = import_geode_config([sample(1, "ln.gfsh"), sample(2, "ny.gfsh")]).warnings
    ln = str(GEODE / "ln.gfsh")
    assert f"{ln}:2: gfsh command 'start locator' is not a gateway; ignored" in warnings
    assert f"{ln}:6: gfsh command 'create region' is not a gateway; ignored" in warnings
    assert any(f"{ln}:5:" in w and "option --enable-persistence ignored" in w for w in warnings)
    assert any(f"{ln}:4:" in w and "option --end-port ignored" in w for w in warnings)


def test_site_without_receiver_is_warned_about(tmp_path: Path) -> None:
    imported = import_files(
        tmp_path,
        site1_xml=cache('<gateway-sender id="a" remote-distributed-system-id="2"/>'),
        site2_xml=cache(""),
    )
    assert imported.config.receiver(2) == ReceiverConfig(site=2)
    assert any("site 2 declares no gateway-receiver" in w and "a" in w for w in imported.warnings)


def test_no_namespace_and_old_namespace_are_accepted(tmp_path: Path) -> None:
    imported = import_files(
        tmp_path,
        site1_xml='<cache><gateway-sender id="a" remote-distributed-system-id="2"/></cache>',
        site2_xml='<cache xmlns="http://schema.pivotal.io/gemfire/cache"><gateway-receiver '
        'retry-attempts="2"/></cache>',
    )
    assert imported.config.senders == (SenderConfig(id="a", site=1, remote=2),)
    assert imported.config.receiver(2).retry_attempts == 2


def test_elements_of_other_namespaces_are_skipped(tmp_path: Path) -> None:
    imported = import_files(
        tmp_path,
        site1_xml=cache(
            '<x:gateway-sender xmlns:x="urn:other" id="zz" remote-distributed-system-id="9"/>'
            '<gateway-sender id="a" remote-distributed-system-id="2"/>'
        ),
        site2_xml=RECEIVER_XML,
    )
    assert [s.id for s in imported.config.senders] == ["a"]


def test_gfsh_quoting_comments_and_flags(tmp_path: Path) -> None:
    imported = import_files(
        tmp_path,
        site1_gfsh=(
            "  # comment line\n\n"
            "create gateway-sender --id 'to two' --remote-distributed-system-id=\"2\" "
            "--parallel --manual-start --batch-size 7  # trailing comment\n"
        ),
        site2_gfsh="create gateway-receiver --wait-time-between-retry-attempts=5\n",
    )
    assert imported.config.senders == (SenderConfig(id="to two", site=1, remote=2, batch_size=7),)
    assert imported.config.receiver(2).wait_time_between_retry_attempts_ms == 5


def test_imported_config_round_trips_through_parse_config() -> None:
    config = import_geode_config([sample(1, "ln-cache.xml"), sample(2, "ny-cache.xml")]).config
    assert parse_config(json.loads(canonical_json(config.to_json()))) == config


# --- errors: one line naming file, line, element and attribute ----------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '<gateway-sender id="a" remote-distributed-system-id="2" batch-size="0"/>',
            "1.xml:3: <gateway-sender id='a'>: batch-size: must be >= 1, got 0",
        ),
        (
            '<gateway-sender id="a" remote-distributed-system-id="2" batch-size="${size}"/>',
            "1.xml:3: <gateway-sender id='a'>: batch-size: must be an integer, got '${size}'",
        ),
        (
            '<gateway-sender id="a" remote-distributed-system-id="2" batch-time-interval="-5"/>',
            "batch-time-interval: must be >= 0, got -5",
        ),
        (
            '<gateway-sender id="a" remote-distributed-system-id="3"/>',
            "remote-distributed-system-id: site 3 has no --site 3=FILE (imported sites: 1, 2)",
        ),
        (
            '<gateway-sender id="a" remote-distributed-system-id="1"/>',
            "remote-distributed-system-id: a sender cannot ship to its own site 1 (R6)",
        ),
        (
            '<gateway-sender id="" remote-distributed-system-id="2"/>',
            "<gateway-sender id=''>: id: must be a non-empty string",
        ),
        (
            '<gateway-sender remote-distributed-system-id="2"/>',
            "<gateway-sender>: attribute id is missing",
        ),
        ('<gateway-sender id="a"/>', "attribute remote-distributed-system-id is missing"),
        (
            '<gateway-sender id="a" remote-distributed-system-id="2" batch-sise="5"/>',
            "unknown attribute batch-sise='5'; <gateway-sender> has no such attribute in Geode's "
            "cache.xml schema (did you mean batch-size?)",
        ),
        (
            '<gateway-sender id="a" remote-distributed-system-id="2">\n<event-listener/>\n'
            "</gateway-sender>",
            "1.xml:4: <gateway-sender id='a'>: unknown element <event-listener>",
        ),
        (
            '<gateway-receiver retry-attempts="-2"/>',
            "1.xml:3: <gateway-receiver>: retry-attempts: must be >= -1, got -2",
        ),
        (
            '<gateway-receiver wait-time-between-retry-attempts="soon"/>',
            "wait-time-between-retry-attempts: must be an integer, got 'soon'",
        ),
        ("<gateway-receiver/>\n<gateway-receiver/>", "1.xml:4: a second <gateway-receiver>"),
        (
            "<gateway-receiver><gateway-transport-filter/><foo/></gateway-receiver>",
            "<gateway-receiver>: unknown element <foo>",
        ),
    ],
)
def test_cache_xml_errors(tmp_path: Path, body: str, message: str) -> None:
    expect_error(tmp_path, message, site1_xml=cache(body), site2_xml=RECEIVER_XML)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "create gateway-sender --id=a --remote-distributed-system-id=2 --batch-size=0",
            "1.gfsh:1: create gateway-sender --id=a: --batch-size: must be >= 1, got 0",
        ),
        (
            "create gateway-sender --id=a --remote-distributed-system-id=two",
            "--remote-distributed-system-id: must be an integer, got 'two'",
        ),
        ("create gateway-sender --id=a", "option --remote-distributed-system-id is missing"),
        ("create gateway-sender --remote-distributed-system-id=2", "option --id is missing"),
        (
            "create gateway-sender --id=a --remote-distributed-system-id=2 --batch-size",
            "option --batch-size needs a value",
        ),
        (
            "create gateway-sender --id=a --id=b --remote-distributed-system-id=2",
            "option --id is given twice",
        ),
        (
            "create gateway-sender --id=a --remote-distributed-system-id=2 stray",
            "unexpected argument 'stray'",
        ),
        (
            "create gateway-sender --id='a --remote-distributed-system-id=2",
            "1.gfsh:1: cannot split the gfsh command: No closing quotation",
        ),
        (
            "create gateway-sender --id=a --remote-distributed-system-id=2 "
            "--gateway-event-failure-listener=",
            "option --gateway-event-failure-listener needs a class name",
        ),
        (
            "create gateway-receiver --retry-attempts=3 --retry-attempt=4",
            "unknown option --retry-attempt (did you mean --retry-attempts?)",
        ),
        (
            "create gateway-receiver\ncreate gateway-receiver",
            "1.gfsh:2: a second 'create gateway-receiver'",
        ),
    ],
)
def test_gfsh_errors(tmp_path: Path, line: str, message: str) -> None:
    expect_error(tmp_path, message, site1_gfsh=line + "\n", site2_xml=RECEIVER_XML)


def test_sender_ids_must_be_unique_across_sites(tmp_path: Path) -> None:
    text = expect_error(
        tmp_path,
        "sender id 'gw' is already used at",
        site1_gfsh="create gateway-sender --id=gw --remote-distributed-system-id=2\n",
        site2_gfsh="create gateway-sender --id=gw --remote-distributed-system-id=1\n",
    )
    assert "2.gfsh:1" in text and "1.gfsh:1" in text and "R6" in text


def test_one_sender_per_pair_of_sites(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "2.gfsh:2: create gateway-sender --id=b: site 2 already has a sender to site 1",
        site1_gfsh="create gateway-receiver\n",
        site2_gfsh=(
            "create gateway-sender --id=a --remote-distributed-system-id=1\n"
            "create gateway-sender --id=b --remote-distributed-system-id=1\n"
        ),
    )


def test_wrong_root_element(tmp_path: Path) -> None:
    expect_error(
        tmp_path,
        "1.xml:1: root element is <{http://geode.apache.org/schema/cache}client-cache>",
        site1_xml='<client-cache xmlns="http://geode.apache.org/schema/cache"/>',
    )
    expect_error(
        tmp_path, "root element is <{urn:nope}cache>", site1_xml='<cache xmlns="urn:nope"/>'
    )


def test_gateway_hub_is_reported_not_imported(tmp_path: Path) -> None:
    imported = import_files(tmp_path, site1_xml=cache('<gateway-hub id="old"/>'))
    assert imported.config.senders == ()
    assert any("<gateway-hub>" in w for w in imported.warnings)


def test_non_utf8_gfsh(tmp_path: Path) -> None:
    path = tmp_path / "bad.gfsh"
    path.write_bytes(b"create gateway-receiver --retry-attempts=\xff\n")
    with pytest.raises(GeodeImportError, match=r"bad\.gfsh: not UTF-8 text"):
        import_geode_config([SiteFile(1, str(path))])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("billion-laughs.xml", "billion-laughs.xml:3: refused: the file declares the XML entity"),
        ("external-entity.xml", "external-entity.xml:3: refused: the file declares the XML entity"),
        ("external-dtd.xml", "external-dtd.xml:2: refused: the file refers to the external"),
        ("malformed.xml", "malformed.xml:4: not well-formed XML: mismatched tag"),
    ],
)
def test_hostile_and_malformed_xml_is_refused(name: str, message: str) -> None:
    with pytest.raises(GeodeImportError) as caught:
        import_geode_config([sample(1, name), sample(2, "ny.gfsh")])
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_and_directory_files(tmp_path: Path) -> None:
    with pytest.raises(GeodeImportError, match=r"nope\.xml: no such file"):
        import_geode_config([SiteFile(1, str(tmp_path / "nope.xml"))])
    with pytest.raises(GeodeImportError, match="is a directory"):
        import_geode_config([SiteFile(1, str(tmp_path))])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1", "expected DSID=FILE"),
        ("one=a.xml", "expected DSID=FILE"),
        ("1=", "expected DSID=FILE"),
        ("0=a.xml", "must be from 1 to 255 (R1), got 0"),
        ("256=a.xml", "must be from 1 to 255 (R1), got 256"),
    ],
)
def test_site_argument_errors(text: str, message: str) -> None:
    with pytest.raises(GeodeImportError, match=re.escape(message)):
        parse_site_argument(text)


def test_site_argument_keeps_equals_signs_in_the_path() -> None:
    assert parse_site_argument("12=a=b.xml") == SiteFile(12, "a=b.xml")


def test_same_site_twice_is_an_error() -> None:
    with pytest.raises(GeodeImportError, match="site 1 is already given"):
        import_geode_config([sample(1, "ln.gfsh"), sample(1, "ny.gfsh")])


def test_import_errors_are_config_errors() -> None:
    assert issubclass(GeodeImportError, ConfigError)


# --- wanconform import ---------------------------------------------------------------------


def test_cli_import_writes_canonical_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_path = tmp_path / "config.json"
    code = main(
        [
            "import",
            "--site",
            f"1={GEODE / 'ln-cache.xml'}",
            "--site",
            f"2={GEODE / 'ny-cache.xml'}",
            "-o",
            str(out_path),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == ""
    assert "wanconform: warning: " in captured.err
    text = out_path.read_text(encoding="utf-8")
    assert text == canonical_json(TWO_SITES.to_json()) + "\n"
    assert parse_config(json.loads(text)) == TWO_SITES
    assert sorted(os.listdir(tmp_path)) == ["config.json"]
    # The written file is a configuration `wanconform topology` reads.
    assert main(["topology", str(out_path), "--json"]) == 0


def test_cli_import_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["import", "--site", f"1={GEODE / 'ln.gfsh'}", "--site", f"2={GEODE / 'ny.gfsh'}"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == canonical_json(TWO_SITES.to_json()) + "\n"


def test_cli_import_error_leaves_output_untouched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_path = tmp_path / "config.json"
    out_path.write_text("previous\n", encoding="utf-8")
    code = main(
        [
            "import",
            "--site",
            f"1={GEODE / 'billion-laughs.xml'}",
            "--site",
            f"2={GEODE / 'ny.gfsh'}",
            "-o",
            str(out_path),
        ]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("wanconform: error: ") and "billion-laughs.xml:3" in captured.err
    assert out_path.read_text(encoding="utf-8") == "previous\n"
    assert sorted(os.listdir(tmp_path)) == ["config.json"]


def test_cli_import_bad_site_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "--site", "ln-cache.xml"]) == 2
    err = capsys.readouterr().err
    assert (
        err == "wanconform: error: --site 'ln-cache.xml': expected DSID=FILE, e.g. --site "
        "1=ln-cache.xml\n"
    )
