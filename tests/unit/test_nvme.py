"""nvme-cli 2.3 id-ctrl / id-ns JSON, checked against a real (QEMU-emulated) controller's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.nvme import (
    NvmeInfo,
    parse_id_ctrl,
    parse_id_ns,
    query,
    version_text,
)
from pytest_ssd.errors import ParseError, ToolError

GOLDEN = Path(__file__).parent.parent / "golden" / "nvme"


def golden_dict(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    return data


def test_golden_controller() -> None:
    ctrl = parse_id_ctrl((GOLDEN / "id-ctrl.json").read_text())
    assert (ctrl.model, ctrl.serial, ctrl.firmware) == ("QEMU NVMe Ctrl", "GOLDEN0001", "7.2.22")
    assert ctrl.vid == 0x1B36
    assert ctrl.version == "1.4"
    assert ctrl.sanicap == 0
    assert not (ctrl.sanitize_crypto or ctrl.sanitize_block or ctrl.sanitize_overwrite)
    assert ctrl.oacs == 0x10A and ctrl.format_supported
    assert ctrl.fna == 0 and not ctrl.format_crypto_supported
    assert (ctrl.wctemp_k, ctrl.cctemp_k) == (343, 373)
    assert (ctrl.npss, ctrl.apsta, ctrl.tnvmcap) == (0, False, 0)


def test_golden_namespace() -> None:
    ns = parse_id_ns((GOLDEN / "id-ns.json").read_text())
    assert (ns.nsze, ns.ncap, ns.nuse) == (4194304, 4194304, 4194304)
    assert (ns.lba_size, ns.metadata_size) == (512, 0)
    assert ns.nsze * ns.lba_size == 2 << 30
    assert ns.dlfeat == 1 and ns.deallocated_reads_zeroes
    # NSFEAT says the npwg fields are valid, but npwg 0 means one block: no larger unit
    assert (ns.npwg, ns.nows, ns.indirection_unit_bytes) == (0, 0, None)


def test_controller_variant_with_sanitize_and_crypto_format() -> None:
    data = golden_dict("id-ctrl.json")
    data.update(
        sanicap=0b101,
        fna=0b100,
        oacs=0x08,
        ver=0x020001,
        apsta=1,
        tnvmcap="3840755982336000000000",
    )
    ctrl = parse_id_ctrl(json.dumps(data))
    assert (ctrl.sanitize_crypto, ctrl.sanitize_block, ctrl.sanitize_overwrite) == (
        True,
        False,
        True,
    )
    assert ctrl.format_crypto_supported and not ctrl.format_supported
    assert ctrl.version == "2.0.1"
    assert ctrl.apsta
    assert ctrl.tnvmcap == 3840755982336000000000


@pytest.mark.parametrize(("flbas", "metadata"), [(4, 0), (5, 8), (0x17, 64)])
def test_namespace_variant_with_4k_lbas(flbas: int, metadata: int) -> None:
    data = golden_dict("id-ns.json")
    data["flbas"] = flbas  # bit 4 (metadata at the end of the LBA) is not part of the index
    ns = parse_id_ns(json.dumps(data))
    assert (ns.lba_size, ns.metadata_size) == (4096, metadata)


def test_namespace_variant_with_write_granularity() -> None:
    data = golden_dict("id-ns.json")
    data.update(flbas=4, npwg=7, nows=31, dlfeat=0x0A)
    ns = parse_id_ns(json.dumps(data))
    assert ns.indirection_unit_bytes == 8 * 4096
    assert ns.nows == 31
    assert not ns.deallocated_reads_zeroes  # bits 2:0 == 2 means reads return ones


def test_write_granularity_ignored_when_nsfeat_says_invalid() -> None:
    data = golden_dict("id-ns.json")
    data.update(nsfeat=0, npwg=7)
    assert parse_id_ns(json.dumps(data)).indirection_unit_bytes is None


@pytest.mark.parametrize(
    ("ver", "text"), [(0x010400, "1.4"), (0x010401, "1.4.1"), (0x020000, "2.0"), (0, "unreported")]
)
def test_version_text(ver: int, text: str) -> None:
    assert version_text(ver) == text


@pytest.mark.parametrize("text", ["", "{", "NVMe status: Invalid Field", "[1, 2]"])
def test_not_json_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvme id-ctrl"):
        parse_id_ctrl(text)


@pytest.mark.parametrize("field", ["mn", "sn", "fr", "ver", "sanicap", "oacs", "wctemp", "tnvmcap"])
def test_missing_controller_field_is_named(field: str) -> None:
    data = golden_dict("id-ctrl.json")
    del data[field]
    with pytest.raises(ParseError, match=f"nvme id-ctrl: field '{field}' is missing"):
        parse_id_ctrl(json.dumps(data))


@pytest.mark.parametrize(("field", "value"), [("tnvmcap", "lots"), ("oacs", None), ("mn", 5)])
def test_bad_controller_field_is_named(field: str, value: object) -> None:
    data = golden_dict("id-ctrl.json")
    data[field] = value
    with pytest.raises(ParseError, match=f"nvme id-ctrl: field '{field}' is not"):
        parse_id_ctrl(json.dumps(data))


@pytest.mark.parametrize("field", ["nsze", "flbas", "lbafs", "dlfeat", "nsfeat", "npwg"])
def test_missing_namespace_field_is_named(field: str) -> None:
    data = golden_dict("id-ns.json")
    del data[field]
    with pytest.raises(ParseError, match=f"nvme id-ns: field '{field}' is missing"):
        parse_id_ns(json.dumps(data))


def test_flbas_beyond_the_listed_formats() -> None:
    data = golden_dict("id-ns.json")
    data["lbafs"] = data["lbafs"][:2]
    data["flbas"] = 4
    with pytest.raises(ParseError, match=r"lbafs\[4\] but 2 formats"):
        parse_id_ns(json.dumps(data))


def test_lba_format_without_ds() -> None:
    data = golden_dict("id-ns.json")
    del data["lbafs"][0]["ds"]
    with pytest.raises(ParseError, match=r"nvme id-ns lbafs\[0\]: field 'ds' is missing"):
        parse_id_ns(json.dumps(data))


def test_as_dict_is_json() -> None:
    info = NvmeInfo(
        parse_id_ctrl((GOLDEN / "id-ctrl.json").read_text()),
        parse_id_ns((GOLDEN / "id-ns.json").read_text()),
    )
    back = json.loads(json.dumps(info.as_dict()))
    assert back["controller"]["serial"] == "GOLDEN0001"
    assert back["namespace"]["lba_size"] == 512


# query() against a stand-in `nvme` first on PATH: there is no NVMe device here.


def fake_nvme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """Put a shell script named nvme first on PATH; it logs its argv to the returned file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    script = bin_dir / "nvme"
    script.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n{body}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return calls


def test_query_runs_id_ctrl_and_id_ns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = f"""case "$1" in
  id-ctrl) cat {GOLDEN / "id-ctrl.json"} ;;
  id-ns) cat {GOLDEN / "id-ns.json"} ;;
  *) exit 22 ;;
esac"""
    calls = fake_nvme(tmp_path, monkeypatch, body)
    artifacts = tmp_path / "artifacts"
    info = query(Path("/dev/nvme0n1"), artifacts)
    assert info.controller.serial == "GOLDEN0001"
    assert info.namespace.nsze == 4194304
    assert calls.read_text().splitlines() == [
        "id-ctrl /dev/nvme0n1 -o json",
        "id-ns /dev/nvme0n1 -o json",
    ]
    assert '"sn":"GOLDEN0001' in (artifacts / "nvme-id-ctrl.stdout").read_text()
    assert (artifacts / "nvme-id-ns.rc").read_text() == "0\n"


def test_query_failure_carries_nvme_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    golden = (GOLDEN / "sanitize.failed.txt").read_text().splitlines()
    assert golden[0] == "exit code: 1" and golden[1] == "stderr:"
    status = golden[2]
    (tmp_path / "stderr.txt").write_text(status + "\n")
    fake_nvme(tmp_path, monkeypatch, f"cat {tmp_path / 'stderr.txt'} >&2\nexit 1")
    with pytest.raises(ToolError) as excinfo:
        query(Path("/dev/nvme0n1"))
    message = str(excinfo.value)
    assert message.startswith("nvme id-ctrl /dev/nvme0n1 failed (exit 1)")
    assert message.endswith(status)
    assert "\n" not in message


def test_query_says_how_to_install_nvme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolError, match="nvme not found on PATH: apt-get install nvme-cli"):
        query(Path("/dev/nvme0n1"))


def test_query_rejects_garbage_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvme(tmp_path, monkeypatch, "echo 'not json'")
    with pytest.raises(ParseError, match="nvme id-ctrl: output is not JSON"):
        query(Path("/dev/nvme0n1"))
