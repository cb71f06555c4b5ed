"""What a gate says of a comparison: per drive, the count of each verdict, what to do, and
whether it passes.

A gate that judged nothing has not passed: by default any "unknown" fails it
(``--allow-unknown`` sets the share a pipeline accepts), and a comparison with no
verdict at all fails too. A "regressed" fails it whatever the share, and so does a
qualification check that failed in the new run (:mod:`pytest_ssd.verdict.checks`); a
check that passed in the baseline and is not judged in the new run counts as an unknown.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pytest_ssd.verdict.checks import CheckVerdict
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
    #: its qualification checks against the baseline's
    checks: tuple[CheckVerdict, ...] = ()

    @property
    def named(self) -> str:
        """The drive with both sides' builds: 'lab (loop3), build 1.2.3 against 1.2.2'."""
        return f"{self.drive}, {self.builds}" if self.builds else self.drive

    @property
    def counts(self) -> Counter[str]:
        return Counter(v.verdict for v in self.verdicts)

    @property
    def judged_checks(self) -> list[CheckVerdict]:
        """Its checks the gate counts (one judged by neither side is not)."""
        return [c for c in self.checks if c.counted]

    @property
    def unknown_checks(self) -> list[CheckVerdict]:
        """Its checks that passed in the baseline and are not judged in the new run."""
        return [c for c in self.checks if c.verdict == "unknown"]

    @property
    def unknowns(self) -> int:
        """Its unknown points and checks."""
        return self.counts["unknown"] + len(self.unknown_checks)

    @property
    def unknown_share(self) -> float:
        """Unknown points and checks among those judged (1 when none was)."""
        total = len(self.verdicts) + len(self.judged_checks)
        return self.unknowns / total if total else 1.0

    def counted(self) -> str:
        """``2 regressed, 0 improved, 40 same, 3 unknown`` (and its checks: ``; qualification
        checks: 1 failed, 5 same``)."""
        counts = self.counts
        text = ", ".join(f"{counts[word]} {word}" for word in VERDICTS)
        if not self.checks:
            return text
        words = Counter(c.verdict for c in self.checks)
        said = ", ".join(f"{n} {word}" for word, n in sorted(words.items()))
        return f"{text}; qualification checks: {said}"

    def advice(self) -> str | None:
        """What would decide its unknowns, each cause with its count; None when it has none."""
        unknown = [v for v in self.verdicts if v.verdict == "unknown"]
        checks = self.unknown_checks
        if not unknown and not checks:
            return None
        parts = []
        if checks:
            parts.append(
                f"{len(checks)} qualification check(s) passed in the baseline and are not judged"
                f" in the new run ({checks[0].part} · {checks[0].check}, ...): run them there"
            )
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


def by_drive(
    verdicts: Sequence[tuple[Judged, MetricVerdict]],
    checks: Sequence[tuple[Judged, CheckVerdict]] = (),
) -> list[DriveVerdicts]:
    """(drive, verdict) pairs and (drive, check) pairs grouped by drive, in the order the
    drives come."""
    drives: dict[Judged, tuple[list[MetricVerdict], list[CheckVerdict]]] = {}
    for drive, verdict in verdicts:
        drives.setdefault(drive, ([], []))[0].append(verdict)
    for drive, check in checks:
        drives.setdefault(drive, ([], []))[1].append(check)
    return [
        DriveVerdicts(d.drive, tuple(found), d.builds, tuple(judged))
        for d, (found, judged) in drives.items()
    ]


def failed_checks(drives: Sequence[DriveVerdicts]) -> list[str]:
    """A line per qualification check that failed in the new run: drive, check, its line."""
    return [
        f"{d.drive}: {c.part} · {c.check} failed: {c.detail}"
        for d in drives
        for c in d.checks
        if c.verdict == "failed"
    ]


def gate(drives: Sequence[DriveVerdicts], allow_unknown: float = 0.0) -> tuple[int, str]:
    """The gate's exit code and its one-line reason; *allow_unknown*: the share (0-1) of
    unknown verdicts a drive may have and still pass."""
    regressed = [d.drive for d in drives if d.counts["regressed"]]
    failed = failed_checks(drives)
    if regressed or failed:
        lines = [f"gate failed: {line}" for line in failed]
        if regressed:
            lines.append(f"gate failed: {', '.join(regressed)} regressed")
        return REGRESSED, "\n".join(lines)
    if not any(d.verdicts or d.judged_checks for d in drives):
        return UNDECIDED, (
            "gate failed: nothing was judged (no point measured by both builds, no"
            " qualification check judged)"
        )
    undecided = []
    for d in drives:
        share = d.unknown_share
        if share > allow_unknown:
            undecided.append(f"{d.drive} ({_percent(share)} unknown)")
    if undecided:
        allowed = f"at most {_percent(allow_unknown)} allowed, --allow-unknown"
        return UNDECIDED, f"gate failed: not judged: {', '.join(undecided)} ({allowed})"
    return PASSED, "gate passed: no regression" + (
        f", unknown within the {_percent(allow_unknown)} allowed"
        if any(d.unknowns for d in drives)
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
