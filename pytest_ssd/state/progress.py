"""Live progress of long transition steps: step, percent, MiB/s and time left.

On a terminal the line is rewritten in place (through pytest's terminal
reporter, with capture suspended, so pytest's own output stays intact); in a
log (CI, xdist workers) a line is written at most every :data:`LOG_EVERY_S`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.fio.status import bytes_done

MiB = 1 << 20
LOG_EVERY_S = 30.0
#: reports closer together than this (fio's last one follows the job's end) set no rate
MIN_RATE_INTERVAL_S = 0.5
#: Write(text, final): show a progress line; final closes it
Write = Callable[[str, bool], None]


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """Follows fio's status reports for one step that moves *total* bytes."""

    def __init__(self, label: str, total: int, write: Write) -> None:
        self.label, self.total, self.write = label, total, write
        self.start = time.monotonic()
        self._last: tuple[float, int] = (self.start, 0)
        self.rate = 0.0

    def __call__(self, doc: dict[str, Any]) -> None:
        now, done = time.monotonic(), bytes_done(doc)
        then, before = self._last
        if now - then >= MIN_RATE_INTERVAL_S and done >= before:
            current = (done - before) / (now - then)
            self.rate = current if not self.rate else 0.7 * self.rate + 0.3 * current
        self._last = (now, done)
        self.write(self.line(done, now), False)

    def line(self, done: int, now: float) -> str:
        pct = 100.0 * done / self.total if self.total else 0.0
        eta = _clock((self.total - done) / self.rate) if self.rate > 0 else "?"
        return (
            f"{self.label}: {pct:5.1f} %  {done / MiB:,.0f}/{self.total / MiB:,.0f} MiB  "
            f"{self.rate / MiB:,.0f} MiB/s  elapsed {_clock(now - self.start)}  left {eta}"
        )

    def close(self) -> None:
        self.write(f"{self.label}: done in {_clock(time.monotonic() - self.start)}", True)


def terminal_writer(config: pytest.Config) -> Write:
    """Progress lines on pytest's terminal (looked up when used: it registers after us)."""
    last = [0.0]
    open_line = [False]

    def write(text: str, final: bool) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:
            return
        tty = bool(getattr(reporter, "isatty", False))
        now = time.monotonic()
        if not tty and not final and now - last[0] < LOG_EVERY_S:
            return
        last[0] = now
        with capture.global_and_fixture_disabled():
            if tty:
                if not open_line[0]:  # keep pytest's line (the test file) above ours
                    reporter.write("\n")
                reporter.rewrite(text, erase=True)
                open_line[0] = not final
                if final:
                    reporter.write("\n")
            else:
                reporter.write_line(text)

    return write


def log_writer(path: Path) -> Write:
    """Progress lines appended to *path*, at most every :data:`LOG_EVERY_S` (and the last)."""
    last = [0.0]

    def write(text: str, final: bool) -> None:
        now = time.monotonic()
        if final or now - last[0] >= LOG_EVERY_S:
            last[0] = now
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as fh:
                fh.write(f"{time.strftime('%H:%M:%S')} {text}\n")

    return write
