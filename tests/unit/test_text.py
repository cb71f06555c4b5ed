"""Text for people: numbers never in e-notation, names that are one printable line."""

from __future__ import annotations

import pytest

from pytest_ssd.text import MAX_STEM, file_stem, latency, name_problem, significant


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


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("Samsung 990 PRO 2TB", None),
        ("drive «β» 1 TB", None),  # printable Unicode is a name
        ("x" * 200, None),
        ("a\tb", "U+0009 (Cc)"),
        ("a\rb", "U+000D (Cc)"),
        ("a\x7fb", "U+007F (Cc)"),
        ("a\ufeffb", "U+FEFF (Cf)"),
        ("a\u2028b", "U+2028 (Zl)"),
        ("", "is empty or only blanks"),
        ("\u00a0 ", "is empty or only blanks"),
        ("x" * 201, "is 201 characters long, more than 200"),
    ],
)
def test_name_problem_says_why_a_label_cannot_be_one(value: str, problem: str | None) -> None:
    found = name_problem(value)
    assert found == problem if problem is None else problem in (found or "")


def test_a_long_figure_title_gets_a_file_name_a_file_system_takes() -> None:
    # a comparison of two loop devices on a test host: each label names its backing file
    label = (
        "loop4 (256.0 MiB loop on /tmp/pytest-of-root/pytest-433/popen-gw1/test-two/backing.img)"
    )
    first = f"01 {label} on 127.0.0.1:36121 vs {label.replace('loop4', 'loop5')} throughput"
    second = first.replace("throughput", "latency")
    assert len(file_stem(first)) <= MAX_STEM < len(first)
    assert file_stem(first) != file_stem(second), "cut names stay apart"
    assert file_stem(first).startswith("01-loop4--256-0-mib-loop-on--tmp-pytest-of-root")
    assert file_stem("short title") == "short-title"


@pytest.mark.parametrize(
    ("us", "text"),
    [
        (716.84, "716.8 µs"),
        (999.94, "999.9 µs"),
        (999.96, "1.00 ms"),  # 1,000.0 µs would be four digits
        (2211.84, "2.21 ms"),
        (2_164_260.86, "2.16 s"),  # was 2,164,260.86 µs
        (float("nan"), "—"),
    ],
)
def test_a_latency_keeps_under_four_digits_before_the_point(us: float, text: str) -> None:
    assert latency(us) == text


def test_a_spread_is_in_the_latency_s_unit() -> None:
    assert latency(2500.0, 120.0) == "2.50 ± 0.12 ms"
