"""The pytest-html report: metric columns, figures per test, a run summary on top.

Registered on the controller only; everything it shows comes from the reports
(``user_properties``, ``extras``) and from the results store, so it works the
same with and without xdist.
"""

from __future__ import annotations

import html
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.scratch import SCRATCH_BANNER
from pytest_ssd.plugin.overview import destroys
from pytest_ssd.results.history import build_phrase
from pytest_ssd.results.record import PROPERTY, Measurement, percentile_us
from pytest_ssd.session import SsdSession
from pytest_ssd.text import latency

#: what pytest-html shows for a test without output (its _process_logs)
NO_LOG = "No log output captured."
COLUMNS = (
    ("device", "Device"),
    ("workload", "Workload"),
    ("iops", "IOPS"),
    ("mibs", "MiB/s"),
    ("latmean", "Mean latency"),
    ("p99", "p99 latency"),
    ("p9999", "p99.99 latency"),
    ("fio", "fio"),
)


def measurements_of(report: pytest.TestReport) -> list[Measurement]:
    """The measurements a test report carries (a collection error's report carries none)."""
    return [
        Measurement.from_json(v)
        for k, v in getattr(report, "user_properties", ())
        if k == PROPERTY and isinstance(v, str)
    ]


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/r" if value is None else f"{value:,.{digits}f}"


def _latency(us: float | None) -> str:
    return "n/r" if us is None else latency(us)


def _fio_links(m: Measurement, run_dir: Path, page_dir: Path) -> str:
    """Links to the job file fio ran and what it printed, from the page's folder."""
    folder = Path(os.path.relpath(run_dir / m.artifacts, page_dir)).as_posix()
    return " · ".join(
        f'<a href="{html.escape(folder)}/{name}">{text}</a>'
        for name, text in (("fio.job", "job"), ("fio.stdout", "output"))
    )


def _cells(measurements: list[Measurement], run_dir: Path, page_dir: Path) -> dict[str, str]:
    rows: dict[str, list[str]] = {key: [] for key, _ in COLUMNS if key != "fio"}
    links = [_fio_links(m, run_dir, page_dir) for m in measurements for _ in m.metrics]
    for m in measurements:
        for direction, data in sorted(m.metrics.items()):
            rows["device"].append(m.device)
            rows["workload"].append(f"{m.workload.get('label', m.name)} [{direction}]")
            rows["iops"].append(_fmt(data["iops"]))
            rows["mibs"].append(_fmt(data["bw_mib_s"], 1))
            rows["latmean"].append(_latency(data["lat_mean_us"]))
            rows["p99"].append(_latency(percentile_us(data, 99.0)))
            rows["p9999"].append(_latency(percentile_us(data, 99.99)))
    cells = {key: "<br>".join(html.escape(v) for v in values) for key, values in rows.items()}
    return {**cells, "fio": "<br>".join(links)}


def terminal_lines(session: SsdSession, distributed: bool = False) -> list[str]:
    """Lines for the terminal header: the run folder and every device.

    *distributed* (``-n N``): the controller collects nothing, so no plan is printed; whose
    data goes is said here instead, under each device.
    """
    lines = [f"pytest-ssd {session.run_id}: {session.run_dir}"]
    lines += [f"  warning: {line}" for line in session.warnings]
    for dut in session.duts.values():
        shown = session.services(dut.id).site.described(dut.identity.summary())
        lines.append(f"  {dut.id}: {shown}; {build_phrase(dut.build)}")
        if distributed and not dut.scratch:
            gone = destroys(dut.identity, dut.readonly)
            lines += [f"  {dut.id}: {line.strip()}" for line in gone]
        if dut.scratch:
            lines.append(f"  {dut.id}: SCRATCH DEVICE ({dut.note}): {SCRATCH_BANNER}")
        if dut.readonly:
            lines.append(f"  {dut.id}: read-only (--ssd-readonly): write tests are skipped")
    return lines


class HtmlReport:
    """pytest-html hooks of pytest-ssd (controller only)."""

    def __init__(self, session: SsdSession, page: Path) -> None:
        self.session = session
        #: the folder of report.html: fio's files are linked relative to it
        self.page_dir = page.parent

    def pytest_html_report_title(self, report: Any) -> None:
        report.title = f"pytest-ssd run {self.session.run_id}"

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        extra = [
            f'<th class="sortable" data-column-type="{key}">{name}</th>' for key, name in COLUMNS
        ]
        cells[2:2] = extra

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        values = _cells(measurements_of(report), self.session.run_dir, self.page_dir)
        cells[2:2] = [f'<td class="col-{key}">{values[key]}</td>' for key, _ in COLUMNS]

    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        """No "No log output captured." box under a test that printed nothing."""
        if data == [NO_LOG]:
            data.clear()

    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session
    ) -> None:
        # the report's sections draw (matplotlib): loaded when the page is written, not at
        # every session's start (a run refused before any fio never draws)
        from pytest_ssd.report.build import declared_sections, sections_html  # noqa: PLC0415

        ssd = self.session
        declared = declared_sections(session.config.hook.pytest_ssd_report_sections)
        # the lab's server while it holds the whole run; else the run's spool (nothing to compare)
        source = ssd.db.source if ssd.db is not None else ssd.options.db
        compared = ssd.compared if source == ssd.options.db else []
        notes = ssd.db.notes if ssd.db is not None else ()
        prefix.extend(f'<p class="ssd-db-note"><b>{html.escape(n)}</b></p>' for n in notes)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")

        def progress(line: str) -> None:
            if reporter is not None:
                reporter.write_line(f"pytest-ssd: {line}")

        rendered = sections_html(
            source, ssd.run_id, compared, ssd.run_dir / "figures", declared, progress=progress
        )
        prefix.append(rendered.html)
        for line in rendered.problems:  # the report has a box in the section's place
            if reporter is not None:
                reporter.write_line(f"pytest-ssd: {line}")
            else:
                sys.stderr.write(f"pytest-ssd: {line}\n")
