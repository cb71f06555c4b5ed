"""One change --ssd-tune makes, with what puts it back.

A change knows its original value before it is applied, and serializes to the
restore journal, so a later session can put it back after this one died (what it
accepts from the journal: :mod:`pytest_ssd.host.journal`).
Restoring a change that was never applied writes the value that is already
there: harmless, so a restore always goes through every planned change.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ssd.host.io import Io, TuneError


@dataclass(frozen=True)
class FileWrite:
    """A kernel attribute (sysfs, procfs): *target* for the run, *original* afterwards."""

    setting: str
    path: Path
    original: str
    target: str

    def apply(self, io: Io) -> None:
        self._write(io, self.target)

    def restore(self, io: Io) -> None:
        self._write(io, self.original)

    def _write(self, io: Io, value: str) -> None:
        try:
            io.write(self.path, value)
        except OSError as exc:
            raise TuneError(f"cannot write {value!r} to {self.path}: {exc.strerror}") from None

    def describe(self, back: bool = False) -> str:
        if back:
            return f"{self.path}: {self.original} again"
        return f"{self.path}: {self.original} -> {self.target}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "file",
            "setting": self.setting,
            "path": str(self.path),
            "original": self.original,
            "target": self.target,
        }


@dataclass(frozen=True)
class FeatureWrite:
    """An NVMe feature set with ``nvme set-feature``; *data* is its data buffer in hex.

    The buffer read before the change goes along both ways (APST: the controller's
    transition table), so only the feature's value changes.
    """

    setting: str
    device: str
    feature: int
    original: int
    target: int
    data: str = ""

    def apply(self, io: Io) -> None:
        self._set(io, self.target)

    def restore(self, io: Io) -> None:
        self._set(io, self.original)

    def _set(self, io: Io, value: int) -> None:
        args = ["set-feature", self.device, f"--feature-id={self.feature}", f"--value={value}"]
        payload = bytes.fromhex(self.data)
        with tempfile.TemporaryDirectory(prefix="ssd-tune-") as folder:
            if payload:
                path = Path(folder) / "feature.bin"
                path.write_bytes(payload)
                args += [f"--data-len={len(payload)}", f"--data={path}"]
            done = io.nvme(args)
        if done.returncode != 0:
            raise TuneError(
                f"nvme set-feature {self.feature:#04x}={value:#x} on {self.device} failed"
                f" (exit {done.returncode}): {done.last_error_line()}"
            )

    def describe(self, back: bool = False) -> str:
        where = f"{self.device} feature {self.feature:#04x}"
        if back:
            return f"{where}: {self.original:#x} again"
        return f"{where}: {self.original:#x} -> {self.target:#x}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "nvme-feature",
            "setting": self.setting,
            "device": self.device,
            "feature": self.feature,
            "original": self.original,
            "target": self.target,
            "data": self.data,
        }


Change = FileWrite | FeatureWrite


def change_from_dict(data: dict[str, Any]) -> Change:
    """A change as the journal keeps it (not yet checked); TuneError when the entry is not one."""
    try:
        if data["kind"] == "file":
            return FileWrite(
                str(data["setting"]),
                Path(data["path"]),
                str(data["original"]),
                str(data["target"]),
            )
        if data["kind"] == "nvme-feature":
            return FeatureWrite(
                str(data["setting"]),
                str(data["device"]),
                int(data["feature"]),
                int(data["original"]),
                int(data["target"]),
                str(data.get("data", "")),
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise TuneError(f"lacks or mangles {exc}") from None
    raise TuneError(f"kind {data.get('kind')!r} is not one --ssd-tune writes")
