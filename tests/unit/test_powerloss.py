"""The power-loss check's parts: its fio argv, fio's words for a lost block, the power
controller asked (the option first, then a plugin's hook), the QEMU cut carried across cuts."""

from __future__ import annotations

import base64
import os
import signal
import struct
import subprocess
import types
from pathlib import Path
from typing import Any

import pluggy
import pytest

from pytest_ssd import newhooks
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ConfigError, ExtensionError
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.methods.powerloss import command_option
from pytest_ssd.methods.powerloss.controller import (
    CommandController,
    PowerCycleError,
    power_controller,
)
from pytest_ssd.methods.powerloss.qemu import cut, main
from pytest_ssd.methods.powerloss.run import PowerLossOutcome, state_is_whole
from pytest_ssd.methods.powerloss.workloads import (
    STATE_FILE,
    BadBlock,
    PowerLossWorkload,
    bad_blocks,
)
from pytest_ssd.site import Dut
from tests.unit.test_logwrites import GOLDEN, LogFile

MIB = 1 << 20
impl = pluggy.HookimplMarker("pytest")
DUT = Dut(
    id="lab-07-S1",
    path=Path("/dev/nvme0n1"),
    identity=DeviceIdentity(
        "/dev/nvme0n1", "block", "nvme0n1", 1 << 30, 512, 512, False, True, "M", "S1", "F", "nvme"
    ),
    scratch=False,
    readonly=False,
    label="drive A",
    address=HostAddress("lab-07", "/dev/nvme0n1", "root", 22),
)
#: what fio 3.33 printed for three zeroed blocks (``verify_state_load``, ``continue_on_error``)
FIO_STDERR = """\
verify: bad magic header 0, wanted acca at file /dev/loop3 offset 49152, length 4096 (requested block: offset=49152, length=4096)
verify: bad magic header 0, wanted acca at file /dev/loop3 offset 40960, length 4096 (requested block: offset=40960, length=4096)
crc32c: verify failed at file /dev/loop3 offset 45056, length 4096 (requested block: offset=45056, length=4096, flags=88)
       Expected CRC: 5c4b5b2a
       Received CRC: 00000000
fio: pid=4242, err=84/file:io_u.c:2242, func=io_u_sync_complete, error=Invalid or incomplete multibyte
"""  # noqa: E501


def test_the_write_phase_flushes_saves_its_state_and_writes_more_after() -> None:
    workload = PowerLossWorkload(acked_bytes=4 * MIB, later_bytes=MIB, flush_every=8, offset=MIB)
    argv = workload.write_argv("fio", "/dev/x", "/tmp/st")
    acked = argv[argv.index("--name=acked") : argv.index("--name=later")]
    assert {"--verify=crc32c", "--do_verify=0", "--verify_state_save=1"} <= set(acked)
    assert {"--fdatasync=8", "--end_fsync=1", f"--offset={MIB}", f"--size={4 * MIB}"} <= set(acked)
    later = argv[argv.index("--name=later") :]
    assert f"--offset={5 * MIB + 4096}" in later and "--stonewall" in later
    assert {"--time_based", "--runtime=120"} <= set(later), "in flight when the power goes"
    assert not any("sync" in a or "verify" in a for a in later), "later writes are not flushed"
    assert "--aux-path=/tmp/st" in argv and "--filename=/dev/x" in argv
    assert "--trigger-file=/tmp/st/trigger" in argv, "the file that ends fio after the cut"
    verify = workload.verify_argv("fio", "/dev/x", "/tmp/st")
    assert {"--verify_only=1", "--verify_state_load=1", "--continue_on_error=verify"} <= set(verify)
    assert "--name=later" not in verify and STATE_FILE == "local-acked-0-verify.state"
    assert (workload.blocks, workload.span) == (1024, 5 * MIB + 4096)
    # what the device's state accounts: both regions written, randomly
    spans = [(j.name, j.pattern, j.writes, j.offset, j.size) for j in workload.jobs()]
    assert spans == [
        ("acked", "rnd", True, MIB, 4 * MIB),
        ("later", "rnd", True, 5 * MIB + 4096, MIB),
    ]


def test_without_flushes_nothing_is_flushed() -> None:
    argv = PowerLossWorkload(flush_every=0, later_bytes=0).write_argv("fio", "/dev/x", "/s")
    assert not any("sync" in a for a in argv) and "--name=later" not in argv


@pytest.mark.parametrize(
    "fields", [{"acked_bytes": 1000}, {"block_size": 1000}, {"acked_bytes": 0}, {"flush_every": -1}]
)
def test_a_workload_that_cannot_run_is_refused(fields: dict[str, int]) -> None:
    with pytest.raises(ConfigError, match="power-loss workload"):
        PowerLossWorkload(**fields)


def test_fios_lost_blocks_are_read_by_offset() -> None:
    assert bad_blocks(FIO_STDERR) == [
        BadBlock("verify: bad magic header 0, wanted acca", 40960, 4096),
        BadBlock("crc32c: verify failed", 45056, 4096),
        BadBlock("verify: bad magic header 0, wanted acca", 49152, 4096),
    ]
    assert bad_blocks("fio-3.33\nRun status group 0\n") == []


def test_the_verdict_line_names_the_first_lost_block_by_lba() -> None:
    workload = PowerLossWorkload(acked_bytes=MIB, later_bytes=0)
    lost = PowerLossOutcome(workload, 256, bad_blocks(FIO_STDERR), "outlet 4 off, on")
    assert lost.failed and workload.check == "flushed writes survive"
    assert lost.detail(512) == (
        "3 of 256 blocks of 4096 B written and flushed before the cut did not survive: first at"
        " LBA 80 (byte 40960): verify: bad magic header 0, wanted acca (cut: outlet 4 off, on)"
    )
    unflushed = PowerLossWorkload(flush_every=0)
    kept = PowerLossOutcome(unflushed, 4096, [], "x")
    assert unflushed.check == "writes without a flush" and not kept.failed
    assert kept.detail(4096).startswith("4096 blocks of 4096 B written without a flush before")
    short = PowerLossOutcome(workload, 200, [], "x")
    assert short.failed and short.detail(512).startswith(
        "fio read back only 200 of 256 blocks of 4096 B written and flushed before the cut"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "--ssd-power-cycle needs a command"),
        ("   ", "--ssd-power-cycle needs a command"),
        ('pdu "off', "cannot be split into a command: No closing quotation"),
    ],
)
def test_a_command_that_is_none_is_one_line(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        command_option(text)


def test_the_command_runs_with_the_device_in_its_environment(tmp_path: Path) -> None:
    said = 'echo "$SSD_DUT_PATH|$SSD_DUT_LABEL|$SSD_DUT_SERIAL|$SSD_DUT_HOST"; echo cycled'
    command = CommandController(command_option(f"sh -c '{said}'"), DUT, tmp_path)
    assert command.cycle() == "cycled"
    assert (tmp_path / "power-cycle.stdout").read_text() == (
        "/dev/nvme0n1|drive A|S1|lab-07\ncycled\n"
    )
    failing = CommandController(("sh", "-c", "echo no outlet 9 >&2; exit 3"), DUT, tmp_path)
    with pytest.raises(PowerCycleError, match=r"sh \*\*\* exited 3: no outlet 9"):
        failing.cycle()


class _Pdu:
    name = "pdu outlet 4"

    def cycle(self) -> str:
        return "outlet 4 off 5 s"


def _caller(*answers: object) -> Any:
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(newhooks)
    for index, answer in enumerate(answers):
        module = types.ModuleType("conftest")
        module.__file__ = f"/lab/{index}/conftest.py"
        module.pytest_ssd_power_cycle = impl(lambda dut, answer=answer: answer)  # type: ignore[attr-defined]
        manager.register(module, f"lab{index}")
    return manager.hook.pytest_ssd_power_cycle


def test_the_option_wins_then_the_first_plugin_that_powers_the_drive(tmp_path: Path) -> None:
    pdu = _Pdu()
    assert power_controller(None, _caller(), DUT, tmp_path) is None
    assert power_controller(None, _caller(pdu, None), DUT, tmp_path) is pdu
    given = power_controller(("ipmitool", "chassis", "power", "cycle"), _caller(pdu), DUT, tmp_path)
    # its arguments may hold a password: written as the program alone
    assert isinstance(given, CommandController) and given.name == "ipmitool ***"
    with pytest.raises(ExtensionError) as wrong:
        power_controller(None, _caller("pdu"), DUT, tmp_path)
    assert str(wrong.value) == (
        "pytest_ssd_power_cycle of /lab/0/conftest.py returned a str where a power controller"
        " or None was expected (it has no name (a str))"
    )


def test_each_qemu_cut_starts_from_the_disk_the_last_one_left(tmp_path: Path) -> None:
    built = LogFile()
    built.write(0, b"\x01" * 512)
    built.entry(0, 0, 1)
    built.write(512, b"\x02" * 512)  # after the flush: lost at the first cut
    log = built.save(tmp_path / "log", counted=2)
    image = tmp_path / "image"
    image.write_bytes(b"\x01" * 512 + b"\x02" * 512 + bytes(1024))  # the disk before the cut
    work = tmp_path / "work"
    work.mkdir()
    assert cut(log, image, work) == (
        "QEMU blklogwrites: cut after entry 2 of 3 (0 later write(s) kept, 1 lost), 1 flush(es)"
    )
    assert image.read_bytes() == b"\x01" * 512 + bytes(1536)
    built.write(1024, b"\x03" * 512)  # the second test writes, flushes and writes again
    built.entry(0, 0, 1)
    built.write(0, b"\x04" * 512)
    built.save(log, counted=5)
    with image.open("r+b") as fh:
        fh.write(b"\x04" * 512 + bytes(512) + b"\x03" * 512)
    said = cut(log, image, work)
    assert said.startswith("QEMU blklogwrites: cut after entry 5 of 6 (0 later write(s) kept")
    assert image.read_bytes() == b"\x01" * 512 + bytes(512) + b"\x03" * 512 + bytes(512)


def state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def test_the_qemu_cut_freezes_the_process_and_lets_it_go_on(tmp_path: Path) -> None:
    image = tmp_path / "image"
    image.write_bytes(bytes(64 << 10))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        argv = ["--pid", str(sleeper.pid), "--log", str(GOLDEN), "--image", str(image)]
        assert main([*argv, "--work", str(tmp_path / "work")]) == 0
        assert image.read_bytes()[:4096] == b"\xaa" * 4096
        assert state_of(sleeper.pid) in "SR", "it goes on after the cut"
        missing = ["--log", str(tmp_path / "none"), "--image", str(image)]
        assert main(["--pid", str(sleeper.pid), *missing, "--work", str(tmp_path / "w")]) == 1
        assert state_of(sleeper.pid) in "SR", "a failed cut lets it go on too"
    finally:
        os.kill(sleeper.pid, signal.SIGKILL)
        sleeper.wait()


def test_a_saved_state_is_taken_only_once_fio_wrote_it_whole() -> None:
    state = struct.pack("<QQQ", 3, 16, 0) + bytes(16)  # fio's header: version, size, crc
    assert state_is_whole(base64.b64encode(state).decode())
    assert not state_is_whole(base64.b64encode(state[:-1]).decode()), "still being written"
    assert not state_is_whole("") and not state_is_whole("not base64!")
