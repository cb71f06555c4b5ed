"""The site's chart against matplotlib SVG: 100 series × 200 builds × 5 repeats, in Chromium.

The site of the lab-sized database of tests/benchmarks/site.py (100 series, 200 builds, 5
repeats a build, a tenth of the series halving at build 150) is built; its series pages
are the site's own chart (assets/chart.js drawing the data embedded in the page). From
the same embedded data matplotlib draws what the chart draws (each build's repeats as
dots and their spread as a bar, the median as a line, the steps as dashed lines, IOPS and
p99 as two figures) as SVG inline in a page of its own, plain and with what hover and
click need (a ``<title>`` and a link a dot). Measured: the time to write the pages, their
weight, and in headless Chromium (tests/browser.py) the time from navigation to the first
frame drawn after the load event, median of ``--loads`` pages each; on one page of the
site's chart also switching the metric, zooming into a range and back.

Run: ``python -m tests.benchmarks.chart [--loads N] [--shots DIR]`` (``--shots``: keep a
screenshot of each kind of page to judge its readability).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from tests.benchmarks.history import _quiet
from tests.benchmarks.site import BUILDS, write_run
from tests.browser import (
    VIEWPORT_WIDTH,
    evaluate,
    find_chromium,
    launch,
    load,
    open_page,
    take_screenshot,
)

LOADS = 10
#: the first frame after the load event: by then the page's scripts have drawn
FIRST_FRAME = """
new Promise((done) => requestAnimationFrame(() => setTimeout(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  done({frame: performance.now(), load: nav.loadEventEnd,
        nodes: document.getElementsByTagName('*').length});
})))
"""
#: what a reader does on the site's chart: switch the metric, zoom into a fifth, hover, reset
INTERACT = """
(async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
  const svg = document.querySelector('div.chart svg');
  const menu = document.querySelector('div.chart select');
  const out = {points: svg.querySelectorAll('circle.point').length};
  let t = performance.now();
  menu.value = menu.options[1].value; menu.onchange(); await frame();
  out.metric = performance.now() - t;
  menu.value = menu.options[0].value; menu.onchange(); await frame();
  const box = svg.getBoundingClientRect();
  const at = (x) => ({clientX: box.left + box.width * x, clientY: box.top + 100, bubbles: true});
  t = performance.now();
  svg.dispatchEvent(new MouseEvent('mousedown', at(0.4)));
  svg.dispatchEvent(new MouseEvent('mouseup', at(0.6)));
  await frame();
  out.zoom = performance.now() - t;
  out.zoomed = svg.querySelectorAll('circle.point').length;
  svg.querySelector('circle.point').dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  out.hover = document.querySelector('div.chart .readout').textContent;
  t = performance.now();
  svg.dispatchEvent(new MouseEvent('dblclick', {bubbles: true})); await frame();
  out.reset = performance.now() - t;
  return out;
})()
"""


#: the zoom INTERACT makes, again (it resets at its end): builds 130 to 170
ZOOM = """
(() => {
  const svg = document.querySelector('div.chart svg');
  const box = svg.getBoundingClientRect();
  const at = (x) => ({clientX: box.left + x * box.width / 900, clientY: box.top + 100,
                      bubbles: true});
  svg.dispatchEvent(new MouseEvent('mousedown', at(70 + 810 * 130 / 200)));
  svg.dispatchEvent(new MouseEvent('mouseup', at(70 + 810 * 171 / 200)));
  return true;
})()
"""


def build_site(folder: Path) -> tuple[Path, float]:
    """The lab-sized database and its site; the seconds ``pytest-ssd site`` took."""
    db = folder / "lab.sqlite"
    for build in range(BUILDS):
        write_run(db, build)
    site = folder / "site"
    started = time.perf_counter()
    _quiet(["site", "-o", str(site), f"--db={db}"])
    return site, time.perf_counter() - started


def embedded(page: Path) -> dict[str, Any]:
    """The chart data a series page embeds."""
    text = page.read_text(encoding="utf-8")
    start = text.index('id="chart-data">') + len('id="chart-data">')
    data: dict[str, Any] = json.loads(text[start : text.index("</script>", start)])
    return data


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def svg_figure(data: dict[str, Any], metric: str, hover: bool) -> str:
    """One metric of a series as matplotlib draws it, SVG text; with *hover*, a ``<title>``
    (trace, build, value) and a link (its run's report) on every dot."""
    fig = Figure(figsize=(9, 3.6), dpi=100)
    ax = fig.add_subplot()
    labels: list[str] = []
    for t in (t for t in data["traces"] if t["metric"] == metric):
        xs = [p["x"] for p in t["points"] for _ in p["ys"]]
        ys = [y for p in t["points"] for y in p["ys"]]
        dots = ax.scatter(xs, ys, s=4, label=t["name"])
        if hover:
            dots.set_urls([p["links"][0] for p in t["points"] for _ in p["ys"]])
            dots.set_gid("dots")
            labels += [
                f"{t['name']} · {data['builds'][x]}: {y:,.0f} {t['unit']}"
                for x, y in zip(xs, ys, strict=True)
            ]
        x = [p["x"] for p in t["points"]]
        ax.vlines(x, [min(p["ys"]) for p in t["points"]], [max(p["ys"]) for p in t["points"]],
                  alpha=0.3, linewidth=3)  # fmt: skip
        ax.plot(x, [_median(p["ys"]) for p in t["points"]], linewidth=1)
        for build in t["steps"]:
            ax.axvline(data["builds"].index(build) - 0.5, linestyle="--")
        ax.set_ylabel(t["unit"])
    every = max(1, len(data["builds"]) // 16)
    ax.set_xticks(range(0, len(data["builds"]), every), data["builds"][::every], fontsize=7)
    ax.legend(fontsize=7)
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    return _titled(text, labels) if hover else text


def _titled(svg: str, labels: Sequence[str]) -> str:
    """*svg* with a ``<title>`` on each dot of its ``dots`` group, in drawing order."""
    ET.register_namespace("", "http://www.w3.org/2000/svg")
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ET.fromstring(svg)
    group = root.find(".//{http://www.w3.org/2000/svg}g[@id='dots']")
    assert group is not None, "matplotlib wrote no dots group"
    uses = group.iter("{http://www.w3.org/2000/svg}use")
    for use, label in zip(uses, labels, strict=False):
        ET.SubElement(use, "{http://www.w3.org/2000/svg}title").text = label
    return ET.tostring(root, encoding="unicode")


def svg_page(data: dict[str, Any], hover: bool) -> str:
    """A series page with its metrics as matplotlib SVG, inline (so that hover works)."""
    metrics = dict.fromkeys(t["metric"] for t in data["traces"])
    figures = "".join(svg_figure(data, m, hover) for m in metrics)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{data["series"]}</title>'
        f"</head><body><h1>series {data['series']}</h1>{figures}</body></html>\n"
    )


def write_svg_pages(pages: Sequence[Path], folder: Path, hover: bool) -> tuple[list[Path], float]:
    folder.mkdir(parents=True)
    started = time.perf_counter()
    written = []
    for page in pages:
        path = folder / page.name
        path.write_text(svg_page(embedded(page), hover), encoding="utf-8")
        written.append(path)
    return written, time.perf_counter() - started


def _kb(paths: Sequence[Path]) -> float:
    return statistics.median(p.stat().st_size for p in paths) / 1024


def load_times(pages: Sequence[Path], shot: Path | None) -> tuple[float, float, int]:
    """Median ms from navigation to the first frame after load, and to the load event; the
    elements of the page; the first page loaded twice (the first warms the browser)."""
    browser = find_chromium()
    assert browser, "no Chromium on PATH"
    found = []
    with launch(browser, time.monotonic() + 600) as cdp:
        session = open_page(cdp, VIEWPORT_WIDTH)
        for page in [pages[0], *pages]:
            load(cdp, session, page.resolve().as_uri())
            found.append(evaluate(cdp, session, FIRST_FRAME))
        if shot is not None:
            take_screenshot(cdp, session, shot, VIEWPORT_WIDTH)
    found = found[1:]
    return (
        _median([f["frame"] for f in found]),
        _median([f["load"] for f in found]),
        int(found[0]["nodes"]),
    )


def interact(page: Path, shot: Path | None) -> dict[str, Any]:
    """What :data:`INTERACT` measured on *page*; *shot*: the chart zoomed, before the reset."""
    browser = find_chromium()
    assert browser, "no Chromium on PATH"
    with launch(browser, time.monotonic() + 120) as cdp:
        session = open_page(cdp, VIEWPORT_WIDTH)
        load(cdp, session, page.resolve().as_uri())
        done = evaluate(cdp, session, INTERACT)
        if shot is not None:
            evaluate(cdp, session, ZOOM)
            take_screenshot(cdp, session, shot, VIEWPORT_WIDTH)
        return done


def stepped_last(pages: Sequence[Path]) -> list[Path]:
    """*pages* with a series whose step was found last (the one screenshot)."""
    step = next(p for p in pages if any(t["steps"] for t in embedded(p)["traces"]))
    return [*(p for p in pages if p != step), step]


def main_(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chart", description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=LOADS, help="pages loaded of each kind")
    parser.add_argument("--shots", type=Path, help="keep a screenshot of each kind here")
    args = parser.parse_args(argv)
    if find_chromium() is None:
        print("chart skipped: no Chromium on PATH (./run tests installs it)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        site, site_s = build_site(Path(tmp))
        pages = stepped_last(sorted((site / "series").glob("*.html")))
        chart_js = (site / "assets" / "chart.js").stat().st_size / 1024
        rows = {
            "a series page": [f"{_kb(pages):.0f} KB + chart.js {chart_js:.1f} KB once"],
            f"{len(pages)} pages written": [f"{site_s:.1f} s, the whole site"],
        }
        kinds: dict[str, list[Path]] = {"site's chart": pages[-args.loads :]}
        for hover in (False, True):
            name = "matplotlib SVG" + (" + titles, links" if hover else "")
            svgs, svg_s = write_svg_pages(pages, Path(tmp) / f"svg-{hover}", hover)
            rows["a series page"].append(f"{_kb(svgs):.0f} KB")
            rows[f"{len(pages)} pages written"].append(f"{svg_s:.1f} s, drawing alone")
            kinds[name] = svgs[-args.loads :]
        for n, chosen in enumerate(kinds.values()):
            shot = args.shots / f"page-{n}.png" if args.shots else None
            frame, load, nodes = load_times(chosen, shot)
            rows.setdefault(f"first frame (median of {args.loads})", []).append(
                f"{frame:.0f} ms (load {load:.0f} ms)"
            )
            rows.setdefault("elements", []).append(f"{nodes:,}")
        print(f"{len(pages)} series × {BUILDS} builds × 5 repeats, IOPS and p99 each, in Chromium:")
        print(f"  {'':<28}" + "".join(f"{name:<36}" for name in kinds))
        for what, cells in rows.items():
            print(f"  {what:<28}" + "".join(f"{cell:<36}" for cell in cells))
        done = interact(pages[-1], args.shots / "zoomed.png" if args.shots else None)
        print(
            f"  site's chart, one page ({done['points']:,} dots): metric switched in"
            f" {done['metric']:.0f} ms, zoomed into a fifth ({done['zoomed']} dots) in"
            f" {done['zoom']:.0f} ms, back in {done['reset']:.0f} ms; hover reads"
            f" {done['hover']!r} (matplotlib SVG: no zoom; hover by the <title>s alone)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main_())
