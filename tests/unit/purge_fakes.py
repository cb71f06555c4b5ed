"""Fakes for purge tests: identities from the golden QEMU NVMe, a recording runner (real or
scripted).

There is no NVMe or SATA drive here, so the sanitize, format and ATA paths run
against a fake runner that answers with real nvme-cli 2.3 / hdparm output (the
goldens) or with sanitize-log JSON laid out as nvme-cli 2.x's json_sanitize_log
prints it.  The target itself is a sparse regular file, so the safety guard and
the read-back check run for real.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.nvme import NvmeInfo, parse_id_ctrl, parse_id_ns
from pytest_ssd.proc.runner import Completed, run
from pytest_ssd.purge.tools import Tools

GOLDEN = Path(__file__).parent.parent / "golden"
NVME_GOLDEN = GOLDEN / "nvme"
HDPARM_GOLDEN = GOLDEN / "hdparm"
FROZEN = HDPARM_GOLDEN / "intel-ssdsc2kw512g8.frozen.txt"
NOT_FROZEN = HDPARM_GOLDEN / "sandisk-u110.not-frozen.txt"
#: nvme-cli 2.x (libnvme nvme_sstat_status_to_string) status texts, SSTAT bits 2:0
SSTAT_TEXT = {
    0: "NVM Subsystem has never been sanitized.",
    1: "Most Recent Sanitize Command Completed Successfully.",
    2: "Sanitize in Progress.",
    3: "Most Recent Sanitize Command Failed.",
    4: "Most Recent Sanitize Command (No-Deallocate After Sanitize) Completed Successfully.",
}


def golden_json(name: str, **changes: Any) -> str:
    data: dict[str, Any] = json.loads((NVME_GOLDEN / name).read_text())
    data.update(changes)
    return json.dumps(data)


def nvme_info(ctrl: dict[str, Any] | None = None, ns: dict[str, Any] | None = None) -> NvmeInfo:
    """The golden QEMU controller and namespace, with fields of their JSON replaced."""
    return NvmeInfo(
        parse_id_ctrl(golden_json("id-ctrl.json", **(ctrl or {}))),
        parse_id_ns(golden_json("id-ns.json", **(ns or {}))),
    )


def nvme_identity(path: str | Path = "/dev/nvme0n1", **changes: Any) -> DeviceIdentity:
    """The QEMU namespace as identify() sees it (2 GiB, 512 B LBAs, discard)."""
    base = DeviceIdentity(
        path=str(path),
        kind="block",
        kernel_name="nvme0n1",
        size_bytes=2 << 30,
        logical_block_size=512,
        physical_block_size=512,
        rotational=False,
        discard=True,
        model="QEMU NVMe Ctrl",
        serial="GOLDEN0001",
        firmware="7.2.22",
        transport="nvme",
        nvme=nvme_info(),
    )
    return dataclasses.replace(base, **changes)


def sata_identity(path: str | Path = "/dev/sda", **changes: Any) -> DeviceIdentity:
    """The SanDisk SSD of the not-frozen hdparm golden, as a SCSI-disk identity."""
    sata = {
        "kernel_name": "sda",
        "size_bytes": 16013942784,
        "model": "SanDisk SSD U110 16GB",
        "serial": "145138402365",
        "firmware": "U221000",
        "transport": "scsi",
        "nvme": None,
    }
    return nvme_identity(path, **(sata | changes))


def sparse_target(tmp_path: Path, size: int = 1 << 20, fill: bytes | None = None) -> Path:
    """A regular file standing in for the device: sparse (reads zeroes) or filled."""
    target = tmp_path / "namespace.img"
    with target.open("wb") as fh:
        if fill is None:
            fh.truncate(size)
        else:
            fh.write(fill * (size // len(fill)))
    return target


def sanitize_log(state: int, sprog: int = 0xFFFF, sanact: int = 2, erased: int = 1) -> str:
    """``nvme sanitize-log /dev/nvme0 -o json`` as nvme-cli 2.x's json_sanitize_log lays it out."""
    body = {
        "sprog": sprog,
        "sstat": {
            "global_erased": erased,
            "no_cmplted_passes": 1 if state in (1, 4) else 0,
            "status": f"({state}) {SSTAT_TEXT[state]}",
        },
        "cdw10_info": sanact,
        "time_over_write": 4294967295,
        "time_block_erase": 4294967295,
        "time_crypto_erase": 4294967295,
        "time_over_write_no_dealloc": 4294967295,
        "time_block_erase_no_dealloc": 4294967295,
        "time_crypto_erase_no_dealloc": 4294967295,
    }
    return json.dumps({"nvme0": body}, indent=2)


def golden_failure(name: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a ``*.failed.txt`` golden ("exit code: N", "stderr:", ...)."""
    lines = (NVME_GOLDEN / name).read_text().splitlines()
    code = int(lines[0].removeprefix("exit code:").strip())
    assert lines[1] == "stderr:"
    return code, "", "\n".join(lines[2:]) + "\n"


class Recorder:
    """A purge's runner that remembers each call it is given; the real runner answers."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], **options: Any) -> Completed:
        self.calls.append(list(argv))
        return self.answer(argv, **options)

    def answer(self, argv: list[str], **options: Any) -> Completed:
        return run(argv, **options)


class FakeRunner(Recorder):
    """Answers each program call from a script keyed by its subcommand; records every call.

    A key's answers are used in order; the last one repeats (a device that stays in progress).
    """

    def __init__(self, script: dict[str, list[tuple[int, str, str]]]) -> None:
        super().__init__()
        self.script = {key: list(answers) for key, answers in script.items()}
        self.timeouts: dict[str, float] = {}
        self.counts: dict[str, int] = defaultdict(int)

    @staticmethod
    def key(argv: list[str]) -> str:
        """nvme: the subcommand; hdparm: -I or the --security-* option."""
        return next((a for a in argv[1:] if a == "-I" or a.startswith("--security")), argv[1])

    def answer(self, argv: list[str], **options: Any) -> Completed:
        key = self.key(argv)
        self.timeouts[key] = options["timeout"]
        answers = self.script.get(key)
        assert answers, f"unexpected call {argv}"
        index = min(self.counts[key], len(answers) - 1)
        self.counts[key] += 1
        code, stdout, stderr = answers[index]
        return Completed(tuple(argv), code, stdout, stderr, 0.0)


class FakeClock:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def fake_tools(runner: FakeRunner, clock: FakeClock | None = None) -> Tools:
    clock = clock or FakeClock()
    return Tools(
        run=runner, which=lambda program, hint: program, sleep=clock.sleep, clock=clock.clock
    )


OK = (0, "", "")
