"""Numbers for people: never e-notation in a label, a table cell or a message."""

from __future__ import annotations

import pytest

from pytest_ssd.text import significant


@pytest.mark.parametrize(
    ("value", "digits", "sign", "text"),
    [
        (-19523.4, 4, True, "-19,520"),  # a SNIA slope read "-1.952e+04" before
        (72.92, 4, True, "+72.92"),
        (1500.0, 3, False, "1,500"),  # the fill's highest window read "1.5e+03"
        (2.5, 3, False, "2.5"),
        (0.001234, 3, False, "0.00123"),
        (9.996, 3, False, "10"),
        (0.0, 3, True, "+0"),
        (123456789.0, 3, False, "123,000,000"),
        (float("nan"), 3, False, "nan"),
    ],
)
def test_significant(value: float, digits: int, sign: bool, text: str) -> None:
    assert significant(value, digits, sign=sign) == text
