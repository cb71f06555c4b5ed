"""pytest-ssd's hooks called one implementation at a time: a fault is one line naming it."""

from __future__ import annotations

import time
import types
from pathlib import Path
from typing import Any

import pluggy
import pytest

from pytest_ssd import DriveClass, HealthSample, ReportSection, Section, newhooks
from pytest_ssd.db import ResultsDb
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ExtensionError
from pytest_ssd.extensions import drive_class, health_source, purge_methods
from pytest_ssd.health import Sampler
from pytest_ssd.report.build import declared_sections, gather
from pytest_ssd.report.sections import build
from tests.unit.db_fixtures import write_run

DISK = DeviceIdentity(
    "/dev/sdb", "block", "sdb", 1 << 30, 512, 512, False, True, "M", "S", "F", "sata"
)
impl = pluggy.HookimplMarker("pytest")


def _manager(*plugins: object) -> pluggy.PluginManager:
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(newhooks)
    for index, plugin in enumerate(plugins):
        manager.register(plugin, f"vendor{index}")
    return manager


def _conftest(path: str, **hooks: Any) -> types.ModuleType:
    """A module like a suite's conftest.py, at *path*, implementing *hooks*."""
    module = types.ModuleType("conftest")
    module.__file__ = path
    for name, function in hooks.items():
        setattr(module, name, impl(function))
    return module


def _boom(*args: object) -> Any:
    raise ValueError("boom\nsecond line")


def test_a_hook_that_raises_is_one_line_naming_the_conftest_and_the_hook() -> None:
    hook = _manager(_conftest("/lab/conftest.py", pytest_ssd_purge_methods=_boom)).hook
    with pytest.raises(ExtensionError) as raised:
        purge_methods(hook.pytest_ssd_purge_methods)
    assert str(raised.value) == (
        "pytest_ssd_purge_methods of /lab/conftest.py raised ValueError: boom second line"
    )


class _Plugin:
    @impl
    def pytest_ssd_drive_class(self, identity: DeviceIdentity) -> object:
        return "essd-ri"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("erase", "returned a str where a list of PurgeProvider was expected"),
        (["erase"], "holding a str where a PurgeProvider was expected (it has no name)"),
        ([types.SimpleNamespace(name="x y")], "(its name 'x y' is not a method name)"),
        ([types.SimpleNamespace(name="x")], "(it has no method unsupported())"),
    ],
)
def test_purge_methods_of_the_wrong_type_are_refused(answer: object, says: str) -> None:
    hook = _manager(_conftest("/lab/conftest.py", pytest_ssd_purge_methods=lambda: answer)).hook
    with pytest.raises(
        ExtensionError, match=r"^pytest_ssd_purge_methods of /lab/conftest\.py "
    ) as e:
        purge_methods(hook.pytest_ssd_purge_methods)
    assert str(e.value).endswith(says), str(e.value)


def test_a_plugin_is_named_by_its_name_and_the_first_answer_wins() -> None:
    hook = _manager(_Plugin()).hook
    with pytest.raises(ExtensionError, match=r"^pytest_ssd_drive_class of plugin vendor0 returned"):
        drive_class(hook.pytest_ssd_drive_class, DISK)
    chosen = DriveClass("essd-wi", "the vendor says so")
    later = _conftest("/lab/conftest.py", pytest_ssd_drive_class=lambda identity: chosen)
    assert drive_class(_manager(_Plugin(), later).hook.pytest_ssd_drive_class, DISK) is chosen
    assert drive_class(_manager().hook.pytest_ssd_drive_class, DISK) is None


def test_a_hook_wrapper_is_refused() -> None:
    def wrapper() -> Any:
        return (yield)

    module = types.ModuleType("conftest")
    module.__file__ = "/lab/conftest.py"
    module.pytest_ssd_purge_methods = pluggy.HookimplMarker("pytest")(wrapper=True)(wrapper)  # type: ignore[attr-defined]
    with pytest.raises(ExtensionError, match="is a hook wrapper"):
        purge_methods(_manager(module).hook.pytest_ssd_purge_methods)


class _Probe:
    name = "probe"

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def read(self) -> object:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (KeyError("t"), "read() raised KeyError: 't'"),
        ("41 C", "read() returned a str where a HealthSample was expected"),
        (HealthSample(t=1.0, temperature_c="hot"), "whose temperature_c is 'hot'"),  # type: ignore[arg-type]
        (HealthSample(t=1.0, temperature_c=float("nan")), "whose temperature_c is nan"),
    ],
)
def test_a_plugin_source_at_fault_fails_the_sampled_block(answer: object, says: str) -> None:
    probe = _Probe(answer)
    hook = _manager(_conftest("/lab/conftest.py", pytest_ssd_health_source=lambda: probe)).hook
    source = health_source(hook.pytest_ssd_health_source, DISK)
    assert source is not None and source.name == "probe"
    fails = pytest.raises(ExtensionError, match=r"^health source 'probe' of /lab/conftest\.py: ")
    with fails as e, Sampler(source, 0.05):
        time.sleep(0.2)
    assert says in str(e.value), str(e.value)


def test_an_unreadable_plugin_sensor_stops_sampling_as_ours_do() -> None:
    probe = _Probe(OSError("no such sensor"))
    hook = _manager(_conftest("/lab/conftest.py", pytest_ssd_health_source=lambda: probe)).hook
    source = health_source(hook.pytest_ssd_health_source, DISK)
    with Sampler(source, 0.05) as sampler:
        pass
    assert sampler.error == "probe: no such sensor" and sampler.fault is None


def _section(ctx: Any) -> Section:
    return Section("vendor-good", "Vendor good", "<p>stands</p>")


def test_failing_sections_are_boxes_saying_why_and_the_rest_stand(tmp_path: Path) -> None:
    good = ReportSection(suite="a", title="Vendor good", build=_section)
    sections = [
        good,
        ReportSection(suite="b", title="Raises", build=_boom),
        ReportSection(suite="c", title="Returns", build=lambda ctx: 3),
        ReportSection(suite="d", title="Bad HTML", build=lambda ctx: Section("x", "y", None)),  # type: ignore[arg-type]
    ]
    hook = _manager(
        _conftest("/lab/conftest.py", pytest_ssd_report_sections=lambda: sections),
        _conftest("/other/conftest.py", pytest_ssd_report_sections=lambda: [1]),
    ).hook
    declared = declared_sections(hook.pytest_ssd_report_sections)
    path = tmp_path / "results.sqlite"
    write_run(path, "run-a", "real SSD")
    with ResultsDb(path) as db:
        drives, runs = gather(db, db.run("run-a").drives, [])
    built = build(drives, 1, runs, tmp_path / "figures", declared)
    errors = [s.error for s in built if s.error]
    assert errors == [  # in the order of their places: by title
        "report section 'Bad HTML' of /lab/conftest.py: build() returned a Section whose id,"
        " title and body are not all str",
        "report section 'Raises' of /lab/conftest.py: build() raised ValueError: boom second line",
        "pytest_ssd_report_sections of /other/conftest.py returned a list holding an int where"
        " a ReportSection was expected",
        "report section 'Returns' of /lab/conftest.py: build() returned an int where a Section"
        " or None was expected",
    ]
    assert all('class="ssd-error"' in s.html() for s in built if s.error)
    assert {"ssd-devices", "vendor-good"} <= {s.id for s in built}
