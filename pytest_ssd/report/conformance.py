"""The datasheet conformance table: spec line, conditions, spec, measured, ratio, verdict."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any


def _conditions(conditions: object) -> str:
    if isinstance(conditions, dict):
        return ", ".join(f"{key} {value}" for key, value in conditions.items())
    return str(conditions)


_COLOURS = {"met": "#060", "not met": "#b00", "not judged": "#8a5a00", "not checked": "#555"}


def _number(value: float | None, spec: str) -> str:
    """A figure, or 'n/r' (the sample cannot resolve it, or nothing was measured)."""
    return "n/r" if value is None else format(value, spec)


def conformance_html(rows: Sequence[dict[str, Any]]) -> str:
    """The rows (already sorted with the lines not met first) as an HTML table."""
    if not rows:
        return ""
    body = []
    for row in rows:
        colour = _COLOURS.get(row["verdict"], "#555")
        unit = html.escape(row.get("unit") or "") + (" per TB" if row.get("per_tb") else "")
        verdict = html.escape(row["verdict"])
        if row.get("reason"):
            verdict += f"<br><small>{html.escape(row['reason'])}</small>"
        body.append(
            "<tr>"
            f"<td>{html.escape(row['device'])}</td><td>{html.escape(row['line'])}</td>"
            f"<td><small>{html.escape(_conditions(row['conditions']))}</small></td>"
            f"<td>{_number(row['spec'], ',')} {unit}</td>"
            f"<td>{_number(row['measured'], ',.1f')} {unit}</td>"
            f"<td>{_number(None if row['ratio'] is None else row['ratio'] * 100, '.1f')} %</td>"
            f'<td style="color:{colour}"><b>{verdict}</b></td>'
            "</tr>"
        )
    return (
        "<table><tr><th>device</th><th>spec line</th>"
        "<th>conditions</th><th>spec</th><th>measured</th><th>measured / spec</th>"
        "<th>verdict</th></tr>" + "".join(body) + "</table>"
    )
