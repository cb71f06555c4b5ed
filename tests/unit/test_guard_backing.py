"""A regular file mounted directly (FUSE: fuse2fs, ...) is mounted: its mount source names it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device import guard
from pytest_ssd.device.view import View
from pytest_ssd.machine.facts import HereFacts


@dataclass
class _FuseMounted(HereFacts):
    """This machine, with *image* mounted by fuse2fs at /mnt/image as well."""

    image: str = ""

    def mountinfo(self) -> list[str]:
        line = f"999 1 0:99 / /mnt/image rw,relatime - fuse.fuse2fs {self.image} rw"
        return [*super().mountinfo(), line]


def test_a_file_mounted_directly_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "sib.img"
    image.write_bytes(bytes(1 << 20))
    facts = guard.inspect(image, view=View(_FuseMounted(image=str(image))))
    assert facts.mounts == ("/mnt/image",)
    assert guard.refusal(facts) == (
        f"refusing to write to {image}: it is mounted at /mnt/image;"
        " unmount it first or use --ssd-readonly"
    )


def test_another_file_is_not_mounted(tmp_path: Path) -> None:
    image, other = tmp_path / "sib.img", tmp_path / "other.img"
    for path in (image, other):
        path.write_bytes(bytes(1 << 20))
    assert guard.inspect(other, view=View(_FuseMounted(image=str(image)))).mounts == ()
