"""fio's own steady-state detection: the options that ask for it, the JSON block it reports.

fio (``steadystate.c``) samples each job's bandwidth (bytes/s) and IOPS once a
second, after ``steadystate_ramp_time``, and keeps the last
``steadystate_duration`` seconds of samples.  A ``*_slope`` criterion fits a
least-squares line through them (x = 0, 1, 2 ... s) and holds when |slope| is
below the limit: in units per second, or with ``%`` in percent of the samples'
mean per second.  ``iops`` and ``bw`` hold when every sample lies within the
limit of the mean.  fio compares with a strict ``<`` and ends the job as soon as
the criterion holds, which its JSON reports as ``attained``.

The job should be time based (``runtime_s``) so that fio does not stop after
one pass; ``runtime_s`` then caps the time spent waiting for steady state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pytest_ssd.errors import ConfigError, ParseError

Metric = Literal["bw", "iops"]

# fio stat.c: "%s%s:%f%s" of metric, "_slope" or "", limit and "%" or ""
_SPEC = re.compile(r"(?P<metric>[a-z]+?)(?P<slope>_slope)?:(?P<limit>[-+.0-9eE]+)(?P<pct>%?)")


@dataclass(frozen=True)
class FioSteadyRule:
    """A fio steady-state criterion; the defaults are seed 000's ``bw_slope:10%`` over 30 s."""

    metric: Metric = "bw"
    slope: bool = True
    limit: float = 10.0
    percent: bool = True
    duration_s: int = 30
    ramp_s: int = 0

    def __post_init__(self) -> None:
        problems = []
        if self.metric not in ("bw", "iops"):
            problems.append(f"metric {self.metric!r} is not 'bw' or 'iops'")
        if not (math.isfinite(self.limit) and self.limit > 0):
            problems.append(f"limit {self.limit!r} must be a positive number")
        if self.duration_s < 2:
            problems.append(
                f"duration {self.duration_s} s is under 2 s (fio samples once a second)"
            )
        if self.ramp_s < 0:
            problems.append(f"ramp time {self.ramp_s} s is negative")
        if problems:
            raise ConfigError("fio steady-state rule: " + "; ".join(problems))

    @property
    def spec(self) -> str:
        """The ``steadystate=`` value: ``'bw_slope:10%'``."""
        suffix = "_slope" if self.slope else ""
        return f"{self.metric}{suffix}:{self.limit:g}{'%' if self.percent else ''}"

    def options(self) -> tuple[tuple[str, str], ...]:
        """fio options for :attr:`FioJob.extra <pytest_ssd.fio.job.FioJob.extra>`."""
        return (
            ("steadystate", self.spec),
            ("steadystate_duration", str(self.duration_s)),
            ("steadystate_ramp_time", str(self.ramp_s)),
        )


#: seed 000's enterprise rule (single-workload WDPC): bandwidth slope within 10 % for 30 s
WDPC_RULE = FioSteadyRule()


@dataclass(frozen=True)
class FioSteadyState:
    """The ``steadystate`` block of one job in fio's JSON output.

    ``criterion`` is fio's value of the criterion at its last check (the slope, or
    the largest deviation from the mean; in percent of the mean when ``percent``);
    ``slope`` is per second and ``max_deviation`` is 0 for slope criteria, and
    the other way round.  Samples are in time order, bandwidth in bytes/s.  A job
    that ended before ``duration_s`` seconds of samples has zeros in its samples
    and was never checked.
    """

    kind: str
    limit: float
    percent: bool
    duration_s: int
    attained: bool
    criterion: float
    max_deviation: float
    slope: float
    bw_bytes_s: tuple[int, ...]
    iops: tuple[int, ...]
    bw_mean_bytes_s: int
    iops_mean: int

    @property
    def metric(self) -> str:
        """``'bw'`` or ``'iops'``: what the criterion tracks."""
        return self.kind.removesuffix("_slope")

    @property
    def is_slope(self) -> bool:
        """Whether the criterion is a least-squares slope (else a deviation from the mean)."""
        return self.kind.endswith("_slope")

    @property
    def bw_mib_s(self) -> tuple[float, ...]:
        """Bandwidth samples in MiB/s."""
        return tuple(b / 2**20 for b in self.bw_bytes_s)

    def summary(self) -> str:
        """One line: attained or not, fio's criterion against its limit, the mean."""
        unit = " %" if self.percent else ""
        outcome = "attained" if self.attained else "not attained"
        mean = (
            f"{self.iops_mean:,} IOPS"
            if self.metric == "iops"
            else f"{self.bw_mean_bytes_s / 2**20:,.1f} MiB/s"
        )
        return (
            f"fio steady state {outcome}: {self.kind} {self.criterion:.2f}{unit} "
            f"(limit ±{self.limit:g}{unit}) over {self.duration_s} s, mean {mean}"
        )

    def as_dict(self) -> dict[str, object]:
        """JSON-able form; bandwidth in bytes/s as fio gives it and in MiB/s."""
        data = asdict(self)
        data.update(
            bw_bytes_s=list(self.bw_bytes_s),
            iops=list(self.iops),
            bw_mib_s=list(self.bw_mib_s),
            summary=self.summary(),
        )
        return data


def _value(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise ParseError(f"fio JSON {where} has no {key!r}")
    return obj[key]


def _real(value: Any, key: str, where: str) -> float:
    text = value.strip().removesuffix("%") if isinstance(value, str) else value
    try:
        return float(text)
    except (TypeError, ValueError):
        raise ParseError(f"fio JSON {where}: {key!r} is not a number: {value!r}") from None


def _field(obj: Mapping[str, Any], key: str, where: str) -> float:
    return _real(_value(obj, key, where), key, where)


def _samples(data: Mapping[str, Any], key: str, where: str) -> tuple[int, ...]:
    raw = _value(data, key, where)
    if not isinstance(raw, list):
        raise ParseError(f"fio JSON {where}: {key!r} is not a list: {raw!r}")
    return tuple(int(_real(v, key, where)) for v in raw)


def parse_steadystate(obj: Any, where: str) -> FioSteadyState | None:
    """The ``steadystate`` object of a fio JSON job (fio 3.33 ``stat.c``); None when absent.

    Raises :class:`ParseError` naming *where* when it is malformed.
    """
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ParseError(f"fio JSON {where} is not an object: {obj!r}")
    spec = str(_value(obj, "ss", where))
    match = _SPEC.fullmatch(spec)
    if match is None:
        raise ParseError(
            f"fio JSON {where}: 'ss' is not a criterion:limit like 'bw_slope:10%': {spec!r}"
        )
    data = _value(obj, "data", where)
    if not isinstance(data, dict):
        raise ParseError(f"fio JSON {where}: 'data' is not an object: {data!r}")
    where_data = f"{where}.data"
    bw, iops = _samples(data, "bw", where_data), _samples(data, "iops", where_data)
    if len(bw) != len(iops):
        raise ParseError(f"fio JSON {where_data}: {len(bw)} bw but {len(iops)} iops samples")
    return FioSteadyState(
        kind=match["metric"] + (match["slope"] or ""),
        limit=_real(match["limit"], "ss", where),
        percent=bool(match["pct"]),
        duration_s=int(_field(obj, "duration", where)),
        attained=bool(_field(obj, "attained", where)),
        criterion=_field(obj, "criterion", where),
        max_deviation=_field(obj, "max_deviation", where),
        slope=_field(obj, "slope", where),
        bw_bytes_s=bw,
        iops=iops,
        bw_mean_bytes_s=int(_field(data, "bw_mean", where_data)),
        iops_mean=int(_field(data, "iops_mean", where_data)),
    )
