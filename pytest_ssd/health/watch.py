"""A device's health log watched across tests and state transitions (one per device).

Each step (a state transition, a test) is a snapshot before and one after;
:meth:`HealthWatch.step` gives what changed and the rules the step broke.
A device without a health log (a loop device, a file) has no reader: every
step is then nothing, and the reason is said once (:attr:`HealthWatch.reason`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pytest_ssd.errors import SsdError
from pytest_ssd.health.log import HealthLog, LogReader
from pytest_ssd.health.profile import HealthProfile

#: the derived record of one step on its test: what the report's health table lists
HEALTH_RECORD = "ssd.health"


@dataclass(frozen=True)
class Step:
    """What one step did to the health log: changed fields, broken rules, the reads' cost."""

    what: str
    before: HealthLog
    after: HealthLog
    broken: tuple[str, ...]
    #: seconds the snapshots of the step took
    cost_s: float

    def as_dict(self) -> dict[str, Any]:
        changed = {
            name: [self.before.values.get(name), value]
            for name, value in self.after.values.items()
            if self.before.values.get(name) != value
        }
        return {
            "step": self.what,
            "source": self.after.source,
            "after": self.after.values,
            "changed": changed,
            "broken": list(self.broken),
            "verdict": "broken" if self.broken else "kept",
            "newest_error": self.after.newest_error or None,
            "snapshot_s": round(self.cost_s, 4),
        }


@dataclass
class HealthWatch:
    """Snapshots of one device's health log, judged by *profile*."""

    reader: LogReader | None
    #: what reads the log, or why nothing does
    reason: str
    profile: HealthProfile
    #: the last snapshot's reading failed: said once, then no more reads
    error: str | None = None
    #: the error went on a test's record already
    error_said: bool = False
    #: the last step's snapshot after: the next step's before (one read per test, not two)
    last: HealthLog | None = None
    #: the first snapshot of the device is judged alone
    _judged_first: bool = False
    _last_cost: float = field(default=0.0, repr=False)

    @property
    def applies(self) -> bool:
        return self.reader is not None and self.error is None

    def latest(self) -> HealthLog | None:
        """The log as the last step left it (taken: a step's after serves one step's before),
        else read now."""
        last, self.last = self.last, None
        return last if last is not None else self.snapshot()

    def snapshot(self, previous: HealthLog | None = None) -> HealthLog | None:
        """The log now (None without a reader, or once reading it failed)."""
        if self.reader is None or self.error is not None:
            return None
        start = time.perf_counter()
        try:
            return self.reader.read(previous)
        except (SsdError, OSError) as exc:
            self.error = f"{self.reader.name}: {exc}"
            return None
        finally:
            self._last_cost = time.perf_counter() - start

    def step(self, what: str, before: HealthLog | None, cost_s: float = 0.0) -> Step | None:
        """Read the log after *what* and judge the step from *before* (None: nothing to judge)."""
        if before is None:
            return None
        after = self.snapshot(before)
        if after is None:
            return None
        broken = self.profile.broken(before, after)
        if not self._judged_first:  # a drive already unwell: its first test says so
            self._judged_first = True
            already = self.profile.broken(before, before, first=True)
            broken = [f"{line} before the first test" for line in already] + broken
        self.last = after
        return Step(what, before, after, tuple(broken), cost_s + self._last_cost)

    def unsaid_error(self) -> str | None:
        """Why the log can no longer be read, the first time it is asked (then None)."""
        if self.error is None or self.error_said:
            return None
        self.error_said = True
        return self.error

    @property
    def last_cost(self) -> float:
        """Seconds the last snapshot took."""
        return self._last_cost
