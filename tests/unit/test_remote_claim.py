"""The claim on a test host's device: what the lock's process answers, told in one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_ssd.device.node import DeviceLock
from pytest_ssd.errors import SafetyError
from pytest_ssd.machine.hostlocks import HostLocks
from pytest_ssd.machine.ssh import Mark

NODES = ("/dev/sdb", "/dev/sdc", "/dev/sdd")


@dataclass
class _Ssh:
    where: str = "ssh root@lab-07"


@dataclass
class _Holder(HostLocks):
    """The host's lock process: with or without perl, and its answer to ``claim``."""

    answer: Mark | None = None
    asked: list[str] = field(default_factory=list)

    def ask(self, do: str, node: str, answers: tuple[str, ...], timeout: float) -> Mark | None:
        self.asked.append(f"{do} {node}")
        return self.answer


def _holder(perl: bool = True, answer: Mark | None = None) -> _Holder:
    return _Holder(_Ssh(), Path("unused"), pid=12, perl=perl, answer=answer)  # type: ignore[arg-type]


def _lock(holder: _Holder) -> DeviceLock:
    return DeviceLock(holder, "/dev/sdb", pid=12)


def test_a_host_without_perl_refuses_a_writing_session() -> None:
    holder = _holder(perl=False)
    with pytest.raises(SafetyError) as refused:
        _lock(holder).claim()
    assert str(refused.value) == (
        "refusing to write to /dev/sdb on ssh root@lab-07: perl is missing there (pytest-ssd"
        " holds the device open O_EXCL with it for the session); install perl or use"
        " --ssd-readonly"
    )
    assert holder.asked == []


def test_a_device_in_use_on_the_host_is_refused() -> None:
    holder = _holder(answer=Mark("unclaimed", "/dev/sdb", "Device or resource busy"))
    with pytest.raises(SafetyError, match=r"/dev/sdb on ssh root@lab-07: it is in use"):
        _lock(holder).claim()
    assert holder.asked == ["claim /dev/sdb"]


def test_a_claim_held_is_not_asked_again() -> None:
    holder = _holder(answer=Mark("claimed", "/dev/sdb", ""))
    lock = _lock(holder)
    lock.claim()
    lock.claim()
    assert holder.asked == ["claim /dev/sdb"]


@dataclass
class _Held:
    """The lock process's channel: what was written, and answers in the order asked."""

    written: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)

    def send(self, line: str) -> bool:
        self.written.append(line)
        return True

    def answer(self, key: str, answers: tuple[str, ...], timeout: float) -> Mark:
        self.answered.append(key)
        return Mark(answers[0], key, "")

    def reply(self, line: str, key: str, answers: tuple[str, ...], timeout: float) -> Mark:
        self.send(line)
        return self.answer(key, answers, timeout)


def test_claims_sent_ahead_are_written_once_and_answered_in_order() -> None:
    held = _Held()
    host = HostLocks(_Ssh(), Path("unused"), pid=12)  # type: ignore[arg-type]
    host._holder = held  # type: ignore[assignment]
    locks = [DeviceLock(host, node, pid=12) for node in NODES]
    for lock in locks:
        lock.claim_ahead()
    assert held.written == [f"claim {node}" for node in NODES], "all out before any answer"
    for lock in locks:
        lock.claim()
    assert held.written == [f"claim {node}" for node in NODES], "none written twice"
    assert held.answered == list(NODES)
    locks[0].release()
    assert held.written[-1] == f"release {NODES[0]}", "a question not sent ahead is written"
    locks[1].claim_ahead()  # claimed already: nothing more to send
    assert held.written[-1] == f"release {NODES[0]}"


def test_a_node_made_again_since_it_was_locked_is_not_claimed() -> None:
    holder = _holder(answer=Mark("changed", "/dev/sdb", ""))
    with pytest.raises(SafetyError) as refused:
        _lock(holder).claim()
    assert str(refused.value) == (
        "refusing to write to /dev/sdb on ssh root@lab-07: it changed while it was locked"
    )
