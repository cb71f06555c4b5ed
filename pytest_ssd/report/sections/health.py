"""The drive's health: one table per drive of this run, a row per step (transition, test).

Each cell is the field's value after the step, ``before → after`` where the step
changed it; the last column names the rules the step broke.  A drive without a
health log (a loop device, a file) gets one line saying so.
"""

from __future__ import annotations

import html
from typing import Any

from pytest_ssd.db import DriveResults
from pytest_ssd.health.watch import HEALTH_RECORD
from pytest_ssd.report.sections.base import Context, Section, table

#: the columns, in this order
COLUMNS = (
    "critical_warning",
    "temperature",
    "available_spare",
    "percentage_used",
    "media_errors",
    "error_log_entries",
)


def _value(value: object) -> str:
    if isinstance(value, float) and value == int(value):
        value = int(value)
    return html.escape("—" if value is None else f"{value}")


def _cell(values: dict[str, Any], name: str) -> str:
    changed = values["changed"].get(name)
    if changed is not None:
        return f"<b>{_value(changed[0])} → {_value(changed[1])}</b>"
    return _value(values.get("after", {}).get(name))


def _drive(drive: DriveResults) -> str:
    title = f"<h4>{html.escape(drive.drive.label)} ({html.escape(drive.drive.dut_id)})</h4>"
    rules = drive.drive.description.get("health_rules")
    if not rules:
        reason = drive.drive.description.get("health_log") or "no health log"
        return f"{title}<p>not applicable: {html.escape(str(reason))}</p>"
    steps = [d for d in drive.derived if d.name == HEALTH_RECORD]
    shown = ", ".join(html.escape(r) for r in rules["rules"])
    head = f"{title}<p class='ssd-notes'>rules ({html.escape(rules['origin'])}): {shown}</p>"
    if not steps:
        return head + "<p>no test read the health log</p>"
    rows = []
    for record in steps:
        values = record.values
        if values.get("error"):
            note = f"health log unreadable from here on, rules not judged: {values['error']}"
            rows.append([html.escape(record.test.rsplit("/", 1)[-1]), html.escape(note)])
            continue
        broken = "; ".join(values["broken"])
        verdict = f"<span class='ssd-bad'>{html.escape(broken)}</span>" if broken else "kept"
        step = values["step"] if values["step"] != "test" else ""
        rows.append(
            [
                html.escape(record.test.rsplit("/", 1)[-1]) + (f"<br><small>{step}</small>"),
                *(_cell(values, name) for name in COLUMNS),
                verdict,
            ]
        )
    return head + table(["step", *COLUMNS, "rules"], rows, "ssd-table ssd-compact")


def health(ctx: Context) -> Section | None:
    """The health table of every drive of this run (none when no drive was measured)."""
    drives = ctx.drives[: ctx.current]
    if not drives:
        return None
    return Section("ssd-health", "Drive health", "".join(_drive(d) for d in drives))
