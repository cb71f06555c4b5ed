"""Pauses of a poll that waits for an answer: short at first, then no longer than *longest*.

An answer over a test host's channel comes back in a millisecond or two on a LAN (a
lock, a claim, a gate): polling every 20 ms from the start made each question cost
20 ms, and the 32 locks and claims of 16 drives asked in turn 0.7 s of a run's start.
"""

from __future__ import annotations

from collections.abc import Iterator

#: the first pause; each next one doubles, up to the longest
FIRST_S = 0.001


def pauses(longest: float, first: float = FIRST_S) -> Iterator[float]:
    """*first*, twice that, ... up to *longest*, then *longest* for ever."""
    pause = min(first, longest)
    while True:
        yield pause
        pause = min(pause * 2, longest)
