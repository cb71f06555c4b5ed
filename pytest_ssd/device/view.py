"""What a machine's kernel says about its block devices, as the guard reads it (:class:`View`).

The guard (:mod:`.guard`) reads a device's machine through a :class:`View`, so that it
judges a device on this machine and one on a test host alike: the view is one look the
machine took (:meth:`~pytest_ssd.machine.machine.Machine.facts`: read in place here, one
snapshot over SSH on a test host), with what the session knows (the devices it holds
``O_EXCL``, the identities read with the look).  Its records are :class:`Node` for what
``stat`` says of a path (symlinks followed) and :class:`Block` for a block device's sysfs
entry.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pytest_ssd.device import openers
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.machine.facts import Block, Facts, Node
from pytest_ssd.machine.machine import Machine

__all__ = ["Block", "Node", "View"]


@dataclass
class View:
    """The block-device facts of one machine, as of one look (*facts*)."""

    facts: Facts
    #: device numbers this session holds ``O_EXCL``: an exclusive open of them fails by
    #: our own claim, and no one else can hold or mount them
    claimed: frozenset[int] = frozenset()
    #: identities of block devices read with these facts, by node (one copy of a machine's
    #: sysfs for all its devices: :func:`~.identity.identify_from`)
    identified: dict[str, DeviceIdentity] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        machine: Machine,
        path: str,
        *,
        write: bool = False,
        ours: Iterable[int] = (),
        claimed: frozenset[int] = frozenset(),
    ) -> View:
        """*machine*'s facts about *path* now (*ours*: the pids there that are the session's)."""
        return cls.all(machine, {path: tuple(ours)}, write=write, claimed=claimed)[path]

    @classmethod
    def all(
        cls,
        machine: Machine,
        targets: Mapping[str, Iterable[int]],
        *,
        write: bool,
        claimed: frozenset[int] = frozenset(),
    ) -> dict[str, View]:
        """*machine*'s facts about each of *targets* now, in one look."""
        looks = machine.facts(targets, write=write)
        return {target: cls(facts, claimed) for target, facts in looks.items()}

    @property
    def where(self) -> str:
        """Where the facts come from, for messages ("" on this machine)."""
        return self.facts.where

    def stat(self, path: str) -> Node | None:
        """``stat`` of *path*, symlinks followed; None when it cannot be reached."""
        return self.facts.stat(path)

    def realpath(self, path: str) -> str:
        """*path* with every symlink resolved (itself when it does not exist)."""
        return self.facts.realpath(path)

    def blocks(self) -> Mapping[str, Block]:
        """Every block device by kernel name."""
        return self.facts.blocks()

    def mountinfo(self) -> list[str]:
        """The lines of ``/proc/self/mountinfo``."""
        return self.facts.mountinfo()

    def swaps(self) -> list[str]:
        """The lines of ``/proc/swaps`` (its heading included)."""
        return self.facts.swaps()

    def exclusive_open(self, path: str) -> tuple[bool, str | None]:
        """(busy, error) of an exclusive open of block device *path*, closed at once."""
        return self.facts.exclusive_open(path)

    def signatures(self, path: str) -> tuple[tuple[str, ...], str | None]:
        """Filesystem, partition-table, RAID, LVM and swap signatures on *path*, or why not."""
        return self.facts.signatures(path)

    def openers(self, devices: Iterable[int], files: Iterable[tuple[int, int]]) -> tuple[str, ...]:
        """Processes (not pytest-ssd's own) holding one of *devices* or *files* open.

        udev's probes open a device for a moment after a write, so a process must be seen
        in every one of :data:`~.openers.SCANS` scans to count; nothing found in the first
        ends at once (the common case costs one scan).
        """
        wanted, mapped = set(devices), set(files)
        seen = self.facts.holding(wanted, mapped, again=False)
        for _ in range(openers.SCANS - 1):
            if not seen:
                break
            time.sleep(openers.SCAN_PAUSE_S)
            seen &= self.facts.holding(wanted, mapped, again=True)
        commands = self.facts.commands(sorted(seen))
        return tuple(openers.describe(pid, commands.get(pid, "")) for pid in sorted(seen))

    def block_of(self, rdev: int) -> Block | None:
        """The block device with device number *rdev*."""
        return next((b for b in self.blocks().values() if b.dev == rdev), None)

    def kernel_node(self, rdev: int) -> str | None:
        """``/dev/<DEVNAME>`` of block device *rdev* when that node is this device, else None."""
        block = self.block_of(rdev)
        if block is None or block.devname is None:
            return None
        node = f"/dev/{block.devname}"
        found = self.stat(node)
        return node if found is not None and found.kind == "block" and found.rdev == rdev else None
