"""The channel budget every process of a session shares (pytest_ssd/machine/slots.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from pytest_ssd.machine.slots import Slots

#: another process holding every slot until its input closes
HOLDER = """
import fcntl, os, sys
fds = [os.open(os.path.join(sys.argv[1], str(n)), os.O_RDWR) for n in range(int(sys.argv[2]))]
for fd in fds:
    fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_no_more_holders_than_slots_across_threads(tmp_path: Path) -> None:
    slots = Slots(tmp_path / "slots", 3)
    slots.prepare()
    running = most = 0
    counting = threading.Lock()

    def hold() -> None:
        nonlocal running, most
        with slots.take():
            with counting:
                running += 1
                most = max(most, running)
            time.sleep(0.05)
            with counting:
                running -= 1

    threads = [threading.Thread(target=hold) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most == 3


def test_a_slot_another_process_holds_is_waited_for(tmp_path: Path) -> None:
    slots = Slots(tmp_path / "slots", 2)
    slots.prepare()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(slots.folder), "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        taken = threading.Event()

        def take() -> None:
            with slots.take():
                taken.set()

        waiter = threading.Thread(target=take)
        waiter.start()
        assert not taken.wait(0.3), "a slot was taken while another process held them all"
    finally:
        holder.communicate("", timeout=30)  # it ends: the kernel lets its slots go
    assert taken.wait(10)
    waiter.join(10)


def test_slots_free_again_once_released(tmp_path: Path) -> None:
    slots = Slots(tmp_path / "slots", 2)
    slots.prepare()
    with ExitStack() as stack:
        numbers = {stack.enter_context(slots.take()) for _ in range(2)}
    assert numbers == {0, 1}
    with slots.take(), slots.take():
        pass
