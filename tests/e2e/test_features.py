"""Declared features end to end: skipped on a loop device in one line; on QEMU's NVMe
controller (tests/e2e/test_nvme_guest.py) checked against the shipped sheet with two
statements changed (:func:`guest_sheet`, :func:`assert_features`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_ssd.methods.features.checks import PERCENT_USED_SLACK
from tests.e2e.conftest import REPO, SsdRun
from tests.e2e.test_admin_load import qualification, skipped_on_a_loop

SUITE = REPO / "suites" / "qual" / "test_features.py"
SHEET = REPO / "datasheets" / "qemu-nvme-ctrl.toml"


def test_a_loop_device_has_no_identify_data_skipped_in_one_line(run_ssd: Any) -> None:
    line = "LBA formats: not judged: a loop device has no NVMe identify data"
    assert len(skipped_on_a_loop(run_ssd, SUITE, "features", line)) == 10


def guest_sheet(folder: Path) -> Path:
    """The shipped QEMU sheet, stating 128 namespaces (QEMU's NN is 256) and 1 TBW."""
    text = SHEET.read_text().replace("namespaces = 256", "namespaces = 128")
    path = folder / "qemu-wrong.toml"
    path.write_text(text + "endurance_tbw = 1\n")
    return path


def assert_features(run: SsdRun) -> None:
    """Every feature met but the namespaces (failed in one line); the drive counted the
    endurance test's writes; its endurance not judged while its lifetime writes are under
    1 % of 1 TBW, and met once past it (QEMU says 0 % used)."""
    checks = {r["check"]: r for r in qualification(run, "features")}
    out = run.result.stdout.str()
    wrong = "namespaces: NN 256 (the datasheet states 128)"
    assert checks["namespaces"] == {
        "part": "features",
        "check": "namespaces",
        "verdict": "fail",
        "detail": wrong,
    }
    assert wrong in out
    met = {
        "capacity",
        "LBA formats",
        "volatile write cache",
        "format",
        "sanitize",
        "firmware slots",
        "power states",
        "temperature thresholds",
        "data units written",
    }
    endurance = checks["endurance"]
    assert "1 TBW = 1 TB" in endurance["detail"] and "says 0 % used" in endurance["detail"]
    # judged once the drive's lifetime writes reach 1 % of its rating (percent_used counts
    # whole percent): the guest's counter holds what the module's earlier tests wrote too
    lifetime = re.search(r"\(([\d.,]+) % of it;", endurance["detail"])
    assert lifetime is not None, endurance
    judged = float(lifetime.group(1).replace(",", "")) >= PERCENT_USED_SLACK
    assert endurance["verdict"] == ("pass" if judged else "not judged"), endurance
    if judged:
        met.add("endurance")
    assert {name for name, r in checks.items() if r["verdict"] == "pass"} == met, checks
    assert "fw-log: slot 1 active" in checks["firmware slots"]["detail"]
    print(checks["data units written"]["detail"])
    assert "for 67,108,864 B written" in checks["data units written"]["detail"]
