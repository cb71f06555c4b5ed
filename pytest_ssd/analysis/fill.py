"""Fill drive analysis (METHOD §4.2): fio's logs as numpy series, and the cache rule.

A fill pass is read from fio's per-I/O completion-latency log (``write_lat_log``
without ``log_avg_msec``; :attr:`pytest_ssd.fio.job.FioJob.io_log`): one line per
I/O, ``time_ms, clat_ns, direction, size, prio``, the time being the I/O's
completion in ms since the job started.  Bytes per window are the sizes of the
I/Os that completed in it, so the "GiB written" axis is the bytes actually
completed and ends exactly at fio's ``io_bytes``.  (fio's *averaged* bandwidth
log cannot give that: each of its lines is the unweighted mean of rate samples
over spans that are not the line's window (``__add_samples`` in stat.c); its
integral came to 124 % of the bytes written on a 2 GiB pass.)  A window
without completions has bytes 0 and no latency sample.

:func:`read_log` still reads fio's averaged logs (``time_ms, value, direction,
bs, prio``), used by WSAT and the enterprise preconditioning, where per-I/O logs
of RND 4 KiB at hundreds of thousands of IOPS would be far too large.
"""

from __future__ import annotations

import gzip
import io
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pytest_ssd.errors import ConfigError, ParseError
from pytest_ssd.text import significant

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
    """Where fio put a log of *job* (``kind`` bw, lat or clat) in a run's artifact folder."""
    return folder / f"log-{job}_{kind}.1.log"


@dataclass(frozen=True, eq=False)
class IoLog:
    """fio's per-I/O log: completion time (ms since the job started), latency, direction, size."""

    t_ms: npt.NDArray[np.int64]
    lat_ns: Floats
    direction: npt.NDArray[np.int64]
    size: npt.NDArray[np.int64]

    def only(self, direction: str) -> IoLog:
        keep = self.direction == DIRECTION_CODES[direction]
        return IoLog(self.t_ms[keep], self.lat_ns[keep], self.direction[keep], self.size[keep])


def read_io_log(path: Path) -> IoLog:
    """Parse a per-I/O fio log; :class:`ParseError` naming the file when it is not one."""
    try:
        table = np.loadtxt(path, delimiter=",", usecols=(0, 1, 2, 3), ndmin=2, dtype=np.int64)
    except OSError as exc:
        raise ParseError(f"fio log {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ParseError(f"fio log {path} is not 'time, clat, direction, size': {exc}") from None
    return IoLog(table[:, 0], table[:, 1].astype(np.float64), table[:, 2], table[:, 3])


#: a per-I/O log larger than this is kept gzip-compressed once its windows are taken
LARGE_LOG = 64 << 20


def shrink_log(path: Path, limit: int = LARGE_LOG) -> Path:
    """Compress *path* to ``<path>.gz`` (and remove it) when larger than *limit*; the kept file.

    A 1 TB fill pass of 128 KiB I/Os logs some 8 million lines, 300 MB of text.
    """
    if path.stat().st_size <= limit:
        return path
    packed = path.with_name(path.name + ".gz")
    with path.open("rb") as raw, gzip.open(packed, "wb", compresslevel=3) as out:
        shutil.copyfileobj(raw, out, 1 << 20)
    path.unlink()
    return packed


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
    """One pass over the span (a fill pass, or the read) in windows, with fio's own totals.

    ``t_s`` is each window's end (s since the pass started; the last window ends at
    the last completion), ``bw`` its bandwidth (bytes/s) and ``written`` the bytes
    completed by its end; ``lat_t_s`` and ``lat_ns`` the mean completion latency of
    the windows in which I/Os completed.
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
    def mean_bw(self) -> float | None:
        """Mean bandwidth of the pass, bytes/s (fio's: io_bytes / runtime); None: no runtime."""
        return self.io_bytes / self.runtime_s if self.runtime_s > 0 else None

    @property
    def coverage(self) -> float | None:
        """Share of fio's bytes the windows account for: 1 up to rounding; None: no bytes."""
        return (
            float(self.written[-1]) / self.io_bytes if self.io_bytes and len(self.written) else None
        )

    @property
    def log_interval_s(self) -> float:
        """The typical window length (the median spacing of the windows)."""
        return float(np.median(np.diff(self.t_s))) if len(self.t_s) > 1 else 0.0

    def window_start(self) -> tuple[Floats, Floats]:
        """Time (s) and bytes written at the start of each window."""
        return np.concatenate(([0.0], self.t_s[:-1])), np.concatenate(([0.0], self.written[:-1]))


def fill_pass(
    name: str,
    log: IoLog,
    io_bytes: int,
    runtime_s: float,
    window_s: float,
    *,
    direction: str = "write",
) -> FillPass:
    """A pass in windows of *window_s* from its per-I/O log and fio's totals for *direction*."""
    ios = log.only(direction)
    window_ms = max(1, round(window_s * 1000))
    if not len(ios.t_ms):
        raise ParseError(f"{name}: the per-I/O log has no {direction} completions")
    # an I/O completing at t ms belongs to the window (k - 1) * w < t <= k * w
    index = np.maximum(-(-ios.t_ms // window_ms), 1) - 1
    count = int(index.max()) + 1
    done = np.bincount(index, weights=ios.size, minlength=count)
    completions = np.bincount(index, minlength=count)
    latency = np.bincount(index, weights=ios.lat_ns, minlength=count)
    ends_ms = (np.arange(count, dtype=np.float64) + 1) * window_ms
    last = float(ios.t_ms.max())
    if count > 1 and last - ends_ms[-2] < window_ms:
        # the pass's tail is shorter than a window: the queue's last completions drain in
        # a few ms, which over that little time would read as a burst of speed
        done, completions, latency = (
            np.append(a[:-2], a[-2:].sum()) for a in (done, completions, latency)
        )
        ends_ms = ends_ms[:-1]
    ends_ms[-1] = max(last, 1.0)
    t_s = ends_ms / 1000
    bw = done / np.diff(t_s, prepend=0.0)
    seen = completions > 0  # a window without completions has no latency sample
    lat_ns = latency[seen] / completions[seen]
    return FillPass(name, t_s, bw, np.cumsum(done), t_s[seen], lat_ns, io_bytes, runtime_s)


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
                True,
                f"sustained drop after {significant(drop_bytes / GiB)} GiB ({rule.describe()})",
                drop_bytes,
                drop_s,
                plateau,
                post,
                recovered,
            )
        if timeline.at_end(run):
            seconds, _ = timeline.seconds_and_bytes(run)
            return CacheEstimate(
                False,
                f"drop after {significant(drop_bytes / GiB)} GiB runs into the end of the pass"
                f" after {significant(seconds)} s, too short to tell ({rule.describe()})",
                plateau_bw=plateau,
            )
    return CacheEstimate(
        True,
        f"no sustained drop: the pass ran at its initial speed ({rule.describe()})",
        plateau_bw=plateau,
    )
