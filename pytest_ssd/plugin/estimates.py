"""The plan's estimate of a point's measurement from the fio jobs it declares, before it runs.

A sweep declaring ``@pytest.mark.ssd_points(names, points, jobs=jobs_of)`` says the jobs
each point will run: ``jobs_of(ssd, *values)``; any other test may declare the builder its
body runs with ``@pytest.mark.ssd_jobs(jobs_of)``: ``jobs_of(ssd, **params)``.  Before the
run there is no ``ssd``; what such a function reads of it, the profile, the device's size,
logical block size and indirection unit (``dut``), the test's state (``need``) and its
regions, is known from the plan (:class:`PlanBench`), so the plan can say the time of a
device's first run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from pytest_ssd.device.drive_class import IndirectionUnit, indirection_unit
from pytest_ssd.device.identity import SECTOR, DeviceIdentity
from pytest_ssd.errors import SsdError
from pytest_ssd.plugin.points import jobs_declared
from pytest_ssd.state.estimate import Estimate, of_jobs
from pytest_ssd.state.layout import Layout, Region, layout
from pytest_ssd.state.plan import need_of
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.tracker import Need

#: what a device that does not say its indirection unit has
NOT_EXPOSED = IndirectionUnit(None, "not exposed")


@dataclass(frozen=True)
class PlanIdentity:
    """What the plan knows of ``ssd.dut.identity``."""

    size_bytes: int
    logical_block_size: int = SECTOR


@dataclass(frozen=True)
class PlanDut:
    """What the plan knows of ``ssd.dut``."""

    identity: PlanIdentity
    iu: IndirectionUnit = NOT_EXPOSED

    @classmethod
    def of(cls, identity: DeviceIdentity | None, capacity: int) -> PlanDut:
        """The device as identified (a scratch one before it exists: only its size)."""
        if identity is None:
            return cls(PlanIdentity(capacity))
        known = PlanIdentity(capacity, identity.logical_block_size)
        return cls(known, indirection_unit(identity))


@dataclass(frozen=True)
class PlanBench:
    """What a sweep's ``jobs_of(ssd, ...)`` may read of ``ssd`` before the run."""

    profile: Profile
    dut: PlanDut
    #: the state the test runs in (None: a test that asks for none, such as smoke's)
    need: Need | None
    _layout: Layout | None

    def region(self, name: str) -> Region:
        if self._layout is None:  # no state, no regions: the estimate is given up
            raise KeyError(name)
        return self._layout.region(name)


def estimate(
    item: pytest.Item,
    profile: Profile,
    capacity: int,
    repeat: int,
    identity: DeviceIdentity | None = None,
) -> Estimate | None:
    """*item*'s measurement from its declared jobs; None when it declares none."""
    jobs_of, need = jobs_declared(item), need_of(item)
    if jobs_of is None:
        return None
    dut = PlanDut.of(identity, capacity)
    regions = None if need is None else layout(need.state, capacity, profile.span(capacity))
    bench = PlanBench(profile, dut, need, regions)
    try:
        jobs = jobs_of(bench)
    except (AttributeError, KeyError, TypeError, SsdError):
        # a jobs function wanting more than the plan knows: the run says what is wrong
        return None
    return of_jobs(jobs, capacity, repeat)


def estimates(
    items: Sequence[pytest.Item],
    profile: Profile,
    capacity: int,
    repeat: int,
    identity: DeviceIdentity | None = None,
) -> dict[str, Estimate]:
    """The estimates of the *items* that declare their jobs, by node id."""
    found = {item.nodeid: estimate(item, profile, capacity, repeat, identity) for item in items}
    return {nodeid: e for nodeid, e in found.items() if e is not None}
