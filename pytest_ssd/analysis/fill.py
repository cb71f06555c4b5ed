"""Fill drive analysis (METHOD §4.2): fio's averaged logs as numpy series, and the cache rule.

With ``log_avg_msec``, fio writes one line per window: ``time_ms, value, direction,
bs, prio`` (``bs`` is 0 in averaged logs; a sixth column, the offset, only with
``log_offset``).  The value is the window's mean bandwidth in KiB/s (``_bw`` logs)
or its mean latency in ns (``_lat`` logs); the time is the window's end in ms
since the job started.

Bytes are the integral of bandwidth over the windows, the first from the job's
start (0) to its line.  That gives back fio's ``io_bytes`` less the unlogged
last partial window, to a few per cent (:attr:`FillPass.coverage`, recorded):
each value is the unweighted mean of rate samples taken in the window over
whole milliseconds, exact while the samples span equal times.  They do not
around a stall of fio's logging thread, and at the start: the first line comes
110-240 ms in, whatever ``log_avg_msec``.  On a loaded VM a short pass came to
103.7 % (a stall mid-pass) and 114.7 % (a stalled start, first line at 240 ms).
On a real drive's pass of minutes or hours such windows are a negligible share.
The log is kept as fio wrote it, not bent to fio's total.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pytest_ssd.errors import ConfigError, ParseError

Floats = npt.NDArray[np.float64]
GiB = 1 << 30
#: fio's data direction column
DIRECTION_CODES = {"read": 0, "write": 1, "trim": 2}


@dataclass(frozen=True, eq=False)
class FioLog:
    """One fio log: per window its end time (s since the job started), value and direction."""

    t_s: Floats
    value: Floats
    direction: npt.NDArray[np.int64]

    def only(self, direction: str) -> FioLog:
        """The windows of one direction (``read``, ``write`` or ``trim``)."""
        keep = self.direction == DIRECTION_CODES[direction]
        return FioLog(self.t_s[keep], self.value[keep], self.direction[keep])


def log_path(folder: Path, job: str, kind: str) -> Path:
    """Where fio put a log of *job* (``kind`` ``bw`` or ``lat``) in a run's artifact folder."""
    return folder / f"log-{job}_{kind}.1.log"


def read_log(path: Path) -> FioLog:
    """Parse a fio log file; :class:`ParseError` naming the file when it is not one."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ParseError(f"fio log {path}: {exc.strerror}") from None
    if not text.strip():
        empty = np.zeros(0)
        return FioLog(empty, empty, np.zeros(0, dtype=np.int64))
    try:
        table = np.loadtxt(io.StringIO(text), delimiter=",", usecols=(0, 1, 2), ndmin=2)
    except ValueError as exc:
        raise ParseError(f"fio log {path} is not 'time, value, direction, ...': {exc}") from None
    return FioLog(table[:, 0] / 1000.0, table[:, 1], table[:, 2].astype(np.int64))


def moving_median(values: Floats, window: int) -> Floats:
    """Centred moving median over *window* samples (odd); only where the window is complete.

    Element ``j`` of the result is the median of ``values[j : j + window]``, which
    belongs to sample ``j + window // 2``.
    """
    if window < 1 or window % 2 == 0:
        raise ConfigError(f"moving median window {window} must be an odd number of samples")
    if len(values) < window:
        return np.zeros(0)
    windows = np.lib.stride_tricks.sliding_window_view(values, window)
    return np.asarray(np.median(windows, axis=1), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class FillPass:
    """One pass over the span (a fill pass, or the read) as logged, with fio's own totals.

    ``t_s`` is each window's end (s since the pass started), ``bw`` its bandwidth
    (bytes/s) and ``written`` the bytes written at its end (the integral of ``bw``).
    """

    name: str
    t_s: Floats
    bw: Floats
    written: Floats
    lat_t_s: Floats
    lat_ns: Floats
    #: fio's count of bytes written and its runtime: the exact totals
    io_bytes: int
    runtime_s: float

    @property
    def mean_bw(self) -> float:
        """Mean bandwidth of the pass, bytes/s (fio's: io_bytes / runtime)."""
        return self.io_bytes / self.runtime_s if self.runtime_s > 0 else 0.0

    @property
    def coverage(self) -> float:
        """Share of fio's bytes the log accounts for (see the module docstring)."""
        return float(self.written[-1]) / self.io_bytes if self.io_bytes else 0.0

    @property
    def log_interval_s(self) -> float:
        """The typical window length (the median spacing of the log)."""
        return float(np.median(np.diff(self.t_s))) if len(self.t_s) > 1 else 0.0

    def window_start(self) -> tuple[Floats, Floats]:
        """Time (s) and bytes written at the start of each window."""
        return np.concatenate(([0.0], self.t_s[:-1])), np.concatenate(([0.0], self.written[:-1]))


def fill_pass(
    name: str, bw_log: FioLog, lat_log: FioLog, io_bytes: int, runtime_s: float, *,
    direction: str = "write",
) -> FillPass:  # fmt: skip
    """A pass from its ``_bw`` and ``_lat`` logs and fio's totals for *direction*."""
    bw_windows, lat_windows = bw_log.only(direction), lat_log.only(direction)
    t_s = bw_windows.t_s
    if not len(t_s) or t_s[0] <= 0:
        raise ParseError(f"{name}: the bandwidth log has no {direction} windows with a length")
    bw = bw_windows.value * 1024.0  # KiB/s
    written = np.cumsum(bw * np.diff(t_s, prepend=0.0))
    return FillPass(name, t_s, bw, written, lat_windows.t_s, lat_windows.value, io_bytes, runtime_s)


@dataclass(frozen=True)
class CacheRule:
    """When a write pass leaves its cache: the first sustained drop below the initial plateau.

    The bandwidth is smoothed by a centred moving median over ``window`` samples
    (odd; 5 samples = 0.5 s at fio's 100 ms windows), which ignores single slow or
    fast windows.  The initial plateau is the highest smoothed value among the first
    ``plateau`` smoothed points (the cache speed, robust to a slow first window).
    The pass has dropped where the smoothed bandwidth falls below ``drop`` x the
    plateau (0.7: a loss of more than 30 %, far beyond the noise of a cache's
    plateau and short of the 3-10x fall of a TLC/QLC drive leaving SLC).  The
    drop is sustained when the smoothed bandwidth stays below for at least
    ``min_s`` seconds *and* ``min_bytes`` written, counted from the start of the
    first slow window to the end of the last: garbage-collection dips of a few
    seconds and stalls that write little are not the end of the cache.

    The cache size estimate is the number of bytes written before the first
    sustained drop.  The answer is *not resolved* when the pass has fewer than
    ``window + plateau`` windows, or when its last drop runs into the end of the
    pass before it lasted long enough to count.
    """

    window: int = 5
    plateau: int = 10
    drop: float = 0.7
    min_s: float = 5.0
    min_bytes: int = 1 * GiB

    def __post_init__(self) -> None:
        problems = []
        if self.window < 1 or self.window % 2 == 0:
            problems.append(f"window {self.window} must be an odd number of samples")
        if self.plateau < 1:
            problems.append(f"plateau {self.plateau} must be at least one sample")
        if not 0 < self.drop < 1:
            problems.append(f"drop {self.drop} must be a fraction between 0 and 1")
        if self.min_s < 0 or self.min_bytes < 0:
            problems.append("min_s and min_bytes must not be negative")
        if problems:
            raise ConfigError("cache rule: " + "; ".join(problems))

    def describe(self) -> str:
        return (
            f"moving median of {self.window} windows below {self.drop:.0%} of the initial "
            f"plateau for at least {self.min_s:g} s and {self.min_bytes / GiB:g} GiB"
        )


@dataclass(frozen=True)
class CacheEstimate:
    """What the cache rule says about one pass.

    ``resolved`` False: the data cannot say (too short, or a drop cut off by the
    end of the pass); ``cache_bytes`` is then None.  ``resolved`` with
    ``cache_bytes`` None: no sustained drop, the whole pass ran at its initial
    speed (no SLC cache, or one larger than the pass).
    """

    resolved: bool
    reason: str
    cache_bytes: float | None = None
    drop_s: float | None = None
    plateau_bw: float | None = None
    post_bw: float | None = None
    recovered_bytes: float | None = None

    @property
    def found(self) -> bool:
        return self.cache_bytes is not None

    def as_dict(self) -> dict[str, object]:
        """JSON-able: GiB and MiB/s, None where the rule has no answer."""
        return {
            "cache_resolved": self.resolved,
            "cache_gib": _scaled(self.cache_bytes, GiB),
            "cache_drop_s": self.drop_s,
            "plateau_mib_s": _scaled(self.plateau_bw, 1 << 20),
            "post_cache_mib_s": _scaled(self.post_bw, 1 << 20),
            "recovered_at_gib": _scaled(self.recovered_bytes, GiB),
            "cache_reason": self.reason,
        }


def _scaled(value: float | None, unit: int) -> float | None:
    return None if value is None else value / unit


def _runs(mask: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """(first, last) index of every run of True in *mask*, inclusive."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


@dataclass(frozen=True)
class _Timeline:
    """Runs of smoothed points as stretches of the pass: windows, seconds, bytes."""

    fill: FillPass
    rule: CacheRule
    points: int

    def windows(self, run: tuple[int, int]) -> tuple[int, int]:
        """First and last window of a run of smoothed points.

        A run that reaches the last smoothed point takes the unsmoothed tail along.
        """
        half = self.rule.window // 2
        start, end = run
        last = len(self.fill.bw) - 1 if end == self.points - 1 else end + half
        return start + half, last

    def start(self, window: int) -> tuple[float, float]:
        """Seconds and bytes at the start of *window*."""
        t0, b0 = self.fill.window_start()
        return float(t0[window]), float(b0[window])

    def seconds_and_bytes(self, run: tuple[int, int]) -> tuple[float, float]:
        first, final = self.windows(run)
        t0, b0 = self.start(first)
        return float(self.fill.t_s[final]) - t0, float(self.fill.written[final]) - b0

    def lasts(self, run: tuple[int, int]) -> bool:
        seconds, written = self.seconds_and_bytes(run)
        return seconds >= self.rule.min_s and written >= self.rule.min_bytes

    def at_end(self, run: tuple[int, int]) -> bool:
        return run[1] == self.points - 1


def estimate_cache(fill: FillPass, rule: CacheRule = CacheRule()) -> CacheEstimate:
    """Apply *rule* to one pass (see :class:`CacheRule`)."""
    count = len(fill.bw)
    if count < rule.window + rule.plateau:
        return CacheEstimate(
            False, f"{count} windows: the rule needs {rule.window + rule.plateau} at least"
        )
    smooth = moving_median(fill.bw, rule.window)
    plateau = float(smooth[: rule.plateau].max())
    low = smooth < rule.drop * plateau
    timeline = _Timeline(fill, rule, len(smooth))
    for run in _runs(low):
        first, _ = timeline.windows(run)
        drop_s, drop_bytes = timeline.start(first)
        if timeline.lasts(run):
            post = (float(fill.written[-1]) - drop_bytes) / (float(fill.t_s[-1]) - drop_s)
            back = [r for r in _runs(~low) if r[0] > run[1] and timeline.lasts(r)]
            recovered = timeline.start(timeline.windows(back[0])[0])[1] if back else None
            return CacheEstimate(
                True, f"sustained drop after {drop_bytes / GiB:.3g} GiB ({rule.describe()})",
                drop_bytes, drop_s, plateau, post, recovered,
            )  # fmt: skip
        if timeline.at_end(run):
            seconds, _ = timeline.seconds_and_bytes(run)
            return CacheEstimate(
                False,
                f"drop after {drop_bytes / GiB:.3g} GiB runs into the end of the pass after "
                f"{seconds:.3g} s, too short to tell ({rule.describe()})",
                plateau_bw=plateau,
            )
    return CacheEstimate(
        True, f"no sustained drop: the pass ran at its initial speed ({rule.describe()})",
        plateau_bw=plateau,
    )  # fmt: skip
