"""The device summary as HTML: one DUT-summary table per device, NVMe sub-tables below it.

Every value, label and device id goes through :func:`html.escape`: model and
serial strings come from the device and may contain anything.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from pytest_ssd.device.summary import (
    LBA_FORMAT_COLUMNS,
    POWER_STATE_COLUMNS,
    DeviceSummary,
)

_TABLE = '<table class="ssd-summary">'


def device_summary_html(summaries: Sequence[tuple[str, DeviceSummary]]) -> str:
    """HTML for (device id, summary) pairs; empty when there are none."""
    if not summaries:
        return ""
    parts = ["<h2>Device summary</h2>"]
    parts.extend(tables_html(dut_id, summary.tables()) for dut_id, summary in summaries)
    return "\n".join(parts)


def tables_html(name: str, tables: Mapping[str, Sequence[Sequence[str]] | None]) -> str:
    """One device's summary from :meth:`DeviceSummary.tables` (also as stored in the database)."""
    parts = [f"<h3>{html.escape(name)}</h3>", _key_value_table(tables["rows"] or ())]
    if tables.get("lba_formats") is not None:
        parts.append("<h4>LBA formats</h4>")
        parts.append(_table(LBA_FORMAT_COLUMNS, tables["lba_formats"] or ()))
    if tables.get("power_states") is not None:
        parts.append("<h4>Power states</h4>")
        parts.append(_table(POWER_STATE_COLUMNS, tables["power_states"] or ()))
    return "\n".join(parts)


def _key_value_table(rows: Iterable[Sequence[str]]) -> str:
    body = "".join(
        f'<tr><th scope="row">{html.escape(label)}</th><td>{html.escape(value)}</td></tr>'
        for label, value in rows
    )
    return f"{_TABLE}{body}</table>"


def _table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"{_TABLE}<tr>{head}</tr>{body}</table>"
