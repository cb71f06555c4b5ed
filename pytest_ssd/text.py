"""Numbers written for people: plain notation, thousands separators, a few digits.

``f"{x:.3g}"`` writes 19,520 as ``1.95e+04`` and 1,500 ms as ``1.5e+03``; a reviewer
reads ``19,500`` and ``1,500``.  :func:`significant` keeps the digits ``g`` would keep
and writes them out.
"""

from __future__ import annotations

import math


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
