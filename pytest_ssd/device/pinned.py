"""The device a session identified, confirmed and locked: every write must still reach it.

A name is not a device: a node can be re-made (``mknod``) to point at another device,
and a drive that drops off the bus leaves its ``/dev/sdX`` to the next disk found.
Before each fio run, purge and discard the session compares what the node is now —
its device number (the inode of a file) and the identity read from it (kind, size,
model, serial, a loop device's backing file) — with what was locked at start:
anything else is :class:`DeviceChanged`, which stops the run before a byte is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import SafetyError


class DeviceChanged(SafetyError):
    """The node no longer names the device locked and confirmed: the run stops."""


def _key_text(key: tuple[str, int, int]) -> str:
    kind, first, second = key
    return f"device number {first}:{second}" if kind == "block" else f"inode {second}"


@dataclass(frozen=True)
class Pinned:
    """What the session locked: the device's key (:func:`~.node.device_key`) and identity."""

    key: tuple[str, int, int]
    kind: str
    size_bytes: int
    model: str | None
    serial: str | None
    backing_file: str | None

    @classmethod
    def of(cls, key: tuple[str, int, int], identity: DeviceIdentity) -> Pinned:
        return cls(
            key,
            identity.kind,
            identity.size_bytes,
            identity.model,
            identity.serial,
            identity.backing_file,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pinned:
        kind, first, second = data["key"]
        return cls(**{**data, "key": (str(kind), int(first), int(second))})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def difference(self, now: Pinned) -> str | None:
        """What differs in *now* (the same node read again), else None."""
        if now.key != self.key:
            return f"it is {_key_text(now.key)} now, {_key_text(self.key)} when it was locked"
        for name in ("kind", "size_bytes", "model", "serial", "backing_file"):
            was, found = getattr(self, name), getattr(now, name)
            if was != found:
                return f"its {name.replace('_', ' ')} is {found!r} now, {was!r} when it was locked"
        return None

    def check(self, node: str, now: Pinned | None, why: str = "") -> None:
        """Raise :class:`DeviceChanged` unless *now* is this device (None: it could not be read)."""
        problem = why if now is None else self.difference(now)
        if problem is not None:
            raise changed(node, problem)


def changed(node: str, problem: str) -> DeviceChanged:
    """The stop of a run whose *node* no longer names the device locked (*problem*: how)."""
    return DeviceChanged(
        f"refusing to write to {node}: it is no longer the device identified, confirmed"
        f" and locked ({problem}); nothing more is written to it"
    )
