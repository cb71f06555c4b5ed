"""The "Data integrity" section: per drive, what each check covered and found.

From the ``integrity`` records (:mod:`pytest_ssd.methods.integrity.run`): the bytes read back
with fio's headers checked (or the blocks sampled), the header interval, and for a mismatch
its LBA, what differed and fio's dump files in the test's artifacts.
"""

from __future__ import annotations

import html
from typing import Any

from pytest_ssd.report.sections.base import Context, ReportSection, Section, table

ID = "ssd-suite-integrity"
TITLE = "Data integrity (suites/qual)"
HEADER = ["drive", "check", "verdict", "covered", "first mismatch", "fio's dump"]
MiB = 1 << 20


def _covered(v: dict[str, Any]) -> str:
    if "bytes" in v:
        every = f"a {v.get('verify', '?')} header every {v.get('header_interval', '?')} B"
        return f"{v['bytes'] / MiB:,.0f} MiB, {every}"
    if "sampled" in v:
        return f"{v['sampled']} blocks sampled (expected: {v.get('expected') or 'not declared'})"
    return "—"


def _row(label: str, v: dict[str, Any]) -> list[str]:
    found = v.get("mismatch") or {}
    mismatch = (
        f"LBA {found['lba']}: {found['what']} expected {found['expected']}, found {found['found']}"
        if found
        else "—"
    )
    return [
        html.escape(label),
        html.escape(str(v.get("check", "?"))),
        html.escape(str(v.get("verdict", "?"))),
        html.escape(_covered(v)),
        html.escape(mismatch),
        html.escape(", ".join(found.get("dumps", ())) or "—"),
    ]


def section(ctx: Context) -> Section | None:
    """Every integrity check of every drive; None when none ran."""
    rows = [_row(drive.drive.label, record.values) for drive, record in ctx.derived("integrity")]
    if not rows:
        return None
    return Section(ID, TITLE, table(HEADER, rows))


#: the method's section of the report, declared by its hook (:mod:`pytest_ssd.methods.integrity`)
SECTION = ReportSection(suite="qual", title=TITLE, build=section, order=71, kinds=("integrity",))
