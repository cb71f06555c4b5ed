"""One device, one worker, and a test's id the same with and without ``-n``.

xdist's ``loadgroup`` kept a device's tests on one worker by ending each test's id
in its group (``…[loop6-seq-read]@dut-loop6``), so a run's test ids differed with
``-n`` and without. pytest-ssd schedules instead: a test's device is the first part of
its parameters (pytest-ssd parametrizes ``dut`` before anything else), and every test of
a device is one unit of work for one worker, its id untouched. Each worker checks at
collection that every test's id names its device there, so the controller can never
split a device's tests over two workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_ssd.errors import ConfigError


def device_of(nodeid: str, dut_ids: Sequence[str]) -> str | None:
    """The device whose id starts *nodeid*'s parameters (the longest that does), else None."""
    _, bracket, params = nodeid.partition("[")
    if not bracket:
        return None
    params = params.rpartition("]")[0]
    found = [d for d in dut_ids if params == d or params.startswith(f"{d}-")]
    return max(found, key=len) if found else None


def check_ids(items: Sequence[pytest.Item], dut_ids: Sequence[str]) -> None:
    """:class:`ConfigError` for a test whose id does not name its device first (a suite's
    own ``pytest_generate_tests`` ran before pytest-ssd's), or names another one."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        dut = callspec.params.get("dut") if callspec is not None else None
        if isinstance(dut, str) and device_of(item.nodeid, dut_ids) != dut:
            raise ConfigError(
                f"{item.nodeid}: its id must start with its device's ({dut}) for -n to keep"
                " the device on one worker; parametrize after pytest-ssd (no tryfirst"
                " pytest_generate_tests in the suite) or give the devices other names"
            )


def scheduler(config: pytest.Config, log: Any, dut_ids: Sequence[str]) -> Any:
    """xdist's scope scheduling with a device's tests as one scope (see the module)."""
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415  # the controller's, under -n

    class DeviceScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
        def _split_scope(self, nodeid: str) -> str:
            dut = device_of(nodeid, dut_ids)
            return nodeid if dut is None else f"dut-{dut}"

    return DeviceScheduling(config, log)
