"""nvme-cli 2.3 id-ctrl / id-ns JSON, checked against a real (QEMU-emulated) controller's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.nvme import (
    LbaFormat,
    NvmeInfo,
    PowerState,
    flbas_index,
    parse_id_ctrl,
    parse_id_ns,
    query,
    version_text,
)
from pytest_ssd.errors import ParseError, ToolError
from pytest_ssd.machine.machine import LOCAL

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


def test_golden_power_state_and_write_cache() -> None:
    ctrl = parse_id_ctrl((GOLDEN / "id-ctrl.json").read_text())
    # QEMU: psd[0].mp = 0x9c4 in 0.01 W units, enlat 16 us, exlat 4 us
    assert ctrl.power_states == (
        PowerState(
            index=0,
            max_power_w=25.0,
            max_power_scale_w=0.01,
            non_operational=False,
            entry_latency_us=16,
            exit_latency_us=4,
        ),
    )
    assert ctrl.vwc == 7 and ctrl.volatile_write_cache
    assert not ctrl.format_all_namespaces


def test_golden_lba_formats() -> None:
    ns = parse_id_ns((GOLDEN / "id-ns.json").read_text())
    assert ns.lba_format_index == 0
    assert [(f.index, f.data_size, f.metadata_size) for f in ns.lba_formats] == [
        (0, 512, 0),
        (1, 512, 8),
        (2, 512, 16),
        (3, 512, 64),
        (4, 4096, 0),
        (5, 4096, 8),
        (6, 4096, 16),
        (7, 4096, 64),
    ]
    assert {(f.relative_performance, f.performance) for f in ns.lba_formats} == {(0, "Best")}


@pytest.mark.parametrize(
    ("flags", "watts", "scale", "non_operational"),
    [
        (0, 350.0, 0.01, False),
        (1, 3.5, 0.0001, False),
        (2, 350.0, 0.01, True),
        (3, 3.5, 0.0001, True),
    ],
)
def test_power_state_flags(flags: int, watts: float, scale: float, non_operational: bool) -> None:
    data = golden_dict("id-ctrl.json")
    data["psds"][0].update(max_power=35000, flags=flags)
    (ps,) = parse_id_ctrl(json.dumps(data)).power_states
    assert (ps.max_power_w, ps.max_power_scale_w, ps.non_operational) == (
        watts,
        scale,
        non_operational,
    )


def test_power_states_as_later_nvme_cli_prints_them() -> None:
    data = golden_dict("id-ctrl.json")
    psd = data["psds"][0]
    del psd["flags"]
    data["psds"] = [
        {**psd, "max_power_scale": 0, "non-operational_state": 0},
        {**psd, "max_power": 50, "max_power_scale": 1, "non-operational_state": 1},
    ]
    states = parse_id_ctrl(json.dumps(data)).power_states
    assert [(s.index, s.max_power_w, s.non_operational) for s in states] == [
        (0, 25.0, False),
        (1, 0.005, True),
    ]


@pytest.mark.parametrize("field", ["max_power", "flags", "entry_lat", "exit_lat"])
def test_missing_power_state_field_is_named(field: str) -> None:
    data = golden_dict("id-ctrl.json")
    del data["psds"][0][field]
    # without flags, the later nvme-cli's split fields are looked for
    missing = "max_power_scale" if field == "flags" else field
    with pytest.raises(ParseError, match=rf"nvme id-ctrl psds\[0\]: field '{missing}' is missing"):
        parse_id_ctrl(json.dumps(data))


@pytest.mark.parametrize(
    ("psds", "message"), [(None, "'psds' is missing"), (5, "'psds' is not a list")]
)
def test_bad_power_state_list(psds: object, message: str) -> None:
    data = golden_dict("id-ctrl.json")
    if psds is None:
        del data["psds"]
    else:
        data["psds"] = psds
    with pytest.raises(ParseError, match=message):
        parse_id_ctrl(json.dumps(data))


@pytest.mark.parametrize(("vwc", "present"), [(7, True), (1, True), (6, False), (0, False)])
def test_volatile_write_cache_is_bit_0(vwc: int, present: bool) -> None:
    data = golden_dict("id-ctrl.json")
    data["vwc"] = vwc
    assert parse_id_ctrl(json.dumps(data)).volatile_write_cache is present


@pytest.mark.parametrize(
    ("fna", "all_ns", "crypto"), [(1, True, False), (4, False, True), (5, True, True)]
)
def test_format_attributes(fna: int, all_ns: bool, crypto: bool) -> None:
    data = golden_dict("id-ctrl.json")
    data["fna"] = fna
    ctrl = parse_id_ctrl(json.dumps(data))
    assert (ctrl.format_all_namespaces, ctrl.format_crypto_supported) == (all_ns, crypto)


@pytest.mark.parametrize(
    ("flbas", "index"), [(0, 0), (0x17, 7), (0x1F, 15), (0x21, 17), (0x7F, 63)]
)
def test_flbas_index_takes_bits_6_5_as_the_high_bits(flbas: int, index: int) -> None:
    assert flbas_index(flbas) == index


def test_namespace_with_more_than_16_lba_formats() -> None:
    data = golden_dict("id-ns.json")
    data["lbafs"] = data["lbafs"] * 3  # 24 formats, as NVMe 2.0 allows up to 64
    data["lbafs"][17] = {"ms": 8, "ds": 12, "rp": 2}
    data.update(nlbaf=23, flbas=0x21)
    ns = parse_id_ns(json.dumps(data))
    assert ns.lba_format_index == 17
    assert (ns.lba_size, ns.metadata_size) == (4096, 8)
    assert ns.lba_formats[17] == LbaFormat(17, 4096, 8, 2, "Good")


def test_lba_format_performance_names_and_unsupported_format() -> None:
    data = golden_dict("id-ns.json")
    for rp, entry in enumerate(data["lbafs"][:4]):
        entry["rp"] = rp
    data["lbafs"][7]["ds"] = 0
    formats = parse_id_ns(json.dumps(data)).lba_formats
    assert [f.performance for f in formats[:4]] == ["Best", "Better", "Good", "Degraded"]
    assert formats[7].data_size == 0


def test_lba_format_without_rp_is_named() -> None:
    data = golden_dict("id-ns.json")
    del data["lbafs"][6]["rp"]
    with pytest.raises(ParseError, match=r"nvme id-ns lbafs\[6\]: field 'rp' is missing"):
        parse_id_ns(json.dumps(data))


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
    assert back["controller"]["power_states"][0]["max_power_w"] == 25.0
    assert back["namespace"]["lba_formats"][4] == {
        "index": 4,
        "data_size": 4096,
        "metadata_size": 0,
        "relative_performance": 0,
        "performance": "Best",
    }


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
    info = query(Path("/dev/nvme0n1"), artifacts, LOCAL)
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
        query(Path("/dev/nvme0n1"), None, LOCAL)
    message = str(excinfo.value)
    assert message.startswith("nvme id-ctrl /dev/nvme0n1 failed (exit 1)")
    assert message.endswith(status)
    assert "\n" not in message


def test_query_says_how_to_install_nvme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolError, match="nvme not found on PATH: apt-get install nvme-cli"):
        query(Path("/dev/nvme0n1"), None, LOCAL)


def test_query_rejects_garbage_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvme(tmp_path, monkeypatch, "echo 'not json'")
    with pytest.raises(ParseError, match="nvme id-ctrl: output is not JSON"):
        query(Path("/dev/nvme0n1"), None, LOCAL)
