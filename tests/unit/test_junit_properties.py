"""What a --junitxml file keeps of a test's properties (pytest_ssd.results.junit)."""

from __future__ import annotations

import json

from pytest_ssd.results.junit import compact, properties


def test_records_go_unresolved_values_go_names_are_unique() -> None:
    pairs = [
        ("ssd.suite", "csd"),
        ("ssd.measurement", json.dumps({"metrics": {}})),
        ("job.read.iops", "1158.4158411026"),
        ("job.read.p99.99_us", "None"),
        ("job.read.iops", "1200"),
        ("ssd.prefill", json.dumps({"bytes": 4096, "spans": [[0, 4096]], "ok": True})),
        ("x.why", "w" * 81),
    ]
    assert properties(pairs) == [
        ("ssd.suite", "csd"),
        ("job.read.iops", "1158.42"),
        ("job.read.iops#2", "1200"),
        ("ssd.prefill.bytes", "4096"),
        ("ssd.prefill.ok", "1"),
    ]


def test_figures_keep_six_digits_and_whole_numbers_stay_whole() -> None:
    assert [compact(v) for v in ("4294967296", "0.000123456789", "12345678.9", "1e300")] == [
        "4294967296",
        "0.000123457",
        "12345700",
        "1e+300",
    ]


def test_a_drives_name_is_written_as_given_not_as_a_figure() -> None:
    """A build "2.0" is not 2, a firmware "1.10" not 1.1 (the e2e baseline run met the first)."""
    pairs = [
        ("ssd.build", "2.0"),
        ("ssd.firmware", "1.10"),
        ("ssd.serial", "1e5"),
        ("ssd.label", "3.50"),
        ("ssd.prefill.bytes", "4096.0"),
    ]
    assert properties(pairs) == [*pairs[:4], ("ssd.prefill.bytes", "4096")]
