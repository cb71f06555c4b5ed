"""Data integrity: fio's verification failures read from its golden output, the jobs' fio
options, and what a deallocated block reads as."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_ssd.fio.job import render
from pytest_ssd.fio.results import parse_output
from pytest_ssd.methods.integrity.analysis import VERIFY_ERROR, first_mismatch
from pytest_ssd.methods.integrity.workloads import (
    Range,
    check_job,
    fill_job,
    holds_header_of,
    overwrite_job,
    reads_deallocated,
    trim_job,
)
from pytest_ssd.state.profile import Profile
from tests.unit.purge_fakes import nvme_identity, nvme_info, sata_identity

GOLDEN = Path(__file__).parents[1] / "golden" / "fio-verify"


def golden(name: str) -> str:
    return (GOLDEN / name).read_text()


def test_a_bad_magic_names_the_lba_both_headers_and_the_dump() -> None:
    found = first_mismatch(golden("bad-magic.stderr"))
    assert found is not None
    assert (found.offset, found.length, found.file) == (409600, 4096, "/dev/loop0")
    assert (found.what, found.expected, found.found) == ("magic header", "acca", "688")
    assert found.dumps == ("loop0.409600.hdr_fail",)
    line = found.line(4096, "after sequential fill")
    assert "\n" not in line
    assert line == (
        "after sequential fill: LBA 100 (offset 409600, 4096 B of /dev/loop0) does not read back"
        " as written: magic header expected acca, found 688; fio's dump: loop0.409600.hdr_fail"
    )
    assert found.lba(512) == 800, "the LBA is in the device's logical blocks"


def test_a_misdirected_block_fails_the_offset_check() -> None:
    found = first_mismatch(golden("bad-offset.stderr"))
    assert found is not None
    assert (found.what, found.expected, found.found) == ("offset", "409600", "204800")


def test_a_bad_checksum_names_both_crcs_and_both_dumps() -> None:
    found = first_mismatch(golden("bad-crc.stderr"))
    assert found is not None
    assert (found.what, found.expected, found.found) == ("crc32c checksum", "1a6fce04", "af6c7590")
    assert found.dumps == ("loop0.409600.received", "loop0.409600.expected")


def test_no_mismatch_in_other_failures() -> None:
    said = "fio: pid=1302, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error\n"
    assert first_mismatch(said) is None
    assert first_mismatch("") is None


def test_fio_json_of_a_verify_failure_holds_the_job_error() -> None:
    """fio puts its error line before the JSON on stdout; the job's error is EILSEQ."""
    output = parse_output(golden("bad-magic.stdout"))
    assert output.jobs[0].error == VERIFY_ERROR


def test_jobs_write_headers_every_4k_and_check_them() -> None:
    span = Range(1 << 20, 64 << 20)
    fill = dict(fill_job("f", span, 4096).options())
    assert fill["verify"] == "crc32c" and fill["verify_interval"] == "4096"
    assert fill["do_verify"] == "0" and fill["rw"] == "write" and fill["bs"] == str(128 << 10)
    check = check_job("c", span, 4096)
    options = dict(check.options())
    assert check.read_pct == 100 and options["rw"] == "read"
    assert options["verify_dump"] == options["verify_fatal"] == options["do_verify"] == "1"
    hosted = dict(check_job("c", span, 4096, dump=False).options())
    assert hosted["verify_dump"] == "0", "a test host's fio server would leave its dump there"
    quick = overwrite_job("o", span, 4096, Profile("quick"))
    full = overwrite_job("o", span, 4096, Profile("full"))
    assert quick.io_bytes == span.size
    assert full.io_bytes == 4 * span.size, "2 passes, and the backlog's reads count in io_size"
    assert "verify_backlog" in dict(full.extra) and "verify_backlog" not in dict(quick.extra)
    assert dict(quick.options())["do_verify"] == "1", "the overwrite verifies its last writes"
    assert fill_job("r", span, 4096, pattern="rnd").block_size == 4096


def test_trim_job_is_fios_trim() -> None:
    """FioJob knows read and write: the trim's rw comes last, and fio takes the last value."""
    job = trim_job("t", Range(0, 3 << 20))
    lines = render([job], "/dev/loop0").splitlines()
    assert lines.index("rw=trim") > lines.index("rw=write")
    assert job.ioengine == "psync" and job.block_size == 1 << 20


def test_a_deallocated_block_reads_as_the_device_declares() -> None:
    assert reads_deallocated(nvme_identity(nvme=nvme_info(ns={"dlfeat": 1}))).byte == 0x00
    assert reads_deallocated(nvme_identity(nvme=nvme_info(ns={"dlfeat": 0b1010}))).byte == 0xFF
    unsaid = reads_deallocated(nvme_identity(nvme=nvme_info(ns={"dlfeat": 0})))
    assert unsaid.byte is None and "DLFEAT bits 2:0 = 0" in unsaid.why
    loop = dataclasses.replace(nvme_identity(), transport="loop", kernel_name="loop0", nvme=None)
    assert reads_deallocated(loop).byte == 0x00
    assert reads_deallocated(sata_identity()).byte is None


@pytest.mark.parametrize(
    ("data", "offset", "held"),
    [
        (bytes.fromhex("caac") + bytes(14) + (409600).to_bytes(8, "little"), 409600, True),
        (bytes.fromhex("caac") + bytes(14) + (409600).to_bytes(8, "little"), 413696, False),
        (bytes(4096), 0, False),
        (b"\xca", 0, False),
    ],
)
def test_old_data_is_a_header_naming_its_offset(data: bytes, offset: int, held: bool) -> None:
    assert holds_header_of(data, offset) is held


def test_a_test_hosts_mismatch_comes_after_the_servers_name() -> None:
    """``fio --client`` prefixes its server's lines with ``<host>``; a 128 KiB read names
    the 4 KiB block whose header failed."""
    found = first_mismatch(golden("client-bad-magic.stderr"))
    assert found is not None
    assert (found.offset, found.length, found.what, found.found) == (
        409600,
        4096,
        "magic header",
        "0",
    )
    assert found.dumps == ("loop1.409600.hdr_fail",)
