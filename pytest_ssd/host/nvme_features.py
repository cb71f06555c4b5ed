"""NVMe features of the device under test: APST (0x0c) and the power state (0x02).

Read with ``nvme get-feature DEV --feature-id=N`` (nvme-cli 2.3 has no JSON form for
features): one line ``get-feature:0x0c (Autonomous Power State Transition), Current
value:0x00000001`` — a value of zero prints as ``00000000``, without ``0x`` — then, for
features with a data buffer, its hex dump (``0000: 18 f4 01 00 ... "...."``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_ssd.errors import ParseError, SsdError
from pytest_ssd.host.changes import Change, FeatureWrite
from pytest_ssd.host.io import Io
from pytest_ssd.host.settings import Reading

APST = 0x0C
POWER_MANAGEMENT = 0x02
_APSTE = 1 << 0
_PS_MASK, _WH_SHIFT = 0x1F, 5
_HEADER = re.compile(
    r"^get-feature:(?:0x)?([0-9a-f]+) \((.*)\), (\w+) value:(?:0x)?([0-9a-f]+)\s*$", re.M
)
_DUMP_LINE = re.compile(r"^([0-9a-f]{4}):((?: [0-9a-f]{2})+)", re.M)


@dataclass(frozen=True)
class Feature:
    """A feature's value (completion dword 0) and its data buffer."""

    fid: int
    name: str
    value: int
    data: bytes = b""


def parse_feature(text: str, fid: int) -> Feature:
    """``nvme get-feature`` output (no -H) for feature *fid*; ParseError if it is not that."""
    header = _HEADER.search(text)
    if header is None or int(header.group(1), 16) != fid:
        first = text.strip().splitlines()[:1] or ["no output"]
        raise ParseError(f"nvme get-feature {fid:#04x}: unexpected output {first[0]!r}")
    data = bytearray()
    for line in _DUMP_LINE.finditer(text, header.end()):
        data.extend(bytes.fromhex(line.group(2)))
    return Feature(fid, header.group(2), int(header.group(4), 16), bytes(data))


def get_feature(io: Io, device: str, fid: int) -> Feature:
    """Ask the controller; SsdError (tool missing, command refused, odd output) otherwise."""
    done = io.nvme(["get-feature", device, f"--feature-id={fid}"])
    if done.returncode != 0:
        # nvme-cli 2.3 prints nothing for Invalid Field: the controller lacks the feature
        why = done.last_error_line()
        why = "the controller does not support it" if why == "no output" else why
        raise ParseError(f"nvme get-feature {fid:#04x} failed (exit {done.returncode}): {why}")
    return parse_feature(done.stdout, fid)


@dataclass(frozen=True)
class ApstSetting:
    """Autonomous Power State Transition: on when APSTE (bit 0 of the value) is set."""

    device: str
    dut_id: str
    io: Io
    key: str = "apst"
    title: str = "NVMe APST"

    def _feature(self) -> Feature | str:
        try:
            return get_feature(self.io, self.device, APST)
        except SsdError as exc:
            return str(exc)

    def read(self) -> Reading:
        found = self._feature()
        if isinstance(found, str):
            return Reading(self.key, self.title, None, "off", found, self.dut_id)
        value = "on" if found.value & _APSTE else "off"
        source = f"nvme get-feature {self.device} --feature-id={APST}"
        return Reading(self.key, self.title, value, "off", source, self.dut_id)

    def changes(self) -> list[Change]:
        found = self._feature()
        if isinstance(found, str) or not found.value & _APSTE:
            return []
        target = found.value & ~_APSTE
        return [FeatureWrite(self.key, self.device, APST, found.value, target, found.data.hex())]


def power_state(io: Io, device: str, dut_id: str) -> Reading:
    """The device's power state (PSn, with the workload hint when one is set); recorded only."""
    title = "NVMe power state"
    try:
        found = get_feature(io, device, POWER_MANAGEMENT)
    except SsdError as exc:
        return Reading("power-state", title, None, None, str(exc), dut_id)
    hint = found.value >> _WH_SHIFT & 0x7
    value = f"PS{found.value & _PS_MASK}" + (f", workload hint {hint}" if hint else "")
    source = f"nvme get-feature {device} --feature-id={POWER_MANAGEMENT}"
    return Reading("power-state", title, value, None, source, dut_id)
