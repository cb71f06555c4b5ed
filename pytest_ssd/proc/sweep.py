"""No process of a session outlives it: a mark every process inherits, a sweep, a reaper.

A process group or ``PR_SET_PDEATHSIG`` does not reach every descendant: fio's
job processes call ``setsid()`` and are reparented to init when their fio dies,
and ``PR_SET_PDEATHSIG`` is not inherited across ``fork()``.  The environment is:
the session puts :data:`MARK_ENV` into its own environment (:func:`mark`), so
every process started afterwards, and every process those start, carries it in
``/proc/<pid>/environ`` whatever its session, group or parent.

* :func:`sweep` ends every process carrying a session's mark: SIGKILL at once for
  a stopped one (it would resume writing when continued), SIGTERM for the others,
  SIGKILL after :data:`GRACE_S` for what is left.
* :func:`start_reaper` starts ``python -I …/pytest_ssd/proc/sweep.py TOKEN`` outside
  pytest's session: it waits for EOF on a pipe only this process holds (its
  death, ``kill -9`` included), then sweeps the session's mark and exits.

The reaper runs this file as a script: it imports the standard library only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: the environment variable that marks a session's processes (value: the session's token)
MARK_ENV = "PYTEST_SSD_SESSION"
#: how long a marked process gets between SIGTERM and SIGKILL
GRACE_S = 5.0
#: how often a sweep looks again
POLL_S = 0.05


def new_token() -> str:
    """A token no other session has: this pid and 48 random bits."""
    return f"{os.getpid()}-{secrets.token_hex(6)}"


def mark(token: str) -> str | None:
    """Mark every process started from now on with *token*; the mark there was before."""
    before = os.environ.get(MARK_ENV)
    os.environ[MARK_ENV] = token
    return before


def unmark(before: str | None) -> None:
    """Put back the mark :func:`mark` replaced (processes started later are not the session's)."""
    if before is None:
        os.environ.pop(MARK_ENV, None)
    else:
        os.environ[MARK_ENV] = before


def _carries(pid: str, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # gone meanwhile, or another user's
        return False


def marked(token: str) -> list[int]:
    """Pids of the processes carrying *token* (never this process)."""
    needle = f"{MARK_ENV}={token}".encode()
    own = str(os.getpid())
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and entry.name != own and _carries(entry.name, needle)
    ]


def _state(pid: int) -> str | None:
    """The kernel's one-letter state of *pid* (``R``, ``S``, ``T``, ``Z`` ...); None: gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stopped(pid: int) -> bool:
    """Whether *pid* is stopped (SIGSTOP, a debugger): it handles no SIGTERM until continued."""
    return _state(pid) in ("T", "t")


def name_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def end(pids: list[int], grace: float = GRACE_S) -> None:
    """End *pids*: stopped ones SIGKILL at once, the others SIGTERM, SIGKILL after *grace*."""
    deadline = time.monotonic() + grace
    termed: set[int] = set()
    alive = list(pids)
    while alive:
        late = time.monotonic() > deadline
        for pid in alive:
            kill = late or stopped(pid)
            if kill or pid not in termed:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
                termed.add(pid)
        time.sleep(POLL_S)
        alive = [pid for pid in alive if _exists(pid)]


def pid_alive(pid: int) -> bool:
    """Some process has *pid* (another user's included: signalling it is refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exists(pid: int) -> bool:
    """*pid* runs (a zombie does nothing more: its parent reaps it)."""
    return _state(pid) not in (None, "Z")


def sweep(token: str, grace: float = GRACE_S) -> list[tuple[int, str]]:
    """End every process carrying *token*, also those started meanwhile; (pid, name) of each."""
    found: dict[int, str] = {}
    deadline = time.monotonic() + grace
    while pids := [pid for pid in marked(token) if _exists(pid)]:
        found |= {pid: name_of(pid) for pid in pids if pid not in found}
        end(pids, max(0.0, deadline - time.monotonic()))
    return sorted(found.items())


@dataclass
class Reaper:
    """The process that sweeps the session's mark when this process ends (:func:`start_reaper`)."""

    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Close its pipe: it sweeps (nothing is left after the session's own sweep) and exits."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


def start_reaper(token: str) -> Reaper:
    """Start the reaper of *token*: unmarked, in a session of its own, output nowhere."""
    env = {k: v for k, v in os.environ.items() if k != MARK_ENV}
    proc = subprocess.Popen(
        # the file itself, not the package: its imports (pytest, numpy ...) cost a CPU second
        [sys.executable, "-I", str(Path(__file__).resolve()), token],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    return Reaper(proc)


@dataclass
class SessionMark:
    """A session's mark and its reaper: :meth:`open` at its start, :meth:`close` at its end."""

    token: str = field(default_factory=new_token)
    _before: str | None = None
    _reaper: Reaper | None = None

    def open(self) -> None:
        self._reaper = start_reaper(self.token)
        self._before = mark(self.token)

    def close(self) -> list[tuple[int, str]]:
        """End what is left of the session's processes; (pid, name) of each.  Safe twice."""
        if self._reaper is None:
            return []
        left = sweep(self.token)
        unmark(self._before)
        self._reaper.stop()
        self._reaper = None
        return left


def main(argv: list[str]) -> int:
    """The reaper: wait for EOF on stdin (the session's end, however it ended), sweep, exit."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    sweep(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
