"""The HTML report in a real browser (issue 10): headless Chromium opens a report made
from traces with a planted bug; the page's own script records its errors and a self-test
(filter and grouping) into the DOM, which `--dump-dom` gives back."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wanconform.cli import main

DATA = Path(__file__).parent / "data" / "report"
EXAMPLES = Path(__file__).parent.parent / "traces" / "examples"
RESEND = "tools.planted_bugs:ResendWithoutPossibleDuplicate"
CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None
)
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
)  # fmt: skip

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)"
)


def dump_dom(url: str, profile: Path, *flags: str) -> str:
    assert CHROMIUM is not None
    run = subprocess.run(
        [CHROMIUM, *FLAGS, *flags, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return run.stdout


def test_report_opens_in_chromium_without_errors_and_filters(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    traces = [str(DATA / "resend.jsonl"), str(DATA / "dead_letter.jsonl")]
    traces += [str(EXAMPLES / "lost_ack_resend.jsonl"), str(EXAMPLES / "batching_by_size.jsonl")]
    assert main(["report", *traces, "-o", str(report), "--impl", RESEND]) == 1
    dom = dump_dom(report.as_uri() + "#selftest", tmp_path / "profile")
    errors = re.search(r'<pre id="js-errors" data-count="(\d+)"[^>]*>(.*?)</pre>', dom, re.S)
    assert errors is not None and errors.group(1) == "0", errors and errors.group(2)
    found = re.search(r'<pre id="selftest"[^>]*>(.*?)</pre>', dom, re.S)
    assert found is not None, "the page's self-test did not run"
    selftest = json.loads(found.group(1))
    assert selftest["sections"] == [
        "verdicts", "failures", "coverage", "geode-stats", "bandwidth", "topologies", "traces",
    ]  # fmt: skip
    # resend.jsonl and lost_ack_resend.jsonl resend a timed-out batch (R20): both show
    # the planted bug; the other two never time out.
    assert selftest["all"] == 4
    assert selftest["groups"] == {"P1 observations: sent.events_resent": 2}
    assert selftest["failing"] == 2
    assert selftest["nothing"] == 0
    assert selftest["diagrams"] > 0  # arrows and marks of the sequence diagram drawn
    assert dom.count("<tr>") > 20  # the trace table rows were built by the script


GEOMETRY = """<script>
(function () {
  function box(el) {
    var r = el.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom];
  }
  var checkbox = document.getElementById("failing");
  var words = Array.prototype.find.call(checkbox.parentElement.childNodes, function (n) {
    return n.nodeType === 3 && n.textContent.trim();
  });
  var range = document.createRange(); range.selectNodeContents(words);
  var tables = document.querySelectorAll("#coverage table");
  var out = {
    checkbox: box(checkbox), words: box(range),
    tables: Array.prototype.map.call(tables, function (t) {
      var rows = Array.prototype.reduce.call(t.rows, function (sum, r) {
        return sum + r.getBoundingClientRect().height;
      }, 0);
      return { height: t.getBoundingClientRect().height, rows: rows };
    }),
  };
  var pre = document.createElement("pre"); pre.id = "geometry";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


@pytest.mark.parametrize("width", [1400, 800])
def test_failing_only_checkbox_sits_by_its_label_and_tables_keep_their_height(
    tmp_path: Path, width: int
) -> None:
    """Issue 20: the "failing only" checkbox is next to its words, on their line; each
    coverage table is as tall as its rows, not as the tallest (the operations')."""
    report = tmp_path / "report.html"
    assert main(["report", str(DATA / "resend.jsonl"), "-o", str(report), "--impl", RESEND]) == 1
    page = tmp_path / "measured.html"
    page.write_text(report.read_text("utf-8").replace("</body>", GEOMETRY + "</body>"), "utf-8")
    dom = dump_dom(page.as_uri(), tmp_path / "profile", f"--window-size={width},2400")
    found = re.search(r'<pre id="geometry">(.*?)</pre>', dom, re.S)
    assert found is not None, "the measuring script did not run"
    geometry = json.loads(found.group(1))
    left, right, top, bottom = geometry["checkbox"]
    w_left, _, w_top, w_bottom = geometry["words"]
    assert right - left < 30  # a checkbox, not a 260 px wide input
    assert 0 <= w_left - right < 12  # the words start just after the box
    assert top <= (w_top + w_bottom) / 2 <= bottom  # on the same line
    ops, statuses, outcomes = geometry["tables"]
    for table in (ops, statuses, outcomes):
        assert abs(table["height"] - table["rows"]) < 4  # as tall as its rows
    assert statuses["height"] < ops["height"] / 2  # 6 rows, not the 31 of the operations


WIDTHS = """<script>
(function () {
  var side = document.querySelector("table.side");
  var pre = document.createElement("pre"); pre.id = "widths";
  pre.textContent = JSON.stringify({
    page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth,
    table: side.getBoundingClientRect().right,
  });
  document.body.appendChild(pre);
})();
</script>
"""


def test_a_long_key_and_value_wrap_and_the_impl_column_stays_in_view(tmp_path: Path) -> None:
    # a 3,000-character key and value made the page 20,000 px wide: the impl column of
    # the side-by-side table was off the screen
    trace = tmp_path / "long.jsonl"
    key = "<" + "x" * 3000 + ">"
    config = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2,
              "batch_size": 1, "failure_listener": "dlq"}]}  # fmt: skip
    fail = {"op": "fail", "site": 2, "key": key, "exception": "E", "times": 1}
    put = {"op": "put", "site": 1, "key": key, "value": {"long": "y" * 3000}}
    lines = [{"config": config}, fail, put, {"op": "settle"}]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = tmp_path / "report.html"
    bug = "tools.planted_bugs:DeadLetterWithoutValue"
    assert main(["report", str(trace), "-o", str(report), "--impl", bug]) == 1
    page = tmp_path / "measured.html"
    page.write_text(report.read_text("utf-8").replace("</body>", WIDTHS + "</body>"), "utf-8")
    dom = dump_dom(page.as_uri(), tmp_path / "profile", "--window-size=1280,2400")
    found = re.search(r'<pre id="widths">(.*?)</pre>', dom, re.S)
    assert found is not None, "the measuring script did not run"
    widths = json.loads(found.group(1))
    assert widths["page"] == widths["window"] and widths["table"] <= widths["window"]


PAGE_WIDTH = """<script>
(function () {
  var pre = document.createElement("pre"); pre.id = "page-width";
  var root = document.documentElement;
  pre.textContent = JSON.stringify({ page: root.scrollWidth, window: root.clientWidth });
  document.body.appendChild(pre);
})();
</script>
"""


def test_a_report_on_a_phone_is_no_wider_than_the_screen(tmp_path: Path) -> None:
    # at 400 px the table of Geode's statistics, the trace table and the --impl in the
    # summary and the verdicts' sentence made the page 736 px wide
    report = tmp_path / "report.html"
    trace = str(EXAMPLES / "lost_ack_resend.jsonl")
    assert main(["report", trace, "-o", str(report), "--impl", RESEND]) == 1
    page = tmp_path / "measured.html"
    page.write_text(report.read_text("utf-8").replace("</body>", PAGE_WIDTH + "</body>"), "utf-8")
    dom = dump_dom(page.as_uri(), tmp_path / "profile", "--window-size=400,2400")
    found = re.search(r'<pre id="page-width">(.*?)</pre>', dom, re.S)
    assert found is not None, "the measuring script did not run"
    widths = json.loads(found.group(1))
    assert widths["window"] < 600  # a narrow window (headless Chromium may widen it a little)
    assert widths["page"] == widths["window"]
