"""Issue 29's configuration items end to end: what a device cannot take, and values refused
at configure time, before anything is touched."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, cssd_suite, digest
from tests.e2e.test_bad_values import DATASHEET_SUITE as SHEETS
from tests.e2e.test_bad_values import GOOD, SHEET
from tests.unit.db_fixtures import as_older, write_run

USAGE_ERROR = 4
WSAT = REPO / "suites" / "wsat"
SNIA = REPO / "suites" / "snia"
SECTOR_4K = 4096


def _clean(run: Any) -> str:
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    return out


@pytest.fixture
def sector_4k(loop_device: Any) -> Path:
    """A 64 MiB loop device with 4 KiB sectors: 512 B I/O is refused by the kernel."""
    dev: Path = loop_device(64, sector_size=SECTOR_4K)
    return dev


def _wsat(run_ssd: Any, dev: Path, selection: str) -> Any:
    return run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--dut-class=essd-wi",
        "-rs",
        "-k",
        selection,
        suite=WSAT,
        timeout=240,
    )


def test_wsat_512b_point_on_a_4k_device_skips_before_its_purge(
    run_ssd: Any, sector_4k: Path
) -> None:
    run = _wsat(run_ssd, sector_4k, "512b")
    out = _clean(run)
    run.result.assert_outcomes(skipped=1)
    assert "512 B is smaller than the 4096 B logical block" in out
    assert "plan for" not in out, "a skipped point is not in the plan"
    assert run.results()["transitions"] == [], "no purge spent on it"


def test_wsat_on_a_4k_device_runs_the_4k_point_alone_in_the_plan(
    run_ssd: Any, sector_4k: Path
) -> None:
    run = _wsat(run_ssd, sector_4k, "512b or 4k")
    out = _clean(run)
    run.result.assert_outcomes(passed=1, skipped=1)
    assert "512 B is smaller than the 4096 B logical block" in out
    plan = out[out.index("pytest-ssd plan") :]
    assert "fob" in plan and "1 test(s)" in plan and "total: 1 purge(s)" in plan, plan
    transitions = run.results()["transitions"]
    assert [t["target"] for t in transitions] == ["fob"]
    assert "rnd-4k-write" in transitions[0]["test"]


def test_snia_latency_on_a_4k_device_leaves_out_its_512b_cells(
    run_ssd: Any, sector_4k: Path
) -> None:
    run = run_ssd(
        f"--dut={sector_4k}",
        f"--ssd-confirm={sector_4k}",
        "-k",
        "test_latency",
        suite=SNIA,
        timeout=400,
    )
    _clean(run)
    run.result.assert_outcomes(passed=1)
    data = run.results()
    derived = next(d["values"] for d in data["derived"] if d["name"] == "snia-latency")
    assert derived["block_sizes"] == [8192, 4096]
    assert all(cell["block_size"] >= SECTOR_4K for cell in derived["window"])
    assert derived["skipped"] == {"512B": "512 B is smaller than the 4096 B logical block"}
    assert [t["target"] for t in data["transitions"]] == ["wipc"]


def _refused_untouched(run: Any, dev: Path, before: str, tmp_path: Path, problem: str) -> str:
    """Exit 4, one error line naming *problem*, the device and the report folder untouched."""
    out = _clean(run)
    assert run.result.ret == USAGE_ERROR, out
    errors = [line for line in run.result.errlines if "error:" in line.lower()]
    errors = [line for line in errors if not line.startswith("ERROR: usage:")]
    assert len(errors) == 1 and problem in errors[0], run.result.errlines
    assert digest(dev) == before, "nothing written"
    assert not (tmp_path / "reports").exists(), "nothing created"
    return str(errors[0])


LABELS = {
    "newline": ("a\nb", "U+000A (Cc)"),
    "escape": ("a\x1b[31mred", "U+001B (Cc)"),
    "zero-width": ("a\u200bb", "U+200B (Cf)"),
    "bidi-override": ("a\u202eb", "U+202E (Cf)"),
    "line-separator": ("a\u2028b", "U+2028 (Zl)"),
    "paragraph-separator": ("a\u2029b", "U+2029 (Zp)"),
    "empty": ("", "is empty or only blanks"),
    "blanks": ("   ", "is empty or only blanks"),
    "too-long": ("x" * 201, "is 201 characters long, more than 200"),
}


@pytest.mark.parametrize("option", ["--dut-label", "--ssd-compare"])
@pytest.mark.parametrize("case", list(LABELS))
def test_a_label_with_control_characters_is_refused_at_configure(
    run_ssd: Any, random_loop: Path, tmp_path: Path, option: str, case: str
) -> None:
    value, problem = LABELS[case]
    before = digest(random_loop)
    run = run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}", f"{option}={value}")
    line = _refused_untouched(run, random_loop, before, tmp_path, problem)
    assert option in line and "\n" not in line


@pytest.mark.parametrize(
    ("lines", "where"),
    [
        (('name = "drive\\nname"',), "drive.name: 'drive\\nname' holds the control character"),
        (('name = "x"', 'interface = "NVMe\\u2028PCIe"'), "drive.interface: 'NVMe\\u2028PCIe'"),
    ],
    ids=["drive-name", "drive-interface"],
)
def test_a_datasheet_name_with_control_characters_is_refused_at_configure(
    run_ssd: Any, random_loop: Path, tmp_path: Path, lines: tuple[str, ...], where: str
) -> None:
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(SHEET.format(**GOOD).replace('name = "test drive"', "\n".join(lines)))
    before = digest(random_loop)
    args = (f"--datasheet={sheet}", "--datasheet-force")
    run = run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}", *args, suite=SHEETS)
    _refused_untouched(run, random_loop, before, tmp_path, where)


def test_ssd_compare_reads_an_older_database_without_migrating_it(
    run_ssd: Any, random_loop: Path, tmp_path: Path
) -> None:
    """The session's --ssd-compare is a reader: a run refused later leaves the database as
    it was (before, reading it migrated it, locking the older pytest-ssd out)."""
    db = tmp_path / "old" / "results.sqlite"
    write_run(db, "run-1", "drive A").close()
    as_older(db, 1)
    before = digest(db)
    run = run_ssd(f"--dut={random_loop}", f"--ssd-db={db}", "--ssd-compare=drive A")
    out = _clean(run)
    assert run.result.ret == USAGE_ERROR and "--ssd-confirm" in out, out  # refused: no confirm
    assert digest(db) == before, "the reader changed the database"
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a;b", "it holds ';'"),
        ("a#b", "it holds '#'"),
        ("a$b", "it holds '$'"),
        ("a\nb", "it holds '\\n'"),
        (" lead", "has blanks at its ends"),
        ("trail ", "has blanks at its ends"),
    ],
    ids=["semicolon", "hash", "dollar", "newline", "leading-blank", "trailing-blank"],
)
def test_a_report_folder_fio_cannot_take_is_refused_before_the_purge(
    run_ssd: Any, random_loop: Path, tmp_path: Path, name: str, problem: str
) -> None:
    """Every test's logs live in the report folder: refused at configure, not after a purge."""
    reports = tmp_path / "r" / name
    given = str(reports) if name == name.strip() else name
    before = digest(random_loop)
    run = run_ssd(
        f"--dut={random_loop}",
        f"--ssd-confirm={random_loop}",
        f"--ssd-report-dir={given}",
        suite=cssd_suite(tmp_path),
    )
    out = _clean(run)
    assert run.result.ret == USAGE_ERROR, out
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "--ssd-report-dir" in errors[0] and problem in errors[0], errors
    assert digest(random_loop) == before, "nothing purged"
    assert not (tmp_path / "r").exists() and not (tmp_path / "reports").exists()


ODD_IDS = """
import pytest
from pytest_ssd.fio.job import FioJob


@pytest.mark.parametrize("n", [1], ids=["a;b#c$d e"])
def test_odd(ssd, n):
    job = FioJob("w", "seq", 1 << 20, size=8 << 20, read_pct=0, log_avg_ms=10)
    assert ssd.run(job).directions["write"].io_bytes == 8 << 20
"""


def test_a_test_id_fio_could_not_take_becomes_a_safe_artifacts_folder(
    run_ssd: Any, random_loop: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "odd"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_odd.py").write_text(ODD_IDS)
    run = run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}", suite=suite)
    _clean(run)
    run.result.assert_outcomes(passed=1)
    (folder,) = (run.run_dir / "artifacts").iterdir()
    assert folder.name.endswith("-a_b_c_d_e_"), folder.name
    assert list(folder.glob("*/log-w_bw.*.log")), "fio wrote its log where it was asked"


ESD = REPO / "suites" / "esd"


def test_esd_512b_points_on_a_4k_device_skip_before_their_preconditioning(
    run_ssd: Any, sector_4k: Path
) -> None:
    """esd's own rule (Limits) now applies before the state: no purge, no WIPC for them."""
    args = (f"--dut={sector_4k}", f"--ssd-confirm={sector_4k}", "--dut-class=essd-mu")
    run = run_ssd(*args, "-rs", "-k", "by_block_size and 512B", suite=ESD, timeout=240)
    out = _clean(run)
    run.result.assert_outcomes(skipped=4)
    assert "512 B is smaller than the 4096 B logical block" in out
    assert "plan for" not in out
    assert run.results()["transitions"] == []


def test_a_datasheet_line_of_512b_on_a_4k_device_skips_before_its_state(
    run_ssd: Any, sector_4k: Path, tmp_path: Path
) -> None:
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(SHEET.format(**GOOD).replace('block_size = "4KiB"', "block_size = 512"))
    args = (f"--dut={sector_4k}", f"--ssd-confirm={sector_4k}", f"--datasheet={sheet}")
    run = run_ssd(*args, "--datasheet-force", "-rs", suite=SHEETS, timeout=240)
    out = _clean(run)
    run.result.assert_outcomes(skipped=1)
    assert "512 B is smaller than the 4096 B logical block" in out
    assert run.results()["transitions"] == []
