"""The report's sections, built from the results database (see :mod:`.base`).

Top: devices, host and environment, state transitions, datasheet conformance;
then one section per suite in the method's order, every drive compared on
every graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from pytest_ssd.db import DriveResults, RunInfo
from pytest_ssd.report.sections import builtin, general, pair, workloads
from pytest_ssd.report.sections.base import Context, FigureSink, Palette, ReportSection, Section
from pytest_ssd.report.sections.suites import suite_view

Builder = Callable[[Context], Section | None]

STYLE = """<style>
.ssd-section { margin: 1.5em 0; }
.ssd-table { border-collapse: collapse; margin: 0.5em 0; }
.ssd-table th, .ssd-table td { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; }
figure.ssd-figure { display: inline-block; margin: 0.5em 1em 0.5em 0; }
figure.ssd-figure figcaption { font-size: small; color: #555; }
.ssd-notes { font-size: small; color: #555; }
</style>"""


def suites_of(drives: Sequence[DriveResults]) -> list[str]:
    """The suites the drives' tests belong to (drives in suite form), in order of first record."""
    found: dict[str, None] = {}
    for d in drives:
        for test in (*(m.test for m in d.measurements), *(r.test for r in d.derived)):
            found.setdefault(test.split("/", 1)[0])
    return list(found)


def _generic(suite: str, title: str) -> Builder:
    return partial(workloads.section, suite=suite, title=title, prefix=f"{suite}/")


def _ordered(declared: Sequence[ReportSection], suites: Sequence[str]) -> list[ReportSection]:
    """The sections to build: every declared one, and a generic one for an undeclared suite."""
    named = {s.suite for s in declared}
    extra = [
        ReportSection(suite=suite, title=f"Tests in {suite}/")
        for suite in suites
        if suite not in named
    ]
    return sorted([*declared, *extra], key=lambda s: (s.order, s.title))


def _distinct_labels(drives: Sequence[DriveResults]) -> None:
    """A label shown twice (one drive against its own earlier run) gets its run id added."""
    counts = Counter(d.drive.label for d in drives)
    for d in drives:
        if counts[d.drive.label] > 1:
            d.drive = replace(d.drive, label=f"{d.drive.label} (run {d.drive.run_id})")


def build(
    drives: Sequence[DriveResults],
    current: int,
    runs: list[RunInfo],
    figures: Path,
    declared: Sequence[ReportSection] = builtin.SECTIONS,
) -> list[Section]:
    """Every section for *drives* (the first *current* from the run reported, then compared).

    *declared*: the sections suites and plugins declared (``pytest_ssd_report_sections``).
    """
    _distinct_labels(drives)
    ctx = Context(
        tuple(suite_view(d) for d in drives), current, Palette.of(drives), FigureSink(figures)
    )
    sections: list[Section | None] = [
        general.devices(ctx),
        general.environment(runs),
        general.transitions(ctx),
        general.conformance(ctx),
        pair.section(ctx),
    ]
    for declared_section in _ordered(declared, suites_of(ctx.drives)):
        suite, title = declared_section.suite, declared_section.title
        builder = declared_section.build or _generic(suite, title)
        sections.append(builder(replace(ctx, suite=suite)))
    return [s for s in sections if s is not None]
