"""Speed profile (METHOD §8, seed 002 "blockwrite"): speed per fixed quantum of data.

blockwrite times every quantum (128 MiB) with a clock; here the quanta are cut
out of the pass's windows (:func:`pytest_ssd.analysis.fill.fill_pass`), whose
bytes are those of the I/Os that completed in them (fio's per-I/O log): the
moment the k-th quantum completes is found by linear interpolation inside the
window where the running total crosses k x quantum (the bandwidth is taken as
constant within a window).  A quantum that starts and ends inside one window is
not measured but interpolated: its speed is that window's
(:attr:`SpeedProfile.interpolated`).  That happens when quanta are shorter than
the windows (128 MiB at 7 GB/s take 19 ms, the full profile's windows 100 ms).

Per sample, as blockwrite prints it: the time stamp (``t_s``, its ``tobs``),
the time the quantum took (``dt_s``), the speed ``v = quantum / dt`` and the
running mean ``q / t`` (its ``vepoch``) with the bytes so far ``q``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pytest_ssd.errors import ConfigError, ParseError

Floats = npt.NDArray[np.float64]
MiB = 1 << 20


@dataclass(frozen=True)
class Sustained:
    """The speed sustained by all but ``p`` % of the samples (the p-th percentile, nearest rank).

    ``resolved`` says whether the sample can tell: at least one sample lies at or
    below it (``samples x p / 100 >= 1``; a 1st percentile needs 100 samples),
    the rule :class:`pytest_ssd.fio.results.Percentile` applies to latencies.
    Below that it is just the slowest sample.
    """

    p: float
    bw: float
    samples: int
    resolved: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "p": self.p,
            "mib_s": self.bw / MiB,
            "samples": self.samples,
            "resolved": self.resolved,
        }


@dataclass(frozen=True, eq=False)
class SpeedProfile:
    """One sample per quantum of data (see the module docstring)."""

    quantum: int
    t_s: Floats
    dt_s: Floats
    #: per quantum: it lies inside one log window, its speed is the window's
    interpolated: npt.NDArray[np.bool_]
    #: the log's typical window length, s
    log_interval_s: float

    @property
    def samples(self) -> int:
        return len(self.t_s)

    @property
    def v(self) -> Floats:
        """Speed of each quantum, bytes/s."""
        return self.quantum / self.dt_s

    @property
    def q(self) -> Floats:
        """Bytes done at the end of each quantum."""
        return self.quantum * np.arange(1, self.samples + 1, dtype=np.float64)

    @property
    def running_mean(self) -> Floats:
        """Mean speed from the start to the end of each quantum, bytes/s."""
        return self.q / self.t_s

    @property
    def resolved(self) -> bool:
        """Whether every quantum is measured: none lies inside a single log window."""
        return bool(self.samples) and not bool(self.interpolated.any())

    def moving(self, n: int) -> tuple[Floats, Floats]:
        """Moving average over *n* samples: at each ``t[i]``, ``n x quantum / (t[i] - t[i-n])``.

        The first quantum's start (time 0) counts as ``t[-1]``, so the first point is
        at sample n - 1; empty when there are fewer than *n* samples.
        """
        if n < 1:
            raise ConfigError(f"moving average over {n} samples: give at least 1")
        starts = np.concatenate(([0.0], self.t_s))
        if self.samples < n:
            return np.zeros(0), np.zeros(0)
        ends = self.t_s[n - 1 :]
        return ends, n * self.quantum / (ends - starts[: len(ends)])

    def sustained(self, p: float = 1.0) -> Sustained:
        """The p-th percentile of the sample speeds (nearest rank, like fio's percentiles)."""
        if not 0 < p < 100:
            raise ConfigError(f"percentile {p!r} is outside (0, 100)")
        if not self.samples:
            return Sustained(p, 0.0, 0, False)
        need = Fraction(str(p)) / 100 * self.samples
        rank = max(1, math.ceil(need))
        value = float(np.sort(self.v)[rank - 1])
        return Sustained(p, value, self.samples, need >= 1)

    def summary(self, p: float = 1.0) -> dict[str, object]:
        """JSON-able: sample count, mean and extremes (MiB/s), sustained rate, resolution."""
        speeds = self.v / MiB
        if not self.samples:
            return {"samples": 0, "quantum_mib": self.quantum / MiB, "resolved": False}
        return {
            "samples": self.samples,
            "quantum_mib": self.quantum / MiB,
            "mean_mib_s": float(self.running_mean[-1]) / MiB,
            "min_mib_s": float(speeds.min()),
            "max_mib_s": float(speeds.max()),
            "sustained": self.sustained(p).as_dict(),
            "quantum_s_median": float(np.median(self.dt_s)),
            "log_interval_s": self.log_interval_s,
            "interpolated": int(self.interpolated.sum()),
            "resolved": self.resolved,
        }


def speed_profile(t_s: Floats, done: Floats, quantum: int) -> SpeedProfile:
    """Cut quanta out of a log: *t_s* window ends, *done* bytes done at each (from 0 at t 0).

    The last, partial quantum is left out, as blockwrite does.
    """
    if quantum <= 0:
        raise ConfigError(f"quantum {quantum} must be a positive number of bytes")
    if len(t_s) != len(done) or np.any(np.diff(done) < 0) or np.any(np.diff(t_s) < 0):
        raise ParseError("speed profile: times and bytes must pair up and never decrease")
    xs = np.concatenate(([0.0], done))
    ts = np.concatenate(([0.0], t_s))
    levels = quantum * np.arange(1, int(xs[-1] // quantum) + 1, dtype=np.float64)
    # the k-th quantum completes the first time the total reaches k x quantum: inside the
    # window (xs[j-1], xs[j]], which moved bytes (a pause cannot hold a first crossing)
    j = np.searchsorted(xs, levels, side="left")
    share = (levels - xs[j - 1]) / (xs[j] - xs[j - 1])
    crossings = ts[j - 1] + share * (ts[j] - ts[j - 1])
    dt = np.diff(crossings, prepend=0.0)
    # interpolated: the quantum starts and ends inside the window that holds its end
    length = ts[j] - ts[j - 1]
    inside = (crossings - dt >= ts[j - 1]) & (dt < length * (1 - 1e-9))
    interval = float(np.median(np.diff(ts))) if len(t_s) else 0.0
    return SpeedProfile(quantum, crossings, dt, inside, interval)


@dataclass(frozen=True)
class SelfCheck:
    """The plugin's full-span read against an independent reader (seed 002's check with cp)."""

    plugin_bw: float
    reader_bw: float
    reader: str

    @property
    def ratio(self) -> float:
        """reader / plugin."""
        return self.reader_bw / self.plugin_bw

    def agrees(self, factor: float) -> bool:
        """Whether the two lie within *factor* of each other (1/factor <= ratio <= factor)."""
        return 1 / factor <= self.ratio <= factor

    def as_dict(self) -> dict[str, object]:
        return {
            "plugin_mib_s": self.plugin_bw / MiB,
            f"{self.reader}_mib_s": self.reader_bw / MiB,
            "ratio": self.ratio,
        }


#: dd's last line under LC_ALL=C: "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.982 s, 1.1 GB/s"
_DD = re.compile(r"^(\d+) bytes? .*copied, ([0-9.]+(?:e[-+]?\d+)?) s", re.MULTILINE)


def parse_dd(text: str) -> tuple[int, float]:
    """Bytes and seconds from dd's report (its stderr, C locale); ParseError otherwise."""
    found = _DD.findall(text)
    if not found:
        last = text.strip().splitlines()[-1] if text.strip() else "nothing"
        raise ParseError(f"dd printed no 'N bytes ... copied, S s' line (last line: {last!r})")
    count, seconds = found[-1]
    if float(seconds) <= 0:
        raise ParseError(f"dd reports {seconds} s for {count} bytes: cannot make a speed of it")
    return int(count), float(seconds)
