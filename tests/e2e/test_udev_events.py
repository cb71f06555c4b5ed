"""A device under test that changes or drops off during a running test is named at that moment.

The kernel's block-device events are watched for the whole session (pyudev's netlink
monitor here, ``udevadm monitor --kernel`` on a test host): a loop device resized
(``truncate`` + ``losetup -c``) while a 30 s fio write runs on it stops fio within
seconds, the running test fails with one line naming the device and the event, and
the next test of the device is refused with that line.  The same through the local
sshd test host.  (A loop device held open cannot be detached meanwhile: ``losetup -d``
of a busy one only marks it to go at its last close; a ``remove`` event is checked on
recorded events in tests/unit/test_udev_events.py.)
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import smoke_argv
from tests.sshd import Sshd

MIB = 1 << 20
#: the running test's fio would take this long; the event must end it much sooner (the bound
#: is loose: pytest's own end after the test, on a busy machine, counts too)
FIO_S = 30
SUITE = """
import pathlib
import pytest
from pytest_ssd.fio.job import FioJob


def test_a_long_write(ssd):
    job = FioJob("long-write", "rnd", 4096, read_pct=0, iodepth=4, size=32 << 20, runtime_s={fio_s})
    pathlib.Path({mark!r}).write_text("fio starts")
    ssd.run(job)


def test_after_it(ssd):
    pytest.fail("never reached: the device is refused before")
"""


def _suite(folder: Path) -> tuple[Path, Path]:
    suite, mark = folder / "suite", folder / "started"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_long.py").write_text(SUITE.format(fio_s=FIO_S, mark=str(mark)))
    return suite, mark


def _resize(dev: Path, backing: Path) -> None:
    with backing.open("r+b") as fh:
        fh.truncate(96 * MIB)
    subprocess.run(["losetup", "-c", str(dev)], check=True, timeout=30)


def _written(dev: Path) -> int:
    return int(Path(f"/sys/class/block/{dev.name}/stat").read_text().split()[6])


def _writing(dev: Path, deadline: float) -> None:
    """Wait until fio writes the device (its sectors written move: a host's fio server may
    take a while to start)."""
    first = _written(dev)
    while _written(dev) == first:
        assert time.monotonic() < deadline, "fio did not start writing"
        time.sleep(0.1)
    time.sleep(0.5)


def _run_and_disturb(
    tmp_path: Path, dut: list[str], dev: Path, disturb: Callable[[Path, Path], None]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the suite on *dut*; once its fio starts, *disturb* the device; how it ended and
    the seconds from the disturbance to pytest's end."""
    suite, mark = _suite(tmp_path)
    argv = smoke_argv(tmp_path / "reports", *dut, "--ssd-profile=quick", suite=suite)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        _writing(dev, deadline)
        backing = Path(
            subprocess.run(
                ["losetup", "-nO", "BACK-FILE", str(dev)],
                check=True,
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
        )
        disturbed = time.monotonic()
        disturb(dev, backing)
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err), (
            time.monotonic() - disturbed
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _failure_line(out: str, test: str) -> str:
    """The report of the failed or errored *test*: its one line, under its section header."""
    lines = [line for line in out.splitlines() if not line.startswith("[gw")]  # xdist's worker
    found = [
        lines[i + 1]
        for i, line in enumerate(lines[:-1])
        if line.startswith("_") and f" {test}[" in line
    ]
    assert len(found) == 1, out
    return found[0]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_a_resized_loop_device_fails_the_running_test_at_once(
    loop_device: Callable[..., Path], tmp_path: Path, workers: list[str]
) -> None:
    dev = loop_device(size_mib=64)
    dut = [f"--dut={dev}", f"--ssd-confirm={dev}", *workers]
    done, took = _run_and_disturb(tmp_path, dut, dev, _resize)
    assert done.returncode == 1, done.stdout
    assert took < FIO_S - 5, f"pytest ended {took:.1f} s after the resize: fio was not stopped"
    line = _failure_line(done.stdout, "test_a_long_write")
    assert f"{dev.name} ({dev}) changed size (kernel event 'change' of {dev.name} at " in line
    assert "96.0 MiB now, 64.0 MiB when identified" in line, line
    refused = _failure_line(done.stdout, "test_after_it")
    assert "refused: " in refused and "changed size" in refused, refused
    assert "never reached" not in done.stdout
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    (record,) = [d for d in results["derived"] if d["name"] == "qualification"]
    assert record["test"].endswith(f"test_a_long_write[{dev.name}]"), record
    assert record["values"] == {
        "part": "devices",
        "check": "stayed on the bus",
        "verdict": "fail",
        "detail": line,
    }


def test_a_resized_loop_device_on_a_test_host_is_named_at_once(
    loop_device: Callable[..., Path], tmp_path: Path, server: Sshd
) -> None:
    dev = loop_device(size_mib=64)
    dut = [
        f"--dut={server.url(str(dev))}",
        f"--ssd-confirm={dev}",
        f"--ssd-ssh-config={server.config}",
    ]
    done, took = _run_and_disturb(tmp_path, dut, dev, _resize)
    assert done.returncode == 1, done.stdout
    assert took < FIO_S - 5, f"pytest ended {took:.1f} s after the resize: fio was not stopped"
    line = _failure_line(done.stdout, "test_a_long_write")
    assert f"({dev} on ssh root@127.0.0.1 port {server.port}) changed size" in line, line
    assert "96.0 MiB now, 64.0 MiB when identified" in line, line
    assert "refused: " in _failure_line(done.stdout, "test_after_it")
