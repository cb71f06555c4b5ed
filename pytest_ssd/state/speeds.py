"""Rates measured per device, so that the next plan says how long its steps take.

Every transition step that moves data records its rate under the device's
key in ``<report dir>/.ssd-speeds.json``; the next plan for that device turns the
step's bytes into time at that rate.  A rate not measured yet is not guessed: the
plan says the bytes at the drive's speed (:class:`~pytest_ssd.state.estimate.Estimate`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.documents import loads_json, read_bounded
from pytest_ssd.state.estimate import Estimate
from pytest_ssd.state.steps import Step

MiB = 1 << 20


def _rate_key(step: Step) -> str:
    if step.kind == "discard":
        return "discard"
    if step.jobs and step.jobs[0].pattern == "rnd":
        return "rnd"
    return "seq"


#: the largest speeds file read (a device's entry is about 100 bytes)
MAX_BYTES = 64 << 20


@dataclass
class SpeedBook:
    """Measured rates per device key (MiB/s per kind, purge seconds)."""

    path: Path
    data: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> SpeedBook:
        data: dict[str, dict[str, float]] = {}
        with contextlib.suppress(OSError, ValueError):
            loaded = loads_json(read_bounded(path, MAX_BYTES))
            if isinstance(loaded, dict):
                data = {str(k): dict(v) for k, v in loaded.items() if isinstance(v, dict)}
        return cls(path, data)

    def estimate(self, device: str, step: Step) -> Estimate:
        """*step* on *device*: seconds at its measured rate, else its bytes (or its purge);
        an idle step takes its time; a steady-state step is not estimated (the plan says so)."""
        known = self.data.get(device, {})
        if step.kind == "idle":
            return Estimate(step.idle_s)
        if step.kind == "purge":
            return Estimate(known["purge_s"]) if "purge_s" in known else Estimate(purges=1)
        if step.kind == "steady":
            return Estimate()
        rate = known.get(f"{_rate_key(step)}_mib_s")
        if step.kind == "discard":
            bytes_ = step.discard_bytes
            return Estimate(bytes_ / MiB / rate) if rate else Estimate(discarded=bytes_)
        return (
            Estimate(step.write_bytes / MiB / rate) if rate else Estimate(written=step.write_bytes)
        )

    def record(self, device: str, step: Step, seconds: float) -> None:
        """Remember how fast *step* ran on *device* (written at once: runs may be killed)."""
        if seconds <= 0 or step.kind in ("idle", "steady"):
            return
        known = self.data.setdefault(device, {})
        if step.kind == "purge":
            known["purge_s"] = seconds
        else:
            amount = step.discard_bytes if step.kind == "discard" else step.write_bytes
            if amount <= 0:
                return
            known[f"{_rate_key(step)}_mib_s"] = amount / MiB / seconds
        with contextlib.suppress(OSError):
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
            tmp.replace(self.path)
