"""Text written for people: numbers in plain notation, and the names people give.

``f"{x:.3g}"`` writes 19,520 as ``1.95e+04`` and 1,500 ms as ``1.5e+03``; a reviewer
reads ``19,500`` and ``1,500``.  :func:`significant` keeps the digits ``g`` would keep
and writes them out.  :func:`name_problem` says why a label or name given by a person
(``--dut-label``, ``--ssd-compare``, a datasheet's names) cannot be one.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata

#: a figure file's name at most (a file system takes 255 bytes: the suffix and a prefix fit)
MAX_STEM = 120


def significant(value: float, digits: int = 3, *, sign: bool = False) -> str:
    """*value* to *digits* significant digits, never in e-notation: 19,500 · 2.54 · 0.00123.

    *sign*: always a sign (``+72.9``, ``-19,520``), as slopes are written.
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "+0" if sign else "0"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, decimals):{'+' if sign else ''},.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


#: (unit, µs in one) a latency is written in: the first that keeps it under 1,000
_LATENCY_UNITS = (("µs", 1.0, 1), ("ms", 1e3, 2), ("s", 1e6, 2))


def latency_unit(us: float) -> tuple[str, float, int]:
    """(unit, µs in one, decimals) for *us*: fewer than four digits before the point."""
    for unit, scale, decimals in _LATENCY_UNITS:
        if round(abs(us) / scale, decimals) < 1000:
            return unit, scale, decimals
    return _LATENCY_UNITS[-1]


def latency(us: float, spread: float | None = None) -> str:
    """A latency given in µs as people read it: 716.8 µs · 2.21 ms · 2.16 s (± *spread*)."""
    if not math.isfinite(us):
        return "—"
    unit, scale, decimals = latency_unit(us)
    text = f"{us / scale:,.{decimals}f}"
    if spread is not None:
        text += f" ± {spread / scale:,.{decimals}f}"
    return f"{text} {unit}"


def rate(value: float, unit: str, of: float, per: str) -> str:
    """A change of *value* *unit* per *per*: +72.9 IOPS/round.  A latency (*unit* µs) is
    in the unit :func:`latency` writes *of* in: a slope beside its mean (2.34 s, -0.1515 s/round).
    """
    scale = 1.0
    if unit == "µs":
        unit, scale, _ = latency_unit(of)
    return f"{significant(value / scale, 4, sign=True)} {unit}/{per}"


#: the longest label or name pytest-ssd takes (a report's title, a graph's legend)
MAX_NAME = 200
#: Unicode categories a name must not hold: controls (a newline), formats (zero-width,
#: bidi overrides) and the line and paragraph separators: each starts a new line, or
#: hides or reorders text, in a terminal line, a junit property or the report
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def name_problem(value: str) -> str | None:
    """Why *value* cannot be a label or a name (None: it can): blank, too long, unprintable."""
    if not value.strip():
        return "is empty or only blanks"
    if len(value) > MAX_NAME:
        return f"is {len(value):,} characters long, more than {MAX_NAME}"
    bad = next((c for c in value if unicodedata.category(c) in _UNPRINTABLE), None)
    if bad is not None:
        return f"holds the control character U+{ord(bad):04X} ({unicodedata.category(bad)})"
    return None


def file_stem(title: str) -> str:
    """A figure's file name (no suffix) from its title: letters and digits, '-' between.

    A long title (drive labels naming a loop device's backing file on a host) is cut to
    :data:`MAX_STEM` characters, a digest of the whole title keeping two such names apart.
    """
    stem = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-") or "figure"
    if len(stem) <= MAX_STEM:
        return stem
    digest = hashlib.sha256(title.encode()).hexdigest()[:10]
    return f"{stem[: MAX_STEM - len(digest) - 1].rstrip('-')}-{digest}"
