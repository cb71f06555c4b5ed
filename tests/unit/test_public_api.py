"""The public API: what suites import, and that it is all they import."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

import pytest_ssd
from pytest_ssd import SsdBench

REPO = Path(__file__).resolve().parents[2]
#: the method library suites build on, besides the names of ``pytest_ssd`` itself
LIBRARY = ("workloads", "methods", "analysis", "figures")
SUITE_FILES = sorted((REPO / "suites").rglob("*.py")) + sorted((REPO / "examples").rglob("*.py"))


def test_every_public_name_is_there() -> None:
    missing = [name for name in pytest_ssd.__all__ if not hasattr(pytest_ssd, name)]
    assert (
        not missing and "SsdBench" in pytest_ssd.__all__ and "ReportSection" in pytest_ssd.__all__
    )


def _imported(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [m for m in found if m == "pytest_ssd" or m.startswith("pytest_ssd.")]


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_suites_import_the_public_api_and_the_method_library_only(path: Path) -> None:
    inside = [m for m in _imported(path) if m != "pytest_ssd" and m.split(".")[1] not in LIBRARY]
    assert not inside, f"{path.name} reaches into {inside}: export it from pytest_ssd"


def test_the_vendor_example_uses_the_public_api_alone() -> None:
    for path in (REPO / "examples" / "vendor_suite").glob("*.py"):
        assert set(_imported(path)) == {"pytest_ssd"}, path.name


def test_the_ssd_fixture_is_a_narrow_handle() -> None:
    # no session, no pytest item, no state machinery: what a test does with its device
    public = {n for n in dir(SsdBench) if not n.startswith("_")}
    public |= {f.name for f in fields(SsdBench) if not f.name.startswith("_")}
    assert public == {
        "artifacts",
        "assert_meets_spec",
        "check_spec",
        "datasheet",
        "derive",
        "dut",
        "figure",
        "health",
        "machine",
        "measurements",
        "need",
        "note",
        "plot",
        "profile",
        "progress",
        "record",
        "region",
        "run",
        "run_jobs",
        "series",
        "spec",
        "unwritten",
        "writing",
    }
