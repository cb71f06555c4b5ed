"""The report's "Qualification" section: per drive a table of its checks, worst first, and
the headline counts (``qualification: 5 pass, 1 fail, 2 not judged``).

Every ``qualification`` record of the drive is shown, whichever suite made it (a vendor's
suite may add checks of its own); a check recorded twice (two tests) shows the worse.
"""

from __future__ import annotations

import html

from pytest_ssd.db import DriveResults
from pytest_ssd.report.sections.base import Context, KeyFigure, ReportSection, Section, table
from pytest_ssd.verdict.checks import Check, checks_of, counted

ID = "ssd-suite-qual"
TITLE = "Qualification (suites/qual)"
HEADER = ["part", "check", "verdict", "what was found"]
#: the verdict's cell colour
_STYLE = {"pass": "#1a7f37", "fail": "#b00020", "not judged": "#777"}


def _row(check: Check) -> list[str]:
    colour = _STYLE[check.verdict]
    return [
        html.escape(check.part),
        html.escape(check.check),
        f'<b style="color:{colour}">{html.escape(check.verdict)}</b>',
        html.escape(check.detail),
    ]


def section(ctx: Context) -> Section | None:
    """Each drive's checks; None when no drive has any."""
    parts = []
    for drive in ctx.drives:
        checks = checks_of(drive.derived)
        if not checks:
            continue
        worst = sorted(checks, key=lambda c: ("fail", "not judged", "pass").index(c.verdict))
        title = f"{drive.drive.label}: {counted(checks)}"
        parts.append(f"<h3>{html.escape(title)}</h3>{table(HEADER, [_row(c) for c in worst])}")
    if not parts:
        return None
    return Section(ID, TITLE, "".join(parts))


def headline(ctx: Context, drive: DriveResults) -> list[KeyFigure]:
    """The drive's checks counted by verdict, the failed ones named."""
    checks = checks_of(drive.derived)
    if not checks:
        return []
    failed = [c.name for c in checks if c.verdict == "fail"]
    return [
        KeyFigure(
            "qualification", counted(checks), "failed: " + ", ".join(failed) if failed else ""
        )
    ]


#: the section of the qualification suite, declared by its hook (:mod:`pytest_ssd.methods.qual`)
SECTION = ReportSection(
    suite="qual", title=TITLE, build=section, order=70, kinds=("qualification",), headline=headline
)
