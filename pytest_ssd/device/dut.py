"""What the user named with ``--dut``: a device path, a file, or a scratch device."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import ConfigError
from pytest_ssd.machine.address import HostAddress, is_host_address, parse_address

#: size of a scratch device when ``scratch`` is given without one
DEFAULT_SCRATCH_SIZE = 2 << 30
MIN_SCRATCH_SIZE = 64 << 20
#: the largest file size the kernel takes (loff_t): a scratch device beyond it is no size
MAX_SCRATCH_SIZE = (1 << 63) - 1
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^(\d+)\s*([KMGT]?)(?:i?B)?$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'2G', '512M', '1GiB', '4096' -> bytes (binary units). ValueError when malformed."""
    match = _SIZE.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a size (examples: 512M, 2G, 1GiB)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


@dataclass(frozen=True)
class DutSpec:
    """One ``--dut`` value, parsed but not yet resolved to a device."""

    raw: str
    path: Path | None = None
    scratch_size: int | None = None
    #: the test host the device is in (``ssh://...``); None: this machine
    address: HostAddress | None = None

    @property
    def is_scratch(self) -> bool:
        return self.scratch_size is not None


def dut_spec(text: str) -> DutSpec:
    """argparse type for ``--dut``: ``scratch[:SIZE]``, a device path or a file path."""
    text = text.strip()
    if not text:
        raise argparse.ArgumentTypeError("--dut needs a device path, a file or scratch[:SIZE]")
    if text == "scratch" or text.startswith("scratch:"):
        _, _, size_text = text.partition(":")
        try:
            size = parse_size(size_text) if size_text else DEFAULT_SCRATCH_SIZE
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"--dut {text}: {exc}") from None
        if size < MIN_SCRATCH_SIZE:
            raise argparse.ArgumentTypeError(
                f"--dut {text}: a scratch device needs at least {MIN_SCRATCH_SIZE >> 20} MiB"
            )
        if size > MAX_SCRATCH_SIZE:
            raise argparse.ArgumentTypeError(
                f"--dut {text}: {size:,} bytes is beyond any file size (8 EiB at most)"
            )
        return DutSpec(raw=text, scratch_size=size)
    if is_host_address(text):
        try:
            address = parse_address(text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return DutSpec(raw=text, path=Path(address.path), address=address)
    return DutSpec(raw=text, path=Path(text))
