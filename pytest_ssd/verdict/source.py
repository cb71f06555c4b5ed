"""Reading a baseline out of the results database: the controller and the command, not workers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pytest_ssd.db import DriveRef, ResultsDb
from pytest_ssd.db.url import DbUrl
from pytest_ssd.device.naming import recorded_key
from pytest_ssd.errors import ConfigError, DatabaseError
from pytest_ssd.results.history import builds_against
from pytest_ssd.verdict.checks import CheckVerdict, checks_of, judge_checks
from pytest_ssd.verdict.environment import demoted, differences
from pytest_ssd.verdict.judge import MetricVerdict
from pytest_ssd.verdict.reference import Baseline, judge_points, runs_of, states_of
from pytest_ssd.verdict.summary import Judged
from pytest_ssd.verdict.tolerance import Tolerances

T = TypeVar("T")


def pair_drives(
    base: Sequence[tuple[str, T]], new: Sequence[tuple[str, str]]
) -> tuple[dict[str, T], list[str]]:
    """Each new device (id, drive key) with the baseline drive (drive key, its data) it is
    judged against: the only one, else the one that is the same drive (its key:
    :func:`~pytest_ssd.device.naming.recorded_key`, a device's id), never by position; and a
    line for each device the baseline run did not measure."""
    if len(base) == 1:  # a label is one drive: every device is judged against it
        return {dut_id: base[0][1] for dut_id, _ in new}, []
    by_key = dict(base)
    paired = {dut_id: by_key[key] for dut_id, key in new if key in by_key}
    notes = [
        f"{dut_id}{'' if key == dut_id else f' ({key})'} is not judged: the baseline run"
        " did not measure that drive"
        f" (it measured {', '.join(sorted(by_key))})"
        for dut_id, key in new
        if key not in by_key
    ]
    return paired, notes


@dataclass(frozen=True)
class BaseDrive:
    """A drive of the baseline run: what it is, its points, its run's environment, its build."""

    against: str
    points: dict[str, list[dict[str, Any]]]
    environment: dict[str, Any]
    build: str | None = None


@dataclass(frozen=True)
class BaselineRun:
    """A baseline read from the database, its drives not yet paired with this run's."""

    ref: str
    #: (drive key, the drive) per baseline drive
    drives: list[tuple[str, BaseDrive]]
    tolerances: dict[str, float]

    def paired(
        self, devices: Mapping[str, str], builds: Mapping[str, str | None] | None = None
    ) -> tuple[Baseline, list[str]]:
        """The baseline of this run's devices (id -> drive key; *builds*: id -> its build),
        and what is not judged."""
        found, notes = pair_drives(self.drives, list(devices.items()))
        baseline = Baseline(
            self.ref,
            {dut_id: base.against for dut_id, base in found.items()},
            {dut_id: base.points for dut_id, base in found.items()},
            self.tolerances,
            environments={dut_id: base.environment for dut_id, base in found.items()},
            builds={
                dut_id: builds_against((builds or {}).get(dut_id), base.build)
                for dut_id, base in found.items()
            },
        )
        return baseline, notes


def read_baseline(
    db: DbUrl | Path | str, ref: str, exclude_run: str | None, tolerances: Mapping[str, float]
) -> BaselineRun:
    """The baseline *ref* (a run id or a label's newest run): each of its drives."""
    with ResultsDb(db) as found:
        drives = found.resolve([ref], exclude_run=exclude_run)
        if not drives:
            raise ConfigError(f"--ssd-baseline={ref}: that run measured nothing in {found.path}")
        read = [
            (
                recorded_key(d.description),
                BaseDrive(
                    f"run {d.run_id}, {d.label}",
                    runs_of(found.results(d, series=False).measurements, d.dut_id),
                    found.run(d.run_id).environment,
                    d.build,
                ),
            )
            for d in drives
        ]
    return BaselineRun(ref, read, dict(tolerances))


def paired_runs(
    db: ResultsDb, base_ref: str, new_ref: str
) -> list[tuple[DriveRef, DriveRef, Judged]]:
    """Each drive of *new_ref* with the drive of *base_ref* it is judged against, and its name
    in the gate (its label and device id, both sides' builds)."""
    base = db.resolve([base_ref])
    new = db.resolve([new_ref], exclude_run=base[0].run_id if base else None)
    if not base or not new:
        empty = base_ref if not base else new_ref
        raise DatabaseError(f"{db.path}: {empty!r} measured nothing to compare")
    paired, notes = pair_drives(
        [(recorded_key(d.description), d) for d in base],
        [(d.dut_id, recorded_key(d.description)) for d in new],
    )
    if not paired:
        raise ConfigError(f"the baseline {base_ref}: {'; '.join(notes)}")
    return [
        (drive, paired[drive.dut_id], Judged(drive.name, builds_against(drive.build, old.build)))
        for drive in new
        if (old := paired.get(drive.dut_id)) is not None
    ]


def compare_runs(
    db: ResultsDb, base_ref: str, new_ref: str, tolerances: Tolerances | None = None
) -> list[tuple[Judged, MetricVerdict]]:
    """(the new drive's label and device id and both sides' builds, a verdict) for every
    point *new_ref* and *base_ref* measured, judged with *tolerances* (the command line's
    and a datasheet's; else the runs' spread)."""
    found: list[tuple[Judged, MetricVerdict]] = []
    for drive, old, judged in paired_runs(db, base_ref, new_ref):
        measured = db.results(drive, series=False).measurements
        verdicts = judge_points(
            runs_of(db.results(old, series=False).measurements, old.dut_id),
            runs_of(measured, drive.dut_id),
            tolerances,
            states_of(measured, drive.dut_id),
        )
        caveats = differences(db.run(old.run_id).environment, db.run(drive.run_id).environment)
        verdicts = demoted(verdicts, caveats)
        found += [(judged, v) for v in verdicts]
    return found


def compare_checks(db: ResultsDb, base_ref: str, new_ref: str) -> list[tuple[Judged, CheckVerdict]]:
    """Each qualification check of *new_ref*'s drives judged against *base_ref*'s
    (:func:`~pytest_ssd.verdict.checks.judge_checks`)."""
    found: list[tuple[Judged, CheckVerdict]] = []
    for drive, old, judged in paired_runs(db, base_ref, new_ref):
        base = checks_of(db.results(old, series=False).derived)
        new = checks_of(db.results(drive, series=False).derived)
        found += [(judged, v) for v in judge_checks(base, new)]
    return found
