"""The suites on a 4 KiB-sector device and on a second namespace of one NVMe controller.

A 4 KiB-sector loop device (``losetup --sector-size 4096``) runs the smoke suite and the
qualification's namespace checks here; QEMU's controller (tests/qemu_nvme.py, one boot)
gets a second namespace of 4 KiB sectors (``-device nvme-ns,nsid=2,
logical_block_size=4096``) that the same suites run on over SSH, while the first
namespace, not the device under test, is checked by its contents: its backing file's
checksum before and after the run is the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, SMOKE
from tests.qemu_nvme import SERIAL, Namespace, namespace_image, nvme_guest
from tests.sshd import Sshd

NAMESPACES = REPO / "suites" / "qual" / "test_namespaces.py"
MIB = 1 << 20


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(4 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def _checks(run: Any) -> dict[str, dict[str, str]]:
    """The run's qualification records of part namespaces, by check."""
    found = [d["values"] for d in run.results()["derived"] if d["name"] == "qualification"]
    assert all(v["part"] == "namespaces" for v in found), found
    return {v["check"]: v for v in found}


def _run(run_ssd: Any, *args: str, passed: int = 6, timeout: float = 300) -> Any:
    """The smoke suite and the namespace checks in one session."""
    run = run_ssd(str(NAMESPACES), *args, suite=SMOKE, timeout=timeout)
    assert run.result.ret == 0, run.result.stdout.str()
    run.result.assert_outcomes(passed=passed)
    return run


def test_the_suites_on_a_4k_sector_loop_device(
    loop_device: Callable[..., Path], run_ssd: Any
) -> None:
    dev = loop_device(size_mib=128, sector_size=4096)
    run = _run(run_ssd, f"--dut={dev}", f"--ssd-confirm={dev}")
    (device,) = run.results()["devices"].values()
    identity = device["identity"]
    assert (identity["logical_block_size"], identity["size_bytes"]) == (4096, 128 * MIB)
    rows = dict(device["summary_tables"]["rows"])
    assert rows["Block size (logical / physical)"] == "4096 B / 4096 B"
    checks = _checks(run)
    assert checks["block size"]["verdict"] == "not judged"
    assert "no nvme id-ns): the kernel's 4096 B logical block" in checks["block size"]["detail"]
    assert checks["other namespaces untouched"]["detail"] == f"{dev.name} is no NVMe namespace"
    jobs = {m["test"].split("::")[-1]: m for m in run.results()["measurements"]}
    (written,) = [m for t, m in jobs.items() if "not_written" in t]
    done = written["metrics"]["write"]  # fio's own counts: 4 KiB an I/O
    assert done["io_bytes"] == done["total_ios"] * 4096 == 4 * MIB, done


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    folder = tmp_path_factory.mktemp("guest")
    with nvme_guest(folder, 256, namespaces=[Namespace(256, 4096)]) as booted:
        yield booted, folder


def test_the_suites_on_a_second_4k_namespace_leave_the_first_untouched(
    guest: tuple[Sshd, Path], run_ssd: Any
) -> None:
    server, folder = guest
    first, second = namespace_image(folder, 1), namespace_image(folder, 2)
    with first.open("r+b") as fh:  # data the run must leave as it is
        fh.write(b"namespace one, not the device under test\n" * 4096)
    before, second_before = _sha256(first), _sha256(second)
    run = _run(
        run_ssd,
        f"--dut={server.url('/dev/nvme0n2')}",
        f"--ssd-ssh-config={server.config}",
        f"--ssd-confirm={SERIAL}",
        "-k",
        "not seq",  # the random corners: the guest (TCG) is slow, the blocks are what matter
        passed=4,
        timeout=600,
    )
    assert _sha256(first) == before, "namespace 1 was written"
    assert _sha256(second) != second_before, "the device under test was written"
    (device,) = run.results()["devices"].values()
    identity = device["identity"]
    assert (identity["nsid"], identity["logical_block_size"]) == (2, 4096)
    assert identity["size_bytes"] == 256 * MIB
    assert identity["nvme"]["namespace"]["lba_size"] == 4096
    assert device["id"].endswith(f"-{SERIAL}-n2"), device["id"]
    assert identity["controller"] == "nvme0", "udev's parent controller, read on the host"
    # QEMU 7.2's namespace has no udevd in the guest, but its sysfs wwid is its WWN
    assert identity["wwn"].startswith("nvme.1b36-") and identity["wwn"].endswith("-00000002")
    checks = _checks(run)
    block = checks["block size"]  # QEMU lists 512 B formats #0-3, 4 KiB ones #4-7
    assert (block["verdict"], block["detail"]) == (
        "pass",
        "LBA format #4 (4096 B) in use, the kernel's logical block",
    )
    untouched = checks["other namespaces untouched"]
    assert untouched["verdict"] == "pass", untouched
    assert untouched["detail"].endswith("of 4096 B on nvme0n2; nvme0n1: none"), untouched
