"""The report's sections, built from the results database (see :mod:`.base`).

Top: the summary (key results per drive, tests per suite, contents), datasheet
conformance; then one section per suite in the method's order, every drive
compared on every graph; then state transitions, devices, host and environment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from pytest_ssd.db import DriveResults, RunInfo
from pytest_ssd.errors import ExtensionError, call_extension, kind_of
from pytest_ssd.report.sections import (
    baseline,
    general,
    health,
    overview,
    pair,
    workloads,
)
from pytest_ssd.report.sections.base import (
    Context,
    FigureSink,
    Palette,
    ReportSection,
    Section,
    anchor_of,
)
from pytest_ssd.report.sections.suites import suite_view
from pytest_ssd.verdict.tolerance import Tolerances

Builder = Callable[[Context], Section | None]

STYLE = """<style>
.ssd-section { margin: 1.5em 0; }
.ssd-table { border-collapse: collapse; margin: 0.5em 0; }
.ssd-table th, .ssd-table td { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; }
figure.ssd-figure { display: inline-block; vertical-align: top; margin: 0.5em 1em 0.5em 0; }
figure.ssd-figure figcaption { font-size: small; color: #555; }
.ssd-notes { font-size: small; color: #555; }
figure.ssd-figure img { max-width: 100%; height: auto; }
.ssd-row { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 0 1.5em; }
.ssd-row > * { flex: none; }
.ssd-compact td, .ssd-compact th { padding: 1px 6px; font-size: small; white-space: nowrap; }
.ssd-toc ol { margin: 0.3em 0; padding-left: 1.5em; }
.ssd-toc li { margin: 0.2em 0; }
.ssd-toc-figures { font-size: small; max-width: 1200px; }
.ssd-bad { color: #b00; }
.ssd-error { border: 2px solid #b00; background: #fff0f0; color: #600; padding: 0.5em 1em; }
.ssd-warnings { color: #8a5a00; }
/* pytest-html writes 12 px #999 on white (2.8:1): text at 4.5:1 or more (WCAG AA) */
body, #results-table, .filters button, .collapse button { color: #222; }
body, #results-table, .ssd-table { font-size: 14px; }
a { color: #0645ad; }
/* pytest-html's environment table (Python, packages, plugins) goes below the results:
   the page opens with pytest-ssd's summary */
body:has(> #environment) { display: flex; flex-direction: column; }
#environment-header, #environment { order: 1; }
/* pytest-html: its "Summary" heading stands over our sections (ours is above them); a test
   without output gets no empty grey log box */
.summary__data > h2:first-child { display: none; }
.logwrapper:not(:has(.log)) { display: none; }
/* the key results open the page: one block per drive, side by side */
.ssd-key-drive h3 { margin: 0.4em 0 0.2em; }
.ssd-key-drive p { margin: 0.3em 0; }
/* pytest-html shows a test's graphs as 320 x 240 px thumbnails, cropped (object-fit: cover):
   each at its drawn size (800 px, see figures.render_for_test), whole, on a line of its own */
div.media { float: none; width: fit-content; max-width: 100%; height: auto; margin: 0.5em 0; }
.media-container { height: auto; }
.media-container__viewport { height: auto; }
.media-container__viewport img {
  object-fit: contain; width: auto; max-width: 100%; max-height: none;
}
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


def _built(
    make: Callable[[], Section | None], where: str, captions: dict[str, str]
) -> tuple[Section, overview.Entry] | str | None:
    """A section and its entry in the contents, None (nothing to show), or why it failed.

    A section builder may be a suite's or a plugin's: what it raises or returns wrongly
    is one line naming it, and the report goes on without it.
    """
    try:
        section = call_extension(where, make, keep=(ExtensionError,))
        if section is None:
            return None
        if not isinstance(section, Section):
            return f"{where} returned {kind_of(section)} where a Section or None was expected"
        if not all(isinstance(v, str) for v in (section.id, section.title, section.body)):
            return f"{where} returned a Section whose id, title and body are not all str"
        return call_extension(f"{where} (its HTML)", overview.outline, section, captions)
    except ExtensionError as exc:
        return str(exc)


def build(
    drives: Sequence[DriveResults],
    current: int,
    runs: list[RunInfo],
    figures: Path,
    declared: Sequence[ReportSection],
    *,
    tail: Sequence[tuple[str, str]] = (),
    progress: Callable[[str], None] | None = None,
    tolerances: Tolerances | None = None,
) -> list[Section]:
    """The summary, then every section for *drives* (this run's first *current*, then compared).

    *declared*: the sections suites and plugins declared (``pytest_ssd_report_sections``).
    *tail*: (anchor, title) of what the page shows after the sections (the test results),
    for the contents.  *progress* gets a line as each section starts, and while a section
    draws its graphs (every 5 s: csd quick's section is 20 s of them on a busy machine).
    *tolerances*: the bands a two-label comparison's verdicts judge with.
    """
    _distinct_labels(drives)
    ctx = Context(
        tuple(suite_view(d) for d in drives),
        current,
        Palette.of(drives),
        FigureSink(figures, progress=progress),
        tolerances=tolerances,
    )
    builders: list[tuple[Callable[[], Section | None], str, str]] = [
        (partial(general.conformance, ctx), "Datasheet conformance", "pytest-ssd's conformance"),
        (partial(health.health, ctx), "Drive health", "pytest-ssd's health section"),
        (partial(pair.section, ctx), "Comparison", "pytest-ssd's comparison section"),
        (partial(baseline.section, ctx), baseline.TITLE, "pytest-ssd's baseline section"),
    ]
    for declared_section in _ordered(declared, suites_of(ctx.drives)):
        suite, title = declared_section.suite, declared_section.title
        builder = declared_section.build or _generic(suite, title)
        where = f"report section {title!r} of {declared_section.origin or 'pytest-ssd'}: build()"
        builders.append((partial(builder, replace(ctx, suite=suite)), title, where))
    # what was tested, on what, how: after the results (the key results open the page)
    builders += [
        (partial(general.transitions, ctx), "Device state transitions", "pytest-ssd's transitions"),
        (partial(general.devices, ctx), "Devices under test", "pytest-ssd's devices section"),
        (
            partial(general.environment, runs),
            "Host and environment",
            "pytest-ssd's environment section",
        ),
    ]
    sections: list[Section] = []
    entries: list[overview.Entry] = []
    for index, (make, title, where) in enumerate(builders):
        if progress is not None:
            graphs = len(ctx.figures.saved)
            progress(f"report: {title} ({index + 1} of {len(builders)}; {graphs} graphs so far)")
        ctx.figures.starting(title)
        built = _built(make, where, dict(ctx.figures.anchors))
        if isinstance(built, str):  # a box in its place, saying why
            anchor = anchor_of(f"ssd-failed-{index}-{title}")
            failed = Section.failed(anchor, title, built)
            built = (failed, overview.outline(failed, {})[1])  # the box as it is: its error kept
        if built is not None:
            sections.append(built[0])
            entries.append(built[1])
    entries += [overview.Entry(anchor, title) for anchor, title in tail]
    return [overview.summary(ctx, runs, entries, declared), *sections]
