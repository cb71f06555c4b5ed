"""Low-QD performance by read/write ratio: trimmed means, the weighted curve, the ranking.

Seed 000/001 (METHOD §4.4): every point is repeated 5 times; the max and the min
are dropped and the rest averaged.  Drives are compared by one curve each, the
QDs weighted QD1 70 %, QD2 20 %, QD4 10 %, and ranked by that curve's mean over
all read shares (seed 001 says it plainly: a plain mean, which weighs writes
more than a consumer's workload does).

Throughput of a point is reads and writes together: the sum of fio's per-direction
bandwidths, in MiB/s; IOPS are the same number over the block size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ssd.errors import ConfigError, ParseError

FloatArray = npt.NDArray[np.float64]
MiB = 1 << 20
#: seed 000: QD1 70 %, QD2 20 %, QD4 10 %
WEIGHTS: Mapping[int, float] = {1: 0.7, 2: 0.2, 4: 0.1}


def trimmed_mean(samples: npt.ArrayLike) -> FloatArray:
    """Mean over the last axis after dropping one max and one min (ties drop one each).

    ``trimmed_mean([5, 1, 3, 9, 4])`` is ``mean([3, 4, 5])`` = 4.0.  Needs at least 3
    samples per point.
    """
    values = np.sort(np.asarray(samples, dtype=np.float64), axis=-1)
    if values.ndim == 0 or values.shape[-1] < 3:
        raise ConfigError(
            f"trimmed mean: {values.shape[-1] if values.ndim else 1} samples; dropping the max "
            "and the min needs at least 3"
        )
    return np.asarray(values[..., 1:-1].mean(axis=-1), dtype=np.float64)


def weighted_curve(
    curves: FloatArray, queue_depths: Sequence[int], weights: Mapping[int, float] = WEIGHTS
) -> FloatArray:
    """Sum over QDs of weight × curve; *curves* has one row per QD of *queue_depths*.

    Every weighted QD must have been measured, and the weights must add up to 1.
    """
    missing = sorted(set(weights) - set(queue_depths))
    if missing:
        raise ConfigError(f"weighted curve: QD {missing} weighted but not measured")
    total = sum(weights.values())
    if not np.isclose(total, 1.0):
        raise ConfigError(f"weighted curve: weights add up to {total:g}, not 1")
    rows = np.asarray(curves, dtype=np.float64)
    factors = np.array([weights.get(qd, 0.0) for qd in queue_depths])
    return np.asarray(factors @ rows, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class RatioMatrix:
    """One pattern's matrix on one drive: MiB/s per QD × read share × repetition."""

    pattern: str
    block_size: int
    read_shares: tuple[int, ...]
    queue_depths: tuple[int, ...]
    #: MiB/s (reads + writes), shape (QDs, read shares, repetitions)
    samples: FloatArray

    def __post_init__(self) -> None:
        expected = (len(self.queue_depths), len(self.read_shares))
        if self.samples.ndim != 3 or self.samples.shape[:2] != expected:
            raise ConfigError(
                f"low-QD matrix: samples of shape {self.samples.shape}, expected "
                f"{expected} × repetitions"
            )

    @property
    def missing(self) -> int:
        """Cells (QD × read share) with no measured repetition: drawn as gaps, never ranked."""
        return int(np.isnan(self.samples).all(axis=2).sum())

    @property
    def cells(self) -> int:
        return len(self.queue_depths) * len(self.read_shares)

    @property
    def iops_per_mib_s(self) -> float:
        """IOPS of 1 MiB/s at this block size."""
        return MiB / self.block_size

    @property
    def trimmed(self) -> FloatArray:
        """MiB/s per QD × read share: the max and min repetition dropped, the rest averaged."""
        return trimmed_mean(self.samples)

    def weighted(self, weights: Mapping[int, float] = WEIGHTS) -> FloatArray:
        """The weighted curve (MiB/s per read share)."""
        return weighted_curve(self.trimmed, self.queue_depths, weights)

    def weighted_complete(self, weights: Mapping[int, float] = WEIGHTS) -> bool:
        """Every point of the weighted curve measured (a score means something)."""
        return not bool(np.isnan(self.weighted(weights)).any())

    def score(self, weights: Mapping[int, float] = WEIGHTS) -> float:
        """The ranking number: the weighted curve's mean over all read shares, MiB/s."""
        return float(self.weighted(weights).mean())

    def as_dict(self) -> dict[str, Any]:
        """JSON-able: every repetition, the trimmed means, the weighted curve, the score."""
        iops = self.iops_per_mib_s
        qds = [f"qd{qd}" for qd in self.queue_depths]
        trimmed, weighted = self.trimmed, self.weighted()
        return {
            "pattern": self.pattern,
            "block_size": self.block_size,
            "read_pct": list(self.read_shares),
            "queue_depths": list(self.queue_depths),
            "repetitions": int(self.samples.shape[2]),
            "weights": {f"qd{qd}": w for qd, w in WEIGHTS.items()},
            "samples_mib_s": dict(zip(qds, self.samples.tolist(), strict=True)),
            "trimmed_mib_s": dict(zip(qds, trimmed.tolist(), strict=True)),
            "trimmed_iops": dict(zip(qds, (trimmed * iops).tolist(), strict=True)),
            "weighted_mib_s": weighted.tolist(),
            "weighted_iops": (weighted * iops).tolist(),
            "score_mib_s": float(weighted.mean()),
            "score_iops": float(weighted.mean() * iops),
        }

    @classmethod
    def from_points(cls, points: Sequence[Mapping[str, Any]]) -> RatioMatrix:
        """The matrix of the points' records (:func:`point_values`); NaN where none was measured.

        Every record must name the same pattern, block size and axes (ParseError if not).
        """
        if not points:
            raise ParseError("low-QD points: none")
        try:
            first = points[0]
            axes = {key: first[key] for key in POINT_AXES}
            shares = tuple(int(p) for p in first["read_shares"])
            qds = tuple(int(qd) for qd in first["queue_depths"])
            repetitions = max(len(p["samples_mib_s"]) for p in points)
            samples = np.full((len(qds), len(shares), repetitions), np.nan)
            for point in points:
                differs = [key for key in POINT_AXES if point[key] != axes[key]]
                if differs:
                    raise ParseError(f"low-QD points differ in {', '.join(differs)}")
                runs = [float(v) for v in point["samples_mib_s"]]
                where = qds.index(int(point["queue_depth"])), shares.index(int(point["read_pct"]))
                samples[where][: len(runs)] = runs
            return cls(str(first["pattern"]), int(first["block_size"]), shares, qds, samples)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ParseError(f"low-QD point records do not make a matrix: {exc!r}") from None


#: the derived record of one low-QD point (its values: :func:`point_values`)
POINT_RECORD = "lowqd-point"
#: what every point of one matrix must share
POINT_AXES = ("pattern", "block_size", "read_shares", "queue_depths", "amount")


def point_values(
    *,
    pattern: str,
    block_size: int,
    read_shares: Sequence[int],
    queue_depths: Sequence[int],
    queue_depth: int,
    read_pct: int,
    samples_mib_s: Sequence[float],
    amount: str,
) -> dict[str, Any]:
    """One point's derived record: its repetitions, their trimmed mean, the matrix it is of."""
    trimmed = float(trimmed_mean(samples_mib_s))
    return {
        "pattern": pattern,
        "block_size": block_size,
        "read_shares": list(read_shares),
        "queue_depths": list(queue_depths),
        "queue_depth": queue_depth,
        "read_pct": read_pct,
        "repetitions": len(samples_mib_s),
        "samples_mib_s": [float(v) for v in samples_mib_s],
        "trimmed_mib_s": trimmed,
        "trimmed_iops": trimmed * MiB / block_size,
        "amount": amount,
    }


@dataclass(frozen=True)
class Ranked:
    """A drive's place in the ranking (1 = best)."""

    place: int
    device: str
    score: float


def ranking(scores: Mapping[str, float]) -> tuple[Ranked, ...]:
    """Drives by score, best first; equal scores share a place and are listed by name."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    ranked: list[Ranked] = []
    for index, (device, score) in enumerate(ordered):
        tied = ranked and ranked[-1].score == score
        ranked.append(Ranked(ranked[-1].place if tied else index + 1, device, score))
    return tuple(ranked)
