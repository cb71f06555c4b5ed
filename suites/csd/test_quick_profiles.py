"""Quick profiles: CrystalDiskMark's Default and NVMe profiles with fio (METHOD §4.1).

Run at FOB (phase 1), after cssd in both rounds, and after ``used75`` (seed 001's
"realistic" re-run).  Each line is a test: state, profile, CDM test and direction
(``test_quick_profiles[fob-default-seq1m-q8t1-read]``), in CDM's order (every
test's reads, then its writes); every pass is recorded and the report's grid of
a state shows each line's best pass.

Where the test span lies: at FOB and in ``used75`` the first span of the device
(the used 75 %), at cssd the first span of the SEQ region for SEQ tests and of
the RND region for RND tests, so the measurements keep the cssd layout.  Reads
must read data, as CDM's do (it writes its test file before measuring): at FOB
the span is written first by one SEQ 1 MiB QD8 pass (CDM's "preparing"); in
cssd and ``used75`` it holds the state's own data and is read as it is.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pytest_ssd import ALL_CLASSES, DirectionResult, FioJob, SsdBench
from pytest_ssd.methods.csd.workloads.flow import CSSD_ROUNDS
from pytest_ssd.methods.csd.workloads.profiles import (
    CDM_PROFILE_ORDER,
    CDM_PROFILES,
    CDM_TIMING,
    DIRECTIONS,
    LINE_RECORD,
    CdmPass,
    Direction,
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


def lines() -> list[Any]:
    """A param per state, profile, test and direction in CDM's order: ``fob-nvme-rnd4k-q1t1-read``.

    Only the first line at FOB needs the device pristine (purged): the lines after it
    run in the FOB the first one found.
    """
    params = []
    for state in QUICK_PROFILE_STATES:
        first = True
        for profile in CDM_PROFILE_ORDER:
            for direction in DIRECTIONS:
                for index, test in enumerate(CDM_PROFILES[profile]):
                    marks = list(state.marks)
                    if state.id == "fob" and not first:
                        marks = [pytest.mark.dut_state("fob")]
                    first = False
                    params.append(
                        pytest.param(
                            state.values[0],
                            profile,
                            index,
                            direction,
                            marks=marks,
                            id=f"{state.id}-{profile}-{test.key}-{direction}",
                        )
                    )
    return params


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


def passes_of(ssd: SsdBench, profile: str, index: int, direction: Direction) -> list[CdmPass]:
    """The line's passes in the test's state."""
    timing = CDM_TIMING[ssd.profile.name]
    test = CDM_PROFILES[profile][index]
    return [
        one
        for one in cdm_passes(profile, timing, spans(ssd, timing.span))
        if (one.test, one.direction) == (test, direction)
    ]


def jobs_of(
    ssd: SsdBench, phase: int, profile: str, index: int, direction: Direction
) -> list[FioJob]:
    """The line's passes' jobs (the plan counts them before the drive's first run)."""
    return [one.job for one in passes_of(ssd, profile, index, direction)]


@pytest.mark.ssd_jobs(jobs=jobs_of)
@pytest.mark.parametrize(("phase", "profile", "index", "direction"), lines())
def test_quick_profiles(
    ssd: SsdBench, phase: int, profile: str, index: int, direction: Direction
) -> None:
    timing = CDM_TIMING[ssd.profile.name]
    assert ssd.need is not None and ssd.need.phase == phase
    where = spans(ssd, timing.span)
    test = CDM_PROFILES[profile][index]
    passes = passes_of(ssd, profile, index, direction)
    # a read reads data, as CDM's do: at FOB its span is written first by CDM's "preparing"
    # pass (once: the lines after the first find it written); cssd and used75 hold data
    prepare = ssd.unwritten(cdm_prepare(where[test.pattern])) if direction == "read" else ()
    measured = run_passes(ssd, passes, prepare)

    (score,) = cdm_scores(passes, measured)
    assert len(score.mb_s) == timing.passes, "every pass is kept"
    assert min(score.mb_s) > 0
    assert score.mb_s[score.best] == max(score.mb_s), "the line shows the best pass"
    assert score.mib_s[score.best] == pytest.approx(score.mb_s[score.best] / 1.048576)
    assert len(ssd.measurements) == len(passes), "every pass is recorded"
    # the report draws each state's grids from its lines' records
    values = {"profile": profile, "passes": timing.passes, "pass_s": timing.pass_s}
    ssd.derive(LINE_RECORD, {**values, **score.as_values()})
