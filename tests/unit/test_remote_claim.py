"""The claim on a test host's device: what the lock's process answers, told in one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.remote_lock import RemoteLock
from pytest_ssd.errors import SafetyError


@dataclass
class _Ssh:
    where: str = "ssh root@lab-07"


@dataclass
class _Holder:
    """The lock's process: its marks so far, and its answer to ``claim``."""

    marks: dict[str, str]
    answer: dict[str, str] | None = None
    asked: list[str] = field(default_factory=list)

    def ask(self, line: str, answers: tuple[str, ...], timeout: float) -> dict[str, str] | None:
        self.asked.append(line)
        return self.answer


def _lock(holder: _Holder) -> RemoteLock:
    lock = RemoteLock(_Ssh(), "/dev/sdb", Path("unused"))  # type: ignore[arg-type]
    lock._holder = holder  # type: ignore[assignment]
    return lock


def test_a_host_without_perl_refuses_a_writing_session() -> None:
    holder = _Holder({"pid": "12", "noperl": "", "locked": ""})
    with pytest.raises(SafetyError) as refused:
        _lock(holder).claim()
    assert str(refused.value) == (
        "refusing to write to /dev/sdb on ssh root@lab-07: perl is missing there (pytest-ssd"
        " holds the device open O_EXCL with it for the session); install perl or use"
        " --ssd-readonly"
    )
    assert holder.asked == []


def test_a_device_in_use_on_the_host_is_refused() -> None:
    holder = _Holder({"pid": "12", "locked": ""}, {"unclaimed": "Device or resource busy"})
    with pytest.raises(SafetyError, match=r"/dev/sdb on ssh root@lab-07: it is in use"):
        _lock(holder).claim()
    assert holder.asked == ["claim"]


def test_a_claim_held_is_not_asked_again() -> None:
    answer: dict[str, Any] = {"claimed": ""}
    holder = _Holder({"pid": "12", "locked": ""}, answer)
    lock = _lock(holder)
    lock.claim()
    holder.marks.update(answer)  # Held.ask keeps the marks it saw
    lock.claim()
    assert holder.asked == ["claim"]
