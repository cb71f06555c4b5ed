"""Which purge methods a device supports, and which one is chosen (golden QEMU id-ctrl/id-ns)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_ssd.errors import PurgeError
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.purge import (
    PurgeMethod,
    choose,
    nvme_controller,
    options,
    parse_hdparm_identify,
)
from tests.unit.purge_fakes import FROZEN, NOT_FROZEN, nvme_identity, nvme_info, sata_identity

CLI_NAMES = [
    "sanitize-block",
    "sanitize-crypto",
    "sanitize-overwrite",
    "format-ses1",
    "format-ses2",
    "ata-secure-erase-enhanced",
    "ata-secure-erase",
    "discard",
    "punch-hole",
]


def test_values_are_the_cli_names_strongest_first() -> None:
    assert [str(m) for m in PurgeMethod] == CLI_NAMES
    assert PurgeMethod("format-ses1") is PurgeMethod.FORMAT_SES1


def test_golden_qemu_controller_gets_format_ses1() -> None:
    identity = nvme_identity()
    assert choose(identity, machine=LOCAL) is PurgeMethod.FORMAT_SES1
    listed = {o.method: o for o in options(identity, machine=LOCAL)}
    assert list(listed) == list(PurgeMethod)
    assert str(listed[PurgeMethod.SANITIZE_BLOCK]) == (
        "sanitize-block: not supported (SANICAP bit 1 clear)"
    )
    assert listed[PurgeMethod.SANITIZE_CRYPTO].reason == "SANICAP bit 0 clear"
    assert listed[PurgeMethod.SANITIZE_OVERWRITE].reason == "SANICAP bit 2 clear"
    assert str(listed[PurgeMethod.FORMAT_SES1]) == (
        "format-ses1: supported (OACS bit 1 set: Format NVM)"
    )
    assert listed[PurgeMethod.FORMAT_SES2].reason == "FNA bit 2 clear"
    assert not listed[PurgeMethod.FORMAT_SES2].supported
    assert listed[PurgeMethod.ATA_SECURE_ERASE].reason == "not a SATA device (nvme)"
    assert listed[PurgeMethod.DISCARD].supported
    assert not listed[PurgeMethod.PUNCH_HOLE].supported


@pytest.mark.parametrize(
    ("sanicap", "chosen"),
    [
        (0b010, PurgeMethod.SANITIZE_BLOCK),
        (0b001, PurgeMethod.SANITIZE_CRYPTO),
        (0b100, PurgeMethod.SANITIZE_OVERWRITE),
        (0b111, PurgeMethod.SANITIZE_BLOCK),
        (0b101, PurgeMethod.SANITIZE_CRYPTO),
        # bits 29-31 (NDI, NODMMAS) say nothing about the sanitize actions
        (0xE0000000, PurgeMethod.FORMAT_SES1),
    ],
)
def test_sanicap_bits_pick_the_sanitize_action(sanicap: int, chosen: PurgeMethod) -> None:
    identity = nvme_identity(nvme=nvme_info({"sanicap": sanicap}))
    assert choose(identity, machine=LOCAL) is chosen


def test_crypto_format_needs_fna_bit_2_and_ses1_stays_stronger() -> None:
    identity = nvme_identity(nvme=nvme_info({"fna": 0b100}))
    listed = {o.method: o for o in options(identity, machine=LOCAL)}
    assert listed[PurgeMethod.FORMAT_SES2].supported
    assert listed[PurgeMethod.FORMAT_SES2].reason == "FNA bit 2 set: format crypto erase"
    assert choose(identity, machine=LOCAL) is PurgeMethod.FORMAT_SES1
    assert choose(identity, PurgeMethod.FORMAT_SES2, machine=LOCAL) is PurgeMethod.FORMAT_SES2


def test_without_format_in_oacs_discard_is_next() -> None:
    identity = nvme_identity(nvme=nvme_info({"oacs": 0x108, "fna": 0b100}))
    listed = {o.method: o for o in options(identity, machine=LOCAL)}
    assert listed[PurgeMethod.FORMAT_SES1].reason == "OACS bit 1 clear"
    # crypto format is a Format NVM too: without OACS bit 1 the FNA bit does not help
    assert listed[PurgeMethod.FORMAT_SES2].reason == "OACS bit 1 clear"
    assert choose(identity, machine=LOCAL) is PurgeMethod.DISCARD


def test_nothing_supported_is_one_line_naming_the_device_and_every_reason() -> None:
    identity = nvme_identity(nvme=nvme_info({"oacs": 0x108}), discard=False)
    with pytest.raises(PurgeError) as info:
        choose(identity, machine=LOCAL)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("no purge method can run on /dev/nvme0n1 (QEMU NVMe Ctrl")
    for name in CLI_NAMES:
        assert f"{name}: " in message
    assert "sanitize-block: SANICAP bit 1 clear" in message
    assert "format-ses1: OACS bit 1 clear" in message
    assert "discard: the device does not support discard" in message
    assert "punch-hole: not a regular file" in message


def test_forced_method_must_be_supported() -> None:
    identity = nvme_identity()
    assert choose(identity, PurgeMethod.DISCARD, machine=LOCAL) is PurgeMethod.DISCARD
    expected = "--ssd-purge=sanitize-block cannot purge /dev/nvme0n1: SANICAP bit 1 clear"
    with pytest.raises(PurgeError, match=f"^{expected}$"):
        choose(identity, PurgeMethod.SANITIZE_BLOCK, machine=LOCAL)
    with pytest.raises(PurgeError, match="not a regular file"):
        choose(identity, PurgeMethod.PUNCH_HOLE, machine=LOCAL)


def test_partition_of_a_namespace_is_never_sanitized_or_formatted() -> None:
    identity = nvme_identity(
        path="/dev/nvme0n1p1", kernel_name="nvme0n1p1", nvme=nvme_info({"sanicap": 0b111})
    )
    listed = {o.method: o for o in options(identity, machine=LOCAL)}
    for method in list(PurgeMethod)[:5]:
        assert not listed[method].supported
        assert "not a whole NVMe namespace" in listed[method].reason
    assert choose(identity, machine=LOCAL) is PurgeMethod.DISCARD


def test_nvme_without_identify_data_falls_back_to_discard() -> None:
    identity = nvme_identity(nvme=None)
    reason = options(identity, machine=LOCAL)[0].reason
    assert reason.startswith("no NVMe identify data")
    assert choose(identity, machine=LOCAL) is PurgeMethod.DISCARD


@pytest.mark.parametrize(
    ("kernel_name", "controller"),
    [("nvme0n1", "/dev/nvme0"), ("nvme12n3", "/dev/nvme12"), ("nvme0n1p2", None)],
)
def test_controller_of_a_namespace(kernel_name: str, controller: str | None) -> None:
    assert nvme_controller(nvme_identity(kernel_name=kernel_name)) == controller


def test_file_and_loop_targets() -> None:
    file = dataclasses.replace(
        nvme_identity(path="/tmp/x.img"), kind="file", transport="file", kernel_name=None, nvme=None
    )
    assert choose(file, machine=LOCAL) is PurgeMethod.PUNCH_HOLE
    assert {o.method for o in options(file, machine=LOCAL) if o.supported} == {
        PurgeMethod.PUNCH_HOLE
    }
    loop = dataclasses.replace(file, kind="block", transport="loop", kernel_name="loop3")
    assert choose(loop, machine=LOCAL) is PurgeMethod.DISCARD
    assert "punches holes in its backing file" in options(loop, machine=LOCAL)[7].reason
    with pytest.raises(PurgeError, match="discard: the device does not support discard"):
        choose(dataclasses.replace(loop, discard=False), machine=LOCAL)


def test_sata_not_frozen_gets_enhanced_erase() -> None:
    ata = parse_hdparm_identify(NOT_FROZEN.read_text())
    identity = sata_identity()
    assert choose(identity, ata=ata, machine=LOCAL) is PurgeMethod.ATA_SECURE_ERASE_ENHANCED
    listed = {o.method: o for o in options(identity, ata, machine=LOCAL)}
    assert listed[PurgeMethod.ATA_SECURE_ERASE].supported
    assert listed[PurgeMethod.ATA_SECURE_ERASE].reason.endswith("about 2 min")
    assert listed[PurgeMethod.SANITIZE_BLOCK].reason == "not an NVMe device (scsi)"
    # without the hdparm state the ATA methods are unknown, and discard is the best left
    assert choose(identity, machine=LOCAL) is PurgeMethod.DISCARD
    assert "hdparm -I was not run" in options(identity, machine=LOCAL)[5].reason


def test_sata_frozen_says_how_to_unfreeze() -> None:
    ata = parse_hdparm_identify(FROZEN.read_text())
    identity = sata_identity(discard=False)
    with pytest.raises(PurgeError) as info:
        choose(identity, ata=ata, machine=LOCAL)
    message = str(info.value)
    assert "\n" not in message
    assert "ata-secure-erase-enhanced: ATA security is frozen: suspend and resume" in message
    assert "rtcwake -m mem -s 10" in message
    assert "hot-plug the drive's power" in message
    # with discard available, the frozen drive is still purged, more weakly
    assert (
        choose(dataclasses.replace(identity, discard=True), ata=ata, machine=LOCAL)
        is PurgeMethod.DISCARD
    )
