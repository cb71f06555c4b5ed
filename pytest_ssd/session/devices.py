"""The session's devices: each ``--dut`` resolved on its site, guarded, locked and confirmed.

One resolution for every device a user names, here or on a test host (the site
differs, not the steps); scratch devices are made here.  xdist workers get the
resolved devices (:meth:`Devices.workerinput`) and only identify them again.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_ssd.device import guard
from pytest_ssd.device.dut import MIN_SCRATCH_SIZE, DutSpec
from pytest_ssd.device.identity import DeviceIdentity, binary_size, identify
from pytest_ssd.device.in_order import Order, attempt, each, first
from pytest_ssd.device.node import LockOpenError, canonical
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.scratch import ScratchDevice, create, free_bytes, sweep_stale
from pytest_ssd.device.summary import DeviceSummary
from pytest_ssd.device.view import View
from pytest_ssd.errors import ConfigError, DeviceError, SafetyError, SsdError, present
from pytest_ssd.extensions import Extensions
from pytest_ssd.fio.job import fio_path
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge import PurgeMethod
from pytest_ssd.purge.extra import pick as pick_purge
from pytest_ssd.session.choices import Options
from pytest_ssd.site import DeviceSite, Dut, Site, SiteLock, Sites, Tuning

#: what --ssd-purge takes of pytest-ssd's own methods (plugins may add more)
PURGE_NAMES = tuple(m.value for m in PurgeMethod)
SCRATCH_DIR = ".scratch"
#: the smallest target measured: the smallest workloads and states need this much
MIN_TARGET_SIZE = MIN_SCRATCH_SIZE

Key = tuple[str, int, int]
T = TypeVar("T")


@dataclass(frozen=True)
class LockedDut:
    """A named device resolved and locked on its site, before its guard."""

    dut: Dut
    site: Site
    lock: SiteLock


def check_size(node: Path, size: int, kind: str | None) -> None:
    """Refuse an empty target, or one smaller than the smallest workload (before any confirm)."""
    if size <= 0:
        hint = (
            "give it a size first, e.g. 'fallocate -l 4G FILE'"
            if kind == "file"
            else ("is a medium inserted?")
        )
        raise DeviceError(f"{node} has no capacity (0 bytes): {hint}")
    if size < MIN_TARGET_SIZE:
        raise DeviceError(
            f"{node} holds {binary_size(size)}: pytest-ssd measures targets of at least"
            f" {binary_size(MIN_TARGET_SIZE)} (its smallest workloads need that); check the path"
        )


def enrich(duts: list[Dut], machine: Machine) -> None:
    """Give each of *duts* (all on *machine*) what udev adds to its identity, in one read."""
    from pytest_ssd.device.udev import info  # noqa: PLC0415  # the controller's, once

    names = [dut.identity.kernel_name or "" for dut in duts]
    with contextlib.suppress(SsdError):  # descriptive only: the run goes on without it
        found = info.read(machine, names)
        for dut, name in zip(duts, names, strict=True):
            dut.identity = info.enrich(dut.identity, found.get(name))


def speed_key(identity: DeviceIdentity, scratch: bool) -> str:
    """Which measured rates apply to a device: scratch, its model and serial, else its path."""
    if scratch:
        return "scratch"
    if identity.serial:
        return f"{identity.model or 'unknown'} {identity.serial}"
    return identity.path


def unopened_key(spec: DutSpec, machine: Machine) -> str | None:
    """A device's key in a run that opens none (``--collect-only``): this machine's device
    identified read-only (no lock), a test host's (not reached) or one that cannot be by
    its host and path's name; None for scratch."""
    from pytest_ssd.device.naming import identity_key  # noqa: PLC0415  # where ids are made

    if spec.path is None:
        return None
    if spec.address is not None:
        return identity_key({"path": spec.address.path}, spec.address.label)
    try:
        identity = identify(canonical(spec.path, View.of(machine, str(spec.path))), machine)
    except SsdError:
        return identity_key({"path": str(spec.path)})
    return identity_key(identity.as_dict())


def default_label(dut: Dut, site: Site, labels: tuple[str, ...], index: int) -> str:
    """``--dut-label`` for the index-th device, else model, capacity and firmware (and host)."""
    if index < len(labels):
        return labels[index]
    if dut.scratch:
        return f"scratch {binary_size(dut.identity.size_bytes)}"
    return site.labelled(dut.identity.label)


@dataclass
class Devices:
    """The devices of the run, each with its services on its site (this process's)."""

    options: Options
    extensions: Extensions = field(default_factory=Extensions)
    sites: Sites = field(default_factory=Sites)
    #: what the user should know (shown in the terminal header)
    warnings: list[str] = field(default_factory=list)
    duts: dict[str, Dut] = field(default_factory=dict)
    #: device id -> its services on its site (the state keeper's and the ``ssd`` fixture's)
    services: dict[str, DeviceSite] = field(default_factory=dict)
    scratch: list[ScratchDevice] = field(default_factory=list)
    #: the report folder did not exist before this session (it may remove it, left empty)
    made_report_dir: bool = False
    #: a resumed run's devices: each drive's key -> the id the run gave it
    recorded: dict[str, str] = field(default_factory=dict)
    _unopened: list[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.sites.machines.config = self.options.ssh_config

    @property
    def ids(self) -> list[str]:
        """The devices' ids in ``--dut`` order: what each is, once opened; before (a run that
        opens none: ``--collect-only``), each path's name after its host."""
        if self.duts:
            return list(self.duts)
        if self._unopened is None:
            from pytest_ssd.device.naming import device_ids  # noqa: PLC0415  # see _name

            here = self.sites.of(None).machine  # a device of this machine is identified here
            named = [(spec.raw, unopened_key(spec, here)) for spec in self.options.duts]
            self._unopened = device_ids(named, opened=False)
        return self._unopened

    def _serve(self, dut: Dut, site: Site) -> DeviceSite:
        """Keep *dut* and its services on *site*."""
        self.duts[dut.id] = dut
        self.services[dut.id] = DeviceSite(
            dut,
            site,
            confirm=self.options.confirm,
            interval=self.options.health_interval,
            added_source=self.extensions.health_source,
        )
        return self.services[dut.id]

    def sweep(self) -> None:
        """Release the scratch devices of sessions that died (before any is made)."""
        self.made_report_dir = not self.options.report_dir.exists()
        for leaked in sweep_stale(self.options.report_dir / SCRATCH_DIR):
            self.warnings.append(f"released {leaked}, a scratch device of a session that died")

    def resolve(self) -> None:
        """Resolve, lock and guard every device (all at once): the named ones before scratch.

        Each test host is looked at once for all its devices before they are locked (their
        nodes, keys and identities) and once after (the guard, and that each node is still
        the device identified): two snapshots of a host, however many drives it holds.
        """
        indexed = list(enumerate(self.options.duts))
        seen: dict[Key, str] = {}
        wanted = [(index, spec) for index, spec in indexed if spec.path is not None]
        looks = self._look([spec for _, spec in wanted])
        found = attempt(
            wanted,
            # named for now by place: its id is what it is, known once it is identified
            lambda item, order: self._resolve_named(
                f"#{item[0]}", item[1], seen, order, looks[order.index]
            ),
        )
        ids = self._name(wanted, found)
        named = dict(zip((index for index, _ in wanted), first(self._hold_all(found)), strict=True))
        self._check_scratch_space()
        duts = [
            named[index] if index in named else self._make_scratch(ids[index], spec, index)
            for index, spec in indexed
        ]
        self.duts = {}  # in the order given
        for index, (dut, summary) in enumerate(zip(duts, self._summaries(duts), strict=True)):
            dut.summary = summary
            dut.classify(self.options.classes, index, self.extensions)
            dut.label = default_label(dut, self.services[dut.id].site, self.options.labels, index)
            dut.name_build(self.options.builds, index)
            self.duts[dut.id] = dut
        self._check_purge()

    def _name(
        self, wanted: list[tuple[int, DutSpec]], found: list[LockedDut | BaseException]
    ) -> list[str]:
        """Every device's id (:mod:`pytest_ssd.device.naming`), given to each device held;
        when one was refused, none (the first refusal is raised in order)."""
        # the controller's, where devices are opened: a worker adopts their ids
        from pytest_ssd.device.naming import device_ids, identity_key  # noqa: PLC0415

        keys: dict[int, str] = {}
        for (index, spec), held in zip(wanted, found, strict=True):
            if not isinstance(held, LockedDut):
                return []
            host = spec.address.label if spec.address else None
            keys[index] = identity_key(held.dut.identity.as_dict(), host)
        given = [(spec.raw, keys.get(index)) for index, spec in enumerate(self.options.duts)]
        # a resumed run's devices keep the ids it gave them (paired by what they are)
        ids = [self.recorded.get(dut_id, dut_id) for dut_id in device_ids(given)]
        for (index, _), held in zip(wanted, found, strict=True):
            if isinstance(held, LockedDut):
                held.dut.id = ids[index]
        return ids

    def _look(self, specs: list[DutSpec]) -> list[View | None]:
        """Each named device's facts, one snapshot per site for all its devices (None: the
        device is looked at alone, as on this machine)."""
        groups = self._by_machine(list(enumerate(specs)), lambda item: item[1].address)

        def look(group: list[tuple[int, DutSpec]]) -> dict[int, View | None]:
            site = self.sites.of(group[0][1].address)
            views = site.snapshots([str(spec.path) for _, spec in group])
            return {index: views.get(str(spec.path)) for index, spec in group}

        found: dict[int, View | None] = {}
        for looked in each(groups, look):
            found.update(looked)
        return [found[index] for index in range(len(specs))]

    def _resolve_named(
        self, dut_id: str, spec: DutSpec, seen: dict[Key, str], order: Order, look: View | None
    ) -> LockedDut:
        """A device or file the user named, here or on a test host: its node, lock, size and
        identity, each on the device's site (*look*: its site's facts, None: look now)."""
        site = self.sites.of(spec.address)
        site.check_tools()  # a host unreachable, or without fio: one line, before anything
        path = present(spec.path, "the device path")
        view = look or site.snapshot(str(path))
        node = canonical(path, view)
        facts = guard.check_readable(node, view)
        fio_path(str(node))  # a name fio would split or cut is refused before anything
        key = site.key(node, view, spec.raw)
        with order.naming.turn(order.index):
            if key in seen:
                again = site.named_again(seen[key], spec.raw)
                raise SafetyError(
                    f"refusing --dut={spec.raw}: it is the same device as --dut={seen[key]}"
                    f" ({site.located(node)}{again}); name each device once"
                )
            seen[key] = spec.raw
        with order.locking.turn(order.index):
            try:
                lock = site.lock(node, key)
            except LockOpenError:
                if not self.options.readonly:  # the guard's reason (mounted at /) says more
                    guard.check_writable(node, view)
                raise
        # read before the lock: the guard's check after it (:meth:`_hold_all`) compares
        identity = site.read(node, view)[1]
        check_size(node, identity.size_bytes, facts.kind)
        dut = Dut(
            id=dut_id,
            path=node,
            identity=identity,
            scratch=False,
            readonly=self.options.readonly,
            address=spec.address,
            lock_pid=lock.pid,
            pinned=lock.pinned(identity),
        )
        return LockedDut(dut, site, lock)

    def _hold_all(self, found: list[LockedDut | BaseException]) -> list[Dut | BaseException]:
        """:meth:`_hold` every device locked, each site's looked at once after all its locks."""
        held = [h for h in found if isinstance(h, LockedDut)]
        groups = self._by_machine(held, lambda h: h.dut.address)

        def hold(group: list[LockedDut]) -> dict[str, Dut | BaseException]:
            site = group[0].site
            views = site.views({str(h.dut.path): h.dut.lock_pid for h in group})
            done: dict[str, Dut | BaseException] = {}
            for h in group:  # every device checked (guarded) before any is claimed
                try:
                    self._check(h.dut, h.site, views.get(str(h.dut.path)))
                    done[h.dut.id] = h.dut
                except Exception as exc:  # noqa: BLE001 - the device's outcome, raised in order
                    done[h.dut.id] = exc
            writable = [h for h in group if done[h.dut.id] is h.dut and not h.dut.readonly]
            for h in writable:  # a test host's claims go out together: one round trip
                h.lock.claim_ahead()
            for h in writable:
                try:
                    h.lock.claim()
                except Exception as exc:  # noqa: BLE001 - the device's outcome, raised in order
                    done[h.dut.id] = exc
            return done

        outcome: dict[str, Dut | BaseException] = {}
        for done in each(groups, hold):
            outcome.update(done)
        return [f if not isinstance(f, LockedDut) else outcome[f.dut.id] for f in found]

    def _hold(self, dut: Dut, site: Site, lock: SiteLock, view: View | None = None) -> None:
        """Check *dut* is what *lock* holds; to write it, guard and confirm it and claim it
        (*view*: its site's facts, taken after the lock; None: look now)."""
        self._check(dut, site, view)
        if not dut.readonly:
            lock.claim()

    def _check(self, dut: Dut, site: Site, view: View | None) -> None:
        """Serve *dut* on *site* and check it is the device identified; to write it, guard
        and confirm it too (its claim comes after)."""
        services = self._serve(dut, site)
        if dut.readonly or dut.scratch:  # never written, or the session's own file: no guard
            services.same(view)
        else:
            services.guard(claimed=False, view=view)

    def _check_scratch_space(self) -> None:
        sizes = [spec.scratch_size for spec in self.options.duts if spec.scratch_size]
        if not sizes:
            return
        folder, free = free_bytes(self.options.report_dir / SCRATCH_DIR)
        if sum(sizes) > free:
            asked = " + ".join(binary_size(n) for n in sizes)
            raise DeviceError(
                f"scratch devices of {asked} do not fit in the {binary_size(free)} free in"
                f" {folder}; give a smaller scratch:SIZE or --ssd-report-dir on a larger"
                " filesystem"
            )

    def _make_scratch(self, dut_id: str, spec: DutSpec, index: int) -> Dut:
        size = present(spec.scratch_size, "the scratch size")
        device = create(size, self.options.report_dir / SCRATCH_DIR, index)
        self.scratch.append(device)
        site = self.sites.of(spec.address)
        lock = site.lock(device.path, site.key(device.path, site.snapshot(str(device.path)), ""))
        identity = site.read(device.path)[1]
        dut = Dut(
            id=dut_id,
            path=device.path,
            identity=identity,
            scratch=True,
            readonly=self.options.readonly,
            note=device.note,
            pinned=lock.pinned(identity),
        )
        self._hold(dut, site, lock)
        return dut

    def _summaries(self, duts: list[Dut]) -> list[DeviceSummary]:
        """Each device's summary, one look at each machine for all its devices."""
        groups = self._by_machine(duts, lambda dut: dut.address)

        def summarize(group: list[Dut]) -> dict[str, tuple[DeviceSummary, list[str]]]:
            site = self.services[group[0].id].site
            enrich(group, site.machine)
            found = site.summaries([dut.identity for dut in group])
            return {
                dut.id: (summary, said) for dut, (summary, said) in zip(group, found, strict=True)
            }

        summaries: dict[str, tuple[DeviceSummary, list[str]]] = {}
        for done in each(groups, summarize):  # the machines' looks at once, in any order
            summaries.update(done)
        for dut in duts:  # what they said in the order the devices were given
            self.warnings.extend(f"{dut.id}: {line}" for line in summaries[dut.id][1])
        return [summaries[dut.id][0] for dut in duts]

    def _by_machine(
        self, items: list[T], address: Callable[[T], HostAddress | None]
    ) -> list[list[T]]:
        """*items* by the machine of their *address*, in the order first met."""
        groups: dict[Hashable, list[T]] = {}
        for item in items:
            groups.setdefault(self.sites.machine_of(address(item)), []).append(item)
        return list(groups.values())

    def _check_purge(self) -> None:
        """Refuse a ``--ssd-purge`` no device can run (the plan must not promise it)."""
        forced = self.options.purge
        added = self.extensions.purge_methods
        if forced and forced not in {*PURGE_NAMES, *self.extensions.purge_names}:
            names = ", ".join((*PURGE_NAMES, *self.extensions.purge_names))
            raise ConfigError(f"--ssd-purge={forced}: no such purge method (one of {names})")
        if forced and not self.options.readonly:
            for dut_id, dut in self.duts.items():
                machine = self.services[dut_id].machine
                pick_purge(dut.identity, added, forced, machine)  # one line when it cannot

    def check_health(self) -> None:
        """Ask every device for its health source: a plugin's at fault refuses here."""
        for services in self.services.values():
            services.sampler()

    def workerinput(self) -> list[dict[str, Any]]:
        """What a worker needs of each device to use it (:meth:`adopt`)."""
        return [
            {
                "id": d.id,
                "path": str(d.path),
                "scratch": d.scratch,
                "readonly": d.readonly,
                "note": d.note,
                "address": dataclasses.asdict(d.address) if d.address else None,
                "lock_pid": d.lock_pid,
                "pinned": d.pinned.as_dict() if d.pinned else None,
                "identity": d.identity.as_dict(),  # the controller's own reading
                "label": d.label,
                "build": d.build,
            }
            for d in self.duts.values()
        ]

    def adopt(self, items: list[dict[str, Any]], hosts: dict[str, Any]) -> None:
        """A worker's devices, as the controller resolved and identified them.

        The worker joins the controller's connections to test hosts (*hosts*: no login
        of its own) and takes its identification: 16 workers on a host read nothing
        there at start; every write still checks that the node names the device pinned.
        """
        self.sites.machines.join(hosts)
        places = [HostAddress(**i["address"]) if i["address"] else None for i in items]
        sites = [self.sites.of(address) for address in places]
        for index, (item, address, site) in enumerate(zip(items, places, sites, strict=True)):
            identity = DeviceIdentity.from_dict(item["identity"])
            dut = Dut(
                id=item["id"],
                path=Path(item["path"]),
                identity=identity,
                scratch=item["scratch"],
                readonly=item["readonly"],
                note=item["note"],
                address=address,
                lock_pid=item["lock_pid"],
                pinned=Pinned.from_dict(item["pinned"]) if item["pinned"] else None,
                label=item.get("label", ""),
                build=item.get("build"),
            )
            dut.classify(self.options.classes, index, self.extensions)
            self._serve(dut, site)

    def tuning(self) -> Tuning:
        """Which machine's settings to read (and tune) for which devices."""
        tuning = Tuning()
        for dut_id, services in self.services.items():
            services.site.enlist(tuning, dut_id, self.duts[dut_id].identity, self.options.tune)
        return tuning

    def close(self) -> list[str]:
        """Stop this process's fio servers, release every machine's locks, disconnect from
        the test hosts; what was left running (a second call does nothing)."""
        return self.sites.close()

    def release_scratch(self) -> None:
        """Release the scratch devices; remove their folder (and the report folder this
        session made) when nothing else is left in it."""
        if not self.scratch:
            return
        while self.scratch:
            self.scratch.pop().release()
        with contextlib.suppress(OSError):  # when no other session keeps its scratch here
            (self.options.report_dir / SCRATCH_DIR).rmdir()
            if self.made_report_dir:  # a refused run leaves no folder it made
                self.options.report_dir.rmdir()
