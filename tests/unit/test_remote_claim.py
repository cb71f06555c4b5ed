"""The claim on a test host's device: what the lock's process answers, told in one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_ssd.device.remote_lock import HostLocks, RemoteLock
from pytest_ssd.errors import SafetyError
from pytest_ssd.machine.ssh import Mark

NODES = ("/dev/sdb", "/dev/sdc", "/dev/sdd")


@dataclass
class _Ssh:
    where: str = "ssh root@lab-07"


@dataclass
class _Holder:
    """The host's lock process: with or without perl, and its answer to ``claim``."""

    perl: bool = True
    answer: Mark | None = None
    asked: list[str] = field(default_factory=list)

    def ask(self, do: str, node: str, answers: tuple[str, ...], timeout: float) -> Mark | None:
        self.asked.append(f"{do} {node}")
        return self.answer


def _lock(holder: _Holder) -> RemoteLock:
    return RemoteLock(_Ssh(), "/dev/sdb", Path("unused"), host=holder, pid=12)  # type: ignore[arg-type]


def test_a_host_without_perl_refuses_a_writing_session() -> None:
    holder = _Holder(perl=False)
    with pytest.raises(SafetyError) as refused:
        _lock(holder).claim()
    assert str(refused.value) == (
        "refusing to write to /dev/sdb on ssh root@lab-07: perl is missing there (pytest-ssd"
        " holds the device open O_EXCL with it for the session); install perl or use"
        " --ssd-readonly"
    )
    assert holder.asked == []


def test_a_device_in_use_on_the_host_is_refused() -> None:
    holder = _Holder(answer=Mark("unclaimed", "/dev/sdb", "Device or resource busy"))
    with pytest.raises(SafetyError, match=r"/dev/sdb on ssh root@lab-07: it is in use"):
        _lock(holder).claim()
    assert holder.asked == ["claim /dev/sdb"]


def test_a_claim_held_is_not_asked_again() -> None:
    holder = _Holder(answer=Mark("claimed", "/dev/sdb", ""))
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
    locks = [RemoteLock(_Ssh(), node, Path("unused"), host=host, pid=12) for node in NODES]  # type: ignore[arg-type]
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
