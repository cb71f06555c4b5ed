"""Spec lines as test parameters: one test per device and line of its datasheet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_ssd.errors import ConfigError
from pytest_ssd.plugin.skips import BLOCK_MARKER
from pytest_ssd.session import SsdSession

# the datasheet machinery is loaded by a run with a datasheet (or spec-line tests) only
if TYPE_CHECKING:
    from pytest_ssd.specs.model import Datasheet

#: the argument name a test takes to get one spec line
SPEC_FIXTURE = "spec_line"


def _datasheets(session: SsdSession) -> dict[str, Datasheet]:
    if session.duts:  # the session opened: datasheets are matched to identified devices
        return session.datasheets
    # --collect-only touches no device: the given files, unmatched
    from pytest_ssd.specs.selection import load_given  # noqa: PLC0415

    given = load_given(session.options.datasheets, len(session.dut_ids))
    return {d: given[i if len(given) > 1 else 0] for i, d in enumerate(session.dut_ids) if given}


def spec_params(session: SsdSession) -> list[Any]:
    """``pytest.param(dut, line)`` per spec line, marked with the state the line names."""
    from pytest_ssd.specs.measure import plan  # noqa: PLC0415

    sheets = _datasheets(session)
    params: list[Any] = []
    for dut_id in session.dut_ids:
        sheet = sheets.get(dut_id)
        if sheet is None:
            reason = f"no datasheet for {dut_id}: give --datasheet=FILE or --datasheet-dir=DIR"
            params.append(pytest.param(dut_id, None, id=dut_id, marks=pytest.mark.skip(reason)))
            continue
        for line in sheet.specs:
            marks = (
                pytest.mark.dut_state(str(plan(line).state)),
                getattr(pytest.mark, BLOCK_MARKER)(line.block_size),  # skipped before its state
            )
            params.append(pytest.param(dut_id, line, id=f"{dut_id}-{line.id}", marks=marks))
    return params


#: ``@pytest.mark.ssd_spec("rnd-read-qd32", ...)``: the datasheet lines a test checks
SPEC_MARKER = "ssd_spec"
SPEC_MARKER_HELP = (
    f"{SPEC_MARKER}(*line_ids): the datasheet lines the test checks with ssd.assert_meets_spec;"
    " an id a device's datasheet does not have stops the run at collection"
)


def check_spec_markers(session: SsdSession, items: list[pytest.Item]) -> None:
    """Raise :class:`ConfigError` for a marked line id a device's datasheet does not have."""
    sheets = _datasheets(session)
    for item in items:
        callspec = getattr(item, "callspec", None)
        dut_id = callspec.params.get("dut") if callspec is not None else None
        sheet = sheets.get(dut_id) if isinstance(dut_id, str) else None
        if sheet is None:
            continue
        known = {line.id for line in sheet.specs}
        for marker in item.iter_markers(SPEC_MARKER):
            for line_id in marker.args:
                if line_id not in known:
                    from pytest_ssd.specs.check import unknown_line  # noqa: PLC0415

                    raise ConfigError(f"{item.nodeid}: {unknown_line(str(line_id), sheet)}")
