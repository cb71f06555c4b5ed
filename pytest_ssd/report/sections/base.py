"""What a report section is, and the tools every section uses.

A section is built from the results database (:class:`DriveResults` of the
run's drives first, then the drives it is compared with), so the same code
serves the pytest-html report at the end of a run and ``pytest-ssd report`` /
``pytest-ssd compare`` long after.
"""

from __future__ import annotations

import html
import re
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from matplotlib.figure import Figure

from pytest_ssd.db import DriveResults
from pytest_ssd.figures import PALETTE, render
from pytest_ssd.results.record import Derived
from pytest_ssd.verdict.tolerance import Tolerances


@dataclass(frozen=True)
class Section:
    """One part of the report: ``<section class="ssd-section" id="...">``."""

    id: str
    title: str
    body: str
    #: why the section could not be built (its builder raised or returned the wrong thing)
    error: str = ""

    @classmethod
    def failed(cls, id: str, title: str, error: str) -> Section:
        """A visible box in the place of a section that could not be built, saying why."""
        body = (
            f'<div class="ssd-error"><b>This section could not be built.</b> '
            f"{html.escape(error)}</div>"
        )
        return cls(id, title, body, error)

    def html(self) -> str:
        return (
            f'<section class="ssd-section" id="{html.escape(self.id)}">'
            f"<h2>{html.escape(self.title)}</h2>{self.body}</section>"
        )


@dataclass(frozen=True)
class Palette:
    """One colour per drive label, the same on every graph of a report and across reports.

    A drive's colour follows from its label alone (its CRC-32 picks a colour of
    :data:`~pytest_ssd.figures.PALETTE`), so drive A is the same colour in its
    run's report, in ``pytest-ssd report`` and in ``pytest-ssd compare`` whatever
    the order of the drives.  Two labels of one report that pick the same colour:
    the later drive (in report order) takes the next free one.
    """

    labels: tuple[str, ...]
    colours: tuple[str, ...] = ()

    @classmethod
    def of(cls, drives: Sequence[DriveResults]) -> Palette:
        labels: list[str] = []
        for d in drives:
            if d.drive.label not in labels:
                labels.append(d.drive.label)
        taken: list[str] = []
        for label in labels:
            start = zlib.crc32(label.encode()) % len(PALETTE)
            free = [PALETTE[(start + k) % len(PALETTE)] for k in range(len(PALETTE))]
            colour = next((c for c in free if c not in taken), free[0])
            taken.append(colour)
        return cls(tuple(labels), tuple(taken))

    def colour(self, label: str) -> str:
        if label in self.labels and self.colours:
            return self.colours[self.labels.index(label)]
        return PALETTE[zlib.crc32(label.encode()) % len(PALETTE)]


@dataclass
class FigureSink:
    """Renders figures once: PNG embedded in the page, PNG and SVG saved in *folder*."""

    folder: Path
    saved: list[Path] = field(default_factory=list)
    #: (anchor, caption) of every figure, in order: the report's table of contents links them
    anchors: list[tuple[str, str]] = field(default_factory=list)
    #: gets a line while a section draws its graphs, at most one every :attr:`every_s`
    progress: Callable[[str], None] | None = None
    every_s: float = 5.0
    #: the section being built (:meth:`starting`), and when the last line went out
    section: str = ""
    last: float = field(default_factory=time.monotonic)

    def starting(self, section: str) -> None:
        """The next graphs are *section*'s (its own progress line has just gone out)."""
        self.section, self.last = section, time.monotonic()

    def html(self, fig: Figure, title: str) -> str:
        """``<figure>`` with the graph inline and its caption; the files go to *folder*."""
        rendered = render(fig)
        stem = f"{len(self.saved) + 1:02d}-{title}"
        self.saved.append(rendered.save(self.folder, stem))
        self._drawn()
        anchor = anchor_of(f"fig-{stem}")
        self.anchors.append((anchor, title))
        alt = html.escape(title)
        return (
            f'<figure class="ssd-figure" id="{anchor}"><img alt="{alt}" '
            f'src="data:image/png;base64,{rendered.png_base64}"/>'
            f"<figcaption>{alt}</figcaption></figure>"
        )

    def _drawn(self) -> None:
        """A line on the graphs drawn so far, if the last line is :attr:`every_s` old:
        csd quick's section draws 27 graphs, 6 s of CPU, 20 s or more on a busy machine."""
        now = time.monotonic()
        if self.progress is not None and now - self.last >= self.every_s:
            self.progress(f"report: {self.section}: {len(self.saved)} graphs so far")
            self.last = now


@dataclass(frozen=True)
class Context:
    """What a section builder gets: the drives (this run's first) and where graphs go.

    Test ids are in suite form, ``<suite>/<file>::<test>[<params>]`` (see
    :mod:`.suites`), whatever folder the suite ran from: a section picks its
    suite's records by :meth:`in_suite` or :meth:`derived`.
    """

    drives: tuple[DriveResults, ...]
    #: how many of :attr:`drives` are this run's (the rest are compared with)
    current: int
    palette: Palette
    figures: FigureSink
    #: the suite of the section being built
    suite: str = ""
    #: the bands of "same" a two-label comparison judges with (``compare --datasheet``)
    tolerances: Tolerances | None = None

    @property
    def compared(self) -> tuple[DriveResults, ...]:
        return self.drives[self.current :]

    def in_suite(self, test: str) -> bool:
        """Whether the test (a record's ``test``) is one of this section's suite."""
        return test.startswith(f"{self.suite}/")

    def derived(self, kind: str) -> list[tuple[DriveResults, Derived]]:
        """Every derived record of *kind* (its name, or a pattern: ``snia-*``) of this suite."""
        return [
            (drive, record)
            for drive in self.drives
            for record in drive.derived
            if fnmatchcase(record.name, kind) and self.in_suite(record.test)
        ]


@dataclass(frozen=True)
class KeyFigure:
    """One headline number of a drive: what it is, its value as written, where measured."""

    what: str
    value: str
    where: str = ""


@dataclass(frozen=True, kw_only=True)
class ReportSection:
    """A section of the report, declared by a suite or a plugin (``pytest_ssd_report_sections``).

    *build* gets the :class:`Context` of every drive (this run's first, then the
    drives compared with) with :attr:`Context.suite` set to *suite*, and returns
    a :class:`Section` (None: nothing of the suite to show).  *kinds* names the
    derived records it draws (``ssd.derive(kind, values)`` in the suite's tests).
    Without *build*, the suite's measurements are shown as bars and a table.
    """

    #: the suite whose tests' records it draws (the ``pytest_ssd_suite`` of its conftest.py)
    suite: str
    title: str
    build: Callable[[Context], Section | None] | None = None
    kinds: tuple[str, ...] = ()
    #: sections are shown by order, then title (pytest-ssd's own suites: 10 to 60)
    order: int = 100
    #: who declared it: a conftest.py's path or ``plugin NAME`` (set by pytest-ssd)
    origin: str = ""
    #: the suite's headline numbers of one drive, for the key results that open the report
    #: (None: picked from its measurements: sequential MiB/s, 4 KiB IOPS, p99.9 latency)
    headline: Callable[[Context, DriveResults], Sequence[KeyFigure]] | None = None


#: derived-record name -> the drives that recorded it, each with its record
Records = dict[str, list[tuple[DriveResults, Derived]]]


def derived_records(drives: Sequence[DriveResults], prefix: str, suite: str) -> Records:
    """The derived records named ``<prefix>…`` of tests under *suite*, grouped by name."""
    found: Records = {}
    for drive in drives:
        for record in drive.derived:
            if record.test.startswith(suite) and record.name.startswith(prefix):
                found.setdefault(record.name, []).append((drive, record))
    return found


def table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "ssd-table") -> str:
    """An HTML table of already-escaped cells."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def row(*parts: str) -> str:
    """*parts* (figures, tables) side by side, wrapping as one group: no staggering with others."""
    return '<div class="ssd-row">' + "".join(p for p in parts if p) + "</div>"


def anchor_of(text: str) -> str:
    """An HTML id from *text*: lower case letters, digits and dashes (``fig-03-csd-fill``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def notes(lines: Sequence[str]) -> str:
    """Remarks under a section: what was left out of a comparison, and why."""
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f'<ul class="ssd-notes">{items}</ul>'
