"""A background sampler of device health while fio runs, and what its samples say.

Throttling is flagged three ways, each only where the device reports it: the
composite temperature at or above the warning threshold (NVMe WCTEMP), the
critical-warning temperature bit, and thermal-management transitions rising
during the measurement.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pytest_ssd.errors import ExtensionError, SsdError
from pytest_ssd.health.sources import TEMPERATURE_WARNING_BIT, HealthSample, Source

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Sampler:
    """``with Sampler(source, 1.0) as s: ...`` reads *source* every *interval_s* in a thread.

    A source that fails stops the sampling; the error is kept in :attr:`error`.  A
    plugin's source that raises or returns the wrong thing (:class:`ExtensionError`)
    stops it too, and the ``with`` block then fails with that one line.
    """

    source: Source | None
    interval_s: float
    #: why there is no source (a loop device has no sensor ...)
    reason: str = ""
    samples: list[HealthSample] = field(default_factory=list)
    error: str | None = None
    #: a plugin's source at fault (raised or returned the wrong thing): the block fails with it
    fault: ExtensionError | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return self.source is not None and self.interval_s > 0

    def __enter__(self) -> Sampler:
        if self.active:
            self._sample()  # one reading before the workload starts
            if self.fault is not None:  # a plugin's source at fault: before fio starts
                raise self.fault
            self._thread = threading.Thread(target=self._loop, name="ssd-health", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._sample()  # and one after it
        if self.fault is not None and exc is None:
            raise self.fault

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self._sample():
                return

    def _sample(self) -> bool:
        if self.source is None or self.error is not None:
            return False
        try:
            self.samples.append(self.source.read())
        except ExtensionError as exc:
            self.error, self.fault = str(exc), exc
            return False
        except (SsdError, OSError) as exc:
            self.error = f"{self.source.name}: {exc}"
            return False
        return True

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """Seconds from the first sample, °C (NaN where none), and the counters."""
        import numpy as np  # noqa: PLC0415  # a worker loads numpy only for a health series

        start = self.samples[0].t if self.samples else 0.0
        temps = [np.nan if s.temperature_c is None else s.temperature_c for s in self.samples]
        return {
            "t_s": np.array([s.t - start for s in self.samples]),
            "temp_c": np.array(temps, dtype=float),
            "critical_warning": np.array([s.critical_warning for s in self.samples]),
            "thermal_transitions": np.array([s.thermal_transitions for s in self.samples]),
        }


def summarize(sampler: Sampler, warning_c: float | None = None) -> dict[str, Any]:
    """What the samples say: the range of temperatures and every throttling sign seen."""
    if not sampler.active:
        return {"source": None, "note": sampler.reason or "health sampling is off"}
    samples = sampler.samples
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    flags = []
    if warning_c is not None and temps and max(temps) >= warning_c:
        flags.append(f"composite temperature reached {max(temps):.1f} °C (warning {warning_c:.1f})")
    if any(s.critical_warning & TEMPERATURE_WARNING_BIT for s in samples):
        flags.append("critical warning: temperature threshold condition")
    if len(samples) > 1 and samples[-1].thermal_transitions > samples[0].thermal_transitions:
        rise = samples[-1].thermal_transitions - samples[0].thermal_transitions
        flags.append(f"{rise} thermal-management transitions during the run")
    return {
        "source": sampler.source.name if sampler.source else None,
        "samples": len(samples),
        "interval_s": sampler.interval_s,
        "temp_min_c": min(temps) if temps else None,
        "temp_max_c": max(temps) if temps else None,
        "temp_mean_c": sum(temps) / len(temps) if temps else None,
        "throttling": flags,
        "error": sampler.error,
        "note": "" if temps else "the source reported no temperature",
    }
