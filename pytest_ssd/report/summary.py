"""The device summary as HTML: one DUT-summary table per device, NVMe sub-tables below it.

Every value, label and device id goes through :func:`html.escape`: model and
serial strings come from the device and may contain anything.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

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
    for dut_id, summary in summaries:
        parts.append(f"<h3>{html.escape(dut_id)}</h3>")
        parts.append(_key_value_table(summary.rows()))
        if summary.nvme is not None:
            parts.append("<h4>LBA formats</h4>")
            parts.append(_table(LBA_FORMAT_COLUMNS, summary.nvme.lba_format_rows()))
            parts.append("<h4>Power states</h4>")
            parts.append(_table(POWER_STATE_COLUMNS, summary.nvme.power_state_rows()))
    return "\n".join(parts)


def _key_value_table(rows: Iterable[tuple[str, str]]) -> str:
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
