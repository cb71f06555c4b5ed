"""Reading a baseline out of the results database: the controller and the command, not workers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_ssd.db import DriveRef, ResultsDb
from pytest_ssd.db.url import DbUrl
from pytest_ssd.errors import ConfigError, DatabaseError
from pytest_ssd.verdict.baseline import Baseline, judge_points, runs_of, states_of
from pytest_ssd.verdict.environment import demoted, differences
from pytest_ssd.verdict.judge import MetricVerdict
from pytest_ssd.verdict.tolerance import Tolerances


def _pair(drives: Sequence[DriveRef], dut_ids: Sequence[str], what: str) -> dict[str, DriveRef]:
    """Which baseline drive each device is judged against: the same id, or the only one."""
    by_id = {d.dut_id: d for d in drives}
    paired: dict[str, DriveRef] = {}
    for dut_id in dut_ids:
        if dut_id in by_id:
            paired[dut_id] = by_id[dut_id]
        elif len(drives) == 1:
            paired[dut_id] = drives[0]
        else:
            names = ", ".join(sorted(by_id))
            raise ConfigError(
                f"{what}: it holds devices {names}, none is {dut_id}:"
                " give a label (one drive) instead"
            )
    return paired


def read_baseline(
    db: DbUrl | Path | str,
    ref: str,
    dut_ids: Sequence[str],
    exclude_run: str | None,
    tolerances: Mapping[str, float],
) -> Baseline:
    """The baseline *ref* (a run id or a label's newest run) for each of *dut_ids*."""
    with ResultsDb(db) as found:
        drives = found.resolve([ref], exclude_run=exclude_run)
        if not drives:
            raise ConfigError(f"--ssd-baseline={ref}: that run measured nothing in {found.path}")
        paired = _pair(drives, dut_ids, f"--ssd-baseline={ref}")
        points = {
            dut_id: runs_of(found.results(d, series=False).measurements, d.dut_id)
            for dut_id, d in paired.items()
        }
        environments = {dut_id: found.run(d.run_id).environment for dut_id, d in paired.items()}
    against = {dut_id: f"run {d.run_id}, {d.label}" for dut_id, d in paired.items()}
    return Baseline(ref, against, points, dict(tolerances), environments=environments)


def compare_runs(
    db: ResultsDb, base_ref: str, new_ref: str, tolerances: Tolerances | None = None
) -> list[tuple[str, MetricVerdict]]:
    """(the new drive's label and device id, a verdict) for every point *new_ref* and
    *base_ref* measured, judged with *tolerances* (the command line's and a datasheet's;
    else the runs' spread)."""
    base = db.resolve([base_ref])
    new = db.resolve([new_ref], exclude_run=base[0].run_id if base else None)
    if not base or not new:
        empty = base_ref if not base else new_ref
        raise DatabaseError(f"{db.path}: {empty!r} measured nothing to compare")
    paired = _pair(base, [d.dut_id for d in new], f"the baseline {base_ref}")
    found: list[tuple[str, MetricVerdict]] = []
    for drive in new:
        old = paired[drive.dut_id]
        measured = db.results(drive, series=False).measurements
        verdicts = judge_points(
            runs_of(db.results(old, series=False).measurements, old.dut_id),
            runs_of(measured, drive.dut_id),
            tolerances,
            states_of(measured, drive.dut_id),
        )
        caveats = differences(db.run(old.run_id).environment, db.run(drive.run_id).environment)
        verdicts = demoted(verdicts, caveats)
        found += [(drive.name, v) for v in verdicts]
    return found
