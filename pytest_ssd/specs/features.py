"""A datasheet's ``[features]`` table: what the drive declares of itself (NVMe identify data).

Every key is optional; a key the sheet leaves out is not checked::

    [features]
    lba_formats = [512, 4096, "4096+8"]   # data bytes, "+N": with N metadata bytes
    namespaces = 256                       # id-ctrl NN
    volatile_write_cache = true            # id-ctrl VWC bit 0
    format = true                          # id-ctrl OACS bit 1: Format NVM
    format_crypto_erase = false            # id-ctrl FNA bit 2
    format_all_namespaces = false          # id-ctrl FNA bit 0
    sanitize = ["crypto-erase", "block-erase", "overwrite"]   # id-ctrl SANICAP ([] for none)
    firmware_slots = 1                     # id-ctrl FRMW bits 3:1
    firmware_slot1_read_only = true        # id-ctrl FRMW bit 0
    power_states_w = [25.0]                # id-ctrl PSD MP of each power state, W
    warning_temperature_c = 70             # id-ctrl WCTEMP
    critical_temperature_c = 100           # id-ctrl CCTEMP
    endurance_tbw = 600                    # or endurance_dwpd = 1 with warranty_years = 5

The drive's capacity is the ``[drive]`` table's ``capacity_gb``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pytest_ssd.errors import ConfigError

#: SANICAP bits 0-2, as the sheet names them
SANITIZE = ("crypto-erase", "block-erase", "overwrite")
_FORMAT = re.compile(r"^(\d+)(?:\+(\d+))?$")
_BOOLS = (
    "volatile_write_cache",
    "format",
    "format_crypto_erase",
    "format_all_namespaces",
    "firmware_slot1_read_only",
)
_NUMBERS = ("warning_temperature_c", "critical_temperature_c", "endurance_tbw", "endurance_dwpd")
_KEYS = (
    "lba_formats",
    "namespaces",
    *_BOOLS,
    "sanitize",
    "firmware_slots",
    "power_states_w",
    *_NUMBERS,
    "warranty_years",
)
#: the most a key may say: NN is 32 bits, FRMW counts 7 slots, NPSS 32 states
_LIMITS = {"namespaces": 2**32 - 1, "firmware_slots": 7}
MAX_POWER_STATES = 32


class FeatureError(ConfigError):
    """A bad ``[features]`` table: the file, the key and what."""

    def __init__(self, origin: str, where: str, problem: str) -> None:
        super().__init__(f"{origin}: {where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Features:
    """What a datasheet states the drive declares; None: not stated (not checked)."""

    #: (data bytes, metadata bytes) of each LBA format the drive must offer
    lba_formats: tuple[tuple[int, int], ...] | None = None
    namespaces: int | None = None
    volatile_write_cache: bool | None = None
    format: bool | None = None
    format_crypto_erase: bool | None = None
    format_all_namespaces: bool | None = None
    sanitize: tuple[str, ...] | None = None
    firmware_slots: int | None = None
    firmware_slot1_read_only: bool | None = None
    power_states_w: tuple[float, ...] | None = None
    warning_temperature_c: float | None = None
    critical_temperature_c: float | None = None
    endurance_tbw: float | None = None
    endurance_dwpd: float | None = None
    warranty_years: float | None = None

    def endurance_bytes(self, capacity_bytes: float) -> float | None:
        """The rated bytes written: TBW, or DWPD x capacity x 365 x warranty years."""
        if self.endurance_tbw is not None:
            return self.endurance_tbw * 1e12
        if self.endurance_dwpd is not None and self.warranty_years is not None:
            return self.endurance_dwpd * capacity_bytes * 365 * self.warranty_years
        return None

    def endurance_text(self) -> str:
        """'600 TBW' or '1 DWPD over 5 years'."""
        if self.endurance_tbw is not None:
            return f"{self.endurance_tbw:g} TBW"
        return f"{self.endurance_dwpd:g} DWPD over {self.warranty_years:g} years"


def format_text(data_size: int, metadata_size: int) -> str:
    """An LBA format as the sheet writes it: '4096' or '4096+8'."""
    return f"{data_size}+{metadata_size}" if metadata_size else f"{data_size}"


def parse_features(raw: object, origin: str) -> Features:
    """The ``[features]`` table *raw* of the datasheet *origin*; :class:`FeatureError` else."""
    if not isinstance(raw, dict):
        raise FeatureError(origin, "features", "must be a table ([features])")
    for key in raw:
        if key not in _KEYS:
            raise FeatureError(origin, f"features.{key}", f"unknown key: use {', '.join(_KEYS)}")
    found: dict[str, Any] = {}
    for key, value in raw.items():
        where = f"features.{key}"
        problem, parsed = _parse(key, value)
        if problem:
            raise FeatureError(origin, where, problem)
        found[key] = parsed
    if ("endurance_dwpd" in found) != ("warranty_years" in found):
        raise FeatureError(
            origin, "features.endurance_dwpd", "give endurance_dwpd with warranty_years"
        )
    if "endurance_dwpd" in found and "endurance_tbw" in found:
        raise FeatureError(
            origin, "features.endurance_tbw", "give endurance_tbw or endurance_dwpd, not both"
        )
    return Features(**found)


def _parse(key: str, value: object) -> tuple[str, Any]:
    """(why *value* is no value of *key*, "" when it is; the parsed value)."""
    if key in _BOOLS:
        ok = isinstance(value, bool)
        return ("" if ok else f"must be true or false, not {value!r}"), value
    if key in ("namespaces", "firmware_slots"):
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or not 0 <= value <= _LIMITS[key]:  # type: ignore[operator]
            return f"must be an integer 0..{_LIMITS[key]:,}, not {value!r}", None
        return "", value
    if key == "sanitize":
        if not isinstance(value, list) or any(v not in SANITIZE for v in value):
            return f"must be a list of {', '.join(SANITIZE)} ([] for none), not {value!r}", None
        return "", tuple(sorted(set(value), key=SANITIZE.index))
    if key == "lba_formats":
        return _lba_formats(value)
    if key == "power_states_w":
        powers = value if isinstance(value, list) else []
        if not 0 < len(powers) <= MAX_POWER_STATES or not all(_positive(v) for v in powers):
            return f"must be a list of 1..{MAX_POWER_STATES} powers in W, not {value!r}", None
        return "", tuple(float(v) for v in powers)
    if key.endswith("_c"):
        ok = _number(value) and -273.15 < value < 1000  # type: ignore[operator]
        return ("" if ok else f"must be a temperature in °C, not {value!r}"), value
    ok = _positive(value)  # endurance and warranty
    return ("" if ok else f"must be a positive number, not {value!r}"), value


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: object) -> bool:
    return _number(value) and value > 0  # type: ignore[operator]


def _lba_formats(value: object) -> tuple[str, Any]:
    wrong = f"must be a non-empty list of sizes such as 512, 4096 or '4096+8', not {value!r}"
    if not isinstance(value, list) or not value:
        return wrong, None
    formats = []
    for item in value:
        text = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
        found = _FORMAT.match(text) if isinstance(text, str) else None
        if found is None:
            return wrong, None
        size = int(found[1])
        if size < 512 or size & (size - 1):
            return f"{item!r}: a data size is a power of two of at least 512 bytes", None
        formats.append((size, int(found[2] or 0)))
    return "", tuple(dict.fromkeys(formats))
