"""Ctrl-C, SIGTERM and SIGHUP on the controller: the first stops the run, the next are a line.

The first raises ``KeyboardInterrupt`` where the run is: pytest reports the run
interrupted and the session's end stops fio, releases the devices and puts the
settings back.  A second one (Ctrl-C twice within a second) must not cut that end
short: raised inside pytest's own report of the first, it made pytest finish the
session as if every test had run (the run recorded complete, two tracebacks).
It is said in one line, once, and the end goes on; ``kill -9`` stops at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

#: a kill (CI cancelling a job), a closed terminal or ssh, and Ctrl-C
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
#: what each signal's handler is when nobody set it (Python's own for SIGINT)
_UNSET = (signal.SIG_DFL, signal.default_int_handler)


class Interrupts:
    """The controller's handler of :data:`SIGNALS` (those nobody else handles)."""

    def __init__(self) -> None:
        #: the first signal heard (None: none)
        self.heard: int | None = None
        self._said = False
        self._before: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

    def install(self) -> None:
        for signum in SIGNALS:
            current = signal.getsignal(signum)
            if current in _UNSET:  # an ignored SIGINT (a job started with &) stays ignored
                self._before[signum] = current
                signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        for signum, before in self._before.items():
            if signal.getsignal(signum) == self._handle:
                signal.signal(signum, before)
        self._before.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.heard is None:
            self.heard = signum
            raise KeyboardInterrupt(f"signal {signum}")
        if not self._said:  # a plain write: the handler may run inside any print
            self._said = True
            name = signal.Signals(signum).name
            os.write(
                2,
                f"\npytest-ssd: {name} again: the run is already stopping (recorded as cut"
                " short); fio is being stopped and the devices released: wait, or"
                f" kill -9 {os.getpid()} to stop at once\n".encode(),
            )
