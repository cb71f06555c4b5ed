"""A measurement's series: what must be equal for two of its numbers to be compared.

Two measurements belong to one series when the drive model and capacity, the
test point (the test without its device parameter, and the measurement's
name without its repetition), the state the test declared, the profile and the
host class are equal.  A drive's build (``--ssd-build``, else its firmware) and
serial number are not part of it (``pytest-ssd history`` follows a series
across builds and drives): they are kept beside it.

A point a test measures several times over (the low-QD matrix: ``rnd-q1-r070-n0``,
``-n1``, ``-n2``) names each run ``<point>-n<repetition>`` (:func:`repetition_name`):
the repetitions are one series, repeats of one point as ``--ssd-repeat``'s are.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, fields, replace
from typing import Any

#: the workload keys the fixture adds for the series (beside the fio job's own)
STATE_KEY = "state"
PROFILE_KEY = "profile"
#: a measurement's machine's CPUs during its run: busy in all, fio's and the others'
#: (:mod:`pytest_ssd.state.cpu`); not part of a series' key
HOST_CPUS = "host_cpus"
#: hex digits of a series key (64 bits: one collision in ~4 billion series)
KEY_DIGITS = 16


@dataclass(frozen=True)
class SeriesIdentity:
    """What must be equal for two measurements to be compared."""

    model: str | None
    size_bytes: int | None
    point: str
    state: str | None
    profile: str | None
    host_class: str | None

    @property
    def key(self) -> str:
        """A short stable name of the series: the same parts give the same key on every host."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:KEY_DIGITS]

    def as_dict(self) -> dict[str, Any]:
        # its fields are plain values: no deep copy (asdict) for each measurement recorded
        return {part.name: getattr(self, part.name) for part in fields(self)}

    def describe(self) -> str:
        """One line: 'Model 960 GB, point, state, profile, host class'."""
        size = f"{self.size_bytes / 1e9:,.0f} GB" if self.size_bytes else "size unknown"
        parts = [f"{self.model or 'no model'} {size}", self.point]
        parts += [f"state {self.state or 'none'}", f"profile {self.profile or '?'}"]
        host = self.host_class or "?"  # a test host's class says "host ADDRESS" already
        return ", ".join([*parts, host if host.startswith("host ") else f"host {host}"])


#: what a device without a build is called (no --ssd-build, no firmware revision reported)
UNKNOWN_BUILD = "unknown build"


def build_name(build: str | None) -> str:
    """A build as people read it: its name, else 'unknown build' (never invented)."""
    return build or UNKNOWN_BUILD


def builds_against(new: str | None, base: str | None) -> str:
    """'build 1.2.3 against 1.2.2': both sides of a comparison ('unknown build' where none)."""
    return f"{build_phrase(new)} against {base or UNKNOWN_BUILD}"


def build_phrase(build: str | None) -> str:
    """'build 1.2.3', else 'unknown build'."""
    return f"build {build}" if build else UNKNOWN_BUILD


def host_class(environment: dict[str, Any], test_host: str | None = None) -> str:
    """The class of machine a device was measured in.

    On the controller: its architecture, CPU model and count (what a lab buys by the
    dozen); a device on a test host: that host's address (its hardware is not recorded).
    """
    if test_host:
        return f"host {test_host}"
    cpu = environment.get("cpu") or "cpu unknown"
    return f"{environment.get('machine') or '?'} {environment.get('cpus') or '?'}x {cpu}"


#: a measurement name's repetition: ``-n`` and its number, last
REPETITION = re.compile(r"-n\d+$")


def repetition_name(point: str, repetition: int) -> str:
    """The name of a point's *repetition*-th run: 'rnd-q1-r070-n2'."""
    return f"{point}-n{repetition}"


def point_of(shared_test: str, name: str) -> str:
    """The test point: the test without its device parameter, and the measurement's name
    without its repetition (a point's repetitions are one series)."""
    return f"{shared_test} {REPETITION.sub('', name)}"


def without_repetition(identity: SeriesIdentity) -> SeriesIdentity:
    """*identity* as this pytest-ssd keys it: a series recorded per repetition (by pytest-ssd
    before repetitions were one series) read as its point's."""
    point = REPETITION.sub("", identity.point)
    return identity if point == identity.point else replace(identity, point=point)


@dataclass(frozen=True)
class HistoryRow:
    """One drive in one run at one series' point, one direction: its repeats pooled."""

    run_id: str
    run_start: str
    label: str
    firmware: str | None
    serial: str | None
    direction: str
    #: measurements pooled (``--ssd-repeat``'s runs of the point, and its repetitions)
    n: int
    iops: float | None
    bw_mib_s: float | None
    #: percentile -> µs over the pooled latency histograms (None: not resolved)
    percentiles: dict[float, float | None]
    #: where the percentiles came from: "pooled bins", "fio" (one run, no bins) or "none"
    source: str
    #: each repeat's IOPS and fio's own p99 (µs; None where fio did not resolve it)
    iops_each: tuple[float, ...] = ()
    p99_each: tuple[float | None, ...] = ()
    #: the build it measured (``--ssd-build``, else the firmware; None: not known)
    build: str | None = None

    @property
    def shown_build(self) -> str:
        """Its build as history's x axis names it ('unknown build' where none is known)."""
        return build_name(self.build)


def drive_of(row: HistoryRow) -> str:
    """A drive by its serial number (loop devices and files have none: their label)."""
    return row.serial or row.label


@dataclass(frozen=True)
class Change:
    """A change judged between a drive's build and the build before it (history's marks)."""

    build: str
    drive: str
    #: "iops" or "p99"
    metric: str
    verdict: str
    ratio: float
