"""What a test started, found again: pytest-ssd's own tests keep to themselves.

A lab runs these tests on its controllers and hosts, beside real qualification runs
(and xdist runs them beside each other): a test signals, counts or removes only the
processes, folders and loop devices it started.  Never by program name (``pkill -f
"fio --server"`` killed a real run's fio servers), never "every fio of the machine"
or "every /tmp/ssd-fio.* folder" (another session's are there too).  It finds its own:

* **processes**, by a tag in their environment.  Every test runs with
  :data:`TAG_ENV` set to a tag of its own (the autouse fixture ``test_tag`` of
  ``tests/conftest.py``), so every process it starts, and every process those start
  (pytest-ssd's sessions, their fio, fio's job processes after ``setsid()``, orphans
  reparented to init) carries it in ``/proc/PID/environ``, whatever its session,
  group or parent: :func:`tagged`.  pytest-ssd finds a session's own processes the
  same way (``pytest_ssd/proc/sweep.py``).
* **what a test host runs**: a test's sshd (``tests/sshd.py``) gives every login a
  tag of its own (sshd's ``SetEnv``): the fio servers, batch agents, lock holders
  and their fio that pytest-ssd starts there carry it (``Sshd.processes()``).
* **a test host's folders**: the host's ``mktemp`` records each folder it makes in
  the server's own folder (``Sshd.made()``, ``Sshd.left()``).
* **loop devices and everything else**: by the test's own ``tmp_path`` (a loop
  device's backing file, a path in a command line or a working directory).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

#: the environment variable that tags a test's processes (value: :func:`new_tag`)
TAG_ENV = "SSD_TESTS_TAG"


def new_tag() -> str:
    """A tag no other test has: this pid and 48 random bits."""
    return f"{os.getpid()}-{secrets.token_hex(6)}"


def untagged_env() -> dict[str, str]:
    """This environment without a test's tag: for servers that outlive the test starting them
    (an sshd, PostgreSQL), so they are not counted as that test's."""
    return {k: v for k, v in os.environ.items() if k != TAG_ENV}


def tagged(tag: str) -> dict[int, str]:
    """The processes carrying *tag* (never this one): pid -> command line, blank-separated."""
    needle = f"{TAG_ENV}={tag}".encode()
    own = str(os.getpid())
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == own:
            continue
        with contextlib.suppress(OSError):  # gone meanwhile
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip()
                found[int(entry.name)] = cmdline.decode(errors="replace")
    return found


def is_fio(cmdline: str) -> bool:
    """*cmdline* (as :func:`tagged` gives it) runs fio."""
    return Path(cmdline.partition(" ")[0]).name == "fio"


def kill_all(find: Callable[[], Iterable[int]], timeout: float = 30) -> None:
    """SIGKILL the processes *find* gives (the test's own), until it gives none or *timeout*."""
    deadline = time.monotonic() + timeout
    while (pids := list(find())) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def kill_tagged(tag: str, timeout: float = 30) -> None:
    """SIGKILL every process carrying *tag*, until none is left (or *timeout*)."""
    kill_all(lambda: tagged(tag), timeout)
