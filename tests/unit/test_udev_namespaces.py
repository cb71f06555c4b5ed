"""The other namespaces of a controller and their write counters, on a fake host's sysfs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_ssd.device.udev import namespaces
from tests.fake_machine import FakeMachine

#: ``/sys/class/block/nvme0n1/stat`` of QEMU's guest (17 fields: kernel 6.x)
STAT = "1402 0 47512 520 {w} 0 {s} 900 0 610 1420 3 0 24 0 {f} 2"


@dataclass
class Host(FakeMachine):
    """A host whose block devices are *stats* (name -> stat text)."""

    stats: dict[str, str] = field(default_factory=dict)

    def glob(self, pattern: str) -> list[str]:
        prefix = pattern.removesuffix("*")
        paths = (f"/sys/class/block/{name}" for name in self.stats)
        return sorted(p for p in paths if p.startswith(prefix))

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        return [self.stats.get(p.split("/")[4]) for p in paths]


def _stat(writes: int, sectors: int, flushes: int = 0) -> str:
    return STAT.format(w=writes, s=sectors, f=flushes)


def test_the_other_namespaces_of_the_controller() -> None:
    host = Host(stats={n: _stat(0, 0) for n in ("nvme0n1", "nvme0n1p1", "nvme0n2", "nvme1n1")})
    assert namespaces.others(host, "nvme0n2") == ["nvme0n1"], "no partition, no other controller"
    assert namespaces.others(host, "loop3") == []
    assert namespaces.others(host, "nvme1n1") == []


def test_a_write_to_another_namespace_is_named_with_the_kernels_counts() -> None:
    host = Host(stats={"nvme0n1": _stat(10, 80), "nvme0n3": _stat(5, 40)})
    before = namespaces.written(host, ["nvme0n1", "nvme0n3"])
    assert namespaces.changes(before, namespaces.written(host, ["nvme0n1", "nvme0n3"])) == []
    host.stats["nvme0n1"] = _stat(18, 144, flushes=1)
    del host.stats["nvme0n3"]
    after = namespaces.written(host, ["nvme0n1", "nvme0n3"])
    assert namespaces.changes(before, after) == [
        "nvme0n1: 8 writes, 64 sectors written, 1 flushes",
        "nvme0n3: its counters could not be read",
    ]
