"""Data integrity: every block written reads back as written (fio's own verification:
a crc32c header every 4 KiB naming its own offset), over the state transitions the method
makes (docs/integrity.md).

In the method's order of states: a sequential fill from FOB, a trim, the drive written
full and overwritten at random, a purge (after the tests that wrote), then the random
overwrite of the consumer preconditioned state.  Each check is a ``qualification`` record
(part "integrity"); a mismatch fails its test in one line naming the LBA, what fio
expected and what it found, and fio's dump of the block stays in the test's artifacts.
"""

from __future__ import annotations

import pytest

from pytest_ssd import SsdBench
from pytest_ssd.methods.integrity import run
from pytest_ssd.methods.qual.record import settle

PART = "integrity"


def _settle(ssd: SsdBench, *outcomes: run.Outcome) -> None:
    for outcome in outcomes:
        ssd.derive(run.RECORD, outcome.record())
    settle(ssd, PART, outcomes)


@pytest.mark.dut_state("fob", pristine=True)
@pytest.mark.ssd_jobs(jobs=run.fill_jobs)
def test_after_sequential_fill(ssd: SsdBench) -> None:
    """The state's span written sequentially from FOB, then read back."""
    _settle(ssd, run.after_fill(ssd))


@pytest.mark.dut_state("fob")
@pytest.mark.ssd_jobs(jobs=run.trim_jobs)
def test_after_trim(ssd: SsdBench) -> None:
    """A span written, its middle third trimmed: the rest reads back as written, the
    trimmed third as the device declares (DLFEAT; a loop device: zeroes)."""
    _settle(ssd, *run.after_trim(ssd))


@pytest.mark.dut_state("fob")
@pytest.mark.ssd_jobs(jobs=run.full_jobs)
def test_drive_full(ssd: SsdBench) -> None:
    """Every LBA written, overwritten at random with no free block, all read back."""
    _settle(ssd, run.drive_full(ssd))


@pytest.mark.dut_state("fob", pristine=True)
def test_after_purge(ssd: SsdBench) -> None:
    """After the purge that follows the writes above: no sampled block holds data from
    before it, and each reads as the device declares."""
    _settle(ssd, run.after_purge(ssd))


@pytest.mark.dut_state("cssd")
@pytest.mark.ssd_jobs(jobs=run.overwrite_jobs)
def test_after_random_overwrite(ssd: SsdBench) -> None:
    """The preconditioned random region written with headers, overwritten at random (fio
    verifying each block's last write), then read back."""
    _settle(ssd, run.after_overwrite(ssd))
