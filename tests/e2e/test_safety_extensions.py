"""Safety against bad input from outside: datasheets nested or sized absurdly, and extension
code (a suite's ``conftest.py`` or a plugin) that raises or returns the wrong thing.

Each is one line naming the file or the plugin and hook, never an INTERNALERROR or a
traceback; a run refused at configure time leaves nothing (no run folder, no database row,
``latest`` untouched); a failing report section leaves a box in its place in report.html.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_cli
from tests.e2e.conftest import digest

USAGE_ERROR = 4
INTERRUPTED = 2


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
    if {mode!r} == "exits":
        raise SystemExit(3)
    if {mode!r} == "interrupts":
        raise KeyboardInterrupt
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


@pytest.mark.parametrize("mode", ["raises", "exits", "returns-a-str"])
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
    elif mode == "exits":  # a hook error as any other: not pytest's INTERNALERROR (exit 3)
        assert line.endswith("raised SystemExit: 3"), line
    else:
        assert f"returned a str where a {expected}" in line or f"list of {expected}" in line, line
    assert digest(random_loop) == before


@pytest.mark.parametrize(
    ("hook", "workers"),
    [*((hook, ()) for hook in sorted(HOOKS)), ("pytest_ssd_drive_class", ("-n", "2"))],
    ids=[*sorted(HOOKS), "pytest_ssd_drive_class-n2"],
)
def test_a_hook_raising_keyboard_interrupt_interrupts_the_run_in_one_line_leaving_nothing(
    run_ssd: Any, tmp_path: Path, random_loop: Path, hook: str, workers: tuple[str, ...]
) -> None:
    """Still an interrupt (exit 2, as Ctrl-C), said in one line naming the hook: pytest says
    nothing of an interrupt before its session starts."""
    suite = _suite(tmp_path, HOOKED.format(hook=hook, args=HOOKS[hook][0], mode="interrupts"))
    reports = tmp_path / "reports"
    _earlier_run(reports)
    before = digest(random_loop)
    run = run_ssd(
        f"--dut={random_loop}", f"--ssd-confirm={random_loop}", *workers, suite=suite, rootdir=None
    )
    out = _clean(run)
    assert run.result.ret == INTERRUPTED, out
    said = f"interrupted in {hook} of {suite / 'conftest.py'} (KeyboardInterrupt)"
    if workers:  # in the session (the devices open while the workers start): pytest says it
        assert f"! pytest_ssd.errors.ExtensionInterrupt: {said} !" in run.result.outlines, out
    else:
        assert run.result.errlines == [f"pytest-ssd: {said}"], out
    assert sorted(p.name for p in reports.iterdir()) == ["20250101-000000-1", "latest"]
    assert (reports / "latest").readlink() == Path("20250101-000000-1")
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


#: hooks that answer well, with objects that fail when used later (MODE)
LATER = """
import time

from pytest_ssd import HealthSample

pytest_ssd_suite = "hooked"


class Erase:
    name = "vendor-erase"

    def unsupported(self, identity):
        if {mode!r} == "unsupported-raises":
            raise KeyError("model")
        return None

    def purge(self, identity, artifacts):
        if {mode!r} == "purge-raises":
            raise RuntimeError("the erase tool crashed")
        return 3 if {mode!r} == "purge-returns-an-int" else "erased"


class Probe:
    name = "probe"

    def read(self):
        if {mode!r} == "read-raises":
            raise ZeroDivisionError("division by zero")
        if {mode!r} == "read-returns-a-str":
            return "41 C"
        return HealthSample(t=time.time(), temperature_c=41.0)


def pytest_ssd_health_source(identity):
    return Probe()


def pytest_ssd_purge_methods():
    return [Erase()]
"""

PURGED = """
import pytest
from pytest_ssd import FioJob


@pytest.mark.dut_state("fob", pristine=True)
def test_one(ssd):
    device = ssd.region("device")
    job = FioJob(name="w", pattern="seq", block_size=1 << 20, read_pct=0, offset=device.offset,
                 size=4 << 20)
    assert ssd.run(job).directions["write"].io_bytes == 4 << 20
"""

LATER_SAYS = {
    "unsupported-raises": "purge method 'vendor-erase' (from {conftest}): unsupported() raised"
    " KeyError: 'model'",
    "purge-raises": "purge method 'vendor-erase' (from {conftest}): purge() raised RuntimeError:"
    " the erase tool crashed",
    "purge-returns-an-int": "purge method 'vendor-erase' (from {conftest}): purge() returned an"
    " int where a str was expected",
    "read-raises": "health source 'probe' of {conftest}: read() raised ZeroDivisionError:"
    " division by zero",
    "read-returns-a-str": "health source 'probe' of {conftest}: read() returned a str where a"
    " HealthSample was expected",
}


@pytest.mark.parametrize("mode", sorted(LATER_SAYS))
def test_an_object_a_hook_returned_failing_later_fails_its_test_in_one_line(
    run_ssd: Any, tmp_path: Path, loop_device: Any, mode: str
) -> None:
    dev = loop_device(64)
    suite = _suite(tmp_path, LATER.format(mode=mode), PURGED)
    run = run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--ssd-health-interval=0.1",
        suite=suite,
        rootdir=None,
    )
    out = _clean(run)
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) == 1, out
    says = LATER_SAYS[mode].format(conftest=suite / "conftest.py")
    assert f"ExtensionError: {says}" in out, out
    assert (run.run_dir / "report.html").exists() and run.results()["run"]["complete"]


def test_a_purge_method_failing_when_named_refuses_the_run_in_one_line(
    run_ssd: Any, tmp_path: Path, random_loop: Path
) -> None:
    suite = _suite(tmp_path, LATER.format(mode="unsupported-raises"), PURGED)
    _earlier_run(tmp_path / "reports")
    before = digest(random_loop)
    run = run_ssd(
        f"--dut={random_loop}",
        f"--ssd-confirm={random_loop}",
        "--ssd-purge=vendor-erase",
        suite=suite,
        rootdir=None,
    )
    line = _one_error(run)
    assert LATER_SAYS["unsupported-raises"].format(conftest=suite / "conftest.py") in line, line
    assert digest(random_loop) == before


#: an installed plugin (entry-point group pytest_ssd) that fails as MODE says
PLUGIN = """
import pytest

from pytest_ssd import ReportSection

if {mode!r} == "import-raises":
    raise ImportError("the vendor plugin needs vendorlib")


def bad(ctx):
    raise ValueError("the vendor's section is broken")


@pytest.hookimpl
def pytest_ssd_report_sections():
    if {mode!r} == "hook-raises":
        raise ValueError("the vendor's hook is broken")
    return [ReportSection(suite="hooked", title="Vendor bad", build=bad)]
"""

PLUGIN_SAYS = {
    "import-raises": "plugin vendor (vendor_plugin): loading it raised ImportError: the vendor"
    " plugin needs vendorlib",
    "hook-raises": "pytest_ssd_report_sections of plugin vendor raised ValueError: the vendor's"
    " hook is broken",
    "build-raises": "report section 'Vendor bad' of plugin vendor: build() raised ValueError:"
    " the vendor's section is broken",
}


def _installed(site: Path, mode: str) -> None:
    """vendor_plugin, installed in *site* under the entry-point group ``pytest_ssd``."""
    info = site / "vendor_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vendor-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_ssd]\nvendor = vendor_plugin\n")
    (site / "vendor_plugin.py").write_text(PLUGIN.format(mode=mode))


@pytest.mark.parametrize("command", ["report", "compare"])
def test_pytest_ssd_report_with_a_plugin_at_fault_writes_the_page_with_its_box(
    run_ssd: Any, tmp_path: Path, command: str
) -> None:
    duts = 1 if command == "report" else 2  # compare needs two drives: the run's two
    run = run_ssd(
        *["--dut=scratch:64M"] * duts, suite=_suite(tmp_path, 'pytest_ssd_suite = "hooked"\n')
    )
    run.result.assert_outcomes(passed=duts)
    db = run.report_dir / "results.sqlite"
    which = "latest" if command == "report" else run.run_dir.name
    for mode, says in PLUGIN_SAYS.items():
        site = tmp_path / mode
        _installed(site, mode)
        page = tmp_path / f"{mode}.html"
        env = {**os.environ, "PYTHONPATH": str(site)}
        done = run_cli("--db", str(db), command, which, "-o", str(page), env=env)
        assert done.returncode == 0, done.stderr
        # besides the progress of the build, a section at a time, one line: the plugin's fault
        said = [ln for ln in done.stderr.splitlines() if not ln.startswith("pytest-ssd: report: ")]
        assert said == [f"pytest-ssd: {says}"], done.stderr
        assert "pytest-ssd: report: Datasheet conformance (1 of " in done.stderr, "progress shown"
        text = page.read_text()
        box = text[text.index('<div class="ssd-error">') :]
        assert html.escape(says) in box[: box.index("</div>")], box[:500]
        assert 'id="ssd-devices"' in text and 'id="ssd-environment"' in text, "ours stand"


#: a conftest.py whose figure kind is at fault (MODE), and a test that asks for it
KINDS = """
from pytest_ssd import FigureKind

pytest_ssd_suite = "hooked"


def draw(measurement):
    raise ValueError("the vendor's figure is broken")


def pytest_ssd_figure_kinds():
    if {mode!r} == "hook-raises":
        raise ValueError("the vendor's hook is broken")
    return [FigureKind("vendor_broken", draw)]
"""

PLOTTED = """
import pytest
from pytest_ssd import FioJob


@pytest.mark.dut_state("fob")
def test_one(ssd):
    device = ssd.region("device")
    job = FioJob.on(device.head(1 << 20), name="w", pattern="seq", block_size=1 << 20,
                    read_pct=0)
    ssd.run(job)
    ssd.plot("latency_percentiles", ssd.measurements[-1], "tail")
    ssd.plot("vendor_broken", ssd.measurements[-1], "broken")
"""


@pytest.mark.parametrize("mode", ["hook-raises", "draw-raises"])
def test_a_figure_kind_at_fault_is_one_line_and_the_rest_is_drawn(
    run_ssd: Any, tmp_path: Path, mode: str
) -> None:
    """The hook is asked when a test plots (the test fails saying so); a draw that raises
    leaves one line in the figure's place in the report, the test's other figure drawn."""
    suite = _suite(tmp_path, KINDS.format(mode=mode), PLOTTED)
    run = run_ssd("--dut=scratch:64M", suite=suite, rootdir=None)
    out = _clean(run)
    # the line is HTML in pytest-html's data blob, itself HTML-escaped in an attribute
    page = html.unescape(html.unescape((run.run_dir / "report.html").read_text()))
    tail = list((run.run_dir / "artifacts").rglob("tail.png"))
    if mode == "hook-raises":
        run.result.assert_outcomes(failed=1)
        said = f"pytest_ssd_figure_kinds of {suite / 'conftest.py'} raised ValueError"
        assert said in out and "the vendor's hook is broken" in out, out
        assert tail == [], "the test stopped at its first plot"
    else:
        run.result.assert_outcomes(passed=1)
        said = (
            f"figure kind 'vendor_broken' of {suite / 'conftest.py'}: draw() raised"
            " ValueError: the vendor's figure is broken"
        )
        assert said in page, said
        assert len(tail) == 1 and tail[0].stat().st_size > 1000, "the good figure is drawn"
