"""Data integrity end to end: a block corrupted behind fio's back, between the write and
the verify pass, is caught and named by its LBA, here and on a test host over ssh.

The corrupting test is a suite of its own (:data:`CORRUPTING`, written into the test's
folder): it writes 16 MiB with fio's headers through the ``ssd`` fixture, zeroes one
4 KiB block with ``dd`` on the device's machine (the test's own loop device), and reads
the span back with fio's verification.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.e2e.test_parity import Where, where  # noqa: F401  (fixture: local, then the host)

#: the 4 KiB block the corrupting test zeroes (byte offset 409600)
BLOCK = 100
CORRUPTING = f"""
import pytest

from pytest_ssd.methods.integrity import run
from pytest_ssd.methods.integrity.workloads import Range, fill_job
from pytest_ssd.methods.qual.record import settle


@pytest.mark.dut_state("fob")
def test_corrupted_block(ssd):
    span = Range(0, 16 << 20)
    assert run.run_verified(ssd, fill_job("integrity-fill", span, run.interval_of(ssd))) is None
    zero = ["dd", "if=/dev/zero", f"of={{ssd.dut.path}}", "bs=4096", "seek={BLOCK}", "count=1",
            "oflag=direct", "conv=notrunc"]
    assert ssd.machine.run(zero, timeout=60).returncode == 0
    found = run.verify_back(ssd, [span], "integrity-verify")
    outcome = run.judged(ssd, "after sequential fill", [span], found)
    settle(ssd, "integrity", [outcome])
"""


def corrupting_suite(folder: Path) -> Path:
    """:data:`CORRUPTING` as a suite ``qual`` of its own in *folder*."""
    suite = folder / "corrupting"
    suite.mkdir()
    (suite / "conftest.py").write_text('pytest_ssd_suite = "qual"\n')
    (suite / "test_corrupting.py").write_text(CORRUPTING)
    return suite


def the_line(out: str, dev: Path) -> re.Match[str]:
    """The failure's one line: the LBA, the block's offset, what fio expected and found."""
    pattern = (
        r"after sequential fill: LBA (\d+) \(offset 409600, 4096 B of (\S+)\) does not read"
        r" back as written: magic header expected acca, found 0; fio's dump: (\S+)$"
    )
    found = re.search(pattern, out, re.MULTILINE)
    assert found is not None, out
    lbs = int(Path(f"/sys/block/{dev.name}/queue/logical_block_size").read_text())
    assert int(found[1]) * lbs == BLOCK * 4096 and found[2] == str(dev)
    return found


def test_a_corrupted_block_is_caught_and_named_by_lba(
    run_ssd: Any,
    loop_device: Any,
    tmp_path: Path,
    where: Where,  # noqa: F811
) -> None:
    dev: Path = loop_device(64)
    run = run_ssd(*where.dut(dev), "-rA", suite=corrupting_suite(tmp_path), timeout=180)
    run.result.assert_outcomes(failed=1)
    out = run.result.stdout.str()
    found = the_line(out, dev)
    assert "Traceback" not in out
    # kept in the test's artifacts beside fio's output: fio's dump, or on a test host (whose
    # fio server would leave it in its working folder there) the block read back there
    dump = f"{dev.name}.409600.{'hdr_fail' if where.server is None else 'read-back'}"
    assert re.fullmatch(rf"\d\d-integrity-verify-1/{re.escape(dump)}", found[3])
    (kept,) = (run.run_dir / "artifacts").glob(f"*/{found[3]}")
    assert kept.read_bytes() == bytes(4096), "the zeroed block"
    assert not list(Path.home().glob(f"{dev.name}.409600.*")), "no dump left where fio ran"
    (record,) = [d for d in run.results()["derived"] if d["name"] == "qualification"]
    assert record["values"]["verdict"] == "fail"
    assert record["values"]["detail"] == found[0]


def test_the_integrity_suite_passes_on_a_sound_device(run_ssd: Any, loop_device: Any) -> None:
    """Every check on a 4 KiB-sector loop device (tests/e2e/test_qual_gate.py runs 512 B):
    headers every 4 KiB read back, the trimmed third and the purged blocks read as zeroes (a
    loop device punches holes)."""
    dev: Path = loop_device(64, sector_size=4096)
    suite = Path(__file__).parents[2] / "suites" / "qual" / "test_integrity.py"
    run = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}", suite=suite, timeout=300)
    run.result.assert_outcomes(passed=5)
    checks = {
        d["values"]["check"]: d["values"]
        for d in run.results()["derived"]
        if d["name"] == "qualification"
    }
    assert set(checks) == {
        "after sequential fill",
        "after trim",
        "trimmed reads",
        "drive full",
        "after purge",
        "after random overwrite",
    }
    assert all(v["verdict"] == "pass" and v["part"] == "integrity" for v in checks.values())
    assert "64.0 MiB (LBA 0-" in checks["drive full"]["detail"]
    assert "read as zeroes" in checks["trimmed reads"]["detail"]
    html = (run.run_dir / "report.html").read_text()
    assert 'id="ssd-suite-qual"' in html and 'id="ssd-suite-integrity"' in html
