"""Result files written whole or not at all, and the one-line error when they cannot be.

Every file pytest-ssd writes for a reader (results.json, ``pytest-ssd -o``) goes
through a temporary file in the same folder and a rename: a full or read-only
filesystem, or a crash, leaves the previous file as it was and no partial one.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from pytest_ssd.errors import SsdError

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
#: what a filesystem says when it takes no more: full, or not writable
STORAGE_ERRNOS = _FULL | _NOT_WRITABLE


class StorageError(SsdError):
    """A result file cannot be written: full or read-only filesystem, no permission."""


def storage_error(path: Path, exc: OSError, elsewhere: str) -> StorageError:
    """The one line for *exc* writing *path*: what happened and what to do.

    *elsewhere* names the option that puts the file somewhere else (``--ssd-report-dir``).
    """
    reason = exc.strerror or type(exc).__name__
    if exc.errno in _FULL:
        todo = f"free space on its filesystem or give {elsewhere} another folder"
    elif exc.errno in _NOT_WRITABLE:
        todo = f"make its folder writable or give {elsewhere} another folder"
    else:
        todo = f"check the filesystem or give {elsewhere} another folder"
    return StorageError(f"cannot write {path}: {reason}: {todo}")


def storage_fault_of(exc: BaseException) -> StorageError | None:
    """What a test raised as a storage fault (full or read-only filesystem: its artifacts'),
    as one line; None for anything else."""
    if isinstance(exc, StorageError):
        return exc
    if not isinstance(exc, OSError) or exc.errno not in STORAGE_ERRNOS:
        return None
    where = Path(exc.filename) if isinstance(exc.filename, str) else Path("the test's artifacts")
    return storage_error(where, exc, "--ssd-report-dir")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace *path* by *data* through a temporary file beside it, synced, and a rename.

    Raises OSError; *path* then keeps its old content (or stays absent) and the
    temporary file is gone.
    """
    payload = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)  # the data on disk before the name: no empty file after a power loss
        finally:
            os.close(fd)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
