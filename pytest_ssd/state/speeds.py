"""Rates used to estimate how long a plan takes: assumed, then measured per device.

Every transition step that moves data records its rate under the device's
key in ``<report dir>/.ssd-speeds.json``; the next plan for that device uses
the measured rate and says so.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.documents import loads_json
from pytest_ssd.state.steps import Step

MiB = 1 << 20
#: conservative guesses for a device never measured (SATA-class SEQ, a slow RND)
ASSUMED_MIB_S = {"seq": 500.0, "rnd": 100.0, "discard": 2000.0}
ASSUMED_PURGE_S = 60.0


def _rate_key(step: Step) -> str:
    if step.kind == "discard":
        return "discard"
    if step.jobs and step.jobs[0].pattern == "rnd":
        return "rnd"
    return "seq"


@dataclass
class SpeedBook:
    """Measured rates per device key (MiB/s per kind, purge seconds)."""

    path: Path
    data: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> SpeedBook:
        data: dict[str, dict[str, float]] = {}
        with contextlib.suppress(OSError, ValueError):
            loaded = loads_json(path.read_text())
            if isinstance(loaded, dict):
                data = {str(k): dict(v) for k, v in loaded.items() if isinstance(v, dict)}
        return cls(path, data)

    def estimate(self, device: str, step: Step) -> tuple[float, bool]:
        """(seconds, measured?) for *step* on *device*; idle and steady steps count as given."""
        known = self.data.get(device, {})
        if step.kind == "idle":
            return step.idle_s, True
        if step.kind == "purge":
            return known.get("purge_s", ASSUMED_PURGE_S), "purge_s" in known
        if step.kind == "steady":
            return 0.0, False
        key = _rate_key(step)
        rate = known.get(f"{key}_mib_s", ASSUMED_MIB_S[key])
        amount = step.discard_bytes if step.kind == "discard" else step.write_bytes
        return amount / MiB / rate, f"{key}_mib_s" in known

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
