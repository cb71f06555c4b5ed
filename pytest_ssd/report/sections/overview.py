"""The top of the report: what the run found, in a few lines, and a link to every part.

The summary counts this run's tests per suite (passed, failed, skipped ...),
its datasheet verdicts per suite (met, not met, not judged) and lists the
warnings a reader must see before any graph (a scratch device, host settings
off the method).  The contents link every section and every figure in it, so
any graph is one click from the top.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ssd.db import RunInfo
from pytest_ssd.report.sections import keyresults
from pytest_ssd.report.sections.base import Context, ReportSection, Section, anchor_of, table
from pytest_ssd.report.sections.suites import NO_SUITE

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
VERDICTS = ("met", "not met", "not judged", "not checked")
_BAD = {"failed", "error", "not met"}


@dataclass(frozen=True)
class Entry:
    """A section (or a part of one) in the contents: anchor, title, figures, parts."""

    anchor: str
    title: str
    #: (anchor, caption) of the figures before the first part
    figures: tuple[tuple[str, str], ...] = ()
    parts: tuple[Entry, ...] = ()


_HEADING_OR_FIGURE = re.compile(r'<h3>(.*?)</h3>|<figure class="ssd-figure" id="([^"]+)"')


def outline(section: Section, captions: dict[str, str]) -> tuple[Section, Entry]:
    """*section* with an id on each part heading (``<h3>``), and its entry in the contents.

    *captions*: figure anchor -> caption, for the figures the section holds.
    """
    parts: list[tuple[str, str, list[tuple[str, str]]]] = []
    loose: list[tuple[str, str]] = []
    pieces: list[str] = []
    end = 0
    for match in _HEADING_OR_FIGURE.finditer(section.body):
        pieces.append(section.body[end : match.start()])
        end = match.end()
        if match.group(1) is not None:
            title = html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))
            anchor = anchor_of(f"{section.id}-{len(parts) + 1}-{title}")
            parts.append((anchor, title, []))
            pieces.append(f'<h3 id="{anchor}">{match.group(1)}</h3>')
        else:
            figure = (match.group(2), captions.get(match.group(2), match.group(2)))
            (parts[-1][2] if parts else loose).append(figure)
            pieces.append(match.group(0))
    pieces.append(section.body[end:])
    entry = Entry(
        section.id,
        section.title,
        tuple(loose),
        tuple(Entry(anchor, title, tuple(figures)) for anchor, title, figures in parts),
    )
    return Section(section.id, section.title, "".join(pieces)), entry


def _suite(test: str) -> str:
    """A test id in suite form (``csd/test_x.py::...``) -> ``csd``."""
    head, sep, _ = test.partition("/")
    return head if sep else NO_SUITE


def _count(counts: Counter[str], names: Sequence[str]) -> str:
    parts = []
    for name in (*names, *sorted(set(counts) - set(names))):
        if counts[name]:
            text = f"{counts[name]} {name}"
            parts.append(f'<b class="ssd-bad">{text}</b>' if name in _BAD else text)
    return ", ".join(parts) or "—"


def _per_suite(ctx: Context) -> str:
    """One row per suite: this run's test outcomes and datasheet verdicts."""
    outcomes: dict[str, Counter[str]] = {}
    verdicts: dict[str, Counter[str]] = {}
    # every drive of a run holds the run's whole test list: each test counted once
    tests = {
        (d.drive.run_id, test): outcome
        for d in ctx.drives[: ctx.current]
        for test, outcome in d.tests.items()
    }
    for (_, test), outcome in tests.items():
        outcomes.setdefault(_suite(test), Counter())[outcome] += 1
    for drive in ctx.drives[: ctx.current]:
        for row in drive.verdicts:
            suite = _suite(str(row.get("test", "")))
            verdicts.setdefault(suite, Counter())[str(row.get("verdict"))] += 1
    suites = list(dict.fromkeys([*outcomes, *verdicts]))
    if not suites:
        return "<p>No test of this run is in the database.</p>"
    rows = [
        [
            html.escape(suite),
            _count(outcomes.get(suite, Counter()), OUTCOMES),
            _count(verdicts.get(suite, Counter()), VERDICTS)
            if suite in verdicts
            else "no datasheet line",
        ]
        for suite in suites
    ]
    return table(["suite", "tests", "datasheet conformance"], rows)


def _warnings(ctx: Context, runs: Sequence[RunInfo]) -> list[str]:
    found = [
        f"{d.drive.label} is a scratch device: these results describe no SSD"
        for d in ctx.drives[: ctx.current]
        if d.drive.scratch
    ]
    if runs:
        found += [str(w) for w in runs[0].environment.get("host_warnings") or ()]
        if not runs[0].complete:
            found.append("the run did not finish: what it measured before it stopped is shown")
    return found


def _items(entries: Sequence[Entry]) -> str:
    items = []
    for entry in entries:
        figures = ", ".join(
            f'<a href="#{html.escape(anchor)}">{html.escape(caption)}</a>'
            for anchor, caption in entry.figures
        )
        graphs = f'<div class="ssd-toc-figures">{figures}</div>' if figures else ""
        parts = f"<ul>{_items(entry.parts)}</ul>" if entry.parts else ""
        items.append(
            f'<li><a href="#{html.escape(entry.anchor)}">{html.escape(entry.title)}</a>'
            f"{graphs}{parts}</li>"
        )
    return "".join(items)


def _contents(entries: Sequence[Entry]) -> str:
    return f'<nav class="ssd-toc"><h3>Contents</h3><ol>{_items(entries)}</ol></nav>'


def summary(
    ctx: Context,
    runs: Sequence[RunInfo],
    entries: Sequence[Entry],
    declared: Sequence[ReportSection] = (),
) -> Section:
    """The run at a glance: key results per drive (headline numbers, datasheet verdicts,
    warnings), tests and verdicts per suite, and the contents."""
    body = keyresults.block(ctx, declared, _warnings(ctx, runs))
    body += _per_suite(ctx) + _contents(entries)
    return Section("ssd-summary", "Summary", body)
