"""The datasheet conformance table: spec line, conditions, spec, measured, ratio, verdict."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any


def _conditions(conditions: object) -> str:
    if isinstance(conditions, dict):
        return ", ".join(f"{key} {value}" for key, value in conditions.items())
    return str(conditions)


def conformance_html(rows: Sequence[dict[str, Any]]) -> str:
    """The rows (already sorted with the lines not met first) as an HTML table."""
    if not rows:
        return ""
    body = []
    for row in rows:
        met = row["verdict"] == "met"
        colour = "#060" if met else "#b00"
        body.append(
            "<tr>"
            f"<td>{html.escape(row['device'])}</td><td>{html.escape(row['line'])}</td>"
            f"<td><small>{html.escape(_conditions(row['conditions']))}</small></td>"
            f"<td>{row['spec']:,} {html.escape(row['unit'])}</td>"
            f"<td>{row['measured']:,.1f} {html.escape(row['unit'])}</td>"
            f"<td>{row['ratio'] * 100:.1f} %</td>"
            f'<td style="color:{colour}"><b>{html.escape(row["verdict"])}</b></td>'
            "</tr>"
        )
    return (
        "<table><tr><th>device</th><th>spec line</th>"
        "<th>conditions</th><th>spec</th><th>measured</th><th>measured / spec</th>"
        "<th>verdict</th></tr>" + "".join(body) + "</table>"
    )
