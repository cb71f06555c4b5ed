"""The plan printed before the first test: its words for each stage."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from pytest_ssd.state.plan import render, simulate
from pytest_ssd.state.spec import parse_state
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import Context


def test_a_state_already_reached_says_where_it_came_from(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n@pytest.mark.dut_state('fob')\ndef test_a(): pass\n",
    )
    pytester.makeini("[pytest]\nmarkers = dut_state\n")
    items, _ = pytester.inline_genitems()
    stages = simulate(items, parse_state("fob"), cast(Context, None))  # no step to plan
    lines = render("/dev/x", "header", stages, SpeedBook(Path("unused")), "key")
    assert " ".join(lines[1].split()) == (
        "fob already there (the device's state at the start) 1 test(s)"
    )
