"""Drive class and indirection unit: which suites apply to a drive, which writes it takes.

Seed 000 sorts drives into classes and runs the suites that fit (METHOD §6):

| class | drive | suites |
|---|---|---|
| ``cssd`` | consumer | csd |
| ``essd-ri`` | enterprise, read-intensive | csd, esd |
| ``essd-mu`` | enterprise, mixed-use | csd, esd |
| ``essd-wi`` | enterprise, write-intensive | csd, esd, wsat |

``--dut-class`` names a device's class (one per ``--dut``, in order); without
it the class is guessed from the identity (:func:`guess`) and the report's
devices table says which it was and why.  Scratch devices are for trying the
tool: every suite applies to them, whatever their class.

How a suite declares where it applies: the ``ssd_applies`` marker with the
classes, as ``pytestmark`` in each of its test modules (or on one test)::

    import pytest
    from pytest_ssd import WSAT_CLASSES  # the method's own (pytest_ssd.methods.wsat)

    pytestmark = pytest.mark.ssd_applies(*WSAT_CLASSES)
    # the same as: pytestmark = pytest.mark.ssd_applies("essd-wi")

A test whose device's class is not listed is skipped in set-up, before any
device state is reached, with the reason (:func:`skip_reason`).  A test
without the marker applies to every class.

Indirection unit (IU, METHOD §5): the size a drive maps logical to physical
blocks in.  Writes smaller than the IU become read-modify-write inside the
drive, so when the IU is larger than 4 KiB the suites skip write tests with
smaller blocks and say why (:meth:`IndirectionUnit.skips_write`).  Taken from
NVMe id-ns NPWG (when NSFEAT says the field is valid), else the block layer's
``queue/optimal_io_size`` (Linux fills it from NVMe NOWS).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

import pytest

from pytest_ssd.device.identity import SYSFS, DeviceIdentity
from pytest_ssd.errors import ConfigError

DriveClassName = Literal["cssd", "essd-ri", "essd-mu", "essd-wi"]
CLASS_NAMES: tuple[DriveClassName, ...] = get_args(DriveClassName)
CLASS_TITLES = {
    "cssd": "consumer",
    "essd-ri": "enterprise read-intensive",
    "essd-mu": "enterprise mixed-use",
    "essd-wi": "enterprise write-intensive",
}
#: every class (suites/csd); a method's own classes are in its folder (``methods/esd``)
ALL_CLASSES: tuple[DriveClassName, ...] = CLASS_NAMES

APPLIES_MARKER = "ssd_applies"
APPLIES_HELP = (
    f"{APPLIES_MARKER}(*CLASSES): the drive classes ({', '.join(CLASS_NAMES)}) the test "
    "applies to; on other drives it is skipped with the reason (scratch devices: always applies)"
)
#: the IU above which smaller writes are skipped (METHOD §5)
IU_THRESHOLD = 4096

#: model prefixes of enterprise drive families (data-centre NVMe and SATA lines)
_ENTERPRISE_MODELS = re.compile(
    r"^(SAMSUNG\s+)?MZ(QL|WL|1L|PL|QJ|WLJ|7L|7KM|7LH|ILT|3LE)"
    r"|^INTEL\s+SSD(PE2|PF2|PEL|PF|SC2K|SC2B|SC2KB|SC2KG)"
    r"|^MICRON_(5[1-5]00|7[34]00|7450|9[34]00|6500)|^MTFD[A-Z]{3}"
    r"|^KIOXIA\s+K(CD|CM|PM|CX)|^KCD|^KCM|^KPM"
    r"|^WUS|^HUSM|^HUSS|^WDC\s+WUS|^ST\d+(FM|NM|NX)|^XS\d+|^SEAGATE\s+NYTRO"
    r"|^SOLIDIGM\s+SB|^SSDPF|^HFS\d+G[DT]|^DELL\s+ENT|^HPE?\s",
    re.IGNORECASE,
)
#: enterprise capacities are a base size times a power of two (decimal GB); the base tells
#: how much of the flash is over-provisioned: 15 (960 GB): read-intensive (~1 DWPD),
#: 25 (800 GB): mixed-use (~3 DWPD), 375 (375 GB, 750 GB): write-intensive
_CAPACITY_BASES: tuple[tuple[int, DriveClassName], ...] = (
    (375, "essd-wi"),
    (25, "essd-mu"),
    (15, "essd-ri"),
)
_CAPACITY_TOLERANCE = 0.01


def dut_class(text: str) -> DriveClassName:
    """argparse type for ``--dut-class``."""
    for name in CLASS_NAMES:
        if text == name:
            return name
    raise argparse.ArgumentTypeError(f"--dut-class={text}: use one of {', '.join(CLASS_NAMES)}")


@dataclass(frozen=True)
class DriveClass:
    """A device's class and where it came from (``--dut-class``, or a guess and its reason)."""

    name: DriveClassName
    reason: str
    given: bool = False
    #: scratch devices: every suite applies
    scratch: bool = False

    @property
    def title(self) -> str:
        return CLASS_TITLES[self.name]

    def describe(self) -> str:
        """'essd-ri (enterprise read-intensive; guessed: ...)'."""
        how = "--dut-class" if self.given else f"guessed: {self.reason}"
        return f"{self.name} ({self.title}; {how})"

    def applies(self, classes: tuple[str, ...]) -> bool:
        return self.scratch or self.name in classes

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "title": self.title, "text": self.describe()}


def _capacity_class(size_bytes: int) -> tuple[DriveClassName, int] | None:
    """The class whose base times a power of two is within 1 % of the size (decimal GB)."""
    gb = size_bytes / 1e9
    for base, name in _CAPACITY_BASES:
        nominal = base
        while nominal <= gb * (1 + _CAPACITY_TOLERANCE):
            if abs(gb - nominal) <= _CAPACITY_TOLERANCE * nominal:
                return name, nominal
            nominal *= 2
    return None


def guess(identity: DeviceIdentity, scratch: bool = False) -> DriveClass:
    """The class a device most likely is: a guess from its model and capacity.

    An enterprise model family gives an enterprise class, its capacity the
    endurance (960 GB: read-intensive, 800 GB: mixed-use, 375/750 GB:
    write-intensive; otherwise read-intensive, the most common); any other drive
    is taken for a consumer drive.  ``--dut-class`` overrides it.
    """
    if scratch:
        return DriveClass("cssd", "a scratch device (every suite applies)", scratch=True)
    model = (identity.model or "").strip()
    if not model or not _ENTERPRISE_MODELS.search(model):
        what = f"model {model!r}" if model else "no model"
        return DriveClass("cssd", f"{what} is no known enterprise family")
    found = _capacity_class(identity.size_bytes)
    if found is None:
        return DriveClass(
            "essd-ri", f"enterprise model {model!r}; its capacity names no endurance class"
        )
    name, nominal = found
    return DriveClass(name, f"enterprise model {model!r}, {nominal:g} GB capacity point")


def classify(identity: DeviceIdentity, scratch: bool, given: DriveClassName | None) -> DriveClass:
    """The class ``--dut-class`` gave, else :func:`guess`'s."""
    if given is not None:
        return DriveClass(given, "given", given=True, scratch=scratch)
    return guess(identity, scratch)


def skip_reason(drive: DriveClass, classes: tuple[str, ...], suite: str) -> str | None:
    """Why a test for *classes* does not run on *drive* (None: it applies)."""
    if drive.applies(classes):
        return None
    return (
        f"{suite} applies to {', '.join(classes)} drives, this is {drive.describe()};"
        " --dut-class overrides the guess"
    )


@dataclass(frozen=True)
class IndirectionUnit:
    """A drive's indirection unit in bytes (None: not exposed) and where it was read."""

    bytes: int | None
    source: str

    def skips_write(self, block_size: int) -> str | None:
        """Why a write of *block_size* is skipped (None: it runs)."""
        if self.bytes is None or self.bytes <= IU_THRESHOLD or block_size >= self.bytes:
            return None
        return (
            f"{block_size} B writes are smaller than the drive's indirection unit of "
            f"{self.bytes} B ({self.source}): the drive would read-modify-write (METHOD §5)"
        )

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def indirection_unit(identity: DeviceIdentity, sysfs_root: Path = SYSFS) -> IndirectionUnit:
    """The IU from NVMe NPWG, else the block layer's optimal I/O size, else not exposed."""
    ns = identity.nvme.namespace if identity.nvme else None
    if ns is not None and ns.indirection_unit_bytes:
        return IndirectionUnit(ns.indirection_unit_bytes, f"NVMe NPWG {ns.npwg}")
    optimal = _optimal_io_size(identity, sysfs_root)
    if optimal:
        return IndirectionUnit(optimal, "queue/optimal_io_size")
    return IndirectionUnit(None, "not exposed")


def _optimal_io_size(identity: DeviceIdentity, sysfs_root: Path) -> int:
    if identity.kind != "block" or not identity.kernel_name:
        return 0
    for base in (sysfs_root / "class" / "block", sysfs_root / "block"):
        node = (base / identity.kernel_name).resolve()
        for queue in (node / "queue", node.parent / "queue"):  # a partition: its disk's
            try:
                text = (queue / "optimal_io_size").read_text().strip()
            except OSError:
                continue
            return int(text) if text.isdecimal() else 0
    return 0


def item_skip_reason(item: pytest.Item, drive: DriveClass | None) -> str | None:
    """Why *item* does not run on a drive of class *drive* (its ``ssd_applies`` marker)."""
    marker = item.get_closest_marker(APPLIES_MARKER)
    if marker is None or drive is None:
        return None
    unknown = [c for c in marker.args if c not in CLASS_NAMES]
    if unknown or not marker.args:
        raise ConfigError(
            f"{item.nodeid}: @pytest.mark.{APPLIES_MARKER} takes drive classes "
            f"({', '.join(CLASS_NAMES)}), not {', '.join(map(repr, unknown)) or 'nothing'}"
        )
    return skip_reason(drive, tuple(marker.args), f"suites/{item.path.parent.name}")
