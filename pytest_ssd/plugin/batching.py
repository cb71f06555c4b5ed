"""Consecutive point tests of one sweep are started together (:mod:`pytest_ssd.fio.batch`).

``--ssd-no-batch`` turns it off.  A batch measures what lone fio runs of the same
jobs measure (``tests/benchmarks/orchestration.py``) because a seeded job's random
stream does not depend on its place in the fio process (:func:`pytest_ssd.fio.job.fio_seed`).

A sweep that declares its points' jobs (``@pytest.mark.ssd_points(names, points,
jobs=jobs_of)``, ``jobs_of(ssd, *values)`` the jobs the point's test will run) is
batched: as its first selected point's state is reached (after the transition's
last purge, or as the sweep's rest begins; else once it is there), the jobs of it and
of the points that follow it (same function, device and state, in the run's order,
at most :data:`MAX_JOBS`) form a batch, a fio process per point (the next one
started as a point's I/O ends), each job held at its gate; each point's
``ssd.run_jobs`` releases its own and gets its fio process's own figures.  The
batch closes before a test outside it and at the end of the session; a point that
was skipped or failed before its run leaves its jobs to be skipped (no I/O).
Writes are guarded once, before the first fio starts.

The batch runs where the device's fio runs: its gates and fio processes are the
batch agent's there (:mod:`pytest_ssd.fio.agent`: this machine's, or the one
beside a test host's fio server), which checks the pinned device before each
release; a machine without the agent (no perl) runs each point alone, said once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.errors import SsdError
from pytest_ssd.fio.agent import Gates
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.runners import Unbatched
from pytest_ssd.plugin.points import declared
from pytest_ssd.state import plan

#: jobs in one batch at most: two FIFOs and a job file section each (only the fio processes
#: of the next :data:`~pytest_ssd.fio.batch.AHEAD` points run at a time); a full low-QD
#: round is 66 points of 5 jobs, one batch, one fio start-up waited for
MAX_JOBS = 512
#: ``jobs_of(ssd, *point values)``: the jobs a point's test will run
JobsOf = Callable[..., Sequence[FioJob]]
GROUP_KEY = pytest.StashKey[str]()


def _jobs_of(item: pytest.Item) -> tuple[list[str], JobsOf] | None:
    found = declared(item)
    if found is None or found[2] is None:
        return None
    return found[0], found[2]


def _group_of(item: pytest.Item) -> tuple[Any, ...] | None:
    callspec = getattr(item, "callspec", None)
    need = plan.need_of(item)
    if _jobs_of(item) is None or callspec is None or need is None:
        return None
    function = getattr(item, "function", None)
    return (callspec.params.get("dut"), function, need.state, need.phase)


def mark_groups(items: list[pytest.Item]) -> dict[str, list[pytest.Item]]:
    """The runs of consecutive points of one sweep, device and state, by key."""
    groups: dict[str, list[pytest.Item]] = {}
    previous: tuple[Any, ...] | None = None
    for item in items:
        group = _group_of(item)
        if group is None:
            previous = None
            continue
        if group != previous:
            key = f"{group[0]}#{len(groups)}"
            groups[key] = []
        previous = group
        groups[key].append(item)
        item.stash[GROUP_KEY] = key
    return groups


@dataclass
class Active:
    """A batch running for one device: the points whose jobs it holds."""

    batch: Batch
    members: set[str]
    last: str


@dataclass
class Batches:
    """The batch of each device, one at a time."""

    #: False with ``--ssd-no-batch``
    enabled: bool = True
    groups: dict[str, list[pytest.Item]] = field(default_factory=dict)
    active: dict[str, Active] = field(default_factory=dict)
    #: what the run does while a point's fio exits (the results.json export)
    while_exiting: Callable[[], None] | None = None
    #: devices whose points run unbatched, said once each
    unbatched: set[str] = field(default_factory=set)

    def batch(self, dut: str) -> Batch | None:
        found = self.active.get(dut)
        return found.batch if found is not None else None

    def before(self, item: pytest.Item, dut: str) -> None:
        """Close the device's batch unless *item* is one of its points."""
        found = self.active.get(dut)
        if found is not None and item.nodeid not in found.members:
            self.close(dut)

    def start(self, item: pytest.Item, bench: SsdBench, dut: str, *, early: bool = False) -> None:
        """Batch *item* and the points after it, if declared (once: again, nothing happens).

        After *item* reached its state, or *early*: while it gets there (after the
        transition's last purge, or during the rest before the sweep; *bench*'s
        layout is known), so that its first fio's start-up overlaps that.
        """
        key = item.stash.get(GROUP_KEY, None)
        declared = _jobs_of(item)
        # a repeated point runs its cycle (trim, precondition) between runs: not batched
        busy = dut in self.active or bench.dut.readonly or bench._env.repeat > 1
        if not self.enabled or key is None or declared is None or busy:
            return
        names, jobs_of = declared
        members = self.groups[key][self.groups[key].index(item) :]
        chosen: list[pytest.Item] = []
        points: list[list[FioJob]] = []
        for member in members:
            params = member.callspec.params  # type: ignore[attr-defined]  # a parametrized Function
            found = list(jobs_of(bench, *(params[name] for name in names)))
            if chosen and sum(map(len, points)) + len(found) > MAX_JOBS:
                break
            chosen.append(member)
            points.append(found)
        jobs = [job for point in points for job in point]
        if len(chosen) < 2 or not all(points):
            return  # one point: its own fio process, as any test
        gates = self._gates(bench, dut)
        if gates is None:
            return
        if any(job.writes for job in jobs):
            bench._guard_writes()  # once for the batch: its releases run no guard
        folder = bench.artifacts.parent / f"batch-{bench.artifacts.name}"
        sizes = [len(point) for point in points]
        batch = Batch(
            jobs,
            bench.dut.path,
            artifacts=folder,
            points=sizes,
            while_exiting=self.while_exiting,
            gates=gates,
        )
        try:
            batch.start()
        except BaseException:
            batch.abort()
            raise
        if early:
            batch.hold_meanwhile()
        self.active[dut] = Active(batch, {m.nodeid for m in chosen}, chosen[-1].nodeid)

    def _gates(self, bench: SsdBench, dut: str) -> Gates | None:
        """The batch's gates from the device's fio runner (None: its points run unbatched,
        said once)."""
        runner = bench._env.services.runner()
        try:
            return runner.batch_gates(str(bench.dut.path), bench.dut.pinned)
        except Unbatched as exc:
            self._unbatched(dut, str(exc))
            return None

    def _unbatched(self, dut: str, why: str) -> None:
        if dut not in self.unbatched:
            self.unbatched.add(dut)
            problem = f"{dut}: its point tests run unbatched: {why}"
            warnings.warn(problem, pytest.PytestWarning, stacklevel=1)

    def after(self, item: pytest.Item, dut: str) -> None:
        """Close the device's batch after its last point."""
        found = self.active.get(dut)
        if found is not None and found.last == item.nodeid:
            self.close(dut)

    def close(self, dut: str) -> None:
        """Close the device's batch; a failure is warned of."""
        found = self.active.pop(dut, None)
        if found is None or found.batch.aborted:  # a failed release said why already
            return
        try:
            found.batch.close()
        except SsdError as exc:
            found.batch.abort()
            problem = f"{dut}: a fio batch failed as it closed: {exc}"
            warnings.warn(problem, pytest.PytestWarning, stacklevel=1)

    def abort(self, dut: str) -> None:
        """Kill the device's batch (its points' state was not reached)."""
        found = self.active.pop(dut, None)
        if found is not None:
            found.batch.abort()

    def close_all(self) -> None:
        for dut in list(self.active):
            self.close(dut)


#: the run's batches (``config.stash``; made at configure, on the controller and each worker)
BATCHES_KEY = pytest.StashKey[Batches]()
