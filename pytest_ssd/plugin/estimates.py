"""The plan's estimate of a point's measurement from the fio jobs it declares, before it runs.

A sweep declaring ``@pytest.mark.ssd_points(names, points, jobs=jobs_of)`` says the jobs
each point will run: ``jobs_of(ssd, *values)``.  Before the run there is no ``ssd``; what
such a function reads of it, the profile and the regions of the point's state, is known
from the plan (:class:`PlanBench`), so the plan can say the time of a device's first run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from pytest_ssd.errors import SsdError
from pytest_ssd.plugin.points import declared
from pytest_ssd.state.estimate import Estimate, of_jobs
from pytest_ssd.state.layout import Layout, Region, layout
from pytest_ssd.state.plan import need_of
from pytest_ssd.state.profile import Profile


@dataclass(frozen=True)
class PlanBench:
    """What a sweep's ``jobs_of(ssd, ...)`` may read of ``ssd`` before the run."""

    profile: Profile
    _layout: Layout

    def region(self, name: str) -> Region:
        return self._layout.region(name)


def estimate(item: pytest.Item, profile: Profile, capacity: int, repeat: int) -> Estimate | None:
    """*item*'s measurement from its declared jobs; None when it declares none."""
    found, need = declared(item), need_of(item)
    callspec = getattr(item, "callspec", None)
    if found is None or found[2] is None or need is None or callspec is None:
        return None
    names, _, jobs_of = found
    bench = PlanBench(profile, layout(need.state, capacity, profile.span(capacity)))
    try:
        jobs = jobs_of(bench, *(callspec.params[name] for name in names))
    except (AttributeError, KeyError, TypeError, SsdError):
        # a jobs function wanting more than the plan knows: the run says what is wrong
        return None
    return of_jobs(jobs, capacity, repeat)


def estimates(
    items: Sequence[pytest.Item], profile: Profile, capacity: int, repeat: int
) -> dict[str, Estimate]:
    """The estimates of the *items* that declare their jobs, by node id."""
    found = {item.nodeid: estimate(item, profile, capacity, repeat) for item in items}
    return {nodeid: e for nodeid, e in found.items() if e is not None}
