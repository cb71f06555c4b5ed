"""``pytest-ssd site`` end to end: the lab's static site from a real database of 3 drives × 6
builds (tests/e2e/site_data.py: the fifth build's reads of one drive throttled through a blkio
cgroup), opened from its folder in headless Chromium and Firefox as a reader opens it.

The alerts page must raise the fifth build's step on exactly the throttled series (the read
series of the throttled drive) and on no other; its run-report link, clicked, opens that run's
report.html; the throttled series' chart is drawn and a hover shows a value; no page logs a
console error or requests anything but the site's files (it works offline). A person's mark
in marks.json is kept and shown by the next build of the site, and a build after one more run
(of one drive) writes only that drive's pages again and keeps the others' files untouched.

The module needs a quiet machine (``alone``): a load beside the runs (half a second each)
moves every number it reaches. The builds are measured in turns (tests/e2e/site_data.py), so
that a disturbance reaches one repeat of a build, not all its repeats (a session slowed as a
whole made a write series' IOPS 0.45 times, or a p99 four to six times, the build before: a
step the detector is right to raise on those numbers); a machine starved of CPU throughout
still drowns the throttled step. Each build's CPU pressure (the kernel's stall information)
is printed with the lab and given with a failed alert check, to tell a busy machine from a
wrong alert.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from tests.browser import (
    check_page,
    console_errors,
    evaluate,
    find_chromium,
    hover,
    launch,
    load,
    open_page,
    requested,
)
from tests.cli import run_cli
from tests.e2e.site_data import (
    BUILDS,
    READ_POINT,
    REPEAT,
    THROTTLED_BUILD,
    THROTTLED_DRIVE,
    Lab,
    build_lab,
    run_session,
    session_argv,
    short_suite,
)
from tests.firefox import PACKAGE, find_firefox, firefox_tab

SUMMARY = re.compile(r"^site: (\d+) pages written, (\d+) kept \(unchanged\), (\d+) alerts -> (.+)$")
SITE_TIMEOUT_S = 120
pytestmark = pytest.mark.alone
BROWSER_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def lab(module_loop_device: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    made = build_lab(tmp_path_factory.mktemp("site-lab"), module_loop_device)
    print(f"the lab's database: {len(BUILDS)} builds in {made.seconds:.0f} s; {made.busy_line()}")
    yield made


def build_site(lab: Lab, out: Path) -> tuple[int, int, int]:
    """``pytest-ssd site -o OUT --db=…``: (pages written, kept, alerts) from its one line."""
    done = run_cli("site", "-o", str(out), f"--db={lab.db}", timeout=SITE_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    found = SUMMARY.match(lines[0])
    assert found and found.group(4) == str(out / "index.html"), lines[0]
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def series_keys(lab: Lab) -> dict[tuple[str, str], str]:
    """Each (loop device name, measurement) and its series key, as the database stores it."""
    with sqlite3.connect(f"file:{lab.db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT DISTINCT dut_id, name, series_key FROM measurements")
        keys = {(str(dut), str(name)): str(key) for dut, name, key in rows}
    assert len(set(keys.values())) == len(keys) == 2 * len(lab.drives), keys
    return keys


def throttled_key(lab: Lab) -> str:
    return series_keys(lab)[(lab.drives[THROTTLED_DRIVE].name, READ_POINT)]


def run_build(href: str) -> str:
    """The build of the run whose report.html *href* is (its results.json says)."""
    report = Path(unquote(urlparse(href).path))
    assert report.name == "report.html" and report.is_file(), href
    run = json.loads((report.parent / "results.json").read_text())
    builds = {str(device["build"]) for device in run["devices"].values()}
    assert len(builds) == 1, builds
    return builds.pop()


_OPENED = "({url: location.href, summary: !!document.querySelector('#ssd-summary')})"


def opened_page(cdp: Any, session: str, timeout: float = 30) -> dict[str, Any]:
    """The page the tab shows once a report.html has loaded in it (its URL, its summary)."""
    deadline = time.monotonic() + timeout
    while True:
        found = evaluate(cdp, session, _OPENED)
        # pytest-html's page adds its sort order to its URL (?sort=result) once it runs
        if urlparse(str(found["url"])).path.endswith("/report.html") or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


_ALERTS = """
[...document.querySelectorAll('#alerts tr.alert')].map((tr) => ({
  series: tr.dataset.series, build: tr.dataset.build, drive: tr.dataset.drive,
  text: tr.textContent, reports: tr.querySelectorAll('a.run-report').length}))
"""

#: a series page's chart: its dots (one a repeat of the metric shown), the repeats its
#: embedded data holds for that metric, the step marks, and the first dot not covered by
#: another (a build's repeats can overlap): its centre and label
_CHART = """
(() => {
  const data = JSON.parse(document.getElementById('chart-data').textContent);
  const metric = document.querySelector('div.chart select').value;
  const dots = [...document.querySelectorAll('div.chart svg circle.point')];
  dots[0]?.scrollIntoView({block: 'center'});
  const centre = (dot) => {
    const box = dot.getBoundingClientRect();
    return [box.x + box.width / 2, box.y + box.height / 2];
  };
  const shown = dots.find((dot) => document.elementFromPoint(...centre(dot)) === dot);
  const [x, y] = shown ? centre(shown) : [0, 0];
  return {
    dots: dots.length,
    repeats: data.traces.filter((t) => t.metric === metric)
      .reduce((n, t) => n + t.points.reduce((m, p) => m + p.ys.length, 0), 0),
    steps: document.querySelectorAll('div.chart svg line.step').length,
    x, y, label: shown?.textContent ?? '',
  };
})()
"""
_READOUT = "document.querySelector('div.chart .readout').textContent"
#: what a hover on a dot shows: "drive-1 read IOPS · fw-1: 60,146 IOPS"
HOVERED = re.compile(r"^drive-\d+ read IOPS · fw-\d+: [\d,.]+ IOPS$")


def offsite(urls: list[str]) -> list[str]:
    """The requests that are not of a file of the site's folder: a network fetch each."""
    return [url for url in urls if urlparse(url).scheme != "file"]


def assert_chart_drawn(chart: dict[str, Any]) -> None:
    """The throttled series' chart: every repeat a dot, its steps (the fifth build's at least)
    marked."""
    assert chart["dots"] == chart["repeats"] == len(BUILDS) * REPEAT, chart
    assert chart["steps"] >= 1, chart
    assert HOVERED.match(chart["label"]), chart


def test_the_throttled_build_is_the_one_alert_and_links_to_its_run(
    lab: Lab, tmp_path: Path, artifacts: Path, chromium: str
) -> None:
    out = tmp_path / "site"
    written, kept, alerts = build_site(lab, out)
    assert written >= 2 + len(series_keys(lab)) and kept == 0, (written, kept)
    for page in ("index.html", "alerts.html"):
        check = check_page(
            out / page, ("table",), screenshot=artifacts / f"{page}.png", timeout=BROWSER_TIMEOUT_S
        )
        assert check.console_errors == [], check.console_errors
        assert check.missing == [] and check.broken_images == [], check.problems()
        assert check.requests and offsite(check.requests) == [], check.requests
    index = (out / "index.html").read_text()
    assert 'id="drives"' in index and 'id="suites"' in index
    for key in series_keys(lab).values():
        assert (out / "series" / f"{key}.html").is_file(), key

    browser = find_chromium()
    assert browser is not None
    with launch(browser, time.monotonic() + BROWSER_TIMEOUT_S) as cdp:
        session = open_page(cdp, 1280)
        target = throttled_key(lab)
        load(cdp, session, (out / "series" / f"{target}.html").resolve().as_uri())
        chart = evaluate(cdp, session, _CHART)
        assert_chart_drawn(chart)
        assert evaluate(cdp, session, _READOUT).strip() == "", "nothing shown before a hover"
        hover(cdp, session, chart["x"], chart["y"])
        assert evaluate(cdp, session, _READOUT) == chart["label"], "a hover shows the value"
        load(cdp, session, (out / "alerts.html").resolve().as_uri())
        rows = evaluate(cdp, session, _ALERTS)
        assert alerts == len(rows), (alerts, rows)
        fifth = [row for row in rows if row["build"] == THROTTLED_BUILD]
        # one row a metric of the series (IOPS, p99 latency): the throttled series' alone
        assert fifth and {row["series"] for row in fifth} == {target}, (rows, lab.busy_line())
        # the step back at the sixth build is the same series'; no other series has any alert
        assert {row["series"] for row in rows} == {target}, (rows, lab.busy_line())
        assert fifth[0]["reports"] == 2 * REPEAT, "links to the runs' reports on both sides"

        # click the fifth build's run report (of the two the row links): its report.html opens
        selector = f'#alerts tr.alert[data-build="{THROTTLED_BUILD}"] a.run-report'
        hrefs = evaluate(
            cdp, session, f"[...document.querySelectorAll('{selector}')].map((a) => a.href)"
        )
        at = [run_build(href) for href in hrefs].index(THROTTLED_BUILD)
        # the series page and the alerts page: no console error, nothing from the network
        assert console_errors(cdp, session) == [], console_errors(cdp, session)
        assert offsite(requested(cdp, session)) == [], requested(cdp, session)
        href = hrefs[at]
        before = {id(event) for event in cdp.events}
        evaluate(cdp, session, f"document.querySelectorAll('{selector}')[{at}].click() ?? true")
        cdp.wait_for(
            "the run report's load",
            lambda e: (
                id(e) not in before
                and e.get("sessionId") == session
                and e["method"] == "Page.lifecycleEvent"
                and e["params"].get("name") == "load"
            ),
        )
        opened = opened_page(cdp, session)
    assert urlparse(opened["url"]).path == urlparse(href).path, (opened, href)
    assert opened["summary"], "the run's report, not another page"
    assert Path(unquote(urlparse(href).path)).parent.parent == lab.reports, href


def marked_row(out: Path, key: str) -> str:
    """The alerts page's row of *key*'s alert on the throttled build (its first metric's)."""
    html = (out / "alerts.html").read_text()
    pattern = (
        rf'<tr class="alert"[^>]*data-series="{key}"[^>]*data-build="{THROTTLED_BUILD}".*?</tr>'
    )
    row = re.search(pattern, html, re.S)
    assert row, f"no alert row of {key} on {THROTTLED_BUILD}"
    return row.group(0)


def test_a_mark_is_kept_and_shown_by_the_next_build(lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(lab, out)
    key = throttled_key(lab)
    assert "expected" not in marked_row(out, key), "no mark before a person gives one"
    marks = out / "marks.json"
    marks.write_text(json.dumps({f"{key}@{THROTTLED_BUILD}": "expected"}) + "\n")
    build_site(lab, out)
    assert json.loads(marks.read_text()) == {f"{key}@{THROTTLED_BUILD}": "expected"}, "kept"
    assert "expected" in marked_row(out, key)


def test_a_second_build_after_one_more_run_keeps_the_unchanged_pages(
    lab: Lab, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    first, _, _ = build_site(lab, out)
    pages = {path: path.stat().st_mtime_ns for path in out.rglob("*.html")}
    # one more run, of the first drive only: its two series change, no other
    folder = tmp_path / "more"
    folder.mkdir()
    drive_0 = {lab.label(0): lab.drives[0]}
    argv = session_argv(short_suite(folder), lab.reports, drive_0, "fw-7")
    run_session(argv, folder)
    written, kept, _ = build_site(lab, out)
    assert kept >= 2 * (len(lab.drives) - 1), (written, kept)
    assert 2 <= written < first, (written, first)
    keys = series_keys(lab)
    for (dut, _), key in keys.items():
        page = out / "series" / f"{key}.html"
        changed = page.stat().st_mtime_ns != pages[page]
        assert changed == (dut == lab.drives[0].name), (dut, key)


@pytest.fixture
def firefox() -> str:
    """Firefox's path; the test is skipped when it is not installed."""
    found = find_firefox()
    if found is None:
        pytest.skip(f"Firefox is not installed (Debian's package: {PACKAGE})")
    return found


def test_the_pages_work_offline_in_firefox(lab: Lab, tmp_path: Path, firefox: str) -> None:
    """The index, the alerts and the throttled series' page in headless Firefox: the tables
    and the alert there, the chart drawn, a hover shows a value, no console error, nothing
    fetched from the network (Firefox reports every request but those of files)."""
    out = tmp_path / "site"
    build_site(lab, out)
    target = throttled_key(lab)
    with firefox_tab(firefox, BROWSER_TIMEOUT_S) as tab:
        tab.load((out / "index.html").resolve().as_uri())
        tables = "[...document.querySelectorAll('table')].map((t) => t.id)"
        assert {"drives", "suites"} <= set(tab.evaluate(tables))
        tab.load((out / "alerts.html").resolve().as_uri())
        rows = tab.evaluate(_ALERTS)
        assert rows and {row["series"] for row in rows} == {target}, (rows, lab.busy_line())
        tab.load((out / "series" / f"{target}.html").resolve().as_uri())
        chart = tab.evaluate(_CHART)
        assert_chart_drawn(chart)
        assert tab.evaluate(_READOUT).strip() == "", "nothing shown before a hover"
        tab.hover(chart["x"], chart["y"])
        assert tab.evaluate(_READOUT) == chart["label"], "a hover shows the value"
        assert tab.console_errors() == [], tab.console_errors()
        assert offsite(tab.requests()) == [], tab.requests()
