"""A device under test once resolved: its node, identity, class and what it may be used for."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.device.drive_class import (
    DriveClass,
    DriveClassName,
    IndirectionUnit,
    classify,
    indirection_unit,
)
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import DeviceSummary
from pytest_ssd.extensions import Extensions
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.state.written import WrittenMap


@dataclass(kw_only=True)
class Dut:
    """A device under test, resolved: its path, identity and what it may be used for."""

    id: str
    path: Path
    identity: DeviceIdentity
    scratch: bool
    readonly: bool
    note: str = ""
    #: what holds data written since the last purge: reads read only that (prefill first)
    written: WrittenMap = field(default_factory=WrittenMap)
    #: the DUT summary (controller only: workers do not need it)
    summary: DeviceSummary | None = None
    #: the name of its results in the database and on graphs (--dut-label)
    label: str = ""
    #: the build under test (--ssd-build, else the firmware revision; None: not known)
    build: str | None = None
    #: its class (--dut-class or the guess) and indirection unit: which suites and writes apply
    drive_class: DriveClass | None = None
    iu: IndirectionUnit | None = None
    #: the test host it is in (None: this machine) and the pid holding its lock there
    address: HostAddress | None = None
    lock_pid: int | None = None
    #: the device locked and confirmed: every write checks the node still names it
    pinned: Pinned | None = None

    @property
    def claimed(self) -> frozenset[int]:
        """The device number the controller holds ``O_EXCL`` (a block device it writes)."""
        if self.readonly or self.pinned is None or self.pinned.key[0] != "block":
            return frozenset()
        return frozenset({os.makedev(self.pinned.key[1], self.pinned.key[2])})

    def classify(
        self, classes: tuple[DriveClassName, ...], index: int, extensions: Extensions
    ) -> None:
        """Set the class and the IU: the index-th ``--dut-class``, a plugin's, else the guess."""
        given = classes[index] if index < len(classes) else None
        added = None if given or self.scratch else extensions.drive_class(self.identity)
        self.drive_class = added or classify(self.identity, self.scratch, given)
        self.iu = indirection_unit(self.identity)

    def name_build(self, builds: tuple[str, ...], index: int) -> None:
        """Set the build: ``--ssd-build`` (one for every device, else the index-th), else the
        firmware revision the device reports (NVMe: id-ctrl's), else none (never invented)."""
        given = builds[0] if len(builds) == 1 else builds[index] if index < len(builds) else None
        self.build = given or self.identity.firmware or None

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "scratch": self.scratch,
            "readonly": self.readonly,
            "note": self.note,
            "label": self.label,
            "build": self.build,
            "identity": self.identity.as_dict(),
            "summary": self.summary.as_dict() if self.summary else None,
            "summary_tables": self.summary.tables() if self.summary else None,
            "drive_class": self.drive_class.as_dict() if self.drive_class else None,
            "iu": self.iu.as_dict() if self.iu else None,
            "host": self.address.label if self.address else None,
        }
