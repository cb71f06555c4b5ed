"""Safety against bad input from outside: datasheets nested or sized absurdly, and extension
code (a suite's ``conftest.py`` or a plugin) that raises or returns the wrong thing.

Each is one line naming the file or the plugin and hook, never an INTERNALERROR or a
traceback; a run refused at configure time leaves nothing (no run folder, no database row,
``latest`` untouched); a failing report section leaves a box in its place in report.html.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

USAGE_ERROR = 4


def _clean(run: Any) -> str:
    """The run's whole output, checked for INTERNALERROR and tracebacks."""
    out = str(run.result.stdout.str() + run.result.stderr.str())
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    return out


def _one_error(run: Any) -> str:
    """The one ERROR line of a run refused at configure time (exit 4), and nothing left."""
    _clean(run)
    assert run.result.ret == USAGE_ERROR, run.result.outlines + run.result.errlines
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, run.result.errlines
    reports: Path = run.report_dir
    left = sorted(p.name for p in reports.iterdir()) if reports.exists() else []
    assert left == ["20250101-000000-1", "latest"], left  # no run folder, no database
    assert (reports / "latest").readlink() == Path("20250101-000000-1")
    return str(errors[0])


def _earlier_run(reports: Path) -> None:
    """A report folder holding an earlier run and ``latest`` to it: a refusal leaves both."""
    (reports / "20250101-000000-1").mkdir(parents=True)
    (reports / "latest").symlink_to("20250101-000000-1")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64 levels"),
        ("[drive]\n" + "".join(f"k{n} = {{" for n in range(100)) + "}" * 100, "nested deeper"),
        ("# " + "x" * (2 << 20) + "\n", "larger than 1,048,576 bytes"),
    ],
    ids=["5000-deep", "100-deep-tables", "2-MiB"],
)
def test_an_absurd_datasheet_is_one_line(
    run_ssd: Any, tmp_path: Path, body: str, needle: str
) -> None:
    sheet = tmp_path / "deep.toml"
    sheet.write_text(body)
    reports = tmp_path / "reports"
    _earlier_run(reports)
    line = _one_error(run_ssd("--dut=scratch:64M", f"--datasheet={sheet}"))
    assert f"{sheet}: file: " in line and needle in line, line
