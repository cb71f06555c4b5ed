"""A job's figures from fio's per-I/O latency logs, before fio has printed its own.

With ``write_lat_log`` and no averaging, fio writes one line per I/O to
``<stem>_clat.N.log``, ``<stem>_lat.N.log`` and ``<stem>_slat.N.log``
(``time ms, value ns, direction, block size, priority``), N the job's number in
its fio process, when the job ends.  From them come what fio's JSON says of the
job: bytes and I/Os per direction, run time, bandwidth and IOPS, completion latency (min, max, mean,
standard deviation and the json+ histogram, bucketed exactly as fio buckets:
``plat_val_to_idx``/``plat_idx_to_val`` of fio 3.33's stat.c), and the means of
total and submission latency.  The run time is the last completion's time plus
1 ms, fio's rounding up of the elapsed microseconds (checked against fio's
final JSON by :meth:`pytest_ssd.fio.batch.BatchRun.differences`).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pytest_ssd.errors import ParseError
from pytest_ssd.fio.results import DirectionResult, JobResult, Latency

#: fio 3.33 stat.h: FIO_IO_U_PLAT_BITS, FIO_IO_U_PLAT_VAL, FIO_IO_U_PLAT_NR
PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_NR = 29 * PLAT_VAL
DIRECTIONS = ("read", "write", "trim")

Array = npt.NDArray[np.int64]


def plat_val_to_idx(value: int) -> int:
    """fio's histogram bucket of a latency in ns (stat.c ``plat_val_to_idx``)."""
    msb = value.bit_length() - 1 if value else 0
    if msb <= PLAT_BITS:
        return value
    error_bits = msb - PLAT_BITS
    base = (error_bits + 1) << PLAT_BITS
    offset = (PLAT_VAL - 1) & (value >> error_bits)
    return min(base + offset, PLAT_NR - 1)


def plat_indices(values: Array) -> Array:
    """:func:`plat_val_to_idx` of every value at once.

    Exact: a float holds every integer below 2**53, and anything from 2**35 ns up
    is in the last bucket however it rounds.
    """
    # frexp: value = m * 2**e with 0.5 <= m < 1, so the most significant bit is e - 1
    msb = np.frexp(values.astype(np.float64))[1].astype(np.int64) - 1
    error_bits = np.maximum(msb - PLAT_BITS, 0)
    bucketed = ((error_bits + 1) << PLAT_BITS) + ((PLAT_VAL - 1) & (values >> error_bits))
    return np.where(msb <= PLAT_BITS, values, np.minimum(bucketed, PLAT_NR - 1))


def plat_idx_to_val(index: int) -> int:
    """The value fio reports for a bucket (stat.c ``plat_idx_to_val``): its middle."""
    if index < (PLAT_VAL << 1):
        return index
    error_bits = (index >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    return int(base + (index % PLAT_VAL + 0.5) * (1 << error_bits))


def read_log(path: Path) -> Array:
    """A per-I/O log as rows of integers (time ms, value, direction, block size, ...)."""
    text = path.read_text()
    if not text.strip():
        return np.zeros((0, 5), dtype=np.int64)
    columns = text.split("\n", 1)[0].count(",") + 1
    with warnings.catch_warnings():
        # numpy warns (DeprecationWarning) where the text stops being numbers
        warnings.simplefilter("error")
        try:
            values = np.fromstring(text.replace("\n", ","), dtype=np.int64, sep=",")
        except (DeprecationWarning, ValueError) as exc:
            raise ParseError(f"{path}: not a log of integers ({exc})") from None
    if values.size % columns:
        raise ParseError(f"{path}: lines of {columns} values expected")
    return values.reshape(-1, columns)


def _logs(stem: Path, kind: str) -> Array:
    found = sorted(stem.parent.glob(f"{stem.name}_{kind}.*.log"))
    if not found:
        raise ParseError(f"fio wrote no {kind} log {stem.name}_{kind}.N.log in {stem.parent}")
    return np.concatenate([read_log(path) for path in found])


def _latency(values: Array) -> Latency:
    indices, counts = np.unique(plat_indices(values), return_counts=True)
    n = len(values)
    mean = float(values.mean())
    stddev = float(values.std(ddof=1)) if n > 1 else 0.0
    return Latency(
        samples=n,
        min_ns=int(values.min()),
        max_ns=int(values.max()),
        mean_ns=mean,
        stddev_ns=stddev if math.isfinite(stddev) else 0.0,
        bins=tuple((plat_idx_to_val(int(i)), int(c)) for i, c in zip(indices, counts, strict=True)),
        fio_percentiles={},
    )


def job_result(name: str, stem: Path, options: dict[str, str]) -> JobResult:
    """What fio will report of job *name* whose logs are ``<stem>_{clat,lat,slat}.N.log``."""
    clat = _logs(stem, "clat")
    slat = _logs(stem, "slat")
    if not len(clat):
        raise ParseError(f"fio job {name!r}: no I/O in its completion log")
    # fio's lat of an I/O is its slat plus its clat, to the nanosecond (start -> issue ->
    # completion): with a slat for every I/O the lat log (a third of the parsing) is not read
    lat = None if len(slat) == len(clat) else _logs(stem, "lat")
    runtime_ms = int(clat[:, 0].max()) + 1
    directions: dict[str, DirectionResult] = {}
    for code, direction in enumerate(DIRECTIONS):
        mine = clat[clat[:, 2] == code]
        if not len(mine):
            continue
        io_bytes = int(mine[:, 3].sum())
        slat_values = slat[slat[:, 2] == code][:, 1]
        if lat is not None:
            lat_values = lat[lat[:, 2] == code][:, 1]
            lat_mean = float(lat_values.mean()) if len(lat_values) else None
        else:  # the same I/Os in both logs, each in its own order: the means add up
            lat_mean = float(slat_values.mean()) + float(mine[:, 1].mean())
        directions[direction] = DirectionResult(
            direction,
            io_bytes=io_bytes,
            total_ios=len(mine),
            runtime_ms=runtime_ms,
            iops=len(mine) * 1000 / runtime_ms,
            bw_bytes_s=float(io_bytes * 1000 // runtime_ms),
            clat=_latency(mine[:, 1]),
            lat_mean_ns=lat_mean,
            slat_mean_ns=float(slat_values.mean()) if len(slat_values) else None,
        )
    return JobResult(name, 0, runtime_ms / 1000, 0.0, 0.0, options, directions)
