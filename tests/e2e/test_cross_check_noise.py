"""The speed profile's dd against fio beside a competing fio: never a failure drawn from noise.

A loop device (a real device to the plugin: the factor is 1.5) is filled and its
speed profile read while fio runs randrw QD8 on a second loop device on the same
filesystem (the guard refuses a device another process holds open, so the load is
beside it, on the same disk).  Five runs in a row: each ``test_speed_profile_read``
passes (the tools agree) or is skipped as "not judged: noise" with the spreads;
none fails.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO

pytestmark = pytest.mark.slow

CSD = REPO / "suites" / "csd"
RUNS = 5


@contextlib.contextmanager
def competing_fio(device: Path, folder: Path) -> Iterator[None]:
    """fio randrw QD8 on *device* until the block ends (killed, then waited for)."""
    argv = [
        "fio",
        "--name=competitor",
        f"--filename={device}",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=8",
        "--ioengine=libaio",
        "--direct=1",
        "--time_based",
        "--runtime=3600",
        f"--output={folder / 'competitor.txt'}",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def test_speed_profile_read_beside_a_competing_fio_never_fails_on_noise(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    device, busy = loop_device(1024), loop_device(256, name="busy.img")
    verdicts = []
    with competing_fio(busy, tmp_path):
        for _ in range(RUNS):
            run = run_ssd(
                f"--dut={device}",
                f"--ssd-confirm={device}",
                "-k",
                "test_fill_drive or test_speed_profile_read",
                "-rs",
                suite=CSD,
                timeout=900,
            )
            out = run.result.stdout.str() + run.result.stderr.str()
            assert "INTERNALERROR" not in out and "Traceback" not in out, out
            speed = next(d for d in run.results()["derived"] if d["name"] == "speed-read")
            verdict = speed["values"]["cross_check"]
            verdicts.append((verdict, speed["values"]["ratio"]))
            noisy = verdict == "not judged: noise"
            assert verdict in ("agrees", "not judged: noise"), speed["values"]
            run.result.assert_outcomes(passed=2 - noisy, skipped=int(noisy))
            if noisy:  # one line with both tools' spreads
                skip = next(line for line in out.splitlines() if "not judged: noise" in line)
                assert "dd " in skip and "fio " in skip and "×" in skip
    print(verdicts)
