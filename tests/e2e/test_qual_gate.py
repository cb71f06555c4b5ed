"""compare --gate carries the qualification checks of two real runs: pass in both is
"same", a check that fails in the new run fails the gate in one line, one that passed in
the baseline and is absent from the new run is unknown (``--allow-unknown``); ``pytest-ssd
list`` counts each run's checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import main
from tests.e2e.conftest import REPO, SsdRun
from tests.e2e.test_integrity import corrupting_suite

INTEGRITY = REPO / "suites" / "qual" / "test_integrity.py"


def gate(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--db", str(db), "compare", "--gate", *args])
    said = capsys.readouterr()
    return code, said.out + "\n".join(x for x in said.err.splitlines() if "report:" not in x)


def test_the_gate_judges_qualification_checks(
    run_ssd: Any, loop_device: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def integrity(*k: str) -> str:
        """The run id of the integrity tests *k* on a scratch device."""
        run: SsdRun = run_ssd("--dut=scratch:64M", "-k", " or ".join(k), suite=INTEGRITY)
        run.result.assert_outcomes(passed=len(k))
        return run.run_dir.name  # the run's folder: "latest" names the next run next

    base = integrity("sequential_fill", "trim")  # 3 checks: fill, after trim, trimmed reads
    db = tmp_path / "reports" / "results.sqlite"
    again = integrity("sequential_fill", "trim")
    code, out = gate(capsys, db, base, again)
    assert code == 0, out
    assert "qualification checks: 3 same" in out and out.rstrip().endswith(
        "gate passed: no regression"
    )

    dev: Path = loop_device(64)
    corrupted = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}", suite=corrupting_suite(tmp_path))
    corrupted.result.assert_outcomes(failed=1)
    code, out = gate(capsys, db, base, corrupted.run_dir.name)
    assert code == 1, out
    (line,) = [x for x in out.splitlines() if x.startswith("gate failed:")]
    assert (
        f"({dev.name}): integrity · after sequential fill failed: after sequential fill: LBA 800"
        in line
    )
    assert "unknown    integrity · after trim: pass -> absent" in out

    fill_only = integrity("sequential_fill")
    code, out = gate(capsys, db, base, fill_only)
    assert code == 5 and "(66.7 % unknown)" in out, out
    code, out = gate(capsys, db, "--allow-unknown=70", base, fill_only)
    assert code == 0, out

    capsys.readouterr()
    assert main(["--db", str(db), "list"]) == 0
    listed = capsys.readouterr().out
    assert listed.count("qualification 3 pass") == 2 and "qualification 1 fail" in listed
