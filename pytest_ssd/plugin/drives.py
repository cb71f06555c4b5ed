"""Each test names its drive in its properties, so a CI reading the junit file knows which
drive, on which host, with which firmware and label, measured it.

``ssd.device`` (the test id's device), ``ssd.host`` (the test host, or this machine),
``ssd.model``, ``ssd.serial``, ``ssd.firmware``, ``ssd.build`` (``--ssd-build``, else the
firmware) and ``ssd.label``: short words, kept by :mod:`pytest_ssd.results.junit` as a CI
reads them; a part a device does not have (a loop device's serial, firmware and so its
build) is left out rather than written empty.
"""

from __future__ import annotations

import socket

import pytest

from pytest_ssd.session import SsdSession
from pytest_ssd.site.dut import Dut

#: the properties' prefix (each ``ssd.<part>``)
PREFIX = "ssd."


def drive_properties(dut: Dut) -> list[tuple[str, str]]:
    """What names *dut* for a CI: its id, host, model, serial, firmware, build and label."""
    identity = dut.identity
    host = dut.address.label if dut.address is not None else socket.gethostname()
    parts = {
        "device": dut.id,
        "host": host,
        "model": identity.model,
        "serial": identity.serial,
        "firmware": identity.firmware,
        "build": dut.build,
        "label": dut.label,
    }
    return [(f"{PREFIX}{name}", value) for name, value in parts.items() if value]


def mark(session: SsdSession, items: list[pytest.Item]) -> None:
    """Give every test of a device its drive's properties."""
    named = {dut_id: drive_properties(dut) for dut_id, dut in session.duts.items()}
    for item in items:
        callspec = getattr(item, "callspec", None)
        dut_id = callspec.params.get("dut") if callspec is not None else None
        if isinstance(dut_id, str) and dut_id in named:
            item.user_properties.extend(named[dut_id])


def suite_properties(session: SsdSession) -> list[tuple[str, str]]:
    """The junit file's ``<testsuite>`` properties: the run and every drive of it."""
    found = [(f"{PREFIX}run_id", session.run_id), (f"{PREFIX}controller", socket.gethostname())]
    for dut_id, dut in session.duts.items():
        found += [
            (f"{PREFIX}device.{dut_id}.{name.removeprefix(PREFIX)}", value)
            for name, value in drive_properties(dut)
            if name != f"{PREFIX}device"
        ]
    return found
