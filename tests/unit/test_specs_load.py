"""Datasheet files: the shipped ones load; each kind of bad file gives one error line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_ssd.errors import ConfigError, DatasheetError
from pytest_ssd.specs import datasheet_files, load_datasheet, load_datasheets
from pytest_ssd.specs.model import Metric
from pytest_ssd.state.spec import parse_state

DATASHEETS = Path(__file__).parents[2] / "datasheets"

DRIVE = '[drive]\nname = "Test drive"\nmodel = "TEST*"\ncapacity_gb = 960\n'
LINE = {
    "id": '"seq-read-qd8"',
    "metric": '"throughput"',
    "unit": '"MB/s"',
    "pattern": '"seq"',
    "direction": '"read"',
    "block_size": '"128KiB"',
    "qd": "8",
    "state": '"fob"',
    "value": "540",
    "kind": '"ceiling"',
}
LATENCY = {"metric": '"latency-p99"', "unit": '"ms"', "value": "0.1", "kind": '"bound"'}


def spec(**changes: str | None) -> str:
    """One [[specs]] table: LINE with *changes* (TOML literals; None drops the key)."""
    fields = {**LINE, **changes}
    body = "".join(f"{key} = {value}\n" for key, value in fields.items() if value is not None)
    return f"\n[[specs]]\n{body}"


def write(tmp_path: Path, text: str, name: str = "bad.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_datasheets_load() -> None:
    files = [path.name for path in datasheet_files(DATASHEETS)]
    assert files == [
        "qemu-nvme-ctrl.toml",  # declared features only (tests/unit/test_features_checks.py)
        "samsung-850-evo-1tb.toml",
        "samsung-pm983-960gb.toml",
    ]
    evo = load_datasheet(DATASHEETS / "samsung-850-evo-1tb.toml")
    assert [line.id for line in evo.specs] == [
        "seq-read-qd8",
        "seq-write-qd8",
        "rnd-read-qd32",
        "rnd-write-qd32",
    ]
    seq_read = evo.line("seq-read-qd8")
    assert (seq_read.block_size, seq_read.qd, seq_read.jobs, seq_read.tolerance) == (
        131072,
        8,
        1,
        0.90,
    )
    assert seq_read.state == parse_state("fob")
    pm983 = load_datasheet(DATASHEETS / "samsung-pm983-960gb.toml")
    assert len(pm983.specs) == 10
    rnd_read = pm983.line("rnd-read-qd32x4")
    assert (rnd_read.qd, rnd_read.jobs, rnd_read.value, rnd_read.unit) == (32, 4, 400, "kIOPS")
    assert rnd_read.state == parse_state("ss(rnd-4k-write-qd256)")
    assert pm983.line("qos-read-p9999").metric == Metric("latency", 99.99)
    assert pm983.line("qos-read-mean").unit == "µs"
    assert {line.kind for line in pm983.specs if line.metric.dimension == "latency"} == {"bound"}


def test_unknown_line_id_names_the_known_ones() -> None:
    evo = load_datasheet(DATASHEETS / "samsung-850-evo-1tb.toml")
    with pytest.raises(KeyError, match=r"no spec line 'seq-read-qd32' .*seq-read-qd8"):
        evo.line("seq-read-qd32")


BAD = [
    pytest.param(
        DRIVE + spec(metric='"bandwidth"'),
        "specs[0].metric",
        "unknown metric 'bandwidth': use throughput, iops",
        id="unknown-metric",
    ),
    pytest.param(
        DRIVE + spec(unit='"MB/sec"'),
        "specs[0].unit",
        "unknown unit 'MB/sec': throughput takes B/s",
        id="unknown-unit",
    ),
    pytest.param(
        DRIVE + spec(unit='"ms"'),
        "specs[0].unit",
        "'ms' measures latency; throughput takes",
        id="unit-of-another-metric",
    ),
    pytest.param(
        DRIVE + spec(state='"steady"'),
        "specs[0].state",
        "unknown device state 'steady'",
        id="unknown-state",
    ),
    pytest.param(
        DRIVE + spec(state='"ss(rnd-4KB-write)"'),
        "specs[0].state",
        "workload 'rnd-4KB-write'",
        id="bad-steady-workload",
    ),
    pytest.param(DRIVE + spec(value=None), "specs[0].value", "missing", id="missing-value"),
    pytest.param(spec(), "drive", "missing", id="missing-drive"),
    pytest.param(DRIVE, "specs", "missing: give at least one [[specs]] line", id="no-specs"),
    pytest.param(
        DRIVE + spec(qd='"32"'),
        "specs[0].qd",
        "must be an integer, not a string '32'",
        id="wrong-type",
    ),
    pytest.param(
        DRIVE + spec(value="true"),
        "specs[0].value",
        "must be a number, not a boolean True",
        id="boolean-value",
    ),
    pytest.param(DRIVE + spec(qd="0"), "specs[0].qd", "must be at least 1, not 0", id="qd-0"),
    pytest.param(
        DRIVE + spec(**LATENCY | {"kind": '"ceiling"'}),
        "specs[0].kind",
        "a latency-p99 line is a bound (measured ≤ spec), not a ceiling",
        id="latency-ceiling",
    ),
    pytest.param(
        DRIVE + spec(kind='"bound"'),
        "specs[0].kind",
        "a throughput line is a ceiling",
        id="throughput-bound",
    ),
    pytest.param(
        DRIVE + spec(**LATENCY, tolerance="0.9"),
        "specs[0].tolerance",
        "a bound (measured ≤ spec) takes no tolerance",
        id="tolerance-on-bound",
    ),
    pytest.param(
        DRIVE + spec(read_share="70"),
        "specs[0].read_share",
        "contradicts direction 'read'",
        id="read-share-with-read",
    ),
    pytest.param(
        DRIVE + spec(direction='"mixed"'),
        "specs[0].read_share",
        "missing: direction 'mixed' needs a read share",
        id="mixed-without-share",
    ),
    pytest.param(
        DRIVE + spec(direction='"mixed"', read_share="100"),
        "specs[0].read_share",
        "must be an integer 1..99 (%), not 100",
        id="mixed-share-100",
    ),
    pytest.param(
        DRIVE + spec(**LATENCY, direction='"mixed"', read_share="70"),
        "specs[0].direction",
        "a latency line needs direction read or write",
        id="mixed-latency",
    ),
    pytest.param(
        DRIVE + spec(tolerance="1.5"),
        "specs[0].tolerance",
        "1.5 is not within (0, 1]",
        id="tolerance-above-1",
    ),
    pytest.param(
        "tolerance = 0\n" + DRIVE + spec(),
        "tolerance",
        "0 is not within (0, 1]",
        id="file-tolerance-0",
    ),
    pytest.param(
        DRIVE + spec(tolerence="0.8"),
        "specs[0].tolerence",
        "unknown key: use id,",
        id="misspelt-key",
    ),
    pytest.param(
        DRIVE + spec(block_size='"4KB"'),
        "specs[0].block_size",
        "'4KB': write bytes or a size such as '4KiB'",
        id="ambiguous-block-size",
    ),
    pytest.param(
        DRIVE + spec(block_size="1000"),
        "specs[0].block_size",
        "1000 is not a positive multiple of 512 bytes",
        id="odd-block-size",
    ),
    pytest.param(
        DRIVE + spec(id='"SEQ read"'), "specs[0].id", "use lower-case letters", id="bad-id"
    ),
    pytest.param(
        DRIVE + spec() + spec(),
        "specs[1].id",
        "'seq-read-qd8' repeats specs[0].id",
        id="repeated-id",
    ),
    pytest.param(
        DRIVE + spec() + spec(id='"x"', metric='"iops"', unit='"MB/s"'),
        "specs[1].unit",
        "'MB/s' measures throughput; iops takes IOPS, kIOPS",
        id="second-line",
    ),
    pytest.param(
        DRIVE.replace("capacity_gb = 960", 'capacity_gb = "960GB"') + spec(),
        "drive.capacity_gb",
        "must be a number, not a string '960GB'",
        id="drive-wrong-type",
    ),
    pytest.param(
        DRIVE.replace('model = "TEST*"\n', "") + spec(),
        "drive.model",
        "missing",
        id="drive-without-model",
    ),
    pytest.param(
        'drive = "x"\n' + spec(), "drive", "must be a table, not a string", id="drive-not-a-table"
    ),
    # values no drive has: refused before the device is purged (they once reached a purge)
    pytest.param(
        DRIVE + spec(value="nan"),
        "specs[0].value",
        "must be a finite number, not nan",
        id="value-nan",
    ),
    pytest.param(
        DRIVE + spec(value="inf"),
        "specs[0].value",
        "must be a finite number, not inf",
        id="value-inf",
    ),
    pytest.param(
        DRIVE + spec(value="1e308"),
        "specs[0].value",
        "1e+308 is beyond any drive: throughput in MB/s is at most 1e+06",
        id="value-1e308",
    ),
    pytest.param(
        DRIVE + spec(qd="1000000000"),
        "specs[0].qd",
        "1000000000 is beyond the deepest queue fio's engines take (32,768 at most)",
        id="qd-1e9",
    ),
    pytest.param(
        DRIVE + spec(qd="1e9"), "specs[0].qd", "must be an integer, not a number", id="qd-float"
    ),
    pytest.param(
        DRIVE + spec(jobs="100000"),
        "specs[0].jobs",
        "100000 is beyond the jobs one fio process runs (4,096 at most)",
        id="jobs-1e5",
    ),
    pytest.param(
        DRIVE.replace("capacity_gb = 960", "capacity_gb = nan") + spec(),
        "drive.capacity_gb",
        "must be a finite number, not nan",
        id="capacity-nan",
    ),
    pytest.param(
        DRIVE.replace("capacity_gb = 960", "capacity_gb = 1e12") + spec(),
        "drive.capacity_gb",
        "is beyond any drive: a capacity (GB) is at most 1e+09",
        id="capacity-1e12",
    ),
    pytest.param(
        DRIVE + spec(tolerance="nan"),
        "specs[0].tolerance",
        "must be a finite number, not nan",
        id="tolerance-nan",
    ),
    pytest.param(
        DRIVE + spec(**LATENCY | {"value": "inf"}),
        "specs[0].value",
        "must be a finite number, not inf",
        id="latency-inf",
    ),
    pytest.param(
        DRIVE + spec(block_size='"1024MiB"'),
        "specs[0].block_size",
        "up to 128 MiB",
        id="block-1GiB",
    ),
    pytest.param(
        DRIVE + spec(per_tb='"yes"'),
        "specs[0].per_tb",
        "must be true or false, not a string 'yes'",
        id="per-tb-string",
    ),
    pytest.param(
        DRIVE + spec(**LATENCY | {"per_tb": "true"}),
        "specs[0].per_tb",
        "a latency-p99 line is not per TB: latency does not scale",
        id="per-tb-latency",
    ),
    pytest.param(
        DRIVE.replace("capacity_gb = 960", "capacity_gb = [960, -1]") + spec(),
        "drive.capacity_gb[1]",
        "must be positive, not -1",
        id="capacities-negative",
    ),
    pytest.param(
        DRIVE.replace("capacity_gb = 960", "capacity_gb = []") + spec(),
        "drive.capacity_gb",
        "must be a number or a non-empty array of numbers",
        id="capacities-empty",
    ),
]


def test_a_product_line_sheet_has_capacities_and_per_tb_lines(tmp_path: Path) -> None:
    text = DRIVE.replace("capacity_gb = 960", "capacity_gb = [960, 1920, 3840]")
    sheet = load_datasheet(write(tmp_path, text + spec(per_tb="true") + spec(id='"x"')))
    assert sheet.drive.capacities_gb == (960, 1920, 3840)
    assert [line.per_tb for line in sheet.specs] == [True, False], "per_tb defaults to false"
    assert sheet.specs[0].as_dict()["per_tb"] is True
    assert sheet.specs[0].shown_unit == "MB/s per TB"


@pytest.mark.parametrize(("text", "where", "problem"), BAD)
def test_bad_datasheet_gives_one_line_naming_file_and_key(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    assert_refused(write(tmp_path, text), where, problem)


def assert_refused(path: Path, where: str, problem: str) -> None:
    """Loading *path* fails in one line: the file, *where* (a key path) and *problem*."""
    with pytest.raises(DatasheetError) as caught:
        load_datasheet(path)
    error = caught.value
    assert isinstance(error, ConfigError)
    assert (error.path, error.where) == (str(path), where)
    assert problem in error.problem
    assert str(error) == f"{path}: {where}: {error.problem}" and "\n" not in str(error)
    assert "\n" not in str(error)


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, DRIVE + "\n[[specs]]\nid = seq-read\n")
    with pytest.raises(DatasheetError) as caught:
        load_datasheet(path)
    assert caught.value.where == "line 7"
    assert str(caught.value) == f"{path}: line 7: invalid TOML: Invalid value (column 6)"


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"\xff\xfe[drive]", "not UTF-8 text"), (None, "cannot read: No such file or directory")],
)
def test_unreadable_file_gives_one_line(
    tmp_path: Path, content: bytes | None, problem: str
) -> None:
    path = tmp_path / "sheet.toml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(DatasheetError, match=f"^{re.escape(str(path))}: file: {problem}"):
        load_datasheet(path)


def test_loading_many_collects_the_first_error_of_each_file(tmp_path: Path) -> None:
    good = write(tmp_path, DRIVE + spec(), "a-good.toml")
    two_problems = write(tmp_path, DRIVE + spec(metric='"bw"', qd="0"), "b-bad.toml")
    syntax = write(tmp_path, "[drive\n", "c-syntax.toml")
    loaded = load_datasheets(datasheet_files(tmp_path))
    assert [d.path for d in loaded.datasheets] == [str(good)]
    assert [(e.path, e.where) for e in loaded.errors] == [
        (str(two_problems), "specs[0].metric"),
        (str(syntax), "line 1"),
    ]


def test_a_datasheet_nested_5000_deep_or_too_large_is_one_error(tmp_path: Path) -> None:
    deep = write(tmp_path, "a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(DatasheetError, match=r"bad.toml: file: not a datasheet: nested deeper"):
        load_datasheet(deep)
    big = write(tmp_path, "# " + "x" * (1 << 20) + "\n", "big.toml")
    with pytest.raises(DatasheetError, match=r"big.toml: file: larger than 1,048,576 bytes"):
        load_datasheet(big)
