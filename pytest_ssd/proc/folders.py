"""Private folders named for the process that made them, removed once it is gone.

A session's folders in ``/tmp`` (the handoff to xdist's workers, the control sockets of
its test hosts) are removed when it ends; a session killed (``kill -9``) cannot. Each
is named ``<prefix><pid>-<random>``, and a session making one first removes those of
its kind whose process is gone (:func:`sweep_stale`): one mechanism for every such
folder.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path


def pid_folder(base: Path, prefix: str) -> Path:
    """A new 0700 folder in *base* named for this process; the folders of *prefix* left
    there by processes that are gone are removed first."""
    sweep_stale(base, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base))


def sweep_stale(base: Path, prefix: str) -> list[Path]:
    """Remove the folders ``<prefix><pid>-*`` in *base* whose process is gone (this user's
    own folders only, never a link); the ones removed."""
    removed = []
    for found in base.glob(f"{prefix}*-*"):
        pid = found.name[len(prefix) :].partition("-")[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        try:
            status = found.lstat()
        except OSError:  # removed meanwhile (another session's sweep)
            continue
        if stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid():
            shutil.rmtree(found, ignore_errors=True)
            removed.append(found)
    return removed
