"""Latencies as the report's tables write them: under four digits before the point, then
the unit (716.8 µs, 2.21 ms, 2.16 s), never a bare number in µs (issue 32)."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: a latency as the tables write it
SCALED = re.compile(r"(?:[1-9]\d{0,2}|0)\.\d+ (?:µs|ms|s)")
#: a table cell the sample could not resolve
NOT_RESOLVED = "n/r"


def table_after(html: str, marker: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the first table after *marker* in *html*."""
    part = html[html.index(marker) :]
    part = part[part.index("<table") : part.index("</table>")]
    header = re.findall(r"<th>(.*?)</th>", part)
    rows = [r.split("</td><td>") for r in re.findall(r"<tr><td>(.*?)</td></tr>", part)]
    return header, rows


def unscaled(cells: Sequence[str]) -> list[str]:
    """The cells that are not a latency in its unit (nor unresolved)."""
    return [c for c in cells if not SCALED.fullmatch(c) and c != NOT_RESOLVED]
