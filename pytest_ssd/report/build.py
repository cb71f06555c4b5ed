"""Reports from the results database: the sections of a pytest-html report, or a whole page.

The same sections serve a run's report (written by pytest-html at the end of
the run) and ``pytest-ssd report`` / ``pytest-ssd compare`` afterwards.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pluggy import HookCaller

from pytest_ssd.db import DriveRef, DriveResults, ResultsDb, RunInfo
from pytest_ssd.db.url import DbUrl
from pytest_ssd.errors import ExtensionError
from pytest_ssd.hookcall import HookCall, calls, listed
from pytest_ssd.report.sections import STYLE, build
from pytest_ssd.report.sections.base import Context, ReportSection, Section
from pytest_ssd.verdict.tolerance import Tolerances

#: (anchor, title) of pytest-html's results table in a run's report, of the tests in a rebuilt one
RESULTS = ("ssd-results", "Test results")
TESTS = ("ssd-tests", "Tests")


@dataclass(frozen=True)
class Rendered:
    """HTML of the report (or its sections), and a line for each section that failed."""

    html: str
    problems: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str, parts: Sequence[Section]) -> Rendered:
        return cls(text, tuple(p.error for p in parts if p.error))


def declared_sections(caller: HookCaller) -> list[ReportSection]:
    """Every implementation's report sections (``pytest_ssd_report_sections``), each marked
    with who declared it; an implementation that raises or returns the wrong thing leaves a
    section that fails saying so (a box in the report, one line), and the rest stand."""
    found: list[ReportSection] = []
    for call in calls(caller):
        try:
            sections = [_checked(call, s) for s in listed(call, call(), "ReportSection")]
        except ExtensionError as exc:
            found.append(failing(call.origin, exc))
            continue
        found += [replace(s, origin=call.origin) for s in sections]
    return found


def _checked(call: HookCall, section: object) -> ReportSection:
    """*section*, one of the list *call* returned, if it is a usable :class:`ReportSection`."""
    if not isinstance(section, ReportSection):
        raise call.wrong(section, "a ReportSection", "a list")
    if not isinstance(section.suite, str) or not isinstance(section.title, str):
        why = "suite and title are not both str"
    elif isinstance(section.order, bool) or not isinstance(section.order, int):
        why = "order is not an int"
    elif section.build is not None and not callable(section.build):
        why = "build is not callable"
    else:
        return section
    raise ExtensionError(f"{call.where} returned a ReportSection {section.title!r:.60} whose {why}")


def failing(origin: str, error: ExtensionError) -> ReportSection:
    """A section in the place of a plugin's that could not be declared: its build says why."""

    def fail(ctx: Context) -> Section | None:
        raise error

    return ReportSection(suite="", title=f"Report sections of {origin}", build=fail, origin=origin)


def gather(
    db: ResultsDb, current: Sequence[DriveRef], compared: Sequence[DriveRef]
) -> tuple[list[DriveResults], list[RunInfo]]:
    """Each drive's results (this run's first) and the runs they come from, in order."""
    drives = [db.results(ref) for ref in (*current, *compared)]
    run_ids = list(dict.fromkeys(d.drive.run_id for d in drives))
    return drives, [db.run(run_id) for run_id in run_ids]


def sections_html(
    db_path: Path | DbUrl,
    run_id: str,
    compared: Sequence[DriveRef],
    folder: Path,
    declared: Sequence[ReportSection],
    *,
    progress: Callable[[str], None] | None = None,
) -> Rendered:
    """Run *run_id*'s sections (compared with *compared*), its graphs saved in *folder*."""
    with ResultsDb(db_path) as db:
        run = db.run(run_id)
        drives, runs = gather(db, run.drives, compared)
        current = len(run.drives)
        parts = build(
            drives, current, runs or [run], folder, declared, tail=[RESULTS], progress=progress
        )
    # pytest-html's counts, filters and results table follow the sections: under their own heading
    results = f'<h2 id="{RESULTS[0]}">{RESULTS[1]}</h2>'
    return Rendered.of(STYLE + "".join(part.html() for part in parts) + results, parts)


def to_stderr(line: str) -> None:
    """A progress line of ``pytest-ssd report`` and ``compare``."""
    print(f"pytest-ssd: {line}", file=sys.stderr, flush=True)


def page(title: str, body: str) -> str:
    """A self-contained HTML page (``pytest-ssd report`` and ``compare``)."""
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>{STYLE}</head>"
        f'<body style="font-family: sans-serif"><h1>{html.escape(title)}</h1>{body}</body></html>'
    )


def report_page(
    db: ResultsDb,
    run: RunInfo,
    compared: Sequence[DriveRef],
    folder: Path,
    current: Sequence[DriveRef] | None = None,
    *,
    declared: Sequence[ReportSection],
    progress: Callable[[str], None] | None = None,
    tolerances: Tolerances | None = None,
) -> Rendered:
    """A run's report rebuilt from the database (its drives, or *current* of them), compared.

    *progress* gets a line as each section starts (the graphs take seconds); *tolerances*
    are the bands a two-label comparison judges with.
    """
    mine = run.drives if current is None else tuple(current)
    drives, runs = gather(db, mine, compared)
    listed = [TESTS] if any(d.tests for d in drives[: len(mine)]) else []
    parts = build(
        drives,
        len(mine),
        runs or [run],
        folder,
        declared,
        tail=listed,
        progress=progress,
        tolerances=tolerances,
    )
    title = f"pytest-ssd run {run.id}"
    if compared:
        title += " compared with " + ", ".join(dict.fromkeys(d.label for d in compared))
    body = "".join(p.html() for p in parts) + tests_html(drives[: len(mine)])
    return Rendered.of(page(title, body), parts)


def tests_html(drives: Sequence[DriveResults]) -> str:
    """The tests of the run and their outcomes (pytest-html's table is not in the database)."""
    outcomes: dict[str, str] = {}
    for d in drives:
        outcomes.update(d.tests)
    if not outcomes:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(node)}</td><td>{html.escape(outcome)}</td></tr>"
        for node, outcome in outcomes.items()
    )
    return (
        f'<section class="ssd-section" id="{TESTS[0]}"><h2>{TESTS[1]}</h2>'
        f'<table class="ssd-table"><tr><th>test</th><th>outcome</th></tr>{rows}</table></section>'
    )
