"""The plan of a whole run, per device, as the terminal shows it before the first test."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_ssd.device.identity import SECTOR, DeviceIdentity, binary_size, identify
from pytest_ssd.errors import SsdError, present
from pytest_ssd.plugin.skips import skip_before_state
from pytest_ssd.session import Dut, SsdSession, speed_key
from pytest_ssd.state import actions
from pytest_ssd.state.layout import layout
from pytest_ssd.state.plan import device_of, need_of, render, render_stateless, simulate
from pytest_ssd.state.profile import profile_for
from pytest_ssd.state.steps import FOB, Context
from pytest_ssd.state.testtimes import TestTimes


def _identity(session: SsdSession, dut_id: str, index: int) -> tuple[DeviceIdentity | None, int]:
    """The device's identity and capacity; before the session opened (--collect-only), read-only."""
    dut = session.duts.get(dut_id)
    if dut is not None:
        return dut.identity, dut.identity.size_bytes
    spec = session.options.duts[index]
    if spec.scratch_size is not None:
        return None, spec.scratch_size
    try:
        identity = identify(
            present(spec.path, "the device path"), session.devices.sites.of(None).machine
        )
    except SsdError:
        return None, 0
    return identity, identity.size_bytes


def _runs(
    items: Sequence[pytest.Item], dut: Dut | None, identity: DeviceIdentity | None
) -> list[pytest.Item]:
    """*items* less those the device skips before their state (its class, its block size)."""
    drive = dut.drive_class if dut is not None else None
    lba_size = identity.logical_block_size if identity is not None else SECTOR
    return [item for item in items if skip_before_state(item, drive, lba_size) is None]


def time_call(session: SsdSession, item: pytest.Item, seconds: float) -> None:
    """Keep how long *item*'s call took on its device, for the next plan's total."""
    dut = session.duts.get(device_of(item) or "")
    if dut is not None:
        key = speed_key(dut.identity, dut.scratch)
        times = TestTimes.load(session.options.report_dir)
        times.record(key, session.profile(dut).name, item.nodeid, seconds)


def destroys(identity: DeviceIdentity | None, readonly: bool) -> list[str]:
    """The plain line saying whose data a named device's plan destroys (none read-only)."""
    if identity is None or readonly:
        return []
    model = identity.model or "model unknown"
    serial = f"serial {identity.serial}" if identity.serial else "no serial"
    return [f"  destroys all data on {identity.path} ({model}, {serial})"]


def plan_lines(session: SsdSession, items: Sequence[pytest.Item]) -> list[str]:
    """Terminal lines of the plan for every device a test runs on (a suite without device
    states, such as smoke, gets whose data goes and its tests' time)."""
    # the controller's plan: a worker never loads the suites' estimates
    from pytest_ssd.plugin.estimates import estimates  # noqa: PLC0415

    lines: list[str] = []
    speeds = session.speeds
    times = TestTimes.load(session.options.report_dir)
    for index, dut_id in enumerate(session.dut_ids):
        mine = [item for item in items if device_of(item) == dut_id]
        if not mine:
            continue
        identity, capacity = _identity(session, dut_id, index)
        mine = _runs(mine, session.duts.get(dut_id), identity)
        if not mine:  # every test skips before its state: nothing to plan
            continue
        needs = [n for n in (need_of(item) for item in mine) if n is not None]
        if capacity <= 0:
            lines.append(f"plan for {dut_id}: its size is unknown until it can be opened")
            continue
        scratch = session.options.duts[index].is_scratch
        profile = profile_for(session.options.profile, scratch, session.options.idle)
        # a device not opened yet (--collect-only) was identified here, on this machine
        site = session.devices.services.get(dut_id)
        machine = (site or session.devices.sites.of(None)).machine
        purge = session.options.purge or (
            actions.purge_name(identity, (), machine) if identity is not None else "discard"
        )
        ctx = Context(capacity, profile, purge)
        keeper = session.keepers.get(dut_id)
        initial = keeper.state.current if keeper else (FOB if scratch else None)
        stages = simulate(mine, initial, ctx) if needs else []
        label = identity.label if identity is not None else f"scratch ({binary_size(capacity)})"
        key = speed_key(identity, scratch) if identity is not None else "scratch"
        declared = estimates(mine, profile, capacity, session.options.repeat, identity)
        measured = times.measured(key, profile.name, [item.nodeid for item in mine], declared)
        header = f"{label}, {profile.describe()}"
        shown = (
            render(dut_id, header, stages, speeds, key, measured=measured)
            if needs
            else render_stateless(dut_id, header, measured)
        )
        gone = [] if scratch else destroys(identity, session.options.readonly)
        lines += shown[:1] + gone + shown[1:]  # whose data goes: right under the device's name
        notes = {n for need in needs for n in layout(need.state, capacity, ctx.span).notes}
        lines += [f"  note: {note}" for note in sorted(notes)]
    return lines
