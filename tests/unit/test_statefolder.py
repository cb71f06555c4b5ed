"""A machine's private state folder (pytest_ssd/machine/statefolder.py): this machine's in
this process, a test host's through sh commands, the same answers either way."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pytest_ssd.machine.filelock import FileLock, try_lock
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.machine.statefolder import (
    Busy,
    CommandFolder,
    HereFolder,
    Locked,
    Private,
    StateError,
    StateFolder,
    state_folder,
)

KINDS = ("here", "commands")


def folder_of(kind: str, base: Path, artifacts: Path) -> StateFolder:
    """The folder *base* as this process reaches it, or through commands (as on a host)."""
    if kind == "here":
        return HereFolder("tune", base)
    return CommandFolder(LOCAL, "tune", base, artifacts)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_this_machine_is_reached_in_process_a_host_by_commands(tmp_path: Path) -> None:
    assert isinstance(state_folder(LOCAL, "tune", tmp_path), HereFolder)


def test_the_lock_reads_the_file_under_it_and_excludes_another(kind: str, tmp_path: Path) -> None:
    base = tmp_path / "state"
    files = folder_of(kind, base, tmp_path / "art")
    assert files.read("journal") == Private(), "no file yet"
    files.write("journal", '{"pid": 1}')
    assert (base / "journal").stat().st_mode & 0o777 == 0o600
    taken = files.lock("tune.lock", "journal")
    assert isinstance(taken, Locked) and taken.folder == str(base)
    assert taken.found == Private('{"pid": 1}\n' if kind == "commands" else '{"pid": 1}')
    assert (base / "tune.lock").stat().st_mode & 0o777 == 0o600
    assert try_lock(base / "tune.lock") is None, "held for as long as the session"
    for other in KINDS:
        busy = folder_of(other, base, tmp_path / "art2").lock("tune.lock", "journal")
        assert isinstance(busy, Busy) and busy.folder == str(base)
        assert [pid for pid, _ in busy.holders] == [taken.pid]
    files.release()
    files.release()  # idempotent
    fd = try_lock(base / "tune.lock")
    assert fd is not None, "let go"
    os.close(fd)
    files.remove("journal")
    files.remove("journal")
    assert files.read("journal") == Private()


def test_a_file_others_could_read_or_write_is_refused_alike(tmp_path: Path) -> None:
    """Each refusal reads the same here and through commands."""
    base = tmp_path / "state"
    base.mkdir(mode=0o700)
    journal = base / "journal"
    cases = {
        "open": lambda: journal.chmod(0o644),
        "owned": lambda: (journal.chmod(0o600), os.chown(journal, 65534, 65534)),
        "link": lambda: (journal.unlink(), journal.symlink_to(tmp_path / "elsewhere")),
        "fifo": lambda: (journal.unlink(), os.mkfifo(journal, 0o600)),
    }
    journal.write_text("{}")
    for name, make in cases.items():
        make()
        said = [folder_of(kind, base, tmp_path / "art").read("journal") for kind in KINDS]
        assert said[0] == said[1] and said[0].refused and said[0].text is None, name
    assert said[0].refused == f"{journal} is not a file"


def test_a_folder_others_may_write_is_refused_alike(tmp_path: Path) -> None:
    base = tmp_path / "state"
    base.mkdir(mode=0o700)
    base.chmod(0o770)
    said = []
    for kind in KINDS:
        with pytest.raises(StateError) as info:
            folder_of(kind, base, tmp_path / "art").lock("tune.lock", "journal")
        said.append(str(info.value))
    assert (
        said[0]
        == said[1]
        == (
            f"refusing pytest-ssd's state folder {base}: it is writable by others (mode 0770);"
            " make it a private folder (chmod 700) or remove it"
        )
    )


def test_a_file_lock_is_exclusive_across_processes_and_goes_with_its_holder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "entry.lock"
    holder = subprocess.Popen(["flock", "-n", "-o", str(path), "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while str(holder.pid) not in Path("/proc/locks").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        lock = FileLock(path)
        assert not lock.acquire() and not lock.held
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert lock.acquire() and lock.held and lock.acquire(), "taken once its holder ended"
    lock.release()
    lock.release()
    assert not lock.held


def test_a_file_lock_never_follows_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target"
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        FileLock(tmp_path / "link").acquire()
    assert not target.exists(), "nothing created through the link"


def test_a_holder_named_twice_by_proc_locks_is_one_holder() -> None:
    from pytest_ssd.machine.locks import flock_holders  # noqa: PLC0415

    lines = [
        "1: FLOCK  ADVISORY  WRITE 20029 00:05:18 0 EOF",
        "2: FLOCK  ADVISORY  WRITE 20029 00:05:18 0 EOF",
        "2: -> FLOCK  ADVISORY  WRITE 311 00:05:18 0 EOF",
        "3: FLOCK  ADVISORY  WRITE 77 00:05:19 0 EOF",
    ]
    assert flock_holders(lines, os.makedev(0, 5), 18) == [20029]
