"""Devices opened while xdist starts its workers, handed to them through a file.

Under ``-n N`` the controller's :meth:`SsdSession.open_devices` mostly waits on test
hosts (logins, snapshots, locks, identities: 2 to 4 s for 16 drives), while starting
N workers is mostly CPU (0.3 s each: Python, pytest, the plugins).  xdist sends a
worker its input before the worker has imported anything, so the devices cannot
travel there: each worker is given the path of a handoff file instead and waits for
it in its ``pytest_configure``, once its imports are done.

The controller writes the file once (atomically: a rename) when the devices are open
and the run has started; a refused or interrupted run writes ``null``, and a worker
that reads it exits at once, having opened nothing.  The file's folder is private
(mode 0700), named for the controller's pid and removed when the session ends; the
folder of a controller that was killed (``kill -9``) is removed by the next session
that starts workers (:func:`pytest_ssd.proc.folders.sweep_stale`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.errors import ConfigError
from pytest_ssd.proc.folders import pid_folder

#: a worker's poll of the handoff file (16 workers: under 2 % of a CPU)
POLL_S = 0.02
HANDOFF_FILE = "devices.json"
#: the folder's name: this prefix, the controller's pid, a dash and mkdtemp's random part
PREFIX = "pytest-ssd-handoff-"


@dataclass
class Opening:
    """The controller's devices being opened by a thread (:meth:`start`), and their handoff."""

    folder: Path
    thread: threading.Thread | None = None
    #: what the thread raised (SsdError: a refusal in one line; anything else is re-raised)
    error: BaseException | None = None
    #: the handoff was written (devices, or ``null``)
    written: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(cls, work: Callable[[], None]) -> Opening:
        """Run *work* (the session's :meth:`open_devices`) in a thread of its own."""
        opening = cls(pid_folder(Path(tempfile.gettempdir()), PREFIX))

        def run() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - re-raised by :meth:`join`
                opening.error = exc

        opening.thread = threading.Thread(target=run, name="pytest-ssd-open", daemon=True)
        opening.thread.start()
        return opening

    @property
    def path(self) -> Path:
        return self.folder / HANDOFF_FILE

    @property
    def failed(self) -> bool:
        """The thread has ended with an error (the run is refused)."""
        return self.thread is not None and not self.thread.is_alive() and self.error is not None

    def join(self) -> None:
        """Wait for the devices; raise what opening them raised."""
        if self.thread is not None:
            self.thread.join()
        if self.error is not None:
            raise self.error

    def hand_over(self, data: dict[str, Any] | None) -> None:
        """Write the workers' input (None: the run is refused), once."""
        with self._lock:
            if self.written:
                return
            tmp = self.folder / f".{HANDOFF_FILE}"
            tmp.write_text(json.dumps(data))
            tmp.replace(self.path)
            self.written = True

    def cancel(self) -> None:
        """The run ends before the handoff (refused, Ctrl-C): wait for the thread (the
        session is closed after it) and tell the workers to exit."""
        if self.thread is not None:
            self.thread.join()
        with contextlib.suppress(OSError):
            self.hand_over(None)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_for(path: Path) -> dict[str, Any]:
    """A worker's input from the handoff file; exit at once when the run was refused.

    The worker has opened nothing yet, so it just ends: its controller says why.
    A worker whose controller dies meanwhile is ended by the kernel (``die_with_parent``).
    """
    while True:
        try:
            text = path.read_text()
        except FileNotFoundError:
            if not path.parent.is_dir():
                raise ConfigError(f"pytest-ssd: the controller's handoff {path} is gone") from None
            time.sleep(POLL_S)
            continue
        data = json.loads(text)
        if data is None:
            os._exit(0)
        if not isinstance(data, dict):
            raise ConfigError(f"pytest-ssd: the controller's handoff {path} is not its input")
        return data
