"""A machine's private state folder: a lock held on a file there, its private files.

The folder follows :mod:`pytest_ssd.statedir`'s rules on every machine: ``SUB`` in
``$PYTEST_SSD_STATE_DIR``, else ``/var/lib/pytest-ssd`` for root, else
``$XDG_STATE_HOME/pytest-ssd`` (or a folder given whole: the tests' own), each a real
folder of the user nobody else may write to; a file there is read only when it is a
regular file of the user that nobody else may read.  Its lock is an exclusive,
non-blocking ``flock`` on a file there, held for the session; the file read under it
(a journal) is read in the same step.

This machine's folder is reached in this process (:class:`HereFolder`: no program, the
lock a :class:`~pytest_ssd.machine.filelock.FileLock`); a test host's by short ``sh``
commands there (:class:`CommandFolder`, the same checks), its lock held by util-linux
``flock`` for as long as a command runs (:class:`~pytest_ssd.machine.flock.HostFlock`).
:func:`state_folder` gives the one the machine has.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import ConfigError, SsdError
from pytest_ssd.machine.facts import command_here
from pytest_ssd.machine.filelock import FileLock
from pytest_ssd.machine.flock import CONFLICT, HostFlock, hold_script
from pytest_ssd.machine.locks import lock_holders
from pytest_ssd.machine.machine import LocalMachine, Machine
from pytest_ssd.machine.ssh import MARK, marks
from pytest_ssd.statedir import state_dir, write_private

TIMEOUT_S = 60.0


class StateError(SsdError):
    """The state folder or a file there cannot be used (the message says why)."""


@dataclass(frozen=True)
class Private:
    """A private file of the folder as read: its *text* (None: there is none), or why it
    was *refused* (not a regular file, someone else's, or readable by others)."""

    text: str | None = None
    refused: str = ""


@dataclass(frozen=True)
class Locked:
    """The lock, taken: the *folder* as the machine names it, the holder there (*pid*, its
    start time *started*) and the file read under the lock (*found*)."""

    folder: str
    pid: int
    started: str | None
    found: Private


@dataclass(frozen=True)
class Busy:
    """The lock, held by another: the *folder*, and each holder (pid, command line) the
    machine's ``/proc/locks`` names."""

    folder: str
    holders: list[tuple[int, str]]


class StateFolder(ABC):
    """One machine's private state folder *sub* (or *base*, given whole)."""

    @abstractmethod
    def lock(self, name: str, read: str) -> Locked | Busy:
        """Take the lock on file *name* there, and read file *read* under it.

        Raises :class:`StateError` when the folder is refused or the lock cannot be tried.
        """

    @abstractmethod
    def release(self) -> None:
        """Let the lock go (idempotent)."""

    @abstractmethod
    def read(self, name: str) -> Private:
        """File *name* there (:class:`StateError` when the folder is refused)."""

    @abstractmethod
    def write(self, name: str, text: str) -> None:
        """Write *text* to file *name* there (0600), atomically and durably."""

    @abstractmethod
    def remove(self, name: str) -> None:
        """Remove file *name* there, if it is there."""


def state_folder(
    machine: Machine, sub: str, base: Path | None = None, artifacts: Path | None = None
) -> StateFolder:
    """*machine*'s private state folder *sub* (*base*: a folder given whole); *artifacts*:
    where a lock held by a command there keeps its output (a temporary folder if None)."""
    if isinstance(machine, LocalMachine):
        return HereFolder(sub, base)
    return CommandFolder(machine, sub, base, artifacts)


# --- this machine: in this process ----------------------------------------------------------


def _started() -> str | None:
    """This process's start time in clock ticks since boot (the 22nd field of its stat)."""
    try:
        return Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class HereFolder(StateFolder):
    """This machine's folder, in this process: :mod:`pytest_ssd.statedir`'s checks, the
    lock a :class:`FileLock`."""

    sub: str
    base: Path | None = None
    _lock: FileLock | None = field(default=None, repr=False)

    def _folder(self) -> Path:
        try:
            return state_dir(base=self.base) if self.base else state_dir(self.sub)
        except ConfigError as exc:
            raise StateError(str(exc)) from None

    def lock(self, name: str, read: str) -> Locked | Busy:
        folder = self._folder()
        lock = FileLock(folder / name)
        try:
            taken = lock.acquire()
        except OSError as exc:
            raise StateError(f"{lock.path}: {exc.strerror}") from None
        if not taken:
            try:
                pids = lock_holders(lock.path.stat())
            except OSError:
                pids = []
            return Busy(str(folder), [(pid, command_here(pid)) for pid in pids])
        self._lock = lock
        try:
            found = self.read(read)
        except BaseException:
            self.release()
            raise
        return Locked(str(folder), os.getpid(), _started(), found)

    def release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.release()

    def read(self, name: str) -> Private:
        path = self._folder() / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return Private()
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a symlink
                return Private(refused=f"{path} is not a file")
            raise StateError(f"{path}: {exc.strerror}") from None
        with os.fdopen(fd, errors="replace") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return Private(refused=f"{path} is not a file")
            if st.st_uid != os.geteuid():
                return Private(refused=f"{path} is owned by uid {st.st_uid}")
            if st.st_mode & 0o077:
                mode = f"{stat.S_IMODE(st.st_mode):o}"
                return Private(refused=f"{path} is not private (mode {mode}): check and delete it")
            return Private(fh.read())

    def write(self, name: str, text: str) -> None:
        path = self._folder() / name
        try:
            write_private(path, text)
        except OSError as exc:
            raise StateError(f"{path}: {exc.strerror}") from None

    def remove(self, name: str) -> None:
        path = self._folder() / name
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StateError(f"{path}: {exc.strerror}") from None


# --- a test host: sh commands there -----------------------------------------------------------

#: ``sh -c SCRIPT sh BASE SUB ...``: the folder ``$d`` (*BASE* if given, else *SUB* in the
#: machine's state folder) made and checked: the state folder and it, real folders of the
#: user, private
PRIVATE = """
refuse() {
  echo "refusing pytest-ssd's state folder $1: it $2; make it a private folder (chmod 700)" \\
    "or remove it" >&2
  exit 3
}
check() {
  (umask 077; mkdir -p "$1") || exit 3
  [ -d "$1" ] && [ ! -L "$1" ] || refuse "$1" "is not a folder (a symlink or a file)"
  set -- "$1" $(stat -c '%u %a' "$1")
  [ "$2" = "$(id -u)" ] || refuse "$1" "is owned by uid $2, not by uid $(id -u)"
  case $3 in
    *[2367]?|*[2367]) refuse "$1" "is writable by others (mode $(printf %04d "$3"))" ;;
  esac
}
d=$1
if [ -z "$d" ]; then
  b=${PYTEST_SSD_STATE_DIR:-}
  if [ -z "$b" ]; then
    b=/var/lib/pytest-ssd
    [ "$(id -u)" = 0 ] || b="${XDG_STATE_HOME:-$HOME/.local/state}/pytest-ssd"
  fi
  check "$b"
  d="$b/$2"
fi
check "$d"
"""
#: the file ``$f``, if there is one, after a ``file`` mark: a regular file of the user,
#: private (nobody else may read it either); else why it is refused (sh text with no
#: single quote: the lock's holder runs it)
SHOW = f"""
if [ -e "$f" ] || [ -L "$f" ]; then
  if [ ! -f "$f" ] || [ -L "$f" ]; then echo "{MARK}refused $f is not a file"
  else
    set -- $(stat -c "%u %a" "$f")
    if [ "$1" != "$(id -u)" ]; then echo "{MARK}refused $f is owned by uid $1"
    else
      case $2 in
        *[1-7]?|*[1-7]) echo "{MARK}refused $f is not private (mode $2): check and delete it" ;;
        *) echo "{MARK}file"; cat -- "$f"; echo; echo "{MARK}end" ;;
      esac
    fi
  fi
fi
"""
#: ``sh -c HOLD sh BASE SUB LOCK FILE``: the lock on ``$d/LOCK`` (a private file), its
#: holder's pid and start time there, and ``$d/FILE`` read under it; when a live session
#: holds it, each holder ``/proc/locks`` names, with its command
HOLD = f"""{PRIVATE}
umask 077
echo "{MARK}dir $d"
if ! flock -n -o "$d/$3" true; then
  i=$(stat -c %i "$d/$3")
  while read -r n kind advisory mode pid file rest; do
    [ "$kind" = FLOCK ] && [ "${{file##*:}}" = "$i" ] || continue
    echo "{MARK}holder $pid $(tr '\\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
  done < /proc/locks
  exit {CONFLICT}
fi
f="$d/$4"
export d f
{hold_script('"$d/$3"', then=SHOW)}"""
#: ``sh -c READ sh BASE SUB FILE``
READ = f'{PRIVATE}\nf="$d/$3"\n{SHOW}'
#: ``sh -c WRITE sh BASE SUB FILE`` with the text on its input: durable before it counts
WRITE = f"""{PRIVATE}
t="$d/.$3.$$.tmp"
(umask 077; cat > "$t") && sync && mv -f "$t" "$d/$3" && sync
"""
#: ``sh -c DROP sh BASE SUB FILE``
DROP = f'{PRIVATE}\nrm -f "$d/$3"'


def _shown(text: str) -> Private:
    """The file :data:`SHOW` printed in *text*."""
    said = marks(text)
    if "refused" in said:
        return Private(refused=said["refused"])
    if "file" not in said:
        return Private()
    return Private(text.split(f"{MARK}file\n", 1)[1].rsplit(f"{MARK}end", 1)[0])


def _holders(text: str) -> list[tuple[int, str]]:
    """The holders :data:`HOLD` printed in *text*."""
    found: list[tuple[int, str]] = []
    for line in text.splitlines():
        if line.startswith(f"{MARK}holder "):
            pid, _, command = line.split(" ", 1)[1].partition(" ")
            if pid.isdecimal() and int(pid) not in (p for p, _ in found):
                found.append((int(pid), command.strip()))  # a holder once, however often named
    return found


@dataclass
class CommandFolder(StateFolder):
    """A test host's folder, through ``sh`` commands there; the lock held by one."""

    machine: Machine
    sub: str
    base: Path | None = None
    artifacts: Path | None = None
    _lock: HostFlock | None = field(default=None, repr=False)
    _own_artifacts: bool = False

    def _args(self, *names: str) -> tuple[str, ...]:
        """The scripts' arguments: the folder given whole (else ""), *sub*, *names*."""
        return (str(self.base or ""), self.sub, *names)

    def _run(self, script: str, name: str, stdin: str | None = None) -> str:
        argv = ["sh", "-c", script, "sh", *self._args(name)]
        done = self.machine.run(argv, timeout=TIMEOUT_S, stdin=stdin, name=self.sub)
        if done.returncode != 0:
            raise StateError(done.last_error_line())
        return done.stdout

    def lock(self, name: str, read: str) -> Locked | Busy:
        if self.artifacts is None:
            self.artifacts = Path(tempfile.mkdtemp(prefix=f"ssd-{self.sub}-"))
            self._own_artifacts = True
        args = self._args(name, read)
        lock = HostFlock(self.machine, HOLD, args, self.artifacts, f"{self.sub}-lock")
        failed = lock.acquire(TIMEOUT_S)
        if failed is None and lock.held is not None:
            self._lock = lock
            said = lock.marks
            found = _shown(lock.held.channel.out.read_text())
            return Locked(said["dir"], int(said.get("pid") or 0), said.get("started"), found)
        self._drop_artifacts()
        if failed is not None and failed.returncode == CONFLICT:
            return Busy(marks(failed.stdout).get("dir", ""), _holders(failed.stdout))
        raise StateError(failed.last_error_line() if failed else "the lock was not held")

    def _drop_artifacts(self) -> None:
        if self._own_artifacts and self.artifacts is not None:
            shutil.rmtree(self.artifacts, ignore_errors=True)
            self.artifacts, self._own_artifacts = None, False

    def release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.release()
        self._drop_artifacts()

    def read(self, name: str) -> Private:
        return _shown(self._run(READ, name))

    def write(self, name: str, text: str) -> None:
        self._run(WRITE, name, stdin=text)

    def remove(self, name: str) -> None:
        self._run(DROP, name)
