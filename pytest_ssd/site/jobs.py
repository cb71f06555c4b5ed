"""Every device job on a device's machine, written once: the site of any machine.

:class:`MachineSite` resolves, guards, locks, identifies and summarizes a device through
its :class:`~pytest_ssd.machine.machine.Machine` alone: the guard's view is the look the
machine takes (:meth:`~pytest_ssd.machine.machine.Machine.facts`), the identities and
links are read from the ``/sys`` it gives (:meth:`~pytest_ssd.machine.machine.Machine.sysfs`:
its own, or a copy), the lock is held by its one lock holder
(:meth:`~pytest_ssd.machine.machine.Machine.locks`, closed whole with the session's
machines), labels name the machine as it names itself, fio runs where the machine lets it
(:func:`~pytest_ssd.fio.runners.runner_on`).  Whatever the machine, one look at it serves
all its devices before their locks and one after.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pytest_ssd.device.identity import (
    DeviceIdentity,
    identify_file,
    identify_from,
    identify_on,
    sysfs_roots,
)
from pytest_ssd.device.node import DeviceLock, canonical
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import READS as SUMMARY_READS
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.device.view import Node, View
from pytest_ssd.errors import DeviceError, SafetyError, SsdError
from pytest_ssd.fio.runners import FioRunner, runner_on, runs_live
from pytest_ssd.fio.server import FioServers
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source, find_source
from pytest_ssd.machine.address import HostAddress, spelled_apart
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.machines import Machines
from pytest_ssd.machine.snapshot import BLOCK_NAME
from pytest_ssd.site.base import Key, Site, Tuning
from pytest_ssd.state.accounting import Counters, counters_on
from pytest_ssd.state.progress import Progress, feeding


def key_of(found: Node) -> Key:
    """What makes two targets of one machine the same (:func:`~.node.device_key`), from what
    its look found: the device number of a block device, else the inode."""
    if found.kind == "block":
        return ("block", os.major(found.rdev), os.minor(found.rdev))
    return ("file", found.dev, found.ino)


@dataclass
class HeldLock:
    """A device's lock on its machine (:class:`~pytest_ssd.device.node.DeviceLock`)."""

    held: DeviceLock
    #: the device's key as the machine's look found it, when the holder does not say
    key: Key
    #: the process holding it there (a test host's view counts it as the session's own)
    pid: int | None = None

    def pinned(self, identity: DeviceIdentity) -> Pinned:
        # of the open descriptor where the holder says, not of the name
        kind = self.key[0].rpartition(" ")[2]
        return Pinned.of(self.held.key or (kind, self.key[1], self.key[2]), identity)

    def claim(self) -> None:
        self.held.claim()

    def claim_ahead(self) -> None:
        self.held.claim_ahead()


@dataclass
class MachineSite(Site):
    """A device's machine and every device job there, through the machine alone."""

    #: this process's machines: the device's is reached through them, on first use
    machines: Machines
    #: this process's fio servers (on a machine fio is no child process of this one on)
    servers: FioServers
    address: HostAddress | None = None

    @property
    def machine(self) -> Machine:
        """The machine, connected (a one-line :class:`DeviceError` when unreachable)."""
        return self.machines.of(self.address).machine

    def holder(self) -> NodeLocks:
        """The machine's one holder of the session's locks and claims (closed whole with
        the session's machines: :meth:`~pytest_ssd.machine.machines.Machines.close`)."""
        return self.machines.of(self.address).holder

    def located(self, node: Path) -> str:
        where = self.machine.where
        return f"{node} on {where}" if where else str(node)

    def labelled(self, label: str) -> str:
        host = self.machine.host
        return f"{label} on {host}" if host else label

    def described(self, summary: str) -> str:
        reached = self.machine.reached_as
        return f"{summary} on {reached}" if reached else summary

    def named_again(self, first: str, raw: str) -> str:
        return ": the same host named twice" if spelled_apart(first, raw) else ""

    def snapshot(self, path: str) -> View:
        return View.of(self.machine, path)

    def snapshots(self, paths: list[str]) -> dict[str, View]:
        return self._identified({path: () for path in paths}, write=False)

    def view(self, path: str, lock_pid: int | None, claimed: frozenset[int]) -> View:
        ours = (lock_pid,) if lock_pid else ()
        return View.of(self.machine, path, write=True, ours=ours, claimed=claimed)

    def views(self, held: dict[str, int | None]) -> dict[str, View]:
        return self._identified(
            {path: (pid,) if pid else () for path, pid in held.items()}, write=True
        )

    def _identified(self, targets: dict[str, tuple[int, ...]], write: bool) -> dict[str, View]:
        """One look at the machine for every target, and one read of its sysfs identifying
        every block device they name; nothing when either fails (each is looked at alone).

        The sysfs is read while the machine is looked at, for the block devices the
        targets' names guess (``/dev/nvme0n1``: ``nvme0n1``); a device whose node the look
        resolves to another name (a link such as ``/dev/disk/by-id/…``) is read after it.
        Either way a device is identified from the sysfs of the block device the look
        found, read in the same step (before the locks, or after them all).
        """
        with contextlib.ExitStack() as copies:
            guessed = sorted({name for t in targets if BLOCK_NAME.fullmatch(name := Path(t).name)})
            try:
                machine = self.machine  # connected first: an unreachable host is tried once
            except SsdError:
                return {}
            copying = machine.beside(partial(sysfs_roots, machine, guessed, copies))
            try:
                self.check_tools()  # once for all (each device asks again: a one-line refusal)
                views = View.all(machine, targets, write=write)
            except SsdError:
                copying()  # done before its folder goes
                return {}
            roots = copying()
            nodes = {}
            for target, view in views.items():
                with contextlib.suppress(SsdError):
                    node = str(canonical(Path(target), view))
                    found = view.stat(node)
                    block = view.block_of(found.rdev) if found is not None else None
                    if block is not None:
                        nodes[node] = block.name
            late = sorted(set(nodes.values()) - set(roots))
            if late:
                roots = {**roots, **sysfs_roots(machine, late, copies)}
            identities = identify_from(machine, nodes, roots)
        for view in views.values():
            view.identified.update(identities)
        return dict(views)

    def key(self, node: Path, view: View, raw: str) -> Key:
        real = view.realpath(str(node))
        found = view.stat(real)
        where = self.machine.where
        if found is None:
            raise SafetyError(f"refusing --dut={raw}: {self.located(Path(real))} cannot be reached")
        if found.kind != "block" and not self.machine.file_targets:
            raise SafetyError(
                f"refusing --dut={raw}: on {where} it is {real}, a regular file,"
                " not a block device; on a test host, name a block device"
            )
        kind, first, second = key_of(found)
        return (f"{where} {kind}" if where else kind, first, second)  # another machine's

    def lock(self, node: Path, key: Key) -> HeldLock:
        held = DeviceLock(self.holder(), str(node))
        held.acquire()
        return HeldLock(held, key, held.pid)

    def read(self, path: Path, view: View | None = None) -> tuple[Key, DeviceIdentity]:
        machine = self.machine
        view = view or View.of(machine, str(path))
        found = view.stat(str(path))
        if found is not None and found.kind == "file" and machine.file_targets:
            return key_of(found), identify_file(path)
        block = view.block_of(found.rdev) if found is not None else None
        if found is None or block is None:
            on = f"{machine.where}: " if machine.where else ""
            raise DeviceError(f"{on}{path} is not a block device there")
        known = view.identified.get(str(path))
        return key_of(found), known or identify_on(machine, str(path), block.name)

    def summary(self, identity: DeviceIdentity, warnings: list[str]) -> DeviceSummary:
        """From what the machine's sysfs says of the device."""
        ((found, said),) = self.summaries([identity])
        warnings.extend(said)
        return found

    def summaries(self, identities: list[DeviceIdentity]) -> list[tuple[DeviceSummary, list[str]]]:
        """From one read of what the machine's sysfs says of all the devices."""
        names = sorted({i.kernel_name for i in identities if i.kernel_name})
        with contextlib.ExitStack() as copies:
            try:
                roots = copies.enter_context(
                    self.machine.sysfs(SUMMARY_READS, names, "sysfs links")
                )
                failed = ""
            except SsdError as exc:  # the summary says "not exposed" rather than stop the run
                roots, failed = {}, str(exc)
            found = []
            for identity in identities:
                name = identity.kernel_name or ""
                root = roots.get(name)
                why = failed or f"{self.machine.where}: block device {name} is not in its /sys"
                said = [f"the host's sysfs could not be read: {why}"] if name and not root else []
                found.append((self._summarized(identity, root), said))
            return found

    def _summarized(self, identity: DeviceIdentity, root: Path | None) -> DeviceSummary:
        found = summarize(identity, sysfs_root=root)
        host = self.machine.host
        return dataclasses.replace(found, path=f"{found.path} on {host}") if host else found

    def health_source(self, identity: DeviceIdentity) -> tuple[Source | None, str]:
        return find_source(identity, self.machine)

    def counters(self, target: Path, kernel_name: str | None) -> Counters | None:
        return counters_on(self.machine, kernel_name)

    def feeding(
        self, follow: Progress | None, kernel_name: str | None
    ) -> AbstractContextManager[StatusCallback | None]:
        machine = self.machine
        return feeding(follow, machine, kernel_name, runs_live(machine))

    def runner(self) -> FioRunner:
        return runner_on(self.machine, self.servers)

    def enlist(self, tuning: Tuning, dut_id: str, identity: DeviceIdentity, tune: bool) -> None:
        tuning.add(self.machine, dut_id, identity)
