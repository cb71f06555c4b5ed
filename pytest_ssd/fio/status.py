"""fio's live status stream (``--status-interval``): one JSON document per interval.

:class:`StatusSink` receives fio's stdout line by line, hands each complete
document to a callback (progress), and keeps only the notes before the first
document and the last document (the final result): a fill of hours would
otherwise keep thousands of documents.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from pytest_ssd.fio.results import AGGREGATE_CLIENT

StatusCallback = Callable[[dict[str, Any]], None]


class StatusSink:
    """A :class:`pytest_ssd.proc.runner.LineSink` for fio's JSON status stream."""

    def __init__(self, on_status: StatusCallback) -> None:
        self.on_status = on_status
        self._notes: list[str] = []
        self._current: list[str] = []
        self._last: list[str] = []
        self._inside = False

    def feed(self, line: str) -> None:
        if not self._inside and line.startswith("{"):
            self._inside, self._current = True, []
        if not self._inside:
            (self._notes if not self._last else self._current).append(line)
            return
        self._current.append(line)
        if line.rstrip() == "}":  # fio closes each document at column 0
            self._inside, self._last = False, self._current
            with contextlib.suppress(ValueError):
                self.on_status(json.loads("".join(self._last)))

    def text(self) -> str:
        """The notes, the last complete document, and anything after it (a partial document)."""
        tail = self._current if self._current is not self._last else []
        return "".join(self._notes + self._last + tail)


ALL_DIRECTIONS = ("read", "write", "trim")


def _sum(doc: dict[str, Any], directions: tuple[str, ...], key: str) -> int:
    total = 0
    for job in doc.get("jobs") or doc.get("client_stats") or ():
        if not isinstance(job, dict) or job.get("jobname") == AGGREGATE_CLIENT:
            continue
        for direction in directions:
            part = job.get(direction)
            if isinstance(part, dict):
                total += int(part.get(key) or 0)
    return total


def bytes_done(doc: dict[str, Any], direction: str = "write") -> int:
    """Bytes moved so far in *direction* over every job of a status document."""
    return _sum(doc, (direction,), "io_bytes")


def moved(doc: dict[str, Any], directions: tuple[str, ...] = ALL_DIRECTIONS) -> tuple[int, int]:
    """(bytes, I/Os) done so far in *directions* over every job of a status document."""
    return _sum(doc, directions, "io_bytes"), _sum(doc, directions, "total_ios")
