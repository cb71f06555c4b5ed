"""Datasheet units: conversions done once, exactly, and how numbers read."""

from __future__ import annotations

import pytest

from pytest_ssd.specs.units import Quantity, convert, number, unit


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (1, "MiB/s", "MB/s", 1.048576),
        (500, "MB/s", "MiB/s", 476.837158203125),
        (506, "MiB/s", "MB/s", 530.579456),  # seed 003: bw=506MiB/s (531MB/s)
        (3, "GB/s", "MB/s", 3000),
        (1, "GiB/s", "MiB/s", 1024),
        (442, "kIOPS", "IOPS", 442_000),
        (46_000, "IOPS", "kIOPS", 46),
        (79.5, "kIOPS", "IOPS", 79_500),
        (0.09, "ms", "µs", 90),  # in plain floats 0.09 * 1000 is 90.00000000000001
        (0.12, "ms", "us", 120),
        (74, "us", "ms", 0.074),
        (0.2, "ms", "ns", 200_000),
        (85_000, "ns", "µs", 85),
        (1, "s", "ms", 1000),
    ],
)
def test_units_convert_exactly(value: float, source: str, target: str, expected: float) -> None:
    assert convert(value, source, target) == expected


def test_aliases_name_the_same_unit() -> None:
    assert unit("us") == unit("µs") == unit("μs")
    assert unit("k-IOPS") == unit("kIOPS")
    assert Quantity(74, "us").unit == "µs"


def test_quantities_compare_in_base_units() -> None:
    assert Quantity(0.09, "ms").base == Quantity(90, "µs").base == 90_000
    assert Quantity(1, "MiB/s").base == 1_048_576


def test_conversion_across_dimensions_is_refused() -> None:
    with pytest.raises(ValueError, match=r"cannot convert 534 MB/s \(throughput\) to ms"):
        Quantity(534, "MB/s").to("ms")


def test_unknown_unit_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown unit 'MB/sec': use one of B/s"):
        unit("MB/sec")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (80_000, "80,000"),
        (534, "534"),
        (0.09, "0.09"),
        (98.93, "98.93"),
        (530.579456, "530.6"),
        (3504.25, "3,504.2"),
    ],
)
def test_numbers_read_like_the_seeds_tables(value: float, text: str) -> None:
    assert number(value) == text
