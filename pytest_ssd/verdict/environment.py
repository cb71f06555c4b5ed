"""What differed between the environments of two runs, as a verdict must know it.

A "regressed" (or "improved") between two builds means the drive changed only when the
two runs measured it alike. When the recorded environments differ in what moves the
numbers — the fio version, the host's settings the method controls (governor, boost,
THP, ASLR, the scheduler, APST, the power state), what ``--ssd-tune`` did, or other
busy processes in one run and not the other — the difference may be the host's: the
verdict becomes "unknown" with that reason (:func:`demoted`), unless the change is beyond
what a host moves (its whole interval beyond 2× either way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_ssd.verdict.judge import BEYOND_THE_HOST, MetricVerdict, beyond_the_host

#: the host settings (``host_settings`` keys) whose difference can move a measurement
SETTINGS = ("governor", "boost", "thp", "aslr", "scheduler", "apst", "power-state")
BUSY = "busy-processes"
#: other processes' CPU (in CPUs) that must differ between the runs to matter (a sample of
#: half a second at the run's start: coarser than a measurement's own record)
BUSY_DIFFERENCE = 0.5
_SHARE = re.compile(r"(\d+)%")
#: how a verdict's reason says so
ENVIRONMENT_DIFFERS = "the runs' environments differ"
#: verdicts a differing environment cannot support
CLAIMS = ("regressed", "improved")


def _readings(environment: Mapping[str, Any]) -> dict[str, set[str]]:
    """Setting key -> the values recorded (one per device for per-device settings)."""
    found: dict[str, set[str]] = {}
    for reading in environment.get("host_settings") or ():
        key = str(reading.get("key"))
        found.setdefault(key, set()).add(str(reading.get("value")))
    return found


def _busy(values: set[str]) -> float:
    """Other processes' CPU in CPUs from the reading's text ('2 (fio 1234 42%, sshd 9 13%)'):
    the shares it lists (the five busiest)."""
    return sum(int(share) for value in values for share in _SHARE.findall(value)) / 100


def _tuned(environment: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]] | None:
    tune = environment.get("tune")
    if not tune:
        return None
    return bool(tune.get("requested")), tuple(sorted(tune.get("changed") or ()))


def differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What the two runs' environments differ in that can move a measurement (empty: alike,
    or not recorded on a side)."""
    found = []
    if base.get("fio") and new.get("fio") and base["fio"] != new["fio"]:
        found.append(f"fio {base['fio']} then, {new['fio']} now")
    then, now = _readings(base), _readings(new)
    for key in SETTINGS:
        if key in then and key in now and then[key] != now[key]:
            was, is_ = ", ".join(sorted(then[key])), ", ".join(sorted(now[key]))
            found.append(f"{key} {was} then, {is_} now")
    if BUSY in then and BUSY in now:
        busy_then, busy_now = _busy(then[BUSY]), _busy(now[BUSY])
        if abs(busy_now - busy_then) >= BUSY_DIFFERENCE:
            found.append(
                f"other processes used {busy_then:.0%} of a CPU during the baseline,"
                f" {busy_now:.0%} during the new run"
            )
    tuned_then, tuned_now = _tuned(base), _tuned(new)
    if tuned_then is not None and tuned_now is not None and tuned_then != tuned_now:
        found.append("--ssd-tune did not do the same in both runs")
    return found


def demoted(verdicts: Sequence[MetricVerdict], caveats: Sequence[str]) -> list[MetricVerdict]:
    """*verdicts* with each "regressed" and "improved" made "unknown" when *caveats* say the
    environments differed (the reason names what differed)."""
    if not caveats:
        return list(verdicts)
    differ = "; ".join(caveats)
    found = []
    for v in verdicts:
        if v.verdict not in CLAIMS:
            found.append(v)
        elif beyond_the_host(v):
            found.append(replace(v, reason=f"{BEYOND_THE_HOST:g}× or more although {differ}"))
        else:
            why = f"{ENVIRONMENT_DIFFERS}: {differ}"
            found.append(replace(v, verdict="unknown", reason=why, repeats_needed=None))
    return found
