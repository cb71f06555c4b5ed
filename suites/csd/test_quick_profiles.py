"""Quick profiles: CrystalDiskMark's Default and NVMe profiles with fio (METHOD §4.1).

Run at FOB (phase 1), after cssd in both rounds, and after ``used75`` (seed 001's
"realistic" re-run).  Every pass is recorded; the grid shows the best one.

Where the test span lies: at FOB and in ``used75`` the first span of the device
(the used 75 %), at cssd the first span of the SEQ region for SEQ tests and of
the RND region for RND tests, so the measurements keep the cssd layout.  Reads
must read data, as CDM's do (it writes its test file before measuring): at FOB
the span is written first by one SEQ 1 MiB QD8 pass (CDM's "preparing"); in
cssd and ``used75`` it holds the state's own data and is read as it is.
"""

from __future__ import annotations

import time

import pytest

from pytest_ssd import ALL_CLASSES, DirectionResult, FioJob, SsdBench
from pytest_ssd.figures.grid import Grid, grid_of, results_grid
from pytest_ssd.workloads.csd import CSSD_ROUNDS
from pytest_ssd.workloads.profiles import (
    CDM_PROFILE_ORDER,
    CDM_PROFILES,
    CDM_TIMING,
    CDM_TITLES,
    CdmPass,
    Span,
    cdm_bursts,
    cdm_passes,
    cdm_prepare,
    cdm_scores,
)

pytestmark = pytest.mark.ssd_applies(*ALL_CLASSES)  # csd applies to every class

#: FOB before preconditioning (purged first), cssd in both rounds, used75 after the second
QUICK_PROFILE_STATES = [
    pytest.param(1, marks=pytest.mark.dut_state("fob", pristine=True), id="fob"),
    *CSSD_ROUNDS,
    pytest.param(2, marks=pytest.mark.dut_state("used75", phase=2), id="used75"),
]


def spans(ssd: SsdBench, limit: int) -> dict[str, Span]:
    """Where SEQ and RND tests run in the test's state."""
    assert ssd.need is not None
    if ssd.need.state.name == "cssd":
        return {
            "seq": Span.within(ssd.region("seq"), limit),
            "rnd": Span.within(ssd.region("rnd"), limit),
        }
    whole = Span.within(ssd.region("used" if ssd.need.state.name == "used75" else "device"), limit)
    return {"seq": whole, "rnd": whole}


def run_passes(
    ssd: SsdBench, passes: list[CdmPass], setup: tuple[FioJob, ...]
) -> dict[str, DirectionResult]:
    """Run every pass, *setup* first, idling between passes when the profile has an interval."""
    timing = CDM_TIMING[ssd.profile.name]
    measured: dict[str, DirectionResult] = {}
    for index, burst in enumerate(cdm_bursts(passes, timing)):
        if index and timing.interval_s:
            time.sleep(timing.interval_s)
        run = ssd.run_jobs(*(one.job for one in burst), setup=() if index else setup)
        for one in burst:
            result = run.result(one.job)
            assert set(result.directions) == {one.direction}, f"{one.job.name}: one direction"
            assert (result.options["offset"], result.options["size"]) == (
                str(one.job.offset),
                str(one.job.size),
            ), "fio ran over the span asked for"
            measured[one.job.name] = result.directions[one.direction]
    return measured


def grid_of_profile(
    ssd: SsdBench, profile: str, passes: list[CdmPass], measured: dict[str, DirectionResult]
) -> Grid:
    """Check and record one profile's scores; its grid."""
    timing = CDM_TIMING[ssd.profile.name]
    scores = cdm_scores([p for p in passes if p.profile == profile], measured)
    assert len(scores) == 2 * len(CDM_PROFILES[profile]), "a read and a write per test"
    values: dict[str, object] = {"passes": timing.passes, "pass_s": timing.pass_s}
    for score in scores:
        assert len(score.mb_s) == timing.passes, "every pass is kept"
        assert min(score.mb_s) > 0
        assert score.mb_s[score.best] == max(score.mb_s), "the grid shows the best pass"
        assert score.mib_s[score.best] == pytest.approx(score.mb_s[score.best] / 1.048576)
        values.update(score.as_values())
    ssd.derive(f"cdm-{profile}", values)
    return grid_of(CDM_TITLES[profile], CDM_PROFILES[profile], scores)


@pytest.mark.parametrize("phase", QUICK_PROFILE_STATES)
def test_quick_profiles(ssd: SsdBench, phase: int) -> None:
    timing = CDM_TIMING[ssd.profile.name]
    assert ssd.need is not None and ssd.need.phase == phase
    state = ssd.need.state.name
    where = spans(ssd, timing.span)
    passes = [one for profile in CDM_PROFILE_ORDER for one in cdm_passes(profile, timing, where)]
    # at FOB the span (the same for SEQ and RND there) is written once, before the first read
    measured = run_passes(ssd, passes, (cdm_prepare(where["seq"]),) if state == "fob" else ())

    grids = [grid_of_profile(ssd, profile, passes, measured) for profile in CDM_PROFILE_ORDER]

    assert len(ssd.measurements) == len(passes), "every pass is recorded"
    title = f"quick profiles at {state} (phase {phase}), best of {timing.passes}"
    ssd.figure(results_grid(grids, title), f"quick profiles {state}-{phase}")
