"""Admin commands under load end to end: skipped on a loop device in one line; on QEMU's
NVMe controller (tests/e2e/test_nvme_guest.py, one guest for every check) measured,
judged and drawn (:func:`assert_admin_load`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import REPO, SsdRun

SUITE = REPO / "suites" / "qual" / "test_admin_load.py"


def qualification(run: SsdRun, part: str) -> list[dict[str, Any]]:
    """The run's qualification records of *part* (the shared contract's)."""
    found = [d for d in run.results()["derived"] if d["name"] == "qualification"]
    return [d["values"] for d in found if d["values"]["part"] == part]


def skipped_on_a_loop(run_ssd: Any, suite: Path, part: str, line: str) -> list[dict[str, Any]]:
    """Run *suite* on a scratch loop device: every test skipped, *line* said, no traceback;
    the part's qualification records (each not judged)."""
    run = run_ssd("--dut=scratch:64M", "-rs", suite=suite)
    out = run.result.stdout.str()
    assert run.result.ret == 0 and " skipped in " in out and "passed" not in out, out
    assert line in out and "Traceback" not in out
    records = qualification(run, part)
    assert {r["verdict"] for r in records} == {"not judged"}
    return records


def test_a_loop_device_has_no_admin_interface_skipped_in_one_line(run_ssd: Any) -> None:
    line = "QD1 polled 10/s: not judged: a loop device has no NVMe admin interface"
    assert len(skipped_on_a_loop(run_ssd, SUITE, "admin load", line)) == 4


def assert_admin_load(run: SsdRun) -> None:
    """QD32 polled at 1/s on QEMU's controller: every command answered, p99 and p99.9
    judged or shown as not resolved, the test's outcome the verdicts', the figure drawn."""
    (record,) = [d["values"] for d in run.results()["derived"] if d["name"] == "admin-load"]
    assert (record["qd"], record["rate"], record["telemetry"]) == (32, 1.0, False)
    assert record["commands"] == ["smart-log", "error-log", "id-ctrl"]
    assert len(record["pollers"]) == 4, "4 rounds a side on the quick profile"
    for poller in record["pollers"]:
        assert poller["rounds"] >= 1 and not poller["failed"], poller
        assert poller["answered"]["smart-log"] == poller["rounds"], poller
    print("achieved polling rates:", [round(p["rate"], 1) for p in record["pollers"]])
    checks = {r["check"]: r for r in qualification(run, "admin load")}
    answered = checks["QD32 polled 1/s: admin commands answered"]
    assert answered["verdict"] == "pass", answered
    assert "no telemetry read: the drive declares none (LPA bit 3)" in answered["detail"]
    for p in ("p99", "p99.9"):
        verdict = checks[f"QD32 polled 1/s {p}"]
        print(verdict["detail"])
        assert verdict["verdict"] in ("pass", "fail", "not judged")
        assert "\n" not in verdict["detail"]
        shown = next(x for x in record["percentiles"] if f"p{x['percentile']:g}" == p)
        assert len(shown["unpolled_us"]) == len(shown["polled_us"]) == 4
        if verdict["verdict"] != "not judged":
            assert None not in shown["unpolled_us"] + shown["polled_us"]
            assert "95 % CI" in verdict["detail"]
    failed = [r["detail"] for r in checks.values() if r["verdict"] == "fail"]
    out = run.result.stdout.str()
    line = next(
        x
        for x in out.splitlines()
        if "test_admin_polling_under_load[" in x and "qd32-1per-s" in x and " " in x
    )
    assert ("FAILED" in line) == bool(failed), line
    page = (run.run_dir / "report.html").read_text()
    assert "Admin commands under load (suites/qual)" in page
    assert "p99 and p99.9 without and with admin polling" in page
