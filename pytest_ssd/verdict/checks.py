"""Qualification checks: what a test records of a drive (pass / fail / not judged), and
what the gate says of a check in a new run against the same check in a baseline run.

A check is the derived record ``qualification`` (``ssd.derive("qualification",
{"part", "check", "verdict", "detail"})``): *part* one of :data:`PARTS`, *check* a short
name, *verdict* one of :data:`CHECK_VERDICTS`, *detail* one line.  Against a baseline:

| NEW \\ BASE     | pass    | fail / not judged / absent |
|---|---|---|
| fail           | failed  | failed                     |
| pass           | same    | passed                     |
| not judged / absent | unknown | not judged (not counted) |

"failed" fails the gate, "unknown" counts toward ``--allow-unknown`` as a measured
point's unknown does, "same" and "passed" pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ssd.errors import ConfigError
from pytest_ssd.results.record import Derived

#: the derived record's name
KIND = "qualification"
PARTS = ("integrity", "power loss", "admin load", "features", "namespaces", "devices")
CHECK_VERDICTS = ("pass", "fail", "not judged")
#: a check judged against its baseline (:func:`judge_checks`), worst first
JUDGED = ("failed", "unknown", "passed", "same", "not judged")
#: which of two records of one check a drive keeps: the worse
_RANK = {"fail": 0, "not judged": 1, "pass": 2}


@dataclass(frozen=True)
class Check:
    """One qualification check of one drive: its part, name, verdict and one line."""

    part: str
    check: str
    verdict: str
    detail: str
    test: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in CHECK_VERDICTS:
            raise ConfigError(
                f"qualification check {self.part}/{self.check}: verdict {self.verdict!r} is not"
                f" one of {', '.join(CHECK_VERDICTS)}"
            )
        if "\n" in self.detail:
            raise ConfigError(f"qualification check {self.part}/{self.check}: detail is one line")

    @property
    def key(self) -> tuple[str, str]:
        return self.part, self.check

    @property
    def name(self) -> str:
        """``integrity · after trim``."""
        return f"{self.part} · {self.check}"

    def values(self) -> dict[str, str]:
        """The derived record's values."""
        return {
            "part": self.part,
            "check": self.check,
            "verdict": self.verdict,
            "detail": self.detail,
        }

    @classmethod
    def of(cls, values: Mapping[str, Any], test: str = "") -> Check | None:
        """The check a record holds; None for a record not of the shape (an older writer's)."""
        try:
            return cls(
                str(values["part"]),
                str(values["check"]),
                str(values["verdict"]),
                " ".join(str(values.get("detail", "")).split()),
                test,
            )
        except (KeyError, ConfigError):
            return None


def part_order(part: str) -> int:
    return PARTS.index(part) if part in PARTS else len(PARTS)


def checks_of(records: Iterable[Derived]) -> list[Check]:
    """A drive's checks from its derived records: one per (part, check), the worse of two
    records of one check, in the parts' order."""
    found: dict[tuple[str, str], Check] = {}
    for record in records:
        check = Check.of(record.values, record.test) if record.name == KIND else None
        if check is None:
            continue
        kept = found.get(check.key)
        if kept is None or _RANK[check.verdict] < _RANK[kept.verdict]:
            found[check.key] = check
    return sorted(found.values(), key=lambda c: (part_order(c.part), c.part, c.check))


def counted(checks: Sequence[Check]) -> str:
    """``4 pass, 1 fail, 2 not judged`` (the words with a count)."""
    counts = {word: sum(1 for c in checks if c.verdict == word) for word in CHECK_VERDICTS}
    return ", ".join(f"{n} {word}" for word, n in counts.items() if n) or "none"


@dataclass(frozen=True)
class CheckVerdict:
    """A check of the new run judged against the baseline run's."""

    part: str
    check: str
    verdict: str
    base: str | None
    new: str | None
    detail: str

    @property
    def counted(self) -> bool:
        """Counted among the gate's verdicts (a check neither side judged is not)."""
        return self.verdict != "not judged"

    def line(self) -> str:
        """``failed     integrity · after trim: pass -> fail: <detail>``."""
        sides = f"{self.base or 'absent'} -> {self.new or 'absent'}"
        return f"{self.part} · {self.check}: {sides}: {self.detail}"


def judge_checks(base: Sequence[Check], new: Sequence[Check]) -> list[CheckVerdict]:
    """Each check of either run judged (see the module's table), worst first."""
    old = {c.key: c for c in base}
    now = {c.key: c for c in new}
    judged = []
    for key in [*now, *(k for k in old if k not in now)]:
        a, b = old.get(key), now.get(key)
        was, is_ = (a.verdict if a else None), (b.verdict if b else None)
        if is_ == "fail":
            word = "failed"
        elif is_ == "pass":
            word = "same" if was == "pass" else "passed"
        elif was == "pass":
            word = "unknown"
        else:
            word = "not judged"
        detail = b.detail if b is not None else "not checked in the new run"
        if word == "unknown" and b is not None:
            detail = f"not judged in the new run: {b.detail}"
        judged.append(CheckVerdict(key[0], key[1], word, was, is_, detail))
    return sorted(judged, key=lambda v: (JUDGED.index(v.verdict), part_order(v.part), v.check))
