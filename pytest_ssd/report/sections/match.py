"""Which measurements of several drives compare: the same test and the same workload.

Offsets, sizes and durations follow each drive's capacity and profile, so they
do not decide; the access shape does (pattern, block size, QD, jobs, read
share, engine, direct I/O, fsync).  Whatever is left out is said, with why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ssd.db import DriveResults, shared_test_id
from pytest_ssd.results.record import Measurement

#: the workload fields that must agree for two measurements to be compared
SHAPE = ("pattern", "block_size", "iodepth", "numjobs", "read_pct", "ioengine", "direct", "fsync")


@dataclass(frozen=True)
class Matched:
    """One drive's measurement of a workload that every matched drive ran alike."""

    drive: DriveResults
    measurement: Measurement

    @property
    def label(self) -> str:
        return self.drive.drive.label


def key_of(drive: DriveResults, m: Measurement) -> tuple[str, str]:
    """(test without the device parameter, measurement name)."""
    return shared_test_id(m.test, drive.drive.dut_id), m.name


def measurement_keys(drives: Sequence[DriveResults], test_prefix: str) -> list[tuple[str, str]]:
    """The keys the first drive that has any measured under *test_prefix*, in its order."""
    for drive in drives:
        keys = [key_of(drive, m) for m in drive.measurements if m.test.startswith(test_prefix)]
        if keys:
            return list(dict.fromkeys(keys))
    return []


def shape(m: Measurement) -> dict[str, object]:
    return {k: m.workload.get(k) for k in SHAPE}


def match(drives: Sequence[DriveResults], key: tuple[str, str]) -> tuple[list[Matched], list[str]]:
    """Each drive's measurement for *key* alike the first one found; notes on the rest."""
    found: list[Matched] = []
    left_out: list[str] = []
    for drive in drives:
        m = drive.measurement(*key)
        if m is None:
            left_out.append(f"{drive.drive.label}: no {key[1]} measurement in {key[0]}")
            continue
        if found and shape(m) != shape(found[0].measurement):
            ref = shape(found[0].measurement)
            diff = ", ".join(f"{k} {v} vs {ref[k]}" for k, v in shape(m).items() if v != ref[k])
            left_out.append(f"{drive.drive.label}: {key[1]} left out, workload differs ({diff})")
            continue
        found.append(Matched(drive, m))
    return found, left_out
