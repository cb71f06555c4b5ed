"""Datasheet conformance (METHOD §7): one test per spec line of each device's datasheet.

Each test reaches the state the line names, measures under the line's
conditions (pattern, block size, QD x jobs over the whole device) and checks
the figure: ``SEQ read QD8 128KiB: 534 MB/s = 98.9 % of spec 540 MB/s (needs ≥ 90 %)``.
A percentile the sample cannot resolve is "not judged" (skipped with the reason
under the quick profile, a failure under full, whose samples must resolve it).
"""

from __future__ import annotations

from pytest_ssd import SpecLine, SsdBench, spec_plan

#: (runtime, ramp) seconds: seed 000/001's 5-minute measurement after a 30 s ramp
FULL = (300.0, 30.0)
QUICK = (3.0, 1.0)


def test_spec_line(ssd: SsdBench, spec_line: SpecLine) -> None:
    runtime_s, ramp_s = QUICK if ssd.profile.quick else FULL
    job = spec_plan(spec_line, runtime_s=runtime_s, ramp_s=ramp_s).job
    ssd.assert_meets_spec(spec_line, ssd.run(job))
