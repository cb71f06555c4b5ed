"""The site's pages as HTML text: the index, the alerts and one page per series.

A chart's data is embedded in its page (a ``<script type="application/json">``): a page
opened from the folder (file://) may fetch nothing, and fetches nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from pytest_ssd.site_pages.data import SiteSeries
from pytest_ssd.site_pages.steps import ALERTING, Alert
from pytest_ssd.text import significant

#: what the suites table calls the series of tests recorded without a suite
NO_SUITE = "no suite"
STYLE = (
    "body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
    ".regressed{color:#b00}.improved{color:#070}.chart{width:900px}"
)


def page(title: str, body: str, root: str = "", script: str = "") -> str:
    """A whole page; *root* leads from it to the site's top folder."""
    tail = f'<script src="{root}assets/chart.js"></script>' if script else ""
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>"
        f'<p><a href="{root}index.html">drives and suites</a>'
        f' · <a href="{root}alerts.html">alerts</a></p>'
        f"<h1>{escape(title)}</h1>{body}{script}{tail}</body></html>\n"
    )


def _row(cells: Iterable[str], attrs: str = "") -> str:
    return f"<tr{attrs}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _head(*names: str) -> str:
    return "<tr>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"


def report_href(run_id: str, run_dirs: Mapping[str, str]) -> str:
    """Where a run's report.html is (its folder as the database records it); empty: unknown."""
    where = run_dirs.get(run_id, "").rstrip("/")
    if not where:
        return ""
    return f"file://{where}/report.html" if where.startswith("/") else f"{where}/report.html"


def report_link(run_id: str, run_dirs: Mapping[str, str]) -> str:
    """A link to a run's report.html, named by the run's id."""
    href = report_href(run_id, run_dirs)
    if not href:
        return escape(run_id)
    return f'<a class="run-report" href="{escape(href)}">{escape(run_id)}</a>'


def _series_link(key: str) -> str:
    return f'<a href="series/{escape(key)}.html">{escape(key)}</a>'


@dataclass
class DriveSummary:
    """A drive as the index shows it: what it is, where it ran, its builds and last run."""

    label: str
    what: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    builds: dict[str, None] = field(default_factory=dict)
    last: str = ""
    run: str = ""

    def add(self, s: SiteSeries, run_id: str, build: str, start: str) -> None:
        ident = s.found.identity
        self.what.add(ident.describe().split(", ")[0])  # 'Model 960 GB', as history says it
        self.hosts.add(ident.host_class or "?")
        self.builds[build] = None
        if start > self.last:
            self.last, self.run = start, run_id


def _drives(series: Sequence[SiteSeries]) -> list[DriveSummary]:
    drives: dict[str, DriveSummary] = {}
    for s in series:
        for run_id, build, label, start in s.runs:
            drives.setdefault(label, DriveSummary(label)).add(s, run_id, build, start)
    return sorted(drives.values(), key=lambda d: d.label)


def index_page(
    series: Sequence[SiteSeries], alerts: Sequence[Alert], run_dirs: Mapping[str, str]
) -> str:
    """Drives (model and capacity, host, builds seen, last run, their alerts' verdicts) and
    suites (each series, by test point)."""
    rows = []
    for d in _drives(series):
        mine = [a for a in alerts if a.trace.label == d.label]
        verdicts = ", ".join(f"{sum(a.verdict.verdict == v for a in mine)} {v}" for v in ALERTING)
        cells = [d.label, "; ".join(sorted(d.what)), "; ".join(sorted(d.hosts))]
        cells.append(", ".join(d.builds))
        rows.append(
            _row(
                [
                    *(escape(c) for c in cells),
                    f"{escape(d.last[:19])} {report_link(d.run, run_dirs)}",
                    verdicts,
                ],
                f' class="drive" data-drive="{escape(d.label)}"',
            )
        )
    drive_table = (
        '<table id="drives">'
        + _head("drive", "model and capacity", "host", "builds seen", "last run", "alerts")
        + "".join(rows)
        + "</table>"
    )
    return page(
        "pytest-ssd: drives and suites",
        f"<h2>Drives</h2>{drive_table}<h2>Suites</h2>{_suites(series)}"
        f"<h2>Series</h2>{_series_table(series)}",
    )


def _suites(series: Sequence[SiteSeries]) -> str:
    """A suite a row: its series (links), their runs and the last."""
    names = sorted({name for s in series for name in s.suites or (NO_SUITE,)})
    rows = []
    for name in names:
        mine = [s for s in series if name in (s.suites or (NO_SUITE,))]
        runs = {run for s in mine for run, *_ in s.runs}
        last = max(s.found.last for s in mine)
        links = " ".join(_series_link(s.found.key) for s in mine)
        cells = [escape(name), links, str(len(runs)), escape(last[:19])]
        rows.append(_row(cells, f' class="suite" data-suite="{escape(name)}"'))
    head = _head("suite", "series", "runs", "last run")
    return f'<table id="suites">{head}{"".join(rows)}</table>'


def _series_table(series: Sequence[SiteSeries]) -> str:
    """A series a row: its key (a link to its page), what it is, its runs and the last."""
    rows = [
        _row(
            [
                _series_link(s.found.key),
                escape(s.found.identity.describe()),
                str(s.found.runs),
                escape(s.found.last[:19]),
            ],
            f' class="series" data-series="{escape(s.found.key)}"',
        )
        for s in sorted(series, key=lambda s: s.found.identity.point)
    ]
    head = _head("series", "what", "runs", "last run")
    return f'<table id="series">{head}{"".join(rows)}</table>'


def alerts_page(
    alerts: Sequence[Alert], marks: Mapping[str, str], run_dirs: Mapping[str, str]
) -> str:
    """Every alert, newest first, with its verdict, its mark and both sides' run reports."""
    rows = []
    for a in sorted(alerts, key=lambda a: (a.when, a.series), reverse=True):
        v = a.verdict
        before, after = a.trace.points[a.at - 1], a.trace.points[a.at]
        interval = (
            "—"
            if v.low is None or v.high is None
            else f"[{significant(v.low)}, {significant(v.high)}]"
        )
        p = v.p_worse if v.verdict == "regressed" else v.p_better
        rows.append(
            _row(
                [
                    f"{_series_link(a.series)} {escape(a.what)}",
                    escape(a.trace.name),
                    f"{escape(a.before)} → {escape(a.build)}",
                    f'<span class="{v.verdict}">{v.verdict}</span>',
                    "—" if v.ratio is None else f"×{significant(v.ratio)}",
                    interval,
                    "—" if p is None else significant(p),
                    " ".join(report_link(r, run_dirs) for r in before.runs),
                    " ".join(report_link(r, run_dirs) for r in after.runs),
                    escape(marks.get(a.key, "")),
                ],
                f' class="alert" data-series="{escape(a.series)}" data-build="{escape(a.build)}"'
                f' data-drive="{escape(a.trace.label)}" data-metric="{a.trace.metric}"',
            )
        )
    table = (
        '<table id="alerts">'
        + _head(
            "series",
            "trace",
            "builds",
            "verdict",
            "ratio",
            "95 % interval",
            "p",
            "runs before",
            "runs after",
            "mark",
        )
        + "".join(rows)
        + "</table>"
    )
    how = (
        "<p>Mark an alert in marks.json beside this page: "
        '{"SERIES@BUILD": "expected" | "regression"}; the next site build keeps and shows it.</p>'
    )
    return page(f"pytest-ssd: {len(alerts)} alerts", how + table)


def chart_data(
    s: SiteSeries, alerts: Sequence[Alert], run_dirs: Mapping[str, str]
) -> dict[str, Any]:
    """What a series' chart draws: its builds, and each trace's repeats scaled to its unit."""
    builds = list(dict.fromkeys(b for _, b, _, _ in s.runs))
    traces = []
    for t in s.traces:
        unit, factor = t.unit()
        steps = [a.build for a in alerts if a.trace == t]
        points = [
            {
                "x": builds.index(p.build),
                "ys": [v / factor for v in p.values],
                "links": [report_href(r, run_dirs) for r in p.runs],
            }
            for p in t.points
        ]
        line = None if t.datasheet is None else t.datasheet / factor
        traces.append(
            {
                "name": t.name,
                "metric": t.metric,
                "unit": unit,
                "points": points,
                "steps": steps,
                "datasheet": line,
            }
        )
    return {"series": s.found.key, "builds": builds, "traces": traces}


def series_input(s: SiteSeries, alerts: Sequence[Alert], run_dirs: Mapping[str, str]) -> str:
    """All a series' page is rendered from, as JSON text (what its hash is taken of)."""
    what = {"describe": s.found.identity.describe(), **chart_data(s, alerts, run_dirs)}
    return json.dumps(what, sort_keys=True)


def series_page(given: str) -> str:
    """One series' page from its :func:`series_input`: its chart, the data embedded."""
    data = json.loads(given)
    key = escape(data["series"])
    body = (
        f"<p>{escape(data['describe'])}</p>"
        f'<div class="chart" data-series="{key}"></div>'
        "<p>Hover a point for its value; drag across builds to zoom, double-click to reset;"
        " click a point for its run's report.</p>"
    )
    embedded = given.replace("</", "<\\/")  # no '</script>' inside the script
    script = f'<script type="application/json" id="chart-data">{embedded}</script>'
    return page(f"series {data['series']}", body, "../", script)
