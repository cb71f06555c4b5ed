"""Progress of xdist workers on the controller's terminal: one line per worker.

A worker cannot write to the terminal (xdist keeps its output); its progress
writer (:func:`worker_writer`) keeps its newest line in ``<run dir>/progress/<worker>.line``,
replaced atomically.  On the controller a :class:`Relay` thread looks every
:data:`TTY_EVERY_S` and shows a worker's newest line when it changed: at most
every :data:`TTY_EVERY_S` on a terminal, every
:data:`~pytest_ssd.state.progress.LOG_EVERY_S` in a log (a worker's first line
and its closing lines at once), and once more when the run ends.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pytest_ssd.state.progress import LOG_EVERY_S, Write

#: on a terminal the relay looks this often
TTY_EVERY_S = 5.0
FOLDER = "progress"
#: a closing line ("done in ...") starts with this mark in the file
FINAL = "= "


def worker_writer(run_dir: Path, worker: str) -> Write:
    """A worker's progress writer: its newest line, for the controller's :class:`Relay`."""
    path = run_dir / FOLDER / f"{worker}.line"

    def write(text: str, final: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(f"{FINAL if final else ''}{text}\n")
        part.replace(path)

    return write


class Relay:
    """Shows the workers' progress lines on the controller (a daemon thread)."""

    def __init__(self, run_dir: Path, show: Callable[[str], None], *, tty: bool) -> None:
        self.folder = run_dir / FOLDER
        self.show = show
        #: a worker's lines at most this often (its first and its closing ones at once)
        self.every = TTY_EVERY_S if tty else LOG_EVERY_S
        self._shown: dict[str, str] = {}
        self._when: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ssd-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and show what changed since it last looked."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=TTY_EVERY_S + 5)
        self.poll(force=True)

    def _loop(self) -> None:
        while not self._stop.wait(TTY_EVERY_S):
            self.poll()

    def poll(self, *, force: bool = False) -> None:
        """Show each worker's line that changed, once per :attr:`every` (closing lines at once)."""
        now = time.monotonic()
        for path in sorted(self.folder.glob("*.line")):
            with contextlib.suppress(OSError):
                text = path.read_text().strip()
                worker = path.stem
                if not text or self._shown.get(worker) == text:
                    continue
                due = now - self._when.get(worker, -math.inf) >= self.every
                if force or due or text.startswith(FINAL):
                    self._shown[worker], self._when[worker] = text, now
                    self.show(f"[{worker}] {text.removeprefix(FINAL)}")
