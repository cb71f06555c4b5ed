"""Safety against bad input from outside: datasheets nested or sized absurdly, and extension
code (a suite's ``conftest.py`` or a plugin) that raises or returns the wrong thing.

Each is one line naming the file or the plugin and hook, never an INTERNALERROR or a
traceback; a run refused at configure time leaves nothing (no run folder, no database row,
``latest`` untouched); a failing report section leaves a box in its place in report.html.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import digest

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


#: a conftest.py whose hook {hook} raises or returns a str (MODE), beside a suite of one test
HOOKED = """
pytest_ssd_suite = "hooked"


class Erase:
    name = "vendor-erase"

    def unsupported(self, identity):
        return None

    def purge(self, identity, artifacts):
        return "erased"


class Probe:
    name = "probe"

    def read(self):
        import time
        from pytest_ssd import HealthSample
        return HealthSample(t=time.time(), temperature_c=40.0)


def {hook}({args}):
    if {mode!r} == "raises":
        raise ValueError("the vendor's code is broken")
    return "not what pytest-ssd asked for"
"""

ONE_TEST = """
def test_one(ssd):
    pass
"""

HOOKS = {
    "pytest_ssd_purge_methods": ("", "PurgeProvider"),
    "pytest_ssd_drive_class": ("identity", "DriveClass"),
    "pytest_ssd_health_source": ("identity", "health source"),
}


def _suite(tmp_path: Path, conftest: str, test: str = ONE_TEST) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(conftest)
    (suite / "test_one.py").write_text(test)
    return suite


@pytest.mark.parametrize("mode", ["raises", "returns-a-str"])
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_a_hook_at_fault_refuses_the_run_in_one_line_leaving_nothing(
    run_ssd: Any, tmp_path: Path, random_loop: Path, hook: str, mode: str
) -> None:
    args, expected = HOOKS[hook]
    suite = _suite(tmp_path, HOOKED.format(hook=hook, args=args, mode=mode))
    _earlier_run(tmp_path / "reports")
    before = digest(random_loop)
    run = run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}", suite=suite, rootdir=None)
    line = _one_error(run)
    assert f"{hook} of {suite / 'conftest.py'} " in line, line
    if mode == "raises":
        assert line.endswith("raised ValueError: the vendor's code is broken"), line
    else:
        assert f"returned a str where a {expected}" in line or f"list of {expected}" in line, line
    assert digest(random_loop) == before


SECTIONS = """
from pytest_ssd import ReportSection, Section

pytest_ssd_suite = "hooked"


def good(ctx):
    return Section("vendor-good", "Vendor good", "<p>the good section stands</p>")


def bad(ctx):
    if {mode!r} == "build-raises":
        raise ValueError("the vendor's section is broken")
    return "<p>not a Section</p>"


def pytest_ssd_report_sections():
    if {mode!r} == "hook-raises":
        raise ValueError("the vendor's hook is broken")
    if {mode!r} == "hook-returns-a-str":
        return "Vendor bad"
    return [
        ReportSection(suite="other", title="Vendor good", build=good),
        ReportSection(suite="hooked", title="Vendor bad", build=bad),
    ]
"""

#: what each failing section says: in the report's box and on its one terminal line
SAYS = {
    "hook-raises": "pytest_ssd_report_sections of {conftest} raised ValueError: the vendor's"
    " hook is broken",
    "hook-returns-a-str": "pytest_ssd_report_sections of {conftest} returned a str where a list"
    " of ReportSection was expected",
    "build-raises": "report section 'Vendor bad' of {conftest}: build() raised ValueError: the"
    " vendor's section is broken",
    "build-returns-a-str": "report section 'Vendor bad' of {conftest}: build() returned a str"
    " where a Section or None was expected",
}


@pytest.mark.parametrize("mode", sorted(SAYS))
def test_a_failing_report_section_is_a_box_in_the_report_and_one_line(
    run_ssd: Any, tmp_path: Path, mode: str
) -> None:
    suite = _suite(tmp_path, SECTIONS.format(mode=mode))
    run = run_ssd("--dut=scratch:64M", suite=suite, rootdir=None)
    out = _clean(run)
    run.result.assert_outcomes(passed=1)
    says = SAYS[mode].format(conftest=suite / "conftest.py")
    assert [line for line in out.splitlines() if says in line] == [f"pytest-ssd: {says}"], out
    page = (run.run_dir / "report.html").read_text()
    box = page[page.index('<div class="ssd-error">') :]
    assert html.escape(says) in box[: box.index("</div>")], box[:500]
    assert 'id="ssd-devices"' in page and 'id="ssd-environment"' in page, "ours stand"
    assert ("the good section stands" in page) == mode.startswith("build"), "theirs stand"
