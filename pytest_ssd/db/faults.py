"""What SQLite and the filesystem report about the database, as one line saying what to do."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from pytest_ssd.errors import DatabaseError

_FULL = "free space on its filesystem, or give another database file"
_WRITABLE = (
    "make it and its folder writable (SQLite keeps -wal and -shm files beside it),"
    " or give another database file"
)
_DAMAGED = (
    "move it aside (the next run starts a new one); 'sqlite3 FILE .recover | sqlite3 NEW'"
    " saves what is still readable"
)
_NOTADB = "it is not an SQLite file: give another file"
_IOERR = "its device or filesystem failed (see dmesg), or give another file"
_OTHER = "check the file and its filesystem, or give another database file"
#: SQLite's primary result codes -> what to do
_TODO = {
    sqlite3.SQLITE_FULL: _FULL,
    sqlite3.SQLITE_READONLY: _WRITABLE,
    sqlite3.SQLITE_CANTOPEN: _WRITABLE,
    sqlite3.SQLITE_PERM: _WRITABLE,
    sqlite3.SQLITE_CORRUPT: _DAMAGED,
    sqlite3.SQLITE_NOTADB: _NOTADB,
    sqlite3.SQLITE_BUSY: "another process holds it locked: try again when that one is done",
    sqlite3.SQLITE_IOERR: _IOERR,
}
_OS_TODO = {
    errno.ENOSPC: _FULL,
    errno.EDQUOT: _FULL,
    errno.EROFS: _WRITABLE,
    errno.EACCES: _WRITABLE,
    errno.EPERM: _WRITABLE,
}


def database_error(path: Path, exc: sqlite3.Error | OSError) -> DatabaseError:
    """One line for *exc* on the database at *path*: the file, what happened, what to do.

    Everything committed before stays in the file: SQLite rolls back only the
    transaction that failed.
    """
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
        todo = _OS_TODO.get(exc.errno or 0, _OTHER)
    else:
        reason = str(exc) or type(exc).__name__
        code = getattr(exc, "sqlite_errorcode", None)
        todo = _TODO.get(code & 0xFF, _OTHER) if isinstance(code, int) else _OTHER
        if todo is _IOERR and _nearly_full(path):  # growing -shm on a full filesystem
            reason, todo = f"{reason} on a full filesystem", _FULL
    if todo is _DAMAGED:
        return damaged(path, reason)
    if todo is _NOTADB:
        return DatabaseError(f"{path}: not a pytest-ssd results database ({reason}): {todo}")
    return DatabaseError(f"{path}: {reason}: {todo}")


def _nearly_full(path: Path) -> bool:
    """Whether the database's filesystem has less than 1 MiB left for it."""
    try:
        fs = os.statvfs(path.parent)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < 1 << 20


def damaged(path: Path, reason: str) -> DatabaseError:
    """The database at *path* is corrupt: say so, and how to save what is readable."""
    return DatabaseError(f"{path}: the database is damaged ({reason}): {_DAMAGED}")
