"""Spec lines as test parameters: one test per device and line of its datasheet."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ssd.session import SsdSession
from pytest_ssd.specs.measure import plan
from pytest_ssd.specs.model import Datasheet
from pytest_ssd.specs.selection import load_given

#: the argument name a test takes to get one spec line
SPEC_FIXTURE = "spec_line"


def _datasheets(session: SsdSession) -> dict[str, Datasheet]:
    if session.duts:  # the session opened: datasheets are matched to identified devices
        return session.datasheets
    # --collect-only touches no device: the given files, unmatched
    given = load_given(session.options.datasheets, len(session.dut_ids))
    return {d: given[i if len(given) > 1 else 0] for i, d in enumerate(session.dut_ids) if given}


def spec_params(session: SsdSession) -> list[Any]:
    """``pytest.param(dut, line)`` per spec line, marked with the state the line names."""
    sheets = _datasheets(session)
    params: list[Any] = []
    for dut_id in session.dut_ids:
        sheet = sheets.get(dut_id)
        if sheet is None:
            reason = f"no datasheet for {dut_id}: give --datasheet=FILE or --datasheet-dir=DIR"
            params.append(pytest.param(dut_id, None, id=dut_id, marks=pytest.mark.skip(reason)))
            continue
        for line in sheet.specs:
            state = pytest.mark.dut_state(str(plan(line).state))
            params.append(pytest.param(dut_id, line, id=f"{dut_id}-{line.id}", marks=state))
    return params
