"""Run one purge method on a device, then check that the device reads back purged.

Every program runs through :mod:`pytest_ssd.proc` (argv list, timeout, output kept
in the artifact folder); a non-zero exit becomes a :class:`PurgeError` carrying the
tool's own last error line (``NVMe status: Invalid Command Opcode: ...``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device import guard
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.view import View
from pytest_ssd.errors import PurgeError, SafetyError, ToolError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge import sanitize
from pytest_ssd.purge.ata import HDPARM_HINT, HDPARM_TIMEOUT_S, AtaSecurity, query_ata
from pytest_ssd.purge.methods import ATA, FORMAT, SANITIZE, PurgeMethod, nvme_controller, options
from pytest_ssd.purge.tools import BLKDISCARD_FORCE, Tools, command_line
from pytest_ssd.purge.verify import DEFAULT_SAMPLES, Verification, reader_on, verify

SYS_BLOCK = Path("/sys/block")
DEFAULT_TIMEOUT_S = 6 * 3600.0
DEFAULT_POLL_INTERVAL_S = 5.0
UTIL_LINUX_HINT = "apt-get install util-linux"
#: the temporary ATA user password; SECURITY ERASE UNIT clears it again
ATA_PASSWORD = "pytest-ssd"
_SANACT = {
    PurgeMethod.SANITIZE_BLOCK: 2,
    PurgeMethod.SANITIZE_OVERWRITE: 3,
    PurgeMethod.SANITIZE_CRYPTO: 4,
}
_SES = {PurgeMethod.FORMAT_SES1: 1, PurgeMethod.FORMAT_SES2: 2}
#: FNA bits 0 and 1: a format, or its secure erase, applies to every namespace
_FNA_ALL_NAMESPACES = 0b11


@dataclass(frozen=True)
class PurgeResult:
    """What a purge did: the method, how long it took, how it is weaker, what it ran, the check."""

    method: PurgeMethod
    device: str
    seconds: float
    weaker: str | None
    commands: tuple[str, ...]
    verification: Verification

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return {
            "method": str(self.method),
            "device": self.device,
            "seconds": self.seconds,
            "weaker": self.weaker,
            "commands": list(self.commands),
            "verification": self.verification.as_dict(),
        }


#: the guard's view of a path on the device's machine (None: a fresh look there)
ViewOf = Callable[[str], View | None]


def _here(path: str) -> View | None:
    return None


@dataclass(frozen=True)
class _Job:
    identity: DeviceIdentity
    method: PurgeMethod
    tools: Tools
    artifacts: Path
    timeout_s: float
    poll_interval_s: float
    machine: Machine
    view: ViewOf = _here

    def run(self, argv: list[str], name: str, timeout: float | None = None) -> str:
        """Run *argv*; :class:`PurgeError` with the tool's message on a non-zero exit."""
        self.tools.check(
            argv,
            timeout=timeout or self.timeout_s,
            artifacts=self.artifacts,
            name=name,
            context=f"{self.method} of {self.identity.path}: ",
        )
        return command_line(argv)


def weaker_note(identity: DeviceIdentity, method: PurgeMethod) -> str | None:
    """How *method* falls short of sanitize or format on *identity*, or None."""
    if method is PurgeMethod.DISCARD:
        note = (
            "full-device discard only deallocates the LBAs: the drive may keep the old data "
            "in flash until garbage collection (weaker than sanitize or format)"
        )
        if identity.transport == "loop" and identity.backing_file:
            note += f"; this loop device punches holes in {identity.backing_file}"
        return note
    if method is PurgeMethod.PUNCH_HOLE:
        return (
            "a regular file: punching holes frees its blocks in the file system; "
            "the drive beneath gets at most a discard"
        )
    return None


def _sanitize(job: _Job) -> list[str]:
    nvme = job.tools.which("nvme", sanitize.NVME_HINT)
    controller = str(nvme_controller(job.identity))
    sanact = _SANACT[job.method]
    argv = sanitize.start(nvme, controller, sanact, job.tools, job.artifacts)
    sanitize.wait(
        nvme,
        controller,
        sanact,
        tools=job.tools,
        artifacts=job.artifacts,
        poll_interval_s=job.poll_interval_s,
        timeout_s=job.timeout_s,
    )
    return [command_line(argv), command_line([nvme, "sanitize-log", controller, "-o", "json"])]


def _format(job: _Job) -> list[str]:
    nvme = job.tools.which("nvme", sanitize.NVME_HINT)
    # no --lbaf: nvme-cli keeps the namespace's current LBA format; --force skips its 10 s wait
    argv = [
        nvme,
        "format",
        job.identity.path,
        f"--ses={_SES[job.method]}",
        "--force",
        f"--timeout={int(job.timeout_s * 1000)}",
    ]
    return [job.run(argv, "nvme-format", timeout=job.timeout_s + 60)]


def _ata_erase(job: _Job, security: AtaSecurity) -> list[str]:
    hdparm = job.tools.which("hdparm", HDPARM_HINT)
    enhanced = job.method is PurgeMethod.ATA_SECURE_ERASE_ENHANCED
    path = job.identity.path
    user = [hdparm, "--user-master", "u"]
    set_pass = [*user, "--security-set-pass", ATA_PASSWORD, path]
    ran = [job.run(set_pass, "hdparm-set-pass", HDPARM_TIMEOUT_S)]
    minutes = security.minutes(enhanced)
    # the drive's own estimate wins over a shorter timeout: killing hdparm does not stop it
    timeout = max(job.timeout_s, 2 * 60 * minutes + 300) if minutes else job.timeout_s
    flag = "--security-erase-enhanced" if enhanced else "--security-erase"
    try:
        ran.append(job.run([*user, flag, ATA_PASSWORD, path], "hdparm-erase", timeout))
    except (PurgeError, ToolError) as exc:
        raise PurgeError(f"{exc}; {_remove_password(job, user)}") from None
    return ran


def _remove_password(job: _Job, user: list[str]) -> str:
    argv = [*user, "--security-disable", ATA_PASSWORD, job.identity.path]
    try:
        job.run(argv, "hdparm-disable", HDPARM_TIMEOUT_S)
    except (PurgeError, ToolError):
        hint = command_line(argv)
        return f"the user password {ATA_PASSWORD!r} is still set: remove it with '{hint}'"
    return f"the temporary user password {ATA_PASSWORD!r} was removed again"


def _discard(job: _Job) -> list[str]:
    blkdiscard = job.tools.which("blkdiscard", UTIL_LINUX_HINT)
    return [job.run([blkdiscard, BLKDISCARD_FORCE, job.identity.path], "blkdiscard")]


def _punch_hole(job: _Job) -> list[str]:
    fallocate = job.tools.which("fallocate", UTIL_LINUX_HINT)
    size = Path(job.identity.path).stat().st_size
    # whole file-system blocks, so that a partial last block is freed too, not just zeroed
    block = max(job.identity.physical_block_size, 1)
    length = -(-size // block) * block
    argv = [fallocate, "--punch-hole", "--keep-size", "--offset", "0", "--length", str(length)]
    return [job.run([*argv, job.identity.path], "fallocate")]


def _security(job: _Job) -> AtaSecurity | None:
    """The drive's ATA security state now (a freeze may have come or gone since identify)."""
    if job.method not in ATA:
        return None
    try:
        return query_ata(job.identity.path, job.tools, job.artifacts)
    except ToolError as exc:
        raise PurgeError(f"{job.method} of {job.identity.path}: {exc}") from None


def sibling_namespaces(identity: DeviceIdentity, machine: Machine) -> list[str]:
    """The other namespaces (``/dev/nvme0n2`` ...) of an NVMe namespace's controller, as
    *machine*'s ``/sys/block`` lists them."""
    controller = nvme_controller(identity)
    if controller is None:
        return []
    name = re.compile(rf"{Path(controller).name}n\d+")
    found = (Path(p).name for p in machine.glob(f"{SYS_BLOCK}/nvme*"))
    return sorted(f"/dev/{n}" for n in found if name.fullmatch(n) and n != identity.kernel_name)


def _check_siblings(job: _Job) -> None:
    """Sanitize, and a format whose FNA says so, erase every namespace: guard them all."""
    nvme = job.identity.nvme
    if job.method in FORMAT and not (nvme and nvme.controller.fna & _FNA_ALL_NAMESPACES):
        return
    for sibling in sibling_namespaces(job.identity, job.machine):
        try:
            guard.check_writable(sibling, job.view(sibling) or View.of(job.machine, sibling))
        except SafetyError as exc:
            raise SafetyError(
                f"{job.method} of {job.identity.path} erases every namespace of "
                f"{nvme_controller(job.identity)}: {exc}"
            ) from None


def _require(job: _Job, security: AtaSecurity | None) -> None:
    found = options(job.identity, security, machine=job.machine)
    option = next(o for o in found if o.method is job.method)
    if not option.supported:
        raise PurgeError(f"cannot purge {job.identity.path} by {job.method}: {option.reason}")


def _execute(job: _Job, security: AtaSecurity | None) -> list[str]:
    if job.method in SANITIZE:
        return _sanitize(job)
    if job.method in FORMAT:
        return _format(job)
    if job.method in ATA and security is not None:
        return _ata_erase(job, security)
    if job.method is PurgeMethod.DISCARD:
        return _discard(job)
    return _punch_hole(job)


def purge(
    identity: DeviceIdentity,
    method: PurgeMethod,
    *,
    artifacts: Path,
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    samples: int = DEFAULT_SAMPLES,
    tools: Tools | None = None,
    machine: Machine,
    view: ViewOf = _here,
) -> PurgeResult:
    """Purge *identity* with *method*, then read back *samples* random blocks plus the ends.

    The safety guard runs first (the caller has checked ``--ssd-confirm``), also on the
    controller's other namespaces when the method erases them too (sanitize; format
    when FNA bits 0-1 say so); the method must be one
    :func:`~pytest_ssd.purge.methods.options` supports.  Raises
    :class:`~pytest_ssd.errors.SafetyError` for a target in use, :class:`PurgeError`
    when the method cannot run, its tool fails, or the read-back breaks its promise.
    On a test host (*machine*), every program runs there and *view* gives the guard
    that host's facts.
    """
    guard.check_writable(identity.path, view(identity.path) or View.of(machine, identity.path))
    tools = tools or Tools(run=machine.run, which=machine.which)
    job = _Job(identity, method, tools, artifacts, timeout_s, poll_interval_s, machine, view)
    if job.method in SANITIZE or job.method in FORMAT:
        _check_siblings(job)
    security = _security(job)
    _require(job, security)
    started = job.tools.clock()
    commands = _execute(job, security)
    seconds = job.tools.clock() - started
    check = verify(identity, method, samples=samples, read=reader_on(machine))
    if check.ok is False:
        raise PurgeError(f"{method} of {identity.path} failed its read-back check: {check.detail}")
    return PurgeResult(
        method=method,
        device=identity.path,
        seconds=seconds,
        weaker=weaker_note(identity, method),
        commands=tuple(commands),
        verification=check,
    )
