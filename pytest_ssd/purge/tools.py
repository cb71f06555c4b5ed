"""How a purge runs programs and waits: the real runner, or fakes in unit tests.

There is no NVMe or SATA drive on a development machine, so the sanitize, format
and ATA paths are driven by a fake runner fed real nvme-cli and hdparm output.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_ssd.errors import PurgeError
from pytest_ssd.proc.runner import Completed, run, which


class Runner(Protocol):
    """The signature of :func:`pytest_ssd.proc.run` that a purge uses."""

    def __call__(
        self,
        argv: list[str],
        *,
        timeout: float,
        artifacts: Path | None = None,
        name: str | None = None,
    ) -> Completed: ...


@dataclass(frozen=True)
class Tools:
    """Program runner, program lookup, sleep and clock; the defaults are the real ones."""

    run: Runner = run
    which: Callable[[str, str], str] = which
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def check(
        self, argv: list[str], *, timeout: float, artifacts: Path, name: str, context: str = ""
    ) -> str:
        """Run *argv*; its stdout, or :class:`PurgeError` with the tool's message on failure."""
        done = self.run(argv, timeout=timeout, artifacts=artifacts, name=name)
        if done.returncode != 0:
            raise PurgeError(
                f"{context}{command_line(argv)} failed (exit {done.returncode}): "
                f"{done.last_error_line()}"
            )
        return done.stdout


#: blkdiscard opens the device O_EXCL unless forced: the session's own claim (held
#: O_EXCL for the whole session) would refuse it, and the guard has checked the device
BLKDISCARD_FORCE = "--force"


def command_line(argv: list[str]) -> str:
    """The command as a shell would take it, with the program's name rather than its path."""
    return shlex.join([Path(argv[0]).name, *argv[1:]])
