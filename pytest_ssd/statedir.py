"""The machine's own pytest-ssd state: one private folder per machine, never a report folder.

What must outlive a session that died (the ``--ssd-tune`` restore journal, the
scratch devices attached) is kept here, not beside the results: a report folder
may be writable by anyone, and what a later session reads back from it as root
must not be.  The folder is ``/var/lib/pytest-ssd`` for root (else
``$XDG_STATE_HOME/pytest-ssd``), or ``$PYTEST_SSD_STATE_DIR`` (the tests' own);
it must be a real folder owned by the user running pytest-ssd that nobody else
may write to (mode 0700 when pytest-ssd makes it).  Files in it are written
0600, atomically, and each live owner holds a BSD ``flock`` on its file
(:mod:`pytest_ssd.machine.filelock`): a file that can be locked belongs to a session
that is gone.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pytest_ssd.errors import ConfigError

STATE_DIR_ENV = "PYTEST_SSD_STATE_DIR"
ROOT_STATE_DIR = Path("/var/lib/pytest-ssd")


def _default() -> Path:
    if STATE_DIR_ENV in os.environ:
        return Path(os.environ[STATE_DIR_ENV])
    if os.geteuid() == 0:
        return ROOT_STATE_DIR
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pytest-ssd"


def state_dir(sub: str = "", base: Path | None = None) -> Path:
    """The private state folder (or its sub-folder *sub*), made and checked.

    *base* replaces the machine's folder (the tests' own).  Raises
    :class:`ConfigError` when it is a symlink, not a folder, owned by someone
    else or writable by group or others.
    """
    base = base or _default()
    folders = [base, base / sub] if sub else [base]
    for folder in folders:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(folder)
        except OSError as exc:
            raise ConfigError(
                f"cannot use pytest-ssd's state folder {folder}: {exc.strerror}"
                f" (set {STATE_DIR_ENV} to a private folder)"
            ) from None
        _check_private(folder, st)
    return folders[-1]


def _check_private(folder: Path, st: os.stat_result) -> None:
    problem = None
    if not stat.S_ISDIR(st.st_mode):
        problem = "is not a folder (a symlink or a file)"
    elif st.st_uid != os.geteuid():
        problem = f"is owned by uid {st.st_uid}, not by uid {os.geteuid()}"
    elif st.st_mode & 0o022:
        problem = f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    if problem:
        raise ConfigError(
            f"refusing pytest-ssd's state folder {folder}: it {problem}; make it a private"
            f" folder (chmod 700) or remove it"
        )


def write_private(path: Path, text: str) -> None:
    """Write *text* to *path* (mode 0600) atomically and durably: it must survive a crash."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dirfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def read_private(path: Path) -> str:
    """The text of a state file; :class:`ConfigError` unless it is ours and private (0600)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise ConfigError(
                f"refusing pytest-ssd's state file {path}: not a private file of uid"
                f" {os.geteuid()} (mode {stat.S_IMODE(st.st_mode):04o}, uid {st.st_uid})"
            )
        return fh.read()
