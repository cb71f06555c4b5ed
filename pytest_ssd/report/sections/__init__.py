"""The report's sections, built from the results database (see :mod:`.base`).

Top: devices, host and environment, state transitions, datasheet conformance;
then one section per suite in the method's order, every drive compared on
every graph.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from pytest_ssd.db import DriveResults, RunInfo
from pytest_ssd.report.sections import general, pair, workloads
from pytest_ssd.report.sections.base import Context, FigureSink, Palette, Section

Builder = Callable[[Context], Section | None]

STYLE = """<style>
.ssd-section { margin: 1.5em 0; }
.ssd-table { border-collapse: collapse; margin: 0.5em 0; }
.ssd-table th, .ssd-table td { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; }
figure.ssd-figure { display: inline-block; margin: 0.5em 1em 0.5em 0; }
figure.ssd-figure figcaption { font-size: small; color: #555; }
.ssd-notes { font-size: small; color: #555; }
</style>"""

#: suites in the method's order: (folder under suites/, title, module with ``section``)
SUITES = (
    ("smoke", "Four corners (suites/smoke)", None),
    ("csd", "Consumer SSD suite (suites/csd)", "pytest_ssd.report.sections.csd"),
    ("esd", "Enterprise SSD suite (suites/esd)", "pytest_ssd.report.sections.esd"),
    ("snia", "SNIA PTS tests (suites/snia)", "pytest_ssd.report.sections.snia"),
    ("wsat", "Write saturation (suites/wsat)", "pytest_ssd.report.sections.wsat"),
    ("datasheet", "Datasheet measurements (suites/datasheet)", None),
)


def suites_of(drives: Sequence[DriveResults]) -> list[str]:
    """The suite folders the drives measured in, known suites in the method's order first."""
    found: list[str] = []
    for d in drives:
        for m in d.measurements:
            parts = m.test.split("::")[0].split("/")
            name = parts[1] if parts[0] == "suites" and len(parts) > 2 else parts[0]
            if name not in found:
                found.append(name)
    known = [name for name, _, _ in SUITES if name in found]
    return known + sorted(set(found) - set(known))


def _builder(suite: str) -> Builder:
    for name, title, module in SUITES:
        if name == suite:
            if module is not None:
                section: Builder = importlib.import_module(module).section
                return section
            return partial(workloads.section, suite=suite, title=title, prefix=f"suites/{suite}/")
    return partial(workloads.section, suite=suite, title=f"Tests in {suite}/", prefix=f"{suite}/")


def _distinct_labels(drives: Sequence[DriveResults]) -> None:
    """A label shown twice (one drive against its own earlier run) gets its run id added."""
    counts = Counter(d.drive.label for d in drives)
    for d in drives:
        if counts[d.drive.label] > 1:
            d.drive = replace(d.drive, label=f"{d.drive.label} (run {d.drive.run_id})")


def build(
    drives: Sequence[DriveResults], current: int, runs: list[RunInfo], figures: Path
) -> list[Section]:
    """Every section for *drives* (the first *current* from the run reported, then compared)."""
    _distinct_labels(drives)
    ctx = Context(tuple(drives), current, Palette.of(drives), FigureSink(figures))
    sections: list[Section | None] = [
        general.devices(ctx),
        general.environment(runs),
        general.transitions(ctx),
        general.conformance(ctx),
        pair.section(ctx),
    ]
    sections.extend(_builder(suite)(ctx) for suite in suites_of(drives))
    return [s for s in sections if s is not None]
