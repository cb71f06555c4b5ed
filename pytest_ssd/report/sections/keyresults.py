"""The key results that open the report: per drive, each suite's headline numbers, the
datasheet verdicts (the lines not met named) and the warnings.

A suite's headline numbers come from its :class:`ReportSection`'s ``headline`` when it
declares one (a method's, :mod:`pytest_ssd.methods`, or a vendor's: esd's steady-state
IOPS, each SNIA test's tracked variable, WSAT's steady IOPS), else from its measurements:
the best sequential read and write (MiB/s), 4 KiB random read and write IOPS at QD1 and at
the highest queue depth measured, and the p99.9 completion latency of 4 KiB random I/O at
QD1 (the measurement with the largest sample).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

from pytest_ssd.db import DriveResults
from pytest_ssd.errors import ExtensionError, call_extension, kind_of
from pytest_ssd.report.sections.base import Context, KeyFigure, ReportSection, table
from pytest_ssd.report.sections.workloads import workload_label
from pytest_ssd.results.record import Derived, Measurement, percentile_us
from pytest_ssd.text import latency

#: the percentile of the key results (the one named everywhere: ``p99.9``)
KEY_PERCENTILE = 99.9
#: a section's own headline numbers of one drive (:attr:`ReportSection.headline`)
Headline = Callable[[Context, DriveResults], Sequence[KeyFigure]]
#: the id of the block: the browser test finds it in the first screen
ANCHOR = "ssd-key-results"


@dataclass(frozen=True)
class _Pick:
    """A measurement's direction and the number picked from it."""

    measurement: Measurement
    direction: str
    value: float


def _candidates(
    measurements: Iterable[Measurement], pattern: str, direction: str, key: str
) -> list[_Pick]:
    """Pure reads or writes (one direction measured) of *pattern*, with their *key*."""
    found = []
    for m in measurements:
        data = m.metrics.get(direction)
        if m.workload.get("pattern") != pattern or data is None or len(m.metrics) != 1:
            continue
        value = data.get(key)
        if isinstance(value, int | float):
            found.append(_Pick(m, direction, float(value)))
    return found


def _depth(m: Measurement) -> int:
    return int(m.workload.get("iodepth", 1)) * int(m.workload.get("numjobs", 1))


def _figure(what: str, pick: _Pick, text: str) -> KeyFigure:
    return KeyFigure(what, text, workload_label(pick.measurement, pick.direction))


def measured(measurements: Sequence[Measurement]) -> list[KeyFigure]:
    """The headline numbers of a suite's measurements (see the module's docstring)."""
    figures = []
    for direction in ("read", "write"):
        seq = _candidates(measurements, "seq", direction, "bw_mib_s")
        if seq:
            best = max(seq, key=lambda p: p.value)
            figures.append(_figure(f"SEQ {direction}", best, f"{best.value:,.0f} MiB/s"))
    for direction in ("read", "write"):
        rnd = [
            p
            for p in _candidates(measurements, "rnd", direction, "iops")
            if int(p.measurement.workload.get("block_size", 0)) == 4096
        ]
        qd1 = [p for p in rnd if _depth(p.measurement) == 1]
        if qd1:
            best = max(qd1, key=lambda p: p.value)
            figures.append(_figure(f"4K {direction} QD1", best, f"{best.value:,.0f} IOPS"))
        deep = [p for p in rnd if _depth(p.measurement) > 1]
        if deep:
            depth = max(_depth(p.measurement) for p in deep)
            best = max((p for p in deep if _depth(p.measurement) == depth), key=lambda p: p.value)
            w = best.measurement.workload
            what = f"4K {direction} Q{w.get('iodepth')}T{w.get('numjobs')}"
            figures.append(_figure(what, best, f"{best.value:,.0f} IOPS"))
        tail = _tail(rnd, qd1, direction)
        if tail is not None:
            figures.append(tail)
    return figures


def _tail(rnd: Sequence[_Pick], qd1: Sequence[_Pick], direction: str) -> KeyFigure | None:
    """p99.9 of the QD1 4 KiB measurement with the largest sample (resolved), if any."""
    resolved = [
        (p, us)
        for p in qd1
        if (us := percentile_us(p.measurement.metrics[direction], KEY_PERCENTILE)) is not None
    ]
    if not resolved:
        return None
    pick, us = max(resolved, key=lambda item: _samples(item[0]))
    return _figure(f"4K {direction} QD1 p{KEY_PERCENTILE:g}", pick, latency(us))


def _samples(pick: _Pick) -> float:
    data: dict[str, Any] = pick.measurement.metrics[pick.direction]
    clat = data.get("clat") or {}
    return float(clat.get("samples") or data.get("total_ios") or data.get("io_bytes") or 0)


def _verdicts(drive: DriveResults) -> str:
    """'3 met, 1 not met, 2 not judged' and the lines not met, named."""
    counts = Counter(str(row.get("verdict")) for row in drive.verdicts)
    if not counts:
        return "no datasheet line judged"
    order = ("met", "not met", "not judged", "not checked")
    text = ", ".join(
        f'<b class="ssd-bad">{counts[v]} {v}</b>' if v == "not met" else f"{counts[v]} {v}"
        for v in (*order, *sorted(set(counts) - set(order)))
        if counts[v]
    )
    failed = [_line(row) for row in drive.verdicts if row.get("verdict") == "not met"]
    if failed:
        text += '<ul class="ssd-bad">' + "".join(f"<li>{line}</li>" for line in failed) + "</ul>"
    return text


def _line(row: dict[str, Any]) -> str:
    """'RND read QD1: 8,123 of 10,000 IOPS (81.2 %)'."""
    unit = str(row.get("unit") or "")
    measured, spec, ratio = row.get("measured"), row.get("spec"), row.get("ratio")
    text = str(row.get("line", "?"))
    if isinstance(measured, int | float) and isinstance(spec, int | float):
        text += f": {measured:,.1f} of {spec:,} {unit}".rstrip()
        if isinstance(ratio, int | float):
            text += f" ({ratio:.1%})"
    return html.escape(text)


def records(ctx: Context, drive: DriveResults, kind: str) -> list[Derived]:
    """*drive*'s derived records of *kind* (a pattern: ``snia-*``) of the context's suite."""
    return [r for r in drive.derived if fnmatchcase(r.name, kind) and ctx.in_suite(r.test)]


def number(value: object, unit: str) -> str:
    """'12,345 IOPS', a latency in µs as people read it ('2.16 ms'), '—' when not a number."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return latency(float(value)) if unit == "µs" else f"{value:,.0f} {unit}"


def _suite_of(test: str) -> str:
    return test.partition("/")[0]


def drive_figures(
    ctx: Context, drive: DriveResults, declared: Sequence[ReportSection]
) -> list[tuple[str, KeyFigure]]:
    """(suite, figure) of each suite *drive* ran, in the report's order of suites."""
    suites = list(dict.fromkeys(_suite_of(m.test) for m in drive.measurements))
    suites += [
        s for s in dict.fromkeys(_suite_of(r.test) for r in drive.derived) if s not in suites
    ]
    headlines = {s.suite: s for s in declared if s.headline is not None}
    ordered = sorted(suites, key=lambda s: next((d.order for d in declared if d.suite == s), 100))
    found = []
    for suite in ordered:
        section = headlines.get(suite)
        if section is None or section.headline is None:
            figures = measured([m for m in drive.measurements if _suite_of(m.test) == suite])
        else:
            figures = _declared(section, section.headline, replace(ctx, suite=suite), drive)
        found += [(suite, f) for f in figures]
    return found


def _declared(
    section: ReportSection, headline: Headline, ctx: Context, drive: DriveResults
) -> list[KeyFigure]:
    """A section's own headline numbers; what it raises or returns wrongly is one line in
    their place (a suite's or a plugin's code: the report goes on)."""
    where = f"report section {section.title!r} of {section.origin or 'pytest-ssd'}: headline()"
    try:
        figures = call_extension(where, lambda: list(headline(ctx, drive)))
    except ExtensionError as exc:
        return [KeyFigure("could not be read", "—", str(exc))]
    wrong = next((f for f in figures if not isinstance(f, KeyFigure)), None)
    if wrong is not None:
        return [
            KeyFigure("could not be read", "—", f"{where} returned {kind_of(wrong)} in its list")
        ]
    return figures


def block(ctx: Context, declared: Sequence[ReportSection], warnings: Sequence[str]) -> str:
    """The key results of this run's drives, side by side, and the warnings under them."""
    parts = []
    for drive in ctx.drives[: ctx.current]:
        rows, last = [], ""
        for suite, f in drive_figures(ctx, drive, declared):
            shown = html.escape(suite) if suite != last else ""  # a suite named once
            rows.append(
                [shown, html.escape(f.what), f"<b>{html.escape(f.value)}</b>", html.escape(f.where)]
            )
            last = suite
        figures = (
            table(["suite", "result", "value", "workload"], rows, "ssd-table ssd-compact")
            if rows
            else "<p>No measurement of this drive is in the database.</p>"
        )
        ident = drive.drive.description.get("identity", {})
        model = ", ".join(str(v) for v in (ident.get("model"), ident.get("serial")) if v)
        title = html.escape(drive.drive.label) + (
            f" <small>({html.escape(model)})</small>" if model else ""
        )
        parts.append(
            f'<div class="ssd-key-drive"><h3>{title}</h3>{figures}'
            f"<p>Datasheet: {_verdicts(drive)}</p></div>"
        )
    body = '<div class="ssd-row">' + "".join(parts) + "</div>"
    if warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        body += f'<ul class="ssd-warnings">{items}</ul>'
    return f'<div id="{ANCHOR}" class="ssd-key-results">{body}</div>'


def steady_text(attained: object) -> str:
    """How a headline says whether a steady state was reached."""
    return "steady state reached" if attained else "steady state NOT reached"
