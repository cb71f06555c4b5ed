"""pytest-ssd's methods: one folder each, registered through the hooks a vendor's plugin uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pluggy
import pytest

from pytest_ssd import FigureKind, methods
from pytest_ssd.bench import GENERIC_KINDS
from pytest_ssd.errors import ExtensionError
from pytest_ssd.extensions import figure_kinds
from pytest_ssd.report.build import declared_sections
from pytest_ssd.results.record import Measurement
from tests.unit.test_extensions import _conftest, _manager

FOLDERS = (
    "adminload",
    "csd",
    "datasheet",
    "esd",
    "features",
    "integrity",
    "namespaces",
    "powerloss",
    "qual",
    "smoke",
    "snia",
    "wsat",
)
#: a measurement with fio's percentiles in two directions (what ssd.plot sends)
MEASUREMENT = Measurement(
    test="esd/test_x.py::test_y",
    device="/dev/loop0",
    name="rnd-70-30",
    workload={"label": "RND 4 KiB 70/30 QD1"},
    metrics={
        direction: {
            "iops": 1000.0,
            "bw_mib_s": 3.9,
            "lat_mean_us": 80.0 + index,
            "clat": {
                "percentiles": [
                    {"p": p, "us": us * (1 + index), "resolved": True}
                    for p, us in ((50.0, 70.0), (90.0, 95.0), (99.0, 150.0), (99.9, 400.0))
                ]
            },
        }
        for index, direction in enumerate(("read", "write"))
    },
    start="2026-11-28T00:00:00",
    end="2026-11-28T00:00:01",
    artifacts="",
)


def _builtin() -> pluggy.PluginManager:
    manager = _manager()
    methods.register(manager)
    return manager


def test_every_method_folder_is_a_plugin_and_registers_once() -> None:
    manager = _builtin()
    methods.register(manager)  # a second call adds none
    names = sorted(n for n, _ in manager.list_name_plugin() if n.startswith("ssd-method-"))
    assert names == [f"ssd-method-{folder}" for folder in FOLDERS]
    folders = sorted(p.name for p in Path(methods.__file__).parent.iterdir() if p.is_dir())
    assert [f for f in folders if f != "__pycache__"] == list(FOLDERS)


def test_the_methods_declare_their_sections_through_the_hook_in_the_methods_order() -> None:
    declared = declared_sections(_builtin().hook.pytest_ssd_report_sections)
    ordered = sorted(declared, key=lambda s: s.order)
    suites = ["smoke", "csd", "esd", "snia", "wsat", "datasheet", "qual", "qual", "qual"]
    assert [s.suite for s in ordered] == suites
    # power loss, features and namespaces declare no section: their verdicts are in the
    # qualification summary (pytest_ssd/methods/qual)
    sectioned = [f for f in FOLDERS if f not in ("powerloss", "features", "namespaces")]
    assert {s.origin for s in declared} == {f"plugin ssd-method-{f}" for f in sectioned}
    headlines = {s.suite for s in declared if s.headline is not None}
    assert headlines == {"esd", "snia", "wsat", "qual"}
    built = {s.suite for s in declared if s.build is not None}
    assert built == {"csd", "esd", "snia", "wsat", "qual"}


def test_the_report_imports_no_method() -> None:
    """The report framework draws what the hook declares: no list of built-in sections."""
    code = (
        "import sys, pytest_ssd.report.build, pytest_ssd.report.sections;"
        "print(' '.join(m for m in sys.modules if m.startswith('pytest_ssd')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = done.stdout.split()
    assert "pytest_ssd.report.sections.keyresults" in loaded
    # a method's code, in its folder or (before it had one) beside the report's framework
    floors = (
        "pytest_ssd.methods",
        "pytest_ssd.report.",
        "pytest_ssd.figures.",
        "pytest_ssd.workloads.",
    )
    named = [
        m
        for m in loaded
        if m.startswith(floors) and ({"methods", "builtin", *FOLDERS} & set(m.split(".")))
    ]
    assert named == []


def test_a_methods_hook_module_loads_none_of_its_method() -> None:
    """Registering the methods (every pytest process) loads each folder's ``__init__`` only."""
    code = (
        "import sys, pluggy; from pytest_ssd import methods, newhooks;"
        "m = pluggy.PluginManager('pytest'); m.add_hookspecs(newhooks); methods.register(m);"
        "print(sorted(n for n in sys.modules if n.startswith('pytest_ssd.methods')));"
        "print('matplotlib' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded, matplotlib = done.stdout.split("\n")[:2]
    assert loaded == str(["pytest_ssd.methods", *(f"pytest_ssd.methods.{f}" for f in FOLDERS)])
    assert matplotlib == "False"


def test_a_methods_figure_kinds_join_the_generic_ones_and_draw() -> None:
    kinds = figure_kinds(_builtin().hook.pytest_ssd_figure_kinds, GENERIC_KINDS)
    assert sorted(kinds) == ["latency_percentiles", "qos_percentiles"]
    assert kinds["qos_percentiles"].origin == "plugin ssd-method-esd"
    fig = kinds["qos_percentiles"].draw(MEASUREMENT)
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.get_lines()] == [
        "read (mean 80.0 µs)",
        "write (mean 81.0 µs)",
    ]
    assert ax.get_lines()[1].get_xdata()[-1] == 800.0  # p99.9 of the write direction, in µs


def _draw(measurement: Measurement) -> object:
    return measurement


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("qos", "returned a str where a list of FigureKind was expected"),
        (["qos"], "returned a list holding a str where a FigureKind was expected"),
        (
            [FigureKind("qos curve", _draw)],  # type: ignore[arg-type]
            "(its name is not an identifier (a str: 'qos_curve'))",
        ),
        ([FigureKind("qos", 3)], "(its draw is not callable)"),  # type: ignore[arg-type]
        (
            [FigureKind("qos_percentiles", _draw)],  # type: ignore[arg-type]
            "both declare the figure kind 'qos_percentiles': one must take another name",
        ),
    ],
)
def test_figure_kinds_of_the_wrong_shape_are_refused_naming_the_conftest(
    answer: object, says: str
) -> None:
    manager = _builtin()
    manager.register(_conftest("/lab/conftest.py", pytest_ssd_figure_kinds=lambda: answer))
    with pytest.raises(ExtensionError, match=r"^pytest_ssd_figure_kinds of ") as e:
        figure_kinds(manager.hook.pytest_ssd_figure_kinds, GENERIC_KINDS)
    assert "/lab/conftest.py" in str(e.value) and says in str(e.value), str(e.value)


NEW_METHOD = """
from pytest_ssd.methods import hookimpl


@hookimpl
def pytest_ssd_report_sections():
    from pytest_ssd.report.sections.base import ReportSection

    return [ReportSection(suite="endurance", title="Endurance (suites/endurance)", order=70)]
"""


def test_a_new_folder_is_a_new_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a newcomer adds: one folder under methods/ (and its suite), nothing else."""
    (tmp_path / "endurance").mkdir()
    (tmp_path / "endurance" / "__init__.py").write_text(NEW_METHOD)
    monkeypatch.setattr(methods, "__path__", [*methods.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "pytest_ssd.methods.endurance", raising=False)
    try:
        declared = declared_sections(_builtin().hook.pytest_ssd_report_sections)
    finally:
        sys.modules.pop("pytest_ssd.methods.endurance", None)
    (added,) = [s for s in declared if s.suite == "endurance"]
    assert (added.title, added.origin) == (
        "Endurance (suites/endurance)",
        "plugin ssd-method-endurance",
    )
