"""fio jobs rendered from data."""

from __future__ import annotations

import pytest

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob, format_bytes, render


def test_random_read_job_renders_every_option_once() -> None:
    job = FioJob("rnd-read", "rnd", 4096, iodepth=32, size=1 << 30, runtime_s=3, ramp_s=1)
    text = render([job], "/dev/loop7")
    lines = text.splitlines()
    assert lines[:2] == ["[global]", "filename=/dev/loop7"]
    body = lines[lines.index("[rnd-read]") + 1 :]
    options = dict(line.split("=", 1) for line in body if "=" in line)
    assert options["rw"] == "randread"
    assert options["bs"] == "4096"
    assert options["iodepth"] == "32"
    assert options["size"] == str(1 << 30)
    assert options["time_based"] == "1"
    assert options["runtime"] == "3"
    assert options["ramp_time"] == "1"

    assert options["percentile_list"].split(":")[-1] == "99.999"
    assert "rwmixread" not in options and "stonewall" not in body
    keys = [line.split("=", 1)[0] for line in body if "=" in line]
    assert len(keys) == len(set(keys))


def test_fractional_seconds_are_rendered_in_milliseconds() -> None:
    # fio reads runtime=0.3 as "no limit": a 0.3 s job ran a whole 2 GiB pass (18 s)
    job = FioJob("short", "rnd", 4096, size=1 << 20, runtime_s=0.3, ramp_s=1.5)
    options = dict(job.options())
    assert (options["runtime"], options["ramp_time"]) == ("300ms", "1500ms")


@pytest.mark.parametrize(
    ("pattern", "read_pct", "rw"),
    [
        ("seq", 100, "read"),
        ("seq", 0, "write"),
        ("seq", 50, "rw"),
        ("rnd", 100, "randread"),
        ("rnd", 0, "randwrite"),
        ("rnd", 70, "randrw"),
    ],
)
def test_rw_follows_pattern_and_read_share(pattern: str, read_pct: int, rw: str) -> None:
    job = FioJob("j", pattern, 4096, read_pct=read_pct)  # type: ignore[arg-type]
    assert job.rw == rw
    assert job.writes == (read_pct < 100)
    assert (("rwmixread", str(read_pct)) in job.options()) == (0 < read_pct < 100)


def test_later_jobs_wait_for_earlier_ones_and_logs_go_to_the_prefix() -> None:
    jobs = [
        FioJob("a", "seq", 131072, read_pct=0, io_bytes=1 << 20),
        FioJob("b", "rnd", 4096, numjobs=4, runtime_s=2, log_avg_ms=100),
    ]
    text = render(jobs, "/tmp/f", log_prefix="/art/log")
    section_b = text.split("[b]\n", 1)[1]
    assert section_b.startswith("stonewall\n")
    assert "group_reporting=1" in section_b
    assert "write_bw_log=/art/log-b" in section_b and "log_avg_msec=100" in section_b
    assert "write_bw_log" not in text.split("[b]\n", 1)[0]
    assert "io_size=1048576" in text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name"}, "name"),
        ({"block_size": 1000}, "multiple of 512"),
        ({"iodepth": 0}, r"iodepth 0 and numjobs 1 must lie within 1\.\.32768 and 1\.\.4096"),
        ({"iodepth": 10**9}, r"iodepth 1000000000 .* \(fio's and its engines' limits\)"),
        ({"numjobs": 100_000}, r"numjobs 100000 must lie within"),
        ({"block_size": 1 << 30}, r"up to 128 MiB"),
        ({"runtime_s": float("inf")}, r"must be finite, at most 604800 s"),
        ({"runtime_s": float("nan")}, r"must be finite"),
        ({"ramp_s": 1e308}, r"must be finite, at most"),
        ({"size": 0}, r"size and io_bytes must be positive"),
        ({"read_pct": 101}, "0..100"),
        ({"runtime_s": 3, "io_bytes": 4096}, "not both"),
        ({"percentiles": tuple(range(1, 22))}, "at most 20"),
        ({"ioengine": "libaio\nfilename=/dev/sda"}, r"'ioengine=libaio\\nfilename=/dev/sda' hold"),
        ({"extra": (("io_size", "1;rm"),)}, "'io_size=1;rm' hold what fio would cut"),
        ({"extra": (("exec_prerun", "$HOME"),)}, r"'exec_prerun=\$HOME'"),
        ({"extra": (("bad key", "1"),)}, "'bad key=1'"),
    ],
)
def test_bad_jobs_are_refused_with_the_reason(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"name": "j", "pattern": "seq", "block_size": 4096} | kwargs
    with pytest.raises(ConfigError, match=message):
        FioJob(**args)  # type: ignore[arg-type]


def test_repeated_job_names_are_refused() -> None:
    job = FioJob("j", "seq", 4096)
    with pytest.raises(ConfigError, match="repeat"):
        render([job, job], "/dev/null")


def test_labels_use_binary_units() -> None:
    assert format_bytes(4096) == "4KiB"
    assert format_bytes(128 << 10) == "128KiB"
    assert format_bytes(1 << 20) == "1MiB"
    assert format_bytes(512) == "512B"
    assert FioJob("j", "rnd", 4096, iodepth=32, read_pct=70).label == "RND 4KiB Q32T1 70% read"
