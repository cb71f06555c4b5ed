"""The handoff of devices opened while xdist starts its workers (pytest_ssd.session.handoff):
the controller's thread, the file a worker waits for, a refusal and an interruption."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import ConfigError, SafetyError
from pytest_ssd.proc.folders import sweep_stale
from pytest_ssd.proc.pauses import pauses
from pytest_ssd.session.handoff import PREFIX, Opening, wait_for


def _waiter(path: str, out: Any) -> None:
    out.put(wait_for(Path(path)))  # exits without a word when the run is refused


def test_a_worker_waits_for_the_devices_and_gets_them_whole() -> None:
    release = threading.Event()
    opening = Opening.start(release.wait)
    try:
        got: list[dict[str, Any]] = []
        worker = threading.Thread(target=lambda: got.append(wait_for(opening.path)))
        worker.start()
        time.sleep(0.1)
        assert not got, "nothing to read before the devices are open"
        release.set()
        opening.join()
        opening.hand_over({"run_id": "r1", "duts": [{"id": "loop0"}]})
        worker.join(5)
        assert got == [{"run_id": "r1", "duts": [{"id": "loop0"}]}]
        opening.hand_over({"run_id": "other"})  # written once: a second handoff changes nothing
        assert json.loads(opening.path.read_text())["run_id"] == "r1"
        assert not list(opening.folder.glob(".*")), "written by a rename: no half file is left"
    finally:
        opening.remove()
    assert not opening.folder.exists()


def test_the_refusal_the_thread_raised_is_raised_by_join() -> None:
    def refuse() -> None:
        raise SafetyError("refusing /dev/loop0: mounted at /")

    opening = Opening.start(refuse)
    try:
        deadline = time.monotonic() + 5
        while not opening.failed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert opening.failed, "a failed opening is seen before join (no more workers started)"
        with pytest.raises(SafetyError, match="mounted at /"):
            opening.join()
    finally:
        opening.remove()


def test_a_refused_run_ends_its_waiting_workers_at_once(tmp_path: Path) -> None:
    opening = Opening.start(lambda: None)
    try:
        queue: Any = multiprocessing.get_context("fork").Queue()
        worker = multiprocessing.get_context("fork").Process(
            target=_waiter, args=(str(opening.path), queue)
        )
        worker.start()
        time.sleep(0.2)
        assert worker.is_alive(), "it waits while the devices are opened"
        started = time.monotonic()
        opening.cancel()  # the run is refused, or interrupted, before the handoff
        worker.join(5)
        assert worker.exitcode == 0, "it exits quietly: the controller says why"
        assert time.monotonic() - started < 1.0
        assert queue.empty(), "no input: it opened nothing"
        assert json.loads(opening.path.read_text()) is None
    finally:
        opening.remove()


def test_cancel_waits_for_the_thread_before_the_session_is_closed() -> None:
    finished: list[float] = []

    def slow() -> None:
        time.sleep(0.3)
        finished.append(time.monotonic())

    opening = Opening.start(slow)
    try:
        opening.cancel()
        assert finished and finished[0] <= time.monotonic(), "the devices' thread has ended"
    finally:
        opening.remove()


def test_a_worker_whose_handoff_folder_is_gone_says_so_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"handoff .* is gone"):
        wait_for(tmp_path / "removed" / "devices.json")


def test_a_handoff_that_is_not_an_input_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "devices.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="is not its input"):
        wait_for(path)


def test_pauses_start_short_and_stop_growing_at_the_longest() -> None:
    waits = pauses(0.02)
    got = [next(waits) for _ in range(8)]
    assert got[:5] == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert got[5:] == [0.02, 0.02, 0.02]
    assert next(pauses(0.0005)) == 0.0005, "never longer than the longest"


def test_the_handoff_of_a_killed_controller_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead = multiprocessing.get_context("fork").Process(target=lambda: None)
    dead.start()
    dead.join()
    gone = tmp_path / f"{PREFIX}{dead.pid}-abc"
    alive = tmp_path / f"{PREFIX}{os.getpid()}-def"
    other = tmp_path / "pytest-ssd-other-1-x"
    for folder in (gone, alive, other):
        folder.mkdir()
        (folder / "devices.json").write_text("null")
    # a link of that name is never followed, and another user's folder is left alone
    link = tmp_path / f"{PREFIX}{dead.pid}-link"
    link.symlink_to(other)
    theirs = tmp_path / f"{PREFIX}{dead.pid}-theirs"
    if os.geteuid() == 0:  # only root can give a folder to nobody
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
    assert sweep_stale(tmp_path, PREFIX) == [gone]
    assert not gone.exists() and alive.is_dir() and other.is_dir()
    assert link.is_symlink() and (other / "devices.json").exists()
    assert theirs.is_dir() or os.geteuid() != 0


def test_a_handoff_folder_is_named_for_its_controller() -> None:
    opening = Opening.start(lambda: None)
    try:
        assert opening.folder.name.startswith(f"{PREFIX}{os.getpid()}-")
        assert opening.folder.stat().st_mode & 0o777 == 0o700
    finally:
        opening.remove()
