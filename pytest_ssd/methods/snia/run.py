"""The SNIA PTS round loop on a device: rounds until the SNIA rule holds or the rounds run out.

Every round is one fio process over the test's cells.  From each cell the
round keeps what fio measured: IOPS and MiB/s (all directions), completion
completion latency (fio's clat: submission to completion in the device's queue,
without fio's submission latency) mean, maximum and histogram, all directions merged,
as the PTS reports a mixed cell; a cell without clat data has them None ("not measured"),
never 0.  The window's per-cell results are the PTS's report: IOPS and MiB/s
averaged over the window's rounds, latency over every I/O of the window (the
histograms merged, so p99.999 is resolved from five rounds of I/Os, else
``None``: not resolved), the maximum the largest seen.

Recorded on the test: the series ``snia-<test>`` (per round and cell: ``iops``,
``bw_mib_s``, ``clat_mean_us``, ``clat_max_us``; NaN where not measured), the derived record
``snia-<test>`` (the verdict: window, fitted line, excursions and limits, and
the window's per-cell results), the last round's cells as measurements, and the
convergence, measurement-window and per-block-size graphs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.figures.steady import snia_convergence, snia_window
from pytest_ssd.fio.engine import FioRun
from pytest_ssd.fio.results import JobResult, percentiles_from_bins
from pytest_ssd.methods.snia import figures as figs
from pytest_ssd.methods.snia.workloads import PtsTest, SniaPlan, plan
from pytest_ssd.steady.snia import SniaTracker, SniaVerdict, judge_window
from pytest_ssd.workloads.limits import Limits

#: the tail the latency test reports (PTS: five nines)
TAIL_P = 99.999
#: what a round keeps per cell, the series' arrays
ROUND_FIELDS = ("iops", "bw_mib_s", "clat_mean_us", "clat_max_us")

#: the state every PTS test starts from: purged, then workload-independent preconditioning
PTS_STATE = pytest.mark.dut_state("wipc", pristine=True)


@dataclass(frozen=True)
class CellStats:
    """One cell of one round as fio measured it, all directions together."""

    iops: float
    bw_mib_s: float
    ios: int
    clat_mean_us: float | None
    clat_max_us: float | None
    #: completion-latency histogram (ns, count); dropped once the round leaves the window
    bins: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, result: JobResult) -> CellStats:
        done = [d for d in result.directions.values() if d.total_ios and d.clat is not None]
        ios = sum(d.total_ios for d in done)
        clats = [d.clat for d in done if d.clat is not None]
        return cls(
            iops=sum(d.iops for d in result.directions.values()),
            bw_mib_s=sum(d.bw_mib_s for d in result.directions.values()),
            ios=ios,
            clat_mean_us=sum(c.mean_ns * c.samples for c in clats) / ios / 1000 if ios else None,
            clat_max_us=max(c.max_ns for c in clats) / 1000 if clats else None,
            bins=tuple(pair for c in clats for pair in c.bins),
        )

    def value(self, field: str) -> float:
        """One field for the series and the rule; NaN where it was not measured."""
        number: float | None = getattr(self, field)
        return float("nan") if number is None else number


def _known(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _weighted_mean(cell: Sequence[CellStats]) -> float | None:
    """Mean completion latency over every I/O of the cell's rounds that has clat data."""
    known = [c for c in cell if c.clat_mean_us is not None and c.ios]
    ios = sum(c.ios for c in known)
    return sum((c.clat_mean_us or 0.0) * c.ios for c in known) / ios if ios else None


def window_results(rounds: Sequence[Sequence[CellStats]]) -> list[dict[str, Any]]:
    """Per cell over *rounds* (the window): mean IOPS and MiB/s, latency over all its I/Os."""
    results = []
    for cell in zip(*rounds, strict=True):
        ios = sum(c.ios for c in cell)
        bins = [pair for c in cell for pair in c.bins]
        tail = percentiles_from_bins(bins, [TAIL_P])[0] if bins else None
        maxima = _known(c.clat_max_us for c in cell)
        most = max(maxima) if maxima else None
        tail_us = tail.ns / 1000 if tail is not None and tail.resolved else None
        if tail_us is not None and most is not None:
            # a histogram bin's value is the middle of its range (fio's plat_idx_to_val): the
            # bin holding the slowest I/Os may read above the exact maximum fio measured,
            # which no percentile can exceed
            tail_us = min(tail_us, most)
        results.append(
            {
                "iops": float(np.mean([c.iops for c in cell])),
                "bw_mib_s": float(np.mean([c.bw_mib_s for c in cell])),
                "ios": ios,
                "clat_mean_us": _weighted_mean(cell),
                "clat_p99999_us": tail_us,
                "clat_max_us": most,
            }
        )
    return results


@dataclass
class Rounds:
    """The rounds of one test so far and the rule's verdict on them."""

    test: PtsTest
    plan: SniaPlan
    #: block sizes the device refused, left out of the rounds, and why
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    cells: list[list[CellStats]] = dataclasses.field(default_factory=list)
    tracker: SniaTracker = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.tracker = SniaTracker(self.plan.rule)

    def add(self, stats: list[CellStats]) -> SniaVerdict | None:
        """One round's cells; the rule's verdict from round 5 on."""
        self.cells.append(stats)
        old = len(self.cells) - self.plan.rule.window - 1
        if old >= 0:  # out of every window from now on: its histograms are not needed
            self.cells[old] = [dataclasses.replace(c, bins=()) for c in self.cells[old]]
        return self.tracker.add(stats[self.test.tracked_index].value(self.test.metric))

    @property
    def verdict(self) -> SniaVerdict:
        assert self.tracker.verdict is not None, "judged from round 5"
        return self.tracker.verdict

    def array(self, field: str) -> np.ndarray:
        """rounds x cells of one of :data:`ROUND_FIELDS`."""
        return np.array([[c.value(field) for c in row] for row in self.cells], dtype=float)

    def window(self) -> list[dict[str, Any]]:
        verdict = self.verdict
        return window_results(self.cells[verdict.window_first - 1 : verdict.window_last])


def meta_of(test: PtsTest, snia_plan: SniaPlan) -> dict[str, Any]:
    """What the report needs to read the series and the derived record of *test*."""
    return {
        "kind": "snia-rounds",
        "test": test.name,
        "title": test.title,
        "pattern": test.pattern,
        "iodepth": test.iodepth,
        "numjobs": test.numjobs,
        "mixes": list(test.mixes),
        "block_sizes": list(test.block_sizes),
        "cells": [c.label for c in test.cells],
        "tracked": test.tracked_index,
        "quantity": test.quantity,
        "metric": test.metric,
        "unit": test.unit,
        "cell_s": snia_plan.cell_s,
        "rule": dataclasses.asdict(snia_plan.rule),
    }


def run_rounds(ssd: SsdBench, test: PtsTest) -> Rounds:
    """Rounds of *test* on the device until the SNIA rule holds or the rounds run out.

    Cells of a block size the device's logical block refuses are left out, and the
    derived record's ``skipped`` says why; ``Rounds.test`` is the test as run.
    """
    test, left = test.within(Limits(ssd.dut.identity.logical_block_size).skip_block)
    snia_plan = plan(ssd.profile)
    span = ssd.region("device").size
    jobs = test.round_jobs(span, snia_plan.cell_s)
    rounds = Rounds(test, snia_plan, left)
    last: FioRun | None = None
    while not rounds.tracker.done:
        # not recorded round by round (--ssd-repeat would repeat a round): the series is
        last = ssd.run_jobs(*jobs, record=False)
        rounds.add([CellStats.of(last.result(job)) for job in jobs])
    assert last is not None
    ssd.record(last, *jobs)  # the last round's cells, each a measurement of its own
    _report(ssd, rounds)
    return rounds


def _report(ssd: SsdBench, rounds: Rounds) -> None:
    test, verdict = rounds.test, rounds.verdict
    meta = meta_of(test, rounds.plan)
    name = f"snia-{test.name}"
    ssd.series(name, meta, **{f: rounds.array(f) for f in ROUND_FIELDS})
    window = rounds.window()
    cells = [
        {"cell": c.label, "read_pct": c.read_pct, "block_size": c.block_size, **w}
        for c, w in zip(test.cells, window, strict=True)
    ]
    derived = {**meta, **verdict.as_dict(), "rule": meta["rule"], "window": cells}
    ssd.derive(name, {**derived, "skipped": rounds.skipped})
    ssd.note(f"{name}.verdict", verdict.summary())
    if rounds.skipped:
        ssd.note(f"{name}.skipped", rounds.skipped)
    unit, quantity = test.unit, test.quantity
    ssd.figure(snia_convergence(verdict, quantity=quantity, unit=unit), f"{name} convergence")
    ssd.figure(snia_window(verdict, quantity=quantity, unit=unit), f"{name} window")
    ssd.figure(figs.tracked_mix_rounds(meta, rounds.array(test.metric), verdict), f"{name} rounds")
    rounds_text = f"rounds {verdict.window_first}–{verdict.window_last}"
    for metric in figs.CELL_METRICS[test.metric]:
        table = figs.CellTable.of(meta, cells, metric)
        if table.resolved:
            title = f"SNIA {test.title}: {table.what}, window {rounds_text}"
            ssd.figure(figs.by_block_size(table, title), f"{name} {metric}")


def check_rounds(rounds: Rounds) -> None:
    """What the round loop must have done: stopped at the first steady window, or at the cap."""
    rule, verdict = rounds.plan.rule, rounds.verdict
    values = rounds.tracker.values
    assert rule.window <= len(values) <= rule.max_rounds, f"{len(values)} rounds"
    assert verdict.attained or verdict.exhausted, verdict.summary()
    for last in range(rule.window, len(values)):
        assert not judge_window(values[:last], rule).attained, f"steady at round {last} already"
    assert all(c.ios > 0 and c.iops > 0 for row in rounds.cells for c in row), "every cell did I/O"
    assert verdict.window_values == values[-rule.window :]
