"""Typed results parsed from fio's ``--output-format=json+`` (or plain ``json``) output.

Percentiles come from the completion-latency histogram (``clat_ns.bins``), so any
percentile can be asked for after the run, not only those in fio's ``--percentile_list``.
One definition serves both the value and whether the sample resolves it: nearest rank
on p as written in decimal (the value of the ``ceil(p/100 * N)``-th fastest I/O), as
``fio_jsonplus_clat2csv`` computes it.  fio's own ``calc_clat_percentiles`` uses the
binary double of p and differs by one rank where ``p/100 * N`` is a whole number
(p99.95 at N = 2,000: fio gives the slowest I/O, nearest rank the second slowest).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate
from typing import Any

from pytest_ssd.documents import raw_decode_json
from pytest_ssd.errors import ParseError
from pytest_ssd.steady.fio_native import FioSteadyState, parse_steadystate

DEFAULT_PERCENTILES: tuple[float, ...] = (
    1.0,
    5.0,
    10.0,
    25.0,
    50.0,
    75.0,
    90.0,
    95.0,
    99.0,
    99.5,
    99.9,
    99.95,
    99.99,
    99.999,
)
DIRECTIONS: tuple[str, ...] = ("read", "write", "trim")

AGGREGATE_CLIENT = "All clients"  # fio --client's sum over all servers, not a job
_QUOTE_CHARS = 120


@dataclass(frozen=True)
class Percentile:
    """One latency percentile.

    ``resolved`` says whether the sample can resolve it: at least one I/O lies at
    or beyond it, i.e. ``total * (1 - p/100) >= 1`` with p taken as the decimal
    written.  A p99 needs 100 I/Os, a p99.99 10,000 and a p99.999 100,000;
    below that fio still reports a value, but it is just the slowest I/O seen.
    """

    p: float
    ns: int
    resolved: bool

    def as_dict(self) -> dict[str, object]:
        """JSON-able form with the latency in microseconds."""
        return {"p": self.p, "us": self.ns / 1000, "resolved": self.resolved}


def _decimal(p: float) -> Fraction:
    """p as written (99.9 is 999/10, not the double nearest to it)."""
    return Fraction(str(float(p)))


def nearest_rank(p: float, total: int) -> int:
    """The rank (1-based, fastest first) of the p-th percentile of *total* values."""
    need = _decimal(p) / 100 * total
    return max(1, -(-need.numerator // need.denominator))


def ios_to_resolve(p: float) -> int:
    """How many I/Os a sample needs before its p-th percentile is resolved (p99.99: 10,000)."""
    need = 100 / (100 - _decimal(p))
    return -(-need.numerator // need.denominator)


def _resolved(p: float, total: int) -> bool:
    """At least one I/O lies beyond the percentile: its rank is not the slowest."""
    return total * (1 - _decimal(p) / 100) >= 1


def _check_p(p: float) -> None:
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p!r} is outside (0, 100]")


def percentiles_from_bins(
    bins: Sequence[tuple[int, int]], ps: Sequence[float]
) -> tuple[Percentile, ...]:
    """Percentiles ``ps`` of a latency histogram of ``(value ns, count)`` pairs.

    Nearest rank: walking the buckets in value order, the p-th percentile is the
    value of the first bucket whose cumulative count reaches ``ceil(p/100 * N)``,
    N being the sum of all counts and p the decimal written (see the module).
    """
    ordered = sorted(bins)
    cumulative = list(accumulate(count for _, count in ordered))
    total = cumulative[-1] if cumulative else 0
    if total <= 0:
        raise ParseError("no completion-latency samples in the bins to compute percentiles from")
    result = []
    for p in ps:
        _check_p(p)
        index = bisect.bisect_left(cumulative, nearest_rank(p, total))
        result.append(Percentile(float(p), ordered[index][0], _resolved(p, total)))
    return tuple(result)


def pooled(histograms: Iterable[Iterable[tuple[int, int]]]) -> list[tuple[int, int]]:
    """One histogram of many (repeats, runs): each bucket's counts added, in value order.

    fio's buckets are the same on every run (log-linear, by value), so pooled bins
    give the percentiles of all the I/Os together; percentiles of the parts never
    average to them.
    """
    counts: dict[int, int] = {}
    for histogram in histograms:
        for ns, count in histogram:
            counts[int(ns)] = counts.get(int(ns), 0) + int(count)
    return sorted((ns, count) for ns, count in counts.items() if count)


def pooled_percentiles(
    histograms: Iterable[Iterable[tuple[int, int]]], ps: Sequence[float]
) -> dict[float, float | None]:
    """p -> µs over the pooled *histograms*; None where the pooled sample cannot resolve p."""
    bins = pooled(histograms)
    if not bins:
        return dict.fromkeys(ps)
    return {q.p: q.ns / 1000 if q.resolved else None for q in percentiles_from_bins(bins, ps)}


@dataclass(frozen=True)
class Latency:
    """Completion latency of one direction of one job (fio's ``clat_ns``)."""

    samples: int
    min_ns: int
    max_ns: int
    mean_ns: float
    stddev_ns: float
    bins: tuple[tuple[int, int], ...]
    fio_percentiles: dict[float, int]

    def percentile(self, p: float) -> Percentile:
        """The p-th percentile: from the bins when fio gave them, else fio's own value.

        Raises :class:`ParseError` when there are no bins and fio did not report p.
        """
        if self.bins:
            return percentiles_from_bins(self.bins, [p])[0]
        _check_p(p)
        if p not in self.fio_percentiles:
            reported = ", ".join(f"{q:g}" for q in sorted(self.fio_percentiles)) or "none"
            raise ParseError(
                f"fio output has no clat bins and no p{p:g} (it reported: {reported}); "
                "run fio with --output-format=json+ or add it to --percentile_list"
            )
        return Percentile(float(p), self.fio_percentiles[p], _resolved(p, self.samples))

    def percentiles(self, ps: Sequence[float] = DEFAULT_PERCENTILES) -> tuple[Percentile, ...]:
        """Percentiles ``ps`` (see :meth:`percentile`)."""
        if self.bins:
            return percentiles_from_bins(self.bins, ps)
        return tuple(self.percentile(p) for p in ps)

    def as_dict(self) -> dict[str, object]:
        """JSON-able summary in microseconds, without the raw bins.

        The percentiles are :data:`DEFAULT_PERCENTILES` when there are bins, else
        those fio reported.
        """
        ps = DEFAULT_PERCENTILES if self.bins else tuple(sorted(self.fio_percentiles))
        return {
            "samples": self.samples,
            "min_us": self.min_ns / 1000,
            "max_us": self.max_ns / 1000,
            "mean_us": self.mean_ns / 1000,
            "stddev_us": self.stddev_ns / 1000,
            "percentiles": [q.as_dict() for q in self.percentiles(ps)],
        }


@dataclass(frozen=True)
class DirectionResult:
    """What one job did in one direction (read, write or trim)."""

    direction: str
    io_bytes: int
    total_ios: int
    runtime_ms: int
    iops: float
    bw_bytes_s: float
    clat: Latency | None
    lat_mean_ns: float | None
    slat_mean_ns: float | None

    @property
    def bw_mib_s(self) -> float:
        """Bandwidth in MiB/s (2**20 bytes)."""
        return self.bw_bytes_s / 2**20

    @property
    def bw_mb_s(self) -> float:
        """Bandwidth in MB/s (10**6 bytes), the unit of SSD datasheets."""
        return self.bw_bytes_s / 10**6

    def as_dict(self) -> dict[str, object]:
        """JSON-able summary; latencies in microseconds."""
        return {
            "iops": self.iops,
            "bw_mib_s": self.bw_mib_s,
            "bw_mb_s": self.bw_mb_s,
            "io_bytes": self.io_bytes,
            "total_ios": self.total_ios,
            "runtime_s": self.runtime_ms / 1000,
            "lat_mean_us": None if self.lat_mean_ns is None else self.lat_mean_ns / 1000,
            "clat": None if self.clat is None else self.clat.as_dict(),
        }


@dataclass(frozen=True)
class JobResult:
    """One fio job.  ``options`` are fio's "global options" overlaid by its "job options".

    ``steadystate`` is fio's steady-state verdict when the job asked for one
    (``steadystate`` and ``steadystate_duration`` options), else None.
    """

    name: str
    error: int
    elapsed_s: float
    usr_cpu: float
    sys_cpu: float
    options: dict[str, str]
    directions: dict[str, DirectionResult]
    host: str = ""  # the server that ran it, with fio --client; else empty
    steadystate: FioSteadyState | None = None

    @property
    def io_bytes(self) -> int:
        """Bytes moved in all directions."""
        return sum(d.io_bytes for d in self.directions.values())


@dataclass(frozen=True)
class FioOutput:
    """One fio run's output: its jobs, disk utilisation and the text around the JSON.

    ``notes`` is what fio printed before the JSON (notes, warnings), stripped,
    followed by anything it printed after it.
    """

    fio_version: str
    notes: str
    jobs: tuple[JobResult, ...]
    disk_util: tuple[dict[str, object], ...]

    def job(self, name: str) -> JobResult:
        """The first job called ``name``; :class:`ParseError` if there is none."""
        for job in self.jobs:
            if job.name == name:
                return job
        names = ", ".join(repr(j.name) for j in self.jobs) or "none"
        raise ParseError(f"fio output has no job {name!r} (jobs: {names})")


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTE_CHARS else flat[: _QUOTE_CHARS - 3] + "..."


def _number(obj: Mapping[str, Any], key: str, where: str) -> Fraction:
    value: Any = obj.get(key)
    try:
        # 128-bit counters come as strings; Fraction reads "12", "1.5" and huge values exactly
        return Fraction(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError) as exc:
        raise ParseError(f"fio JSON {where}: {key!r} is not a number: {value!r}") from exc


def _int(obj: Mapping[str, Any], key: str, where: str) -> int:
    return int(_number(obj, key, where))


def _float(obj: Mapping[str, Any], key: str, where: str) -> float:
    return float(_number(obj, key, where))


def _mean(obj: Any, where: str) -> float | None:
    if not isinstance(obj, dict) or _int(obj, "N", where) <= 0:
        return None
    return _float(obj, "mean", where)


def _latency(obj: Any, where: str) -> Latency | None:
    if not isinstance(obj, dict) or _int(obj, "N", where) <= 0:
        return None
    raw_bins = obj.get("bins") or {}
    raw_pcts = obj.get("percentile") or {}
    try:
        bins = tuple(sorted((int(k), int(v)) for k, v in raw_bins.items()))
        pcts = {float(k): int(v) for k, v in raw_pcts.items()}
    except (AttributeError, TypeError, ValueError) as exc:
        raise ParseError(f"fio JSON {where}: bins or percentiles are malformed: {exc}") from exc
    return Latency(
        samples=_int(obj, "N", where),
        min_ns=_int(obj, "min", where),
        max_ns=_int(obj, "max", where),
        mean_ns=_float(obj, "mean", where),
        stddev_ns=_float(obj, "stddev", where),
        bins=bins,
        fio_percentiles=pcts,
    )


def _direction(obj: dict[str, Any], name: str, where: str) -> DirectionResult | None:
    data = obj.get(name)
    where = f"{where}.{name}"
    if not isinstance(data, dict) or _int(data, "total_ios", where) <= 0:
        return None
    return DirectionResult(
        direction=name,
        io_bytes=_int(data, "io_bytes", where),
        total_ios=_int(data, "total_ios", where),
        runtime_ms=_int(data, "runtime", where),
        iops=_float(data, "iops", where),
        bw_bytes_s=_float(data, "bw_bytes", where),
        clat=_latency(data.get("clat_ns"), f"{where}.clat_ns"),
        lat_mean_ns=_mean(data.get("lat_ns"), f"{where}.lat_ns"),
        slat_mean_ns=_mean(data.get("slat_ns"), f"{where}.slat_ns"),
    )


def _job(obj: Any, where: str, global_options: Mapping[str, Any]) -> JobResult:
    if not isinstance(obj, dict):
        raise ParseError(f"fio JSON {where} is not an object: {_shorten(repr(obj))}")
    name = str(obj.get("jobname", ""))
    where = f"{where} {name!r}"
    # fio --client gives no "elapsed", only the job's run time in ms
    elapsed = (
        _float(obj, "elapsed", where)
        if "elapsed" in obj
        else _float(obj, "job_runtime", where) / 1000
    )
    options = {**global_options, **(obj.get("job options") or {})}
    found = (_direction(obj, d, where) for d in DIRECTIONS)
    return JobResult(
        name=name,
        error=_int(obj, "error", where),
        elapsed_s=elapsed,
        usr_cpu=_float(obj, "usr_cpu", where),
        sys_cpu=_float(obj, "sys_cpu", where),
        options={str(k): str(v) for k, v in options.items()},
        directions={d.direction: d for d in found if d is not None},
        host=str(obj.get("hostname", "")) if "port" in obj else "",
        steadystate=parse_steadystate(obj.get("steadystate"), f"{where}.steadystate"),
    )


def _document(text: str) -> tuple[str, dict[str, Any]]:
    if not text.strip():
        raise ParseError("fio printed nothing: expected its JSON output")
    # fio's JSON opens on a line of its own; a note may hold a brace mid-line
    opening = re.search(r"^\{", text, re.MULTILINE)
    start = opening.start() if opening else text.find("{")
    if start < 0:
        raise ParseError(f"fio printed no JSON: {_shorten(text)!r}")
    try:
        doc, end = raw_decode_json(text, start)  # a fio server's output too: bounded
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"fio output is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}): "
            f"{_shorten(text)!r}"
        ) from exc
    notes = "\n".join(part for part in (text[:start].strip(), text[end:].strip()) if part)
    return notes, doc


def _finals(indexed: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """Each client job's last report: its final result.

    ``fio --client --status-interval`` puts every status report of a job into the one
    ``client_stats`` list it prints at exit, before the job's final report: a job
    appears once per report (a job not started yet with no I/O), and only its last
    entry is its result.  A job is its server (``hostname``, ``port``) and its name
    (pytest-ssd's job names are unique in a run; clones are reported as a group).
    """
    last: dict[tuple[Any, ...], tuple[int, Any]] = {}
    for i, raw in indexed:
        ident = (raw.get("hostname"), raw.get("port"), raw.get("jobname"))
        last.pop(ident, None)  # re-inserted: the order of the final reports
        last[ident] = (i, raw)
    return list(last.values())


def parse_output(text: str) -> FioOutput:
    """Parse what fio printed on stdout with ``--output-format=json+`` or ``json``.

    Text before the JSON (notes, warnings) is kept as ``notes``.  Results of fio
    client/server runs (``client_stats``) are read too, without the "All clients" sum,
    and only each job's final report (:func:`_finals`).
    """
    notes, doc = _document(text)
    key = "jobs" if "jobs" in doc else "client_stats"
    raw_jobs = doc.get(key)
    if not isinstance(raw_jobs, list):
        raise ParseError(f"fio JSON has no 'jobs' or 'client_stats' list: {_shorten(text)!r}")
    global_options = doc.get("global options") or {}
    indexed = [
        (i, raw)
        for i, raw in enumerate(raw_jobs)
        if not (isinstance(raw, dict) and raw.get("jobname") == AGGREGATE_CLIENT)
    ]
    if key == "client_stats":
        indexed = _finals(indexed)
    jobs = tuple(_job(raw, f"{key}[{i}]", global_options) for i, raw in indexed)
    disk_util = tuple(dict(d) for d in doc.get("disk_util") or () if isinstance(d, dict))
    return FioOutput(str(doc.get("fio version", "")), notes, jobs, disk_util)
