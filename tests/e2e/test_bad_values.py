"""Bad values are refused at configure time, in one line, before anything touches the device.

Each of these once got through: a NaN datasheet value purged the device (a full discard)
before a ``Fraction`` traceback; ``qd = 1e9`` made fio crash; ``--ssd-idle=X=inf`` was an
OverflowError; a huge scratch size an INTERNALERROR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, digest
from tests.e2e.test_safety_session import _one_error

DATASHEET_SUITE = REPO / "suites" / "datasheet"
SHEET = """[drive]
name = "test drive"
model = ["*"]
capacity_gb = {capacity}

[[specs]]
id = "line"
metric = "iops"
unit = "IOPS"
pattern = "rnd"
direction = "read"
block_size = "4KiB"
qd = {qd}
jobs = {jobs}
state = "fob"
value = {value}
kind = "ceiling"
"""
GOOD = {"capacity": "0.067", "qd": "32", "jobs": "1", "value": "100"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"value": "nan"}, ("specs[0].value", "must be a finite number, not nan")),
        ({"value": "inf"}, ("specs[0].value", "must be a finite number, not inf")),
        ({"value": "1e308"}, ("specs[0].value", "1e+308 is beyond any drive")),
        ({"qd": "1000000000"}, ("specs[0].qd", "beyond the deepest queue fio's engines take")),
        ({"jobs": "100000"}, ("specs[0].jobs", "beyond the jobs one fio process runs")),
        ({"capacity": "nan"}, ("drive.capacity_gb", "must be a finite number, not nan")),
    ],
    ids=["value-nan", "value-inf", "value-1e308", "qd-1e9", "jobs-1e5", "capacity-nan"],
)
def test_a_datasheet_value_no_drive_has_is_refused_before_the_device_is_touched(
    run_ssd: Any,
    random_loop: Path,
    tmp_path: Path,
    change: dict[str, str],
    expected: tuple[str, str],
) -> None:
    where, problem = expected
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(SHEET.format(**(GOOD | change)))
    before = digest(random_loop)
    run = run_ssd(
        f"--dut={random_loop}",
        f"--ssd-confirm={random_loop}",
        f"--datasheet={sheet}",
        "--datasheet-force",
        suite=DATASHEET_SUITE,
    )
    line = _one_error(run)
    assert line.startswith(f"ERROR: {sheet}: {where}: ") and problem in line, line
    assert digest(random_loop) == before
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        ("--ssd-idle=after-purge=inf", "SECONDS from 0 to 86400 (a day)"),
        ("--ssd-idle=after-purge=nan", "SECONDS from 0 to 86400 (a day)"),
        ("--ssd-idle=after-purge=1e308", "SECONDS from 0 to 86400 (a day)"),
        ("--ssd-repeat=1000000", "--ssd-repeat needs a whole number from 1 to 100"),
        ("--ssd-health-interval=inf", "is not a number of seconds from 0 to 3600"),
        ("--ssd-cv-max=nan", "is not a percentage in (0, 100]"),
        ("--dut=scratch:99999999999999999999T", "is beyond any file size (8 EiB at most)"),
    ],
)
def test_an_option_value_out_of_bounds_is_one_line(
    run_ssd: Any, random_loop: Path, tmp_path: Path, option: str, problem: str
) -> None:
    before = digest(random_loop)
    args = (
        (option,)
        if option.startswith("--dut")
        else (
            f"--dut={random_loop}",
            f"--ssd-confirm={random_loop}",
            option,
        )
    )
    run = run_ssd(*args)
    out = run.result.stdout.str() + run.result.stderr.str()
    assert run.result.ret == 4, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    errors = [line for line in run.result.errlines if "error:" in line]
    assert len(errors) == 1 and problem in errors[0], run.result.errlines
    assert digest(random_loop) == before
    assert not (tmp_path / "reports").exists()


def test_a_scratch_device_larger_than_the_free_space_is_one_line(
    run_ssd: Any, tmp_path: Path
) -> None:
    line = _one_error(run_ssd("--dut=scratch:1000T"))
    assert "scratch devices of 1000.0 TiB do not fit in the" in line
    assert "give a smaller scratch:SIZE or --ssd-report-dir on a larger filesystem" in line
    assert not (tmp_path / "reports").exists()
