"""The purge methods, which of them a device supports, and the strongest one to use.

Order of strength (METHOD.md section 2): NVMe Sanitize block erase, crypto erase,
overwrite (as SANICAP allows); NVMe Format with SES=1 (user data erase), SES=2
(crypto erase; FNA bit 2); ATA Security Erase, enhanced then normal; full-device
discard; punching the whole of a regular file.  Sanitize and Format need the whole
namespace: on a partition they would erase far more than the partition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import PurgeError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge.ata import AtaSecurity

_NAMESPACE = re.compile(r"nvme(\d+)n\d+")


class PurgeMethod(StrEnum):
    """A purge method; the value is what ``--ssd-purge=METHOD`` takes."""

    SANITIZE_BLOCK = "sanitize-block"
    SANITIZE_CRYPTO = "sanitize-crypto"
    SANITIZE_OVERWRITE = "sanitize-overwrite"
    FORMAT_SES1 = "format-ses1"
    FORMAT_SES2 = "format-ses2"
    ATA_SECURE_ERASE_ENHANCED = "ata-secure-erase-enhanced"
    ATA_SECURE_ERASE = "ata-secure-erase"
    DISCARD = "discard"
    PUNCH_HOLE = "punch-hole"


#: every method, strongest first (the declaration order)
ORDER: tuple[PurgeMethod, ...] = tuple(PurgeMethod)
SANITIZE = frozenset(
    {PurgeMethod.SANITIZE_BLOCK, PurgeMethod.SANITIZE_CRYPTO, PurgeMethod.SANITIZE_OVERWRITE}
)
FORMAT = frozenset({PurgeMethod.FORMAT_SES1, PurgeMethod.FORMAT_SES2})
ATA = frozenset({PurgeMethod.ATA_SECURE_ERASE_ENHANCED, PurgeMethod.ATA_SECURE_ERASE})


#: why a method that does not reach a machine's place cannot purge a device there
NOT_THERE = {
    "local": "it purges devices of test hosts only",
    "host": "it runs its programs on this machine only",
}


@dataclass(frozen=True)
class Capabilities:
    """Where a purge method runs and what it needs there, as its provider declares it."""

    #: it purges a device of this machine
    local: bool = True
    #: it purges a device of a test host (its programs run through the host's machine)
    hosts: bool = False
    #: the programs it runs on the device's machine (``nvme``, ``hdparm``, ...)
    tools: tuple[str, ...] = ()

    def refusal(self, machine: Machine) -> str | None:
        """Why it cannot purge a device of *machine* (a few words), or None."""
        reaches = {"local": self.local, "host": self.hosts}
        return None if reaches[machine.place] else NOT_THERE[machine.place]


#: the built-in methods' capabilities (a regular file's holes are punched and its size
#: read by this process: a file here only)
CAPABILITIES: dict[PurgeMethod, Capabilities] = {
    **dict.fromkeys((*SANITIZE, *FORMAT), Capabilities(hosts=True, tools=("nvme",))),
    **dict.fromkeys(ATA, Capabilities(hosts=True, tools=("hdparm",))),
    PurgeMethod.DISCARD: Capabilities(hosts=True, tools=("blkdiscard",)),
    PurgeMethod.PUNCH_HOLE: Capabilities(tools=("fallocate",)),
}


@dataclass(frozen=True)
class PurgeOption:
    """Whether one method can purge a device, and why (the bit, the state, the device kind)."""

    method: PurgeMethod
    supported: bool
    reason: str

    def __str__(self) -> str:
        verdict = "supported" if self.supported else "not supported"
        return f"{self.method}: {verdict} ({self.reason})"


def nvme_controller(identity: DeviceIdentity) -> str | None:
    """The controller's character device (``/dev/nvme0``) of a whole NVMe namespace, else None."""
    match = _NAMESPACE.fullmatch(identity.kernel_name or "")
    return f"/dev/nvme{match.group(1)}" if match and identity.transport == "nvme" else None


def _bit(value: int, bit: int, field: str, meaning: str) -> tuple[bool, str]:
    state = "set" if value >> bit & 1 else "clear"
    note = f": {meaning}" if state == "set" else ""
    return state == "set", f"{field} bit {bit} {state}{note}"


def _nvme(identity: DeviceIdentity, method: PurgeMethod) -> tuple[bool, str]:
    if identity.transport != "nvme":
        return False, f"not an NVMe device ({identity.transport})"
    if nvme_controller(identity) is None:
        return False, (
            f"{identity.kernel_name} is not a whole NVMe namespace; "
            "sanitize and format would erase more than it"
        )
    if identity.nvme is None:
        return False, "no NVMe identify data (nvme id-ctrl failed or nvme-cli is missing)"
    ctrl = identity.nvme.controller
    if method in SANITIZE:
        bit = {
            PurgeMethod.SANITIZE_CRYPTO: (0, "crypto erase"),
            PurgeMethod.SANITIZE_BLOCK: (1, "block erase"),
            PurgeMethod.SANITIZE_OVERWRITE: (2, "overwrite"),
        }[method]
        return _bit(ctrl.sanicap, bit[0], "SANICAP", f"sanitize {bit[1]}")
    supported, reason = _bit(ctrl.oacs, 1, "OACS", "Format NVM")
    if not supported or method is PurgeMethod.FORMAT_SES1:
        return supported, reason
    return _bit(ctrl.fna, 2, "FNA", "format crypto erase")


def _ata(
    identity: DeviceIdentity, method: PurgeMethod, ata: AtaSecurity | None = None
) -> tuple[bool, str]:
    """Whether *method* can purge *identity* (*ata*: a SATA drive's security state), and why."""
    if identity.transport != "scsi":
        return False, f"not a SATA device ({identity.transport})"
    if ata is None:
        return False, "ATA security state unknown (hdparm -I was not run)"
    enhanced = method is PurgeMethod.ATA_SECURE_ERASE_ENHANCED
    blocker = ata.blocker(enhanced)
    if blocker is not None:
        return False, blocker
    minutes = ata.minutes(enhanced)
    estimate = f", about {minutes} min" if minutes else ""
    return True, f"ATA security supported, not frozen{estimate}"


def _discard(identity: DeviceIdentity) -> tuple[bool, str]:
    if identity.kind != "block":
        return False, "a regular file: use punch-hole"
    if not identity.discard:
        return False, "the device does not support discard (queue/discard_max_bytes is 0)"
    if identity.transport == "loop":
        return True, "a loop device: discard punches holes in its backing file"
    return True, "queue/discard_max_bytes > 0 (weaker than sanitize or format)"


def support(
    identity: DeviceIdentity, method: PurgeMethod, ata: AtaSecurity | None = None
) -> tuple[bool, str]:
    """Whether *method* can purge *identity* (*ata*: a SATA drive's security state), and why."""
    if method in SANITIZE or method in FORMAT:
        return _nvme(identity, method)
    if method in ATA:
        return _ata(identity, method, ata)
    if method is PurgeMethod.DISCARD:
        return _discard(identity)
    if identity.kind == "file":
        return True, "a regular file"
    return False, "not a regular file"


def _option(
    identity: DeviceIdentity, method: PurgeMethod, ata: AtaSecurity | None, machine: Machine
) -> PurgeOption:
    refused = CAPABILITIES[method].refusal(machine)
    if refused is not None:
        return PurgeOption(method, False, refused)
    return PurgeOption(method, *support(identity, method, ata))


def options(
    identity: DeviceIdentity, ata: AtaSecurity | None = None, *, machine: Machine
) -> list[PurgeOption]:
    """Every method, strongest first, with whether it can purge *identity* and why.

    *ata* is the SATA drive's security state (:func:`~pytest_ssd.purge.ata.query_ata`);
    without it the ATA methods count as unsupported.  *machine*: the device's (a method
    whose :data:`CAPABILITIES` do not reach it is not supported there).
    """
    return [_option(identity, m, ata, machine) for m in ORDER]


def choose(
    identity: DeviceIdentity,
    forced: PurgeMethod | None = None,
    ata: AtaSecurity | None = None,
    *,
    machine: Machine,
) -> PurgeMethod:
    """The strongest supported method, or *forced*; :class:`PurgeError` when it cannot run.

    The error is one line naming the device and why each candidate failed.
    """
    found = options(identity, ata, machine=machine)
    if forced is not None:
        option = next(o for o in found if o.method is forced)
        if option.supported:
            return forced
        raise PurgeError(f"--ssd-purge={forced} cannot purge {identity.path}: {option.reason}")
    for option in found:
        if option.supported:
            return option.method
    why = "; ".join(f"{o.method}: {o.reason}" for o in found)
    raise PurgeError(f"no purge method can run on {identity.path} ({identity.label}): {why}")
