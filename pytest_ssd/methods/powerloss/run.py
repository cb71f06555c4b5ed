"""The power-loss check on the ``ssd`` fixture: write and flush, cut the power, read back.

1. fio writes the workload (:mod:`.workloads`) on the device's machine and saves its
   write state; the state is copied here at once and put back for the verify pass
   (the drive's host keeps nothing the check needs).
2. While the unflushed writes run, the drive's power controller (:mod:`.controller`)
   cuts the power and restores it; fio's trigger file ends fio if the cut did not, and
   pytest-ssd waits for the device's node to be back.
3. fio reads back every block the state says was written and flushed.

The verdict is a ``qualification`` record (part "power loss"); a block lost fails the
test with the same line, naming the first lost block by LBA.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ssd.errors import (
    ExtensionError,
    FioError,
    SsdError,
    ToolError,
    call_extension,
    kind_of,
)
from pytest_ssd.fio.job import FIO_INSTALL_HINT
from pytest_ssd.methods.powerloss import DEST
from pytest_ssd.methods.powerloss.controller import (
    NO_CONTROLLER,
    PowerController,
    PowerCycleError,
    power_controller,
)
from pytest_ssd.methods.powerloss.workloads import (
    STATE_FILE,
    TRIGGER,
    BadBlock,
    PowerLossWorkload,
    bad_blocks,
)

if TYPE_CHECKING:
    from pytest_ssd.bench import SsdBench
    from pytest_ssd.machine.machine import Machine
    from pytest_ssd.proc import Completed

PART = "power loss"
#: the longest one fio phase may take (the workload is size-bounded)
FIO_TIMEOUT_S = 1800.0
#: how long the device's node may take to come back after the power cycle
BACK_TIMEOUT_S = 300.0
#: seconds the later writes run before the cut (so that some are in flight)
IN_FLIGHT_S = 1.0
#: a verify state file's header (fio's verify-state.h): le64 version, size, crc
_STATE_HEADER = struct.Struct("<QQQ")
#: the state folder on the device's machine: never a fixed path (several sessions)
STATE_DIR = "/tmp/pytest-ssd-powerloss.XXXXXX"


@dataclass(frozen=True)
class PowerLossOutcome:
    """What the verify pass after the cut found."""

    workload: PowerLossWorkload
    #: blocks fio read back (as far as its saved state says it wrote)
    verified: int
    lost: list[BadBlock]
    #: what the controller said it did
    cycle: str

    @property
    def failed(self) -> bool:
        """A block lost, or fewer read back than were written."""
        return bool(self.lost) or self.verified < self.workload.blocks

    def detail(self, lba_size: int) -> str:
        blocks = f"{self.workload.blocks} blocks of {self.workload.block_size} B"
        how = "written and flushed" if self.workload.flushed else "written without a flush"
        if not self.lost and not self.failed:
            return f"{blocks} {how} before the cut read back as written (cut: {self.cycle})"
        if not self.lost:
            return (
                f"fio read back only {self.verified} of {blocks} {how} before the cut (its"
                f" saved write state counts fewer) (cut: {self.cycle})"
            )
        first = self.lost[0]
        return (
            f"{len(self.lost)} of {blocks} {how} before the cut did not survive: first at LBA"
            f" {first.offset // lba_size} (byte {first.offset}): {first.what} (cut: {self.cycle})"
        )


def controller_of(ssd: SsdBench, config: pytest.Config) -> PowerController | None:
    """The drive's power controller (the option, else a plugin's), or None."""
    return power_controller(
        config.getoption(DEST), config.hook.pytest_ssd_power_cycle, ssd.dut, ssd.artifacts
    )


def record(ssd: SsdBench, check: str, verdict: str, detail: str) -> None:
    ssd.derive(
        "qualification", {"part": PART, "check": check, "verdict": verdict, "detail": detail}
    )


def check_power_loss(
    ssd: SsdBench, config: pytest.Config, workload: PowerLossWorkload | None = None
) -> PowerLossOutcome:
    """Write *workload*, cut the power, verify; recorded, and the test failed on a lost block.

    Skipped in one line where the drive has no power controller.
    """
    workload = workload or PowerLossWorkload()
    check = workload.check
    controller = controller_of(ssd, config)
    if controller is None:
        record(ssd, check, "not judged", NO_CONTROLLER)
        pytest.skip(NO_CONTROLLER)
    capacity = ssd.dut.identity.size_bytes
    if workload.offset + workload.span > capacity:
        why = f"the workload spans {workload.span} B, the device has {capacity} B"
        record(ssd, check, "not judged", why)
        pytest.skip(why)
    # fio runs here directly, not through ssd.run: the guard and the device's state too
    with ssd.writing(workload.jobs()):
        try:
            outcome = _cut_and_verify(ssd, controller, workload)
        except SsdError as exc:  # no verdict: why, in the record too
            record(ssd, check, "not judged", str(exc).splitlines()[0])
            raise
    detail = outcome.detail(ssd.dut.identity.logical_block_size)
    record(ssd, check, "fail" if outcome.failed else "pass", detail)
    ssd.derive(
        "power_loss",
        {
            "blocks": workload.blocks,
            "block_size": workload.block_size,
            "flush_every": workload.flush_every,
            "verified": outcome.verified,
            "lost": len(outcome.lost),
            "controller": controller.name,
            "cycle": outcome.cycle,
        },
    )
    if outcome.failed:
        pytest.fail(detail, pytrace=False)
    return outcome


def _cut_and_verify(
    ssd: SsdBench, controller: PowerController, workload: PowerLossWorkload
) -> PowerLossOutcome:
    machine, device = ssd.machine, str(ssd.dut.path)
    fio = machine.which("fio", FIO_INSTALL_HINT)
    state_dir = _ok(machine.run(["mktemp", "-d", STATE_DIR], timeout=60), "mktemp").stdout.strip()
    state_file = f"{state_dir}/{STATE_FILE}"
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="ssd-powerloss") as pool:
            argv = workload.write_argv(fio, device, state_dir)
            writing = pool.submit(_fio, ssd, argv, "powerloss-write")
            try:
                state = _saved_state(machine, state_file, writing)
                ssd.artifacts.mkdir(parents=True, exist_ok=True)
                (ssd.artifacts / STATE_FILE).write_text(state)
                time.sleep(IN_FLIGHT_S)  # the later writes are in flight
                cycle = _cycle(controller)
            finally:  # ends fio where the cut did not
                machine.run(["touch", f"{state_dir}/{TRIGGER}"], timeout=60)
                writing.result(FIO_TIMEOUT_S)
        _wait_back(machine, device)
        put = ["sh", "-c", 'mkdir -p "$1" && base64 -d >"$2"', "sh", state_dir, state_file]
        _ok(machine.run(put, timeout=60, stdin=state), "base64 -d")
        verify = _fio(ssd, workload.verify_argv(fio, device, state_dir), "powerloss-verify")
    finally:
        machine.run(["rm", "-rf", "--", state_dir], timeout=60)
    report = _json(verify)
    verified = sum(int(job["read"]["total_ios"]) for job in report.get("jobs", []))
    lost = bad_blocks(verify.stderr)
    if verify.returncode != 0 and not lost:
        _ok(verify, "fio (powerloss-verify)")
    errors = sum(int(job.get("total_err", 0)) for job in report.get("jobs", []))
    if errors and not lost:
        raise FioError(
            f"fio's verify pass counted {errors} errors but named no block: {verify.command}"
        )
    return PowerLossOutcome(workload, verified, lost, cycle)


def _saved_state(machine: Machine, path: str, writing: Future[Completed]) -> str:
    """fio's saved write state (base64) once ``acked`` has written it whole."""
    deadline = time.monotonic() + FIO_TIMEOUT_S
    while time.monotonic() < deadline:
        ended = writing.done()
        read = machine.run(["base64", "-w0", path], timeout=60)
        if read.returncode == 0 and state_is_whole(read.stdout):
            return read.stdout
        if ended:
            done = writing.result()
            raise FioError(
                f"fio (powerloss-write) exited {done.returncode} without saving its write"
                f" state: {done.last_error_line()}"
            )
        time.sleep(0.2)
    raise FioError(f"fio saved no write state in {FIO_TIMEOUT_S:g} s: {path}")


def state_is_whole(text: str) -> bool:
    """Whether a verify state file (base64) is whole: its header's size, then that much."""
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        return False
    if len(raw) < _STATE_HEADER.size:
        return False
    size: int = _STATE_HEADER.unpack_from(raw)[1]
    return len(raw) == _STATE_HEADER.size + size


def _cycle(controller: PowerController) -> str:
    """The controller's cycle; a plugin's fault is one line naming it."""
    where = f"the power controller {controller.name!r}"
    said = call_extension(f"{where} cycle()", controller.cycle, keep=(PowerCycleError,))
    if not isinstance(said, str):
        raise ExtensionError(f"{where} cycle() returned {kind_of(said)} where a str was expected")
    return said


def _ok(done: Completed, what: str) -> Completed:
    if done.returncode != 0:
        raise ToolError(f"{what} failed ({done.returncode}): {done.last_error_line()}")
    return done


def _fio(ssd: SsdBench, argv: list[str], name: str) -> Completed:
    """fio run to its end (a power cut may end the write phase with an error)."""
    return ssd.machine.run(argv, timeout=FIO_TIMEOUT_S, artifacts=ssd.artifacts, name=name)


def _json(done: Completed) -> dict[str, Any]:
    text = done.stdout[done.stdout.find("{") :]
    try:
        report: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError:
        raise FioError(f"fio printed no JSON report: {done.command}") from None
    return report


def _wait_back(machine: Machine, device: str) -> None:
    deadline = time.monotonic() + BACK_TIMEOUT_S
    while machine.run(["test", "-e", device], timeout=60).returncode != 0:
        if time.monotonic() > deadline:
            raise ToolError(f"{device} is not back {BACK_TIMEOUT_S:g} s after the power cycle")
        time.sleep(1)
