"""Under -n a device's tests are one unit of work, found from the test's id alone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ssd.errors import ConfigError
from pytest_ssd.plugin.scheduling import check_ids, device_of, scheduler

IDS = ["loop10", "loop10-2", "scratch"]


@pytest.mark.parametrize(
    ("nodeid", "device"),
    [
        ("suites/smoke/test_corners.py::test_four_corners[loop10-seq-read]", "loop10"),
        ("suites/smoke/test_corners.py::test_four_corners[loop10-2-seq-read]", "loop10-2"),
        ("suites/csd/test_fill_drive.py::test_fill_drive[scratch]", "scratch"),
        ("suites/csd/test_x.py::test_x", None),
        ("suites/csd/test_x.py::test_x[scratchy]", None),
        ("suites/csd/test_x.py::test_x[seq-scratch]", None),
    ],
)
def test_a_tests_device_is_the_first_part_of_its_parameters(nodeid: str, device: str) -> None:
    assert device_of(nodeid, IDS) == device


def _item(nodeid: str, dut: str) -> Any:
    return SimpleNamespace(nodeid=nodeid, callspec=SimpleNamespace(params={"dut": dut}))


def test_an_id_that_would_put_a_devices_test_on_another_worker_is_refused() -> None:
    check_ids([_item("t.py::t[loop10-seq]", "loop10"), SimpleNamespace(nodeid="t.py::u")], IDS)
    with pytest.raises(ConfigError, match=r"t.py::t\[seq-loop10\]: its id must start with"):
        check_ids([_item("t.py::t[seq-loop10]", "loop10")], IDS)
    # a parameter that makes loop10's test read as loop10-2's
    with pytest.raises(ConfigError, match="must start with its device's \\(loop10\\)"):
        check_ids([_item("t.py::t[loop10-2-seq]", "loop10")], IDS)


def test_the_scheduler_keeps_a_devices_tests_in_one_scope() -> None:
    config = SimpleNamespace(getvalue=lambda name: ["2*popen"] if name == "tx" else None)
    found = scheduler(config, None, IDS)  # type: ignore[arg-type]  # what xdist reads of it
    split = found._split_scope  # xdist's own extension point
    assert split("t.py::t[loop10-2-a]") == split("t.py::u[loop10-2]") == "dut-loop10-2"
    assert split("t.py::t[loop10-a]") == "dut-loop10"
    assert split("t.py::plain") == "t.py::plain", "a test of no device: a scope of its own"
