"""A test host as a device's site: every service over the host's one SSH connection."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.node import canonical
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.remote import SshView
from pytest_ssd.device.remote_identity import copy_blocks, identify_copied, identify_remote
from pytest_ssd.device.remote_links import sysfs_copies
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.device.view import Node, View
from pytest_ssd.errors import DeviceError, SafetyError, SsdError
from pytest_ssd.fio.runners import FioRunner, HostFio
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source, find_source
from pytest_ssd.hosts import Hosts, TestHost
from pytest_ssd.machine.address import SshAddress, parse_address
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.snapshot import BLOCK_NAME
from pytest_ssd.site.base import Key, Site, Tuning
from pytest_ssd.state.accounting import Counters, counters_on
from pytest_ssd.state.progress import Progress, feeding


def key_now(found: Node) -> Key:
    """The key (:func:`~.node.device_key`) of a block device a test host's view found."""
    return ("block", os.major(found.rdev), os.minor(found.rdev))


@dataclass
class HostLock:
    """A device's lock on its test host, held by the host's lock process (*pid*)."""

    hosts: Hosts
    address: SshAddress
    node: str
    pid: int | None
    key: Key

    def pinned(self, identity: DeviceIdentity) -> Pinned:
        return Pinned.of(("block", self.key[1], self.key[2]), identity)

    def claim(self) -> None:
        self.hosts.claim(self.address, self.node)

    def claim_ahead(self) -> None:
        self.hosts.claim_ahead(self.address, self.node)


@dataclass
class HostSite(Site):
    """The test host of *address*, through the session's connection to it (*hosts*)."""

    hosts: Hosts
    address: SshAddress

    @property
    def host(self) -> TestHost:
        """The host, connected (a one-line :class:`DeviceError` when unreachable)."""
        return self.hosts.host(self.address)

    @property
    def machine(self) -> Machine:
        return self.host.machine

    def located(self, node: Path) -> str:
        return f"{node} on {self.host.ssh.where}"

    def labelled(self, label: str) -> str:
        return f"{label} on {self.address.label}"

    def described(self, summary: str) -> str:
        return f"{summary} on {self.address.destination} port {self.address.port or 22}"

    def named_again(self, first: str, raw: str) -> str:
        earlier = parse_address(first)
        spelled = (earlier.destination, earlier.port) != (
            self.address.destination,
            self.address.port,
        )
        return ": the same host named twice" if spelled else ""

    def snapshot(self, path: str) -> View:
        return SshView.snapshot(self.host.ssh, path, write=False)

    def snapshots(self, paths: list[str]) -> dict[str, View]:
        return self._identified({path: () for path in paths}, write=False)

    def view(self, path: str, lock_pid: int | None, claimed: frozenset[int]) -> View:
        ours = (lock_pid,) if lock_pid else ()
        return self.hosts.view(self.address, path, write=True, ours=ours, claimed=claimed)

    def views(self, held: dict[str, int | None]) -> dict[str, View]:
        return self._identified(
            {path: (pid,) if pid else () for path, pid in held.items()}, write=True
        )

    def _identified(self, targets: dict[str, tuple[int, ...]], write: bool) -> dict[str, View]:
        """One snapshot of the host for every target, and one copy of its sysfs identifying
        every block device they name; nothing when either fails (each is looked at alone).

        The copy is taken while the snapshot is, of the block devices the targets' names
        guess (``/dev/nvme0n1``: ``nvme0n1``); a device whose node the snapshot resolves to
        another name (a link such as ``/dev/disk/by-id/…``) is copied after it.  Either way
        a device is identified from a copy of the block device the snapshot found, taken in
        the same step (before the locks, or after them all).
        """
        with tempfile.TemporaryDirectory(prefix="ssd-sysfs-") as tmp:
            guessed = sorted({name for t in targets if BLOCK_NAME.fullmatch(name := Path(t).name)})
            try:
                machine = self.machine  # connected first: an unreachable host is tried once
            except SsdError:
                return {}
            with ThreadPoolExecutor(1, thread_name_prefix="ssd-copy") as pool:
                copying = pool.submit(copy_blocks, machine, guessed, Path(tmp) / "guessed")
                try:
                    self.check_tools()  # once for all (each device asks again: a one-line refusal)
                    views = SshView.snapshots(self.host.ssh, targets, write=write)
                except SsdError:
                    return {}
                copies = copying.result()
            nodes = {}
            for target, view in views.items():
                with contextlib.suppress(SsdError):
                    node = str(canonical(Path(target), view))
                    found = view.stat(node)
                    block = view.block_of(found.rdev) if found is not None else None
                    if block is not None:
                        nodes[node] = block.name
            late = sorted(set(nodes.values()) - set(copies))
            if late:
                copies = {**copies, **copy_blocks(machine, late, Path(tmp) / "found")}
            identities = identify_copied(machine, nodes, copies)
        for view in views.values():
            view.identified.update(identities)
        return dict(views)

    def key(self, node: Path, view: View, raw: str) -> Key:
        real = view.realpath(str(node))
        found = view.stat(real)
        if found is None or found.kind != "block":
            raise SafetyError(
                f"refusing --dut={raw}: on {self.host.ssh.where} it is {real}, a regular file,"
                " not a block device; on a test host, name a block device"
            )
        return (f"{self.host.ssh.where} block", os.major(found.rdev), os.minor(found.rdev))

    def lock(self, node: Path, key: Key) -> HostLock:
        pid = self.hosts.lock(self.address, str(node))
        return HostLock(self.hosts, self.address, str(node), pid, key)

    def read(self, path: Path, view: View | None = None) -> tuple[Key, DeviceIdentity]:
        host = self.host
        view = view or SshView.snapshot(host.ssh, str(path), write=False)
        found = view.stat(str(path))
        block = view.block_of(found.rdev) if found is not None else None
        if found is None or block is None:
            raise DeviceError(f"{host.ssh.where}: {path} is not a block device there")
        known = view.identified.get(str(path)) if isinstance(view, SshView) else None
        return key_now(found), known or identify_remote(host.machine, str(path), block.name)

    def summary(self, identity: DeviceIdentity, warnings: list[str]) -> DeviceSummary:
        """From a copy of what the host's sysfs says of the device."""
        ((found, said),) = self.summaries([identity])
        warnings.extend(said)
        return found

    def summaries(self, identities: list[DeviceIdentity]) -> list[tuple[DeviceSummary, list[str]]]:
        """From one copy of what the host's sysfs says of all the devices."""
        names = sorted({i.kernel_name for i in identities if i.kernel_name})
        with tempfile.TemporaryDirectory(prefix="ssd-sysfs-") as tmp:
            try:
                roots, failed = sysfs_copies(self.machine, names, Path(tmp)), ""
            except SsdError as exc:  # the summary says "not exposed" rather than stop the run
                roots, failed = {}, str(exc)
            found = []
            for identity in identities:
                name = identity.kernel_name or ""
                root = roots.get(name)
                why = failed or f"{self.host.ssh.where}: block device {name} is not in its /sys"
                said = [f"the host's sysfs could not be read: {why}"] if name and not root else []
                found.append((self._summarized(identity, root), said))
            return found

    def _summarized(self, identity: DeviceIdentity, root: Path | None) -> DeviceSummary:
        found = summarize(identity, sysfs_root=root)
        return dataclasses.replace(found, path=f"{found.path} on {self.address.label}")

    def health_source(self, identity: DeviceIdentity) -> tuple[Source | None, str]:
        return find_source(identity, self.machine)

    def runner(self) -> FioRunner:
        return HostFio(self.hosts.server(self.address), self.machine)

    def counters(self, target: Path, kernel_name: str | None) -> Counters | None:
        return counters_on(self.machine, kernel_name)

    def feeding(
        self, follow: Progress | None, kernel_name: str | None
    ) -> AbstractContextManager[StatusCallback | None]:
        return feeding(follow, self.machine, kernel_name, self.runner().live_status)

    def enlist(self, tuning: Tuning, dut_id: str, identity: DeviceIdentity, tune: bool) -> None:
        tuning.add(self.machine, dut_id, identity)
