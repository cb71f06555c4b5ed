"""The kernel's block-device events during a session: a device under test that drops off the
bus or changes size is named in one line at that moment, not at its next fio run.

One source per machine of the session's devices: this machine's is pyudev's netlink
monitor (``source='kernel'``: no udevd needed), a test host's ``udevadm monitor
--kernel`` held there (:mod:`pytest_ssd.machine.uevents`).  A thread takes what they
got a few times a second (neither ever blocks) and judges each event of a watched
device (:func:`judge`): a ``remove`` is the device gone; a ``change`` whose size, read
at once, is not the size identified (0: its medium is gone, a loop device detached) is
the device changed.  The line goes on the machine's
:attr:`~pytest_ssd.machine.machine.Machine.device_faults` (a fio run on the device is
stopped with it: :mod:`pytest_ssd.fio.watch`) and on :attr:`DeviceEvents.faults` (the
running test fails with it, later tests of the device are refused with it).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_ssd.device.identity import SECTOR, binary_size
from pytest_ssd.errors import SsdError
from pytest_ssd.machine import uevents
from pytest_ssd.machine.machine import Machine

#: how often the sources are taken from (seconds)
EVERY_S = 0.25


class Source(Protocol):
    """Where one machine's kernel events come from, taken without waiting."""

    def take(self) -> list[dict[str, str]]:
        """The events (each its properties: ``ACTION``, ``DEVNAME``, ...) since the last take."""
        ...

    def close(self) -> None: ...


class Netlink:
    """This machine's kernel events: pyudev's netlink monitor, block devices only."""

    def __init__(self) -> None:
        import pyudev  # noqa: PLC0415  # libudev: loaded by a session that runs tests

        monitor = pyudev.Monitor.from_netlink(pyudev.Context(), source="kernel")
        monitor.filter_by("block")
        monitor.start()
        self.monitor = monitor

    def take(self) -> list[dict[str, str]]:
        found = []
        while (device := self.monitor.poll(timeout=0)) is not None:
            found.append({**dict(device.properties), "ACTION": device.action or ""})
        return found

    def close(self) -> None:
        """Its socket is closed with the monitor (libudev's unref, when it is collected)."""
        del self.monitor


@dataclass(frozen=True)
class Watched:
    """A device under test whose events are judged: its id, node, kernel name and size."""

    dut_id: str
    path: str
    name: str
    size_bytes: int
    machine: Machine


def kernel_name(properties: Mapping[str, str]) -> str:
    """The device an event is of (``DEVNAME`` without ``/dev/``, else ``DEVPATH``'s end)."""
    name = properties.get("DEVNAME", "").removeprefix("/dev/")
    return name or properties.get("DEVPATH", "").rpartition("/")[2]


def judge(watched: Watched, properties: Mapping[str, str], size: int | None, at: str) -> str | None:
    """One line when the event *properties* (seen at clock time *at*) says *watched* is gone or
    changed (*size*: its bytes read at once; None: unreadable), else None."""
    action = properties.get("ACTION", "")
    where = f"{watched.dut_id} ({watched.path}{watched.machine.on})"
    event = f"kernel event '{action}' of {watched.name} at {at}"
    if action == "remove":
        return f"{where} dropped off the bus ({event}): nothing more is run on it"
    if action != "change" or size is None or size == watched.size_bytes:
        return None
    was = binary_size(watched.size_bytes)
    if size == 0:
        return (
            f"{where} lost its medium ({event}: 0 bytes now, {was} when identified; a loop"
            " device detached?): nothing more is run on it"
        )
    return (
        f"{where} changed size ({event}: {binary_size(size)} now, {was} when identified):"
        " nothing more is run on it"
    )


@dataclass
class DeviceEvents:
    """The session's watch over its devices' kernel events (:func:`start`), in one process."""

    watched: dict[tuple[int, str], Watched]
    sources: list[tuple[Machine, Source]]
    #: device id -> the line that named what happened to it
    faults: dict[str, str] = field(default_factory=dict)
    #: written at once with each fault (the terminal)
    say: Callable[[str], None] = field(default=lambda line: None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def drain(self) -> None:
        """Judge every event the sources got so far."""
        with self._lock:
            for machine, source in self.sources:
                for properties in source.take():
                    self._judge(machine, properties)

    def _judge(self, machine: Machine, properties: Mapping[str, str]) -> None:
        watched = self.watched.get((id(machine), kernel_name(properties)))
        if watched is None or watched.dut_id in self.faults:
            return
        size = _size(machine, watched.name) if properties.get("ACTION") == "change" else None
        line = judge(watched, properties, size, time.strftime("%H:%M:%S"))
        if line is not None:
            self.faults[watched.dut_id] = line
            machine.device_faults[watched.name] = line
            self.say(line)

    def fault(self, dut_id: str) -> str | None:
        """What happened to device *dut_id* (the events so far judged first); None: nothing."""
        self.drain()
        return self.faults.get(dut_id)

    def run(self) -> None:
        """Take and judge events every :data:`EVERY_S` until :meth:`close`."""
        while not self._stop.wait(EVERY_S):
            with contextlib.suppress(SsdError, OSError):
                self.drain()

    def close(self) -> None:
        """Stop watching; what it said leaves the machines with it (this machine's object
        outlives the session: a later session in this process starts clean)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        for _, source in self.sources:
            with contextlib.suppress(SsdError, OSError):
                source.close()
        for watched in self.watched.values():
            watched.machine.device_faults.pop(watched.name, None)


def start(
    devices: Iterable[Watched], artifacts: Path, notes: list[str], say: Callable[[str], None]
) -> DeviceEvents:
    """Watch the events of *devices*: one source per machine, started here (a machine that
    offers none is said in *notes*, one line each), taken by a thread of its own."""
    watched = {(id(d.machine), d.name): d for d in devices}
    machines = {id(d.machine): d.machine for d in watched.values()}
    sources: list[tuple[Machine, Source]] = []
    for machine in machines.values():
        try:
            sources.append((machine, open_source(machine, artifacts)))
        except (SsdError, OSError) as exc:
            if (said := _none_offered(machine, exc)) not in notes:
                notes.append(said)
    events = DeviceEvents(watched, sources, say=say)
    if sources:
        events._thread = threading.Thread(target=events.run, name="ssd-uevents", daemon=True)
        events._thread.start()
    return events


def unoffered(machines: Iterable[Machine]) -> list[str]:
    """One line for each of *machines* that offers no device events (a test host without
    ``udevadm``): what the session says at its start, before any is watched."""
    said = []
    for machine in machines:
        if machine.host is not None:
            try:
                machine.which("udevadm", uevents.INSTALL_HINT)
            except SsdError as exc:
                said.append(_none_offered(machine, exc))
    return said


def _none_offered(machine: Machine, why: Exception) -> str:
    where = machine.where or "this machine"
    return (
        f"{where} offers no device events ({why}): a device that drops off there is found"
        " at its next fio run"
    )


def open_source(machine: Machine, artifacts: Path) -> Source:
    """*machine*'s kernel events: pyudev here, ``udevadm monitor`` held on a test host."""
    if machine.host is None:
        return Netlink()
    return uevents.start(machine, artifacts / f"uevents-{machine.host}")


def _size(machine: Machine, name: str) -> int | None:
    try:
        text = machine.read(f"/sys/class/block/{name}/size")
    except SsdError:
        return None
    return int(text) * SECTOR if text is not None and text.strip().isdigit() else None


def stderr_line(line: str) -> None:
    """A fault as it is seen, on this process's stderr."""
    sys.stderr.write(f"pytest-ssd: {line}\n")
