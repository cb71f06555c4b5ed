"""The integrity checks' judgements on a fake ``ssd``: sampled blocks against what the
device declares, a trim span cut in thirds, and a test settled by its checks."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.methods.integrity import run
from pytest_ssd.methods.integrity.workloads import Range
from pytest_ssd.methods.qual.record import settle
from tests.unit.purge_fakes import nvme_identity, nvme_info

LBS = 512


@dataclass
class FakeMachine:
    """Blocks as given, by LBA; any other block reads as *rest*."""

    blocks: dict[int, bytes]
    rest: bytes = bytes(LBS)

    def read_blocks(self, path: str, unit: int, numbers: list[int]) -> Iterator[tuple[int, bytes]]:
        assert unit == LBS
        return iter([(n, self.blocks.get(n, self.rest)) for n in numbers])


@dataclass
class FakeDut:
    identity: DeviceIdentity
    path: Path = Path("/dev/nvme0n1")


@dataclass
class FakeSsd:
    dut: FakeDut
    machine: FakeMachine
    derived: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def derive(self, name: str, values: dict[str, Any]) -> None:
        self.derived.append((name, values))


def fake(dlfeat: int, blocks: dict[int, bytes] | None = None, rest: bytes = bytes(LBS)) -> Any:
    identity = dataclasses.replace(
        nvme_identity(nvme=nvme_info(ns={"dlfeat": dlfeat})), logical_block_size=LBS
    )
    return FakeSsd(FakeDut(identity), FakeMachine(blocks or {}, rest))


SPAN = Range(1 << 20, 1 << 20)
FIRST = SPAN.offset // LBS


def header(offset: int) -> bytes:
    return (0xACCA).to_bytes(2, "little") + bytes(14) + offset.to_bytes(8, "little") + bytes(488)


def test_a_block_still_holding_its_old_header_fails_after_the_purge() -> None:
    ssd = fake(1, {FIRST: header(SPAN.offset)})
    outcome = run.sampled(ssd, "after purge", SPAN, "purged")
    assert outcome.verdict == "fail"
    assert outcome.detail.startswith(f"after purge: LBA {FIRST} (1 of 66 sampled) still holds")


def test_blocks_read_as_dlfeat_declares() -> None:
    assert run.sampled(fake(1), "trimmed reads", SPAN, "trimmed").verdict == "pass"
    ones = run.sampled(fake(2), "trimmed reads", SPAN, "trimmed")
    assert ones.verdict == "fail" and "reads 0000000000000000..., not 0xFF bytes" in ones.detail
    assert ones.detail.startswith(f"trimmed reads: LBA {FIRST} (66 of 66 sampled trimmed blocks)")
    unsaid = run.sampled(fake(0, rest=b"\x5a" * LBS), "trimmed reads", SPAN, "trimmed")
    assert unsaid.verdict == "not judged" and "DLFEAT bits 2:0 = 0" in unsaid.detail
    assert unsaid.values["sampled"] == 66 and unsaid.values["expected"] is None


def test_a_trim_span_is_cut_in_thirds_at_mebibytes() -> None:
    before, cut, after = run._thirds(Range(0, (10 << 20) + 4096))
    assert (before.size, cut.offset, cut.size) == (3 << 20, 3 << 20, 3 << 20)
    assert after.offset == 6 << 20 and after.end == (10 << 20) + 4096


def test_settle_records_then_fails_on_the_first_failure_or_skips_when_none_judged() -> None:
    ssd = fake(1)
    passed = run.Outcome("a", "pass", "fine")
    failed = run.Outcome("b", "fail", "LBA 7 bad")
    with pytest.raises(pytest.fail.Exception, match="LBA 7 bad"):
        settle(ssd, "integrity", [passed, failed])
    assert [v["verdict"] for _, v in ssd.derived] == ["pass", "fail"]
    assert {name for name, _ in ssd.derived} == {"qualification"}
    with pytest.raises(pytest.skip.Exception, match="not said"):
        settle(ssd, "integrity", [run.Outcome("c", "not judged", "not said")])
    settle(ssd, "integrity", [passed, run.Outcome("c", "not judged", "not said")])  # passes
