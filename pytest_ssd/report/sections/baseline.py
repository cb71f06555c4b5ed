"""Against the baseline: each metric's verdict, ratio and interval, and their graph.

In a run's report: what ``--ssd-baseline`` judged (the tests' ``baseline`` records).
In ``pytest-ssd compare BASE NEW``: the same verdicts made from the two drives'
measurements (the first label is the baseline), when the run did not judge itself and
some point was repeated on both sides (one run against one is only unknowns).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from pytest_ssd.db import DriveResults
from pytest_ssd.figures.verdicts import Row, ratio_intervals
from pytest_ssd.report.sections.base import Context, Section, table
from pytest_ssd.results.history import builds_against
from pytest_ssd.verdict.judge import MetricVerdict
from pytest_ssd.verdict.reference import RECORD, judge_points, runs_of, states_of
from pytest_ssd.verdict.summary import DriveVerdicts
from pytest_ssd.verdict.tolerance import Tolerances

TITLE = "Against the baseline"


def recorded(drives: Sequence[DriveResults]) -> list[DriveVerdicts]:
    """The verdicts this run's tests recorded (``--ssd-baseline``), per drive, named with
    both sides' builds where the records say them."""
    found = []
    for drive in drives:
        records = [record.values for record in drive.derived if record.name == RECORD]
        builds = next((r["builds"] for r in records if r.get("builds")), None)
        found.append(
            DriveVerdicts(
                drive.drive.name,
                tuple(
                    MetricVerdict.from_dict(one)
                    for values in records
                    for one in values.get("verdicts", [])
                ),
                builds or "",
            )
        )
    return [d for d in found if d.verdicts]


def between(
    base: DriveResults, new: DriveResults, tolerances: Tolerances | None = None
) -> list[MetricVerdict]:
    """Every point both drives measured, *new*'s runs judged against *base*'s."""
    old = runs_of(base.measurements, base.drive.dut_id)
    dut_id = new.drive.dut_id
    states = states_of(new.measurements, dut_id)
    return judge_points(old, runs_of(new.measurements, dut_id), tolerances, states)


#: rows the ratios' figure draws a drive, worst first ("same" rows only when room is left)
FIGURE_ROWS = 24


def _cells(v: MetricVerdict) -> list[str]:
    interval = "—" if v.low is None or v.high is None else f"{v.low:.3g}–{v.high:.3g}"
    p = v.p_better if v.verdict == "improved" else v.p_worse
    note = v.reason + (f" ({v.repeats_needed} repeats a side)" if v.repeats_needed else "")
    return [
        html.escape(v.state or "—"),
        html.escape(v.test or "—"),
        html.escape(f"{v.point} {v.direction}"),
        html.escape(v.label),
        f"<b>{v.verdict}</b>",
        "—" if v.ratio is None else f"{v.ratio:.3g}×",
        interval,
        "—" if p is None else f"{p:.2g}",
        f"{v.base_n} / {v.new_n}",
        v.band_width,
        html.escape(v.tolerance_from or "—"),
        html.escape(note),
    ]


HEADER = ["state", "test", "point", "metric", "verdict", "new / base", "95 % CI", "p", "runs"]
HEADER += ["band", "band from", "note"]


def _drive(ctx: Context, drive: DriveVerdicts, title: str) -> str:
    """A drive's verdicts: its counts, a table worst first, the worst rows' ratios drawn."""
    ranked = drive.worst_first()
    advice = drive.advice()
    body = f"<h3>{html.escape(drive.named)}: {html.escape(drive.counted())}</h3>"
    body += f"<p>{html.escape(advice)}</p>" if advice else ""
    body += table(HEADER, [_cells(v) for v in ranked])
    rows = [
        Row(f"{v.point} {v.direction} {v.label}", v.ratio, v.low, v.high, v.tolerance, v.verdict)
        for v in ranked
        if v.ratio is not None and v.low is not None and v.high is not None
    ]
    if rows:
        drawn = rows[:FIGURE_ROWS]
        name = f"{title}: {drive.named}"
        if len(rows) > len(drawn):
            name += f" (the {len(drawn)} worst of {len(rows)})"
        body += ctx.figures.html(ratio_intervals(drawn, name), f"{name}: ratios")
    return body


def section(ctx: Context) -> Section | None:
    """The verdicts recorded in this run, else those of a two-label comparison; None: neither.
    One part per drive: its counts, its table worst first, its worst ratios drawn."""
    drives, title = recorded(ctx.drives[: ctx.current]), TITLE
    if not drives:
        labels = list(dict.fromkeys(d.drive.label for d in ctx.drives))
        if len(labels) != 2:  # a baseline and a new build
            return None
        base = next(d for d in ctx.drives if d.drive.label == labels[0])
        new = next(d for d in ctx.drives if d.drive.label == labels[1])
        verdicts, title = between(base, new, ctx.tolerances), f"{labels[1]} against {labels[0]}"
        if all(min(v.base_n, v.new_n) < 2 for v in verdicts):
            return None  # no repeats: nothing to judge, a plain comparison (the pair section)
        builds = builds_against(new.drive.build, base.drive.build)
        drives = [DriveVerdicts(new.drive.name, tuple(verdicts), builds)] if verdicts else []
    if not drives:
        return None
    return Section("ssd-baseline", title, "".join(_drive(ctx, d, title) for d in drives))
