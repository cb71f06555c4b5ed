"""The power-loss check end to end: skipped without a controller, a lost block named by LBA,
and on QEMU's NVMe namespace cut by its write log: flushed data survives, and the same check
on writes without a flush finds them lost (it can tell).

The QEMU guest (tests/qemu_nvme.py) boots once for the module with ``blklogwrites`` logging
the namespace; ``--ssd-power-cycle`` runs ``pytest_ssd.methods.powerloss.qemu``, which
rebuilds the namespace as a cut at the last flush (plus a random half of the later writes)
leaves it.  Skipped with the reason where QEMU cannot run.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO
from tests.qemu_nvme import SERIAL, nvme_guest
from tests.sshd import Sshd

NS = "/dev/nvme0n1"
SUITE_MODULE = REPO / "suites" / "qual" / "test_power_loss.py"
#: the same check on writes never flushed: a cut must lose them, and the check must say so
NO_FLUSH = """\
from pytest_ssd.methods.powerloss.run import check_power_loss
from pytest_ssd.methods.powerloss.workloads import PowerLossWorkload

MIB = 1 << 20


def test_writes_without_a_flush_are_lost(ssd, pytestconfig):
    workload = PowerLossWorkload(
        acked_bytes=4 * MIB, later_bytes=MIB, flush_every=0, offset=64 * MIB, seed=7
    )
    check_power_loss(ssd, pytestconfig, workload)
"""


def _suite(folder: Path, *, negative: bool = False) -> Path:
    """The qualification suite's power-loss module (and the negative case) in a suite."""
    suite = folder / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_power_loss.py").write_text(SUITE_MODULE.read_text())
    if negative:
        (suite / "test_no_flush.py").write_text(NO_FLUSH)
    return suite


def _records(run: Any) -> list[dict[str, Any]]:
    derived = run.results()["derived"]
    return [d["values"] for d in derived if d["name"] == "qualification"]


def test_no_controller_is_skipped_and_a_lost_block_fails_by_lba(
    run_ssd: Any, tmp_path: Path
) -> None:
    suite = _suite(tmp_path)
    skipped = run_ssd("--dut=scratch:64M", suite=suite)
    skipped.result.assert_outcomes(skipped=1)
    out = skipped.result.stdout.str()
    assert "no power controller for this drive: give --ssd-power-cycle=CMD" in out, out
    (record,) = _records(skipped)
    assert (record["part"], record["verdict"]) == ("power loss", "not judged")
    # a "power cycle" that zeroes 4 blocks the workload wrote and flushed: found, by LBA
    zero = "dd if=/dev/zero of=$SSD_DUT_PATH bs=4096 count=4 seek=100 oflag=direct status=none"
    lost = run_ssd("--dut=scratch:64M", f"--ssd-power-cycle=sh -c {shlex.quote(zero)}", suite=suite)
    lost.result.assert_outcomes(failed=1)
    line = (
        "4 of 2048 blocks of 4096 B written and flushed before the cut did not survive:"
        " first at LBA 800 (byte 409600): verify: bad magic header 0, wanted acca"
    )
    assert line in lost.result.stdout.str()
    (record,) = _records(lost)
    assert record["verdict"] == "fail" and record["detail"].startswith(line)


@pytest.fixture(scope="module")
def logged_guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    folder = tmp_path_factory.mktemp("guest")
    with nvme_guest(folder, size_mib=256, log_writes=folder / "writes.log") as booted:
        yield booted, folder


def test_flushed_writes_survive_a_cut_and_unflushed_ones_do_not(
    logged_guest: tuple[Sshd, Path], run_ssd: Any, tmp_path: Path
) -> None:
    guest, folder = logged_guest
    log = folder / "writes.log"
    cycle = [
        sys.executable,
        *("-m", "pytest_ssd.methods.powerloss.qemu"),
        *("--pid", log.with_suffix(".pid").read_text().strip()),
        *("--log", str(log), "--image", str(folder / "nvme.img")),
        *("--work", str(tmp_path / "cuts"), "--later-seed", "1"),
    ]
    run = run_ssd(
        f"--dut={guest.url(NS)}",
        f"--ssd-ssh-config={guest.config}",
        f"--ssd-confirm={SERIAL}",
        f"--ssd-power-cycle={shlex.join(cycle)}",
        suite=_suite(tmp_path, negative=True),
        timeout=600,
    )
    out = run.result.stdout.str()
    run.result.assert_outcomes(passed=1, failed=1)
    flushed, unflushed = sorted(_records(run), key=lambda r: r["check"])
    assert flushed["check"] == "flushed writes survive" and flushed["verdict"] == "pass"
    assert flushed["detail"].startswith(
        "2048 blocks of 4096 B written and flushed before the cut read back as written"
    )
    # the cut was at the last flush, with some of the later writes kept and some lost
    assert "QEMU blklogwrites: cut after entry" in flushed["detail"], flushed
    assert unflushed["check"] == "writes without a flush" and unflushed["verdict"] == "fail"
    lost = " of 1024 blocks of 4096 B written without a flush before the cut did not survive:"
    assert lost in unflushed["detail"] and unflushed["detail"] in out, unflushed
