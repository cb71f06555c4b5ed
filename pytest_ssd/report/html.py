"""The pytest-html report: metric columns, figures per test, a run summary on top.

Registered on the controller only; everything it shows comes from the reports
(``user_properties``, ``extras``) and from the results store, so it works the
same with and without xdist.
"""

from __future__ import annotations

import html
from typing import Any

import pytest

from pytest_ssd.report import figures
from pytest_ssd.report.conformance import conformance_html
from pytest_ssd.report.summary import device_summary_html
from pytest_ssd.report.transitions import transitions_html
from pytest_ssd.results.record import PROPERTY, Measurement, percentile_us
from pytest_ssd.session import SCRATCH_BANNER, SsdSession

COLUMNS = (
    ("device", "Device"),
    ("workload", "Workload"),
    ("iops", "IOPS"),
    ("mibs", "MiB/s"),
    ("latmean", "Mean lat (µs)"),
    ("p99", "p99 (µs)"),
    ("p9999", "p99.99 (µs)"),
)


def measurements_of(report: pytest.TestReport) -> list[Measurement]:
    return [
        Measurement.from_json(v)
        for k, v in report.user_properties
        if k == PROPERTY and isinstance(v, str)
    ]


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/r" if value is None else f"{value:,.{digits}f}"


def _cells(measurements: list[Measurement]) -> dict[str, str]:
    rows: dict[str, list[str]] = {key: [] for key, _ in COLUMNS}
    for m in measurements:
        for direction, data in sorted(m.metrics.items()):
            rows["device"].append(m.device)
            rows["workload"].append(f"{m.workload.get('label', m.name)} [{direction}]")
            rows["iops"].append(_fmt(data["iops"]))
            rows["mibs"].append(_fmt(data["bw_mib_s"], 1))
            rows["latmean"].append(_fmt(data["lat_mean_us"], 1))
            rows["p99"].append(_fmt(percentile_us(data, 99.0), 1))
            rows["p9999"].append(_fmt(percentile_us(data, 99.99), 1))
    return {key: "<br>".join(html.escape(v) for v in values) for key, values in rows.items()}


def terminal_lines(session: SsdSession) -> list[str]:
    """Lines for the terminal header: the run folder and every device."""
    lines = [f"pytest-ssd {session.run_id}: {session.run_dir}"]
    for dut in session.duts.values():
        lines.append(f"  {dut.id}: {dut.identity.summary()}")
        if dut.scratch:
            lines.append(f"  {dut.id}: SCRATCH DEVICE ({dut.note}): {SCRATCH_BANNER}")
        if dut.readonly:
            lines.append(f"  {dut.id}: read-only (--ssd-readonly): write tests are skipped")
    return lines


class HtmlReport:
    """pytest-html hooks of pytest-ssd (controller only)."""

    def __init__(self, session: SsdSession) -> None:
        self.session = session

    def pytest_html_report_title(self, report: Any) -> None:
        report.title = f"pytest-ssd run {self.session.run_id}"

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        extra = [
            f'<th class="sortable" data-column-type="{key}">{name}</th>' for key, name in COLUMNS
        ]
        cells[2:2] = extra

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        values = _cells(measurements_of(report))
        cells[2:2] = [f'<td class="col-{key}">{values[key]}</td>' for key, _ in COLUMNS]

    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session
    ) -> None:
        prefix.extend(self._devices_html())
        summaries = [(d.id, d.summary) for d in self.session.duts.values() if d.summary]
        prefix.append(device_summary_html(summaries))
        store = self.session.store
        if store is not None:
            prefix.append(conformance_html(store.data["conformance"]))
            prefix.append(transitions_html(store.data["transitions"]))
        measurements = store.measurements if store is not None else []
        if measurements:
            fig = figures.workload_bars(measurements, list(self.session.duts))
            rendered = figures.render(fig)
            rendered.save(self.session.run_dir / "figures", "throughput-by-workload")
            prefix.append(
                "<h3>Throughput by workload</h3>"
                f'<img alt="throughput by workload" src="data:image/png;base64,'
                f'{rendered.png_base64}"/>'
            )

    def _devices_html(self) -> list[str]:
        rows = []
        for dut in self.session.duts.values():
            ident = dut.identity
            banner = (
                f'<p style="color:#b00"><b>Scratch device:</b> {html.escape(dut.note)} — '
                f"{SCRATCH_BANNER}.</p>"
                if dut.scratch
                else ""
            )
            rows.append(
                f"<tr><td>{html.escape(dut.id)}</td><td>{html.escape(str(dut.path))}</td>"
                f"<td>{html.escape(ident.model or '—')}</td>"
                f"<td>{html.escape(ident.serial or '—')}</td>"
                f"<td>{html.escape(ident.firmware or '—')}</td>"
                f"<td>{ident.size_bytes / 2**30:,.2f} GiB ({ident.size_bytes / 1e9:,.2f} GB)</td>"
                f"<td>{ident.logical_block_size}/{ident.physical_block_size}</td>"
                f"<td>{html.escape(ident.transport)}</td></tr>"
            )
            if banner:
                rows.append(f'<tr><td colspan="8">{banner}</td></tr>')
        return [
            "<h2>Devices under test</h2><table><tr><th>id</th><th>path</th><th>model</th>"
            "<th>serial</th><th>firmware</th><th>capacity</th><th>LBA/phys (B)</th>"
            "<th>transport</th></tr>",
            *rows,
            "</table>",
        ]
