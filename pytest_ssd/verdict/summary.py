"""What a gate says of a comparison: per drive, the count of each verdict, what to do, and
whether it passes.

A gate that judged nothing has not passed: by default any "unknown" fails it
(``--allow-unknown`` sets the share a pipeline accepts), and a comparison with no
verdict at all fails too. A "regressed" fails it whatever the share.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pytest_ssd.verdict.environment import ENVIRONMENT_DIFFERS
from pytest_ssd.verdict.judge import DRIFTS, OTHER_WORK, VERDICTS, MetricVerdict

#: the gate's outcomes (the command's exit codes)
PASSED, REGRESSED, UNDECIDED = 0, 1, 5


class Judged(NamedTuple):
    """A drive judged against its baseline: its name, and both sides' builds."""

    drive: str
    #: "build 1.2.3 against 1.2.2" ("" where not known: records made before builds)
    builds: str = ""


@dataclass(frozen=True)
class DriveVerdicts:
    """One drive's verdicts against its baseline."""

    drive: str
    verdicts: tuple[MetricVerdict, ...]
    #: both sides' builds ("build 1.2.3 against 1.2.2"; "" where not known)
    builds: str = ""

    @property
    def named(self) -> str:
        """The drive with both sides' builds: 'lab (loop3), build 1.2.3 against 1.2.2'."""
        return f"{self.drive}, {self.builds}" if self.builds else self.drive

    @property
    def counts(self) -> Counter[str]:
        return Counter(v.verdict for v in self.verdicts)

    def counted(self) -> str:
        """``2 regressed, 0 improved, 40 same, 3 unknown``."""
        counts = self.counts
        return ", ".join(f"{counts[word]} {word}" for word in VERDICTS)

    def advice(self) -> str | None:
        """What would decide its unknowns, each cause with its count; None when it has none."""
        unknown = [v for v in self.verdicts if v.verdict == "unknown"]
        if not unknown:
            return None
        parts = []
        moved = [v for v in unknown if v.reason.startswith(ENVIRONMENT_DIFFERS)]
        if moved:
            parts.append(
                f"{len(moved)} unknown because {moved[0].reason}: measure both builds on"
                " one host in one state (see the report's host and environment)"
            )
        busier = [v for v in unknown if v.reason.startswith(OTHER_WORK)]
        if busier:
            parts.append(
                f"{len(busier)} unknown because of {busier[0].reason}: measure both builds on"
                " a quiet host"
            )
        drifted = [v for v in unknown if DRIFTS in v.reason]
        if drifted:
            parts.append(
                f"{len(drifted)} unknown because a run's repeats drift one way: measure again"
                " on a steady host"
            )
        rest = [v for v in unknown if v not in moved and v not in busier and v not in drifted]
        decidable = [v for v in rest if v.repeats_needed]
        if decidable:
            target = max(v.repeats_needed or 0 for v in decidable)
            more = max(target - min(min(v.base_n, v.new_n) for v in decidable), 1)
            parts.append(
                f"run {more} more repeat{'s' if more > 1 else ''} a side"
                f" (--ssd-repeat={target} on both builds) to decide {len(decidable)} unknown"
            )
        noisy = len(rest) - len(decidable)
        if noisy:
            parts.append(
                f"{noisy} unknown from runs too noisy to call: quiet the host (--ssd-tune, no"
                " other load), measure longer (--ssd-profile=full) or set the band"
                " (--tolerance, a datasheet's [baseline])"
            )
        return "; ".join(parts)

    def worst_first(self) -> list[MetricVerdict]:
        """Regressed, then unknown, improved and same; the largest change first in each."""
        order = {"regressed": 0, "unknown": 1, "improved": 2, "same": 3}
        return sorted(
            self.verdicts,
            key=lambda v: (order.get(v.verdict, 4), -abs(math.log(v.ratio or 1.0))),
        )


def by_drive(verdicts: Sequence[tuple[Judged, MetricVerdict]]) -> list[DriveVerdicts]:
    """(drive, verdict) pairs grouped by drive, in the order the drives come."""
    drives: dict[Judged, list[MetricVerdict]] = {}
    for drive, verdict in verdicts:
        drives.setdefault(drive, []).append(verdict)
    return [DriveVerdicts(d.drive, tuple(found), d.builds) for d, found in drives.items()]


def gate(drives: Sequence[DriveVerdicts], allow_unknown: float = 0.0) -> tuple[int, str]:
    """The gate's exit code and its one-line reason; *allow_unknown*: the share (0-1) of
    unknown verdicts a drive may have and still pass."""
    regressed = [d.drive for d in drives if d.counts["regressed"]]
    if regressed:
        return REGRESSED, f"gate failed: {', '.join(regressed)} regressed"
    if not any(d.verdicts for d in drives):
        return UNDECIDED, "gate failed: nothing was judged (no point measured by both builds)"
    undecided = []
    for d in drives:
        share = d.counts["unknown"] / len(d.verdicts) if d.verdicts else 1.0
        if share > allow_unknown:
            undecided.append(f"{d.drive} ({_percent(share)} unknown)")
    if undecided:
        allowed = f"at most {_percent(allow_unknown)} allowed, --allow-unknown"
        return UNDECIDED, f"gate failed: not judged: {', '.join(undecided)} ({allowed})"
    return PASSED, "gate passed: no regression" + (
        f", unknown within the {_percent(allow_unknown)} allowed"
        if any(d.counts["unknown"] for d in drives)
        else ""
    )


def _percent(share: float) -> str:
    return f"{share * 100:.3g} %"


def summary_lines(drives: Sequence[DriveVerdicts]) -> list[str]:
    """A screen's summary: a line per drive (and its builds) with its counts, and what to do
    under it."""
    lines = []
    for d in drives:
        lines.append(f"{d.named}: {d.counted()}")
        advice = d.advice()
        if advice:
            lines.append(f"  {advice}")
    return lines
