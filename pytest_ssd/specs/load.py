"""Reading datasheet TOML files, with one error line per bad file.

Validation stops at the first problem and raises :class:`DatasheetError`
naming the file, the line (TOML syntax) or the key path (``specs[3].metric``;
spec lines count from 0) and what is wrong.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ssd.documents import TomlTooDeep, TooLarge, loads_toml, read_text_bounded
from pytest_ssd.errors import ConfigError, DatasheetError
from pytest_ssd.fio.job import MAX_BLOCK_SIZE, MAX_IODEPTH, MAX_NUMJOBS
from pytest_ssd.health.profile import HealthProfileError, parse_profile
from pytest_ssd.specs.features import FeatureError, parse_features
from pytest_ssd.specs.model import (
    DEFAULT_TOLERANCE,
    KIND_OF,
    Datasheet,
    Drive,
    Kind,
    Metric,
    SpecLine,
)
from pytest_ssd.specs.units import UNITS, unit
from pytest_ssd.state.spec import StateSpec, parse_state
from pytest_ssd.text import name_problem
from pytest_ssd.verdict.tolerance import ToleranceError, parse_tolerances

_TOP_KEYS = ("source", "tolerance", "drive", "specs", "health", "baseline", "features")
_DRIVE_KEYS = ("name", "model", "capacity_gb", "firmware", "form_factor", "interface")
_LINE_KEYS = (
    "id",
    "metric",
    "unit",
    "pattern",
    "direction",
    "read_share",
    "block_size",
    "qd",
    "jobs",
    "state",
    "value",
    "kind",
    "tolerance",
    "note",
    "per_tb",
)
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_METRIC = re.compile(r"^(?:throughput|iops|latency-mean|latency-p(\d+(?:\.\d+)?))$")
_SIZE = re.compile(r"^(\d+)\s*(B|KiB|MiB|k|m)?$")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "k": 1 << 10, "MiB": 1 << 20, "m": 1 << 20}
_SYNTAX_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
#: integer keys and the fio limit they must stay within (see pytest_ssd.fio.job)
LIMITS = {
    "qd": (MAX_IODEPTH, "the deepest queue fio's engines take"),
    "jobs": (MAX_NUMJOBS, "the jobs one fio process runs"),
}
#: physical bounds: no drive reports more (a capacity in GB, the rest in base units)
MAX_CAPACITY_GB = 1e9  # 1 EB
MAX_BASE = {"throughput": 1e12, "iops": 1e9, "latency": 3.6e12}  # 1 TB/s, 1 G IOPS, an hour
#: the largest datasheet read: the shipped ones hold a few KiB (a line is about 300 bytes)
MAX_DATASHEET_BYTES = 1 << 20


class _Problem(Exception):
    """A problem at a key path; :func:`load_datasheet` adds the file."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(problem)
        self.where = where
        self.problem = problem


def load_datasheet(path: str | Path) -> Datasheet:
    """Read and check the datasheet at *path*; :class:`DatasheetError` on the first problem."""
    name = str(path)
    try:
        data = loads_toml(read_text_bounded(Path(path), MAX_DATASHEET_BYTES))
    except OSError as exc:
        raise DatasheetError(name, "file", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise DatasheetError(name, "file", f"not UTF-8 text: {exc.reason}") from None
    except TooLarge as exc:
        raise DatasheetError(name, "file", f"{exc}: not a datasheet") from None
    except TomlTooDeep as exc:
        raise DatasheetError(name, "file", f"not a datasheet: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(name, str(exc)) from None
    try:
        return _datasheet(name, data)
    except _Problem as problem:
        raise DatasheetError(name, problem.where, problem.problem) from None


@dataclass(frozen=True)
class Loaded:
    """Datasheets that loaded and, for each file that did not, its first error."""

    datasheets: tuple[Datasheet, ...]
    errors: tuple[DatasheetError, ...]


def load_datasheets(paths: Iterable[str | Path]) -> Loaded:
    """Load every file in *paths*, collecting the first error of each bad one."""
    good: list[Datasheet] = []
    bad: list[DatasheetError] = []
    for path in paths:
        try:
            good.append(load_datasheet(path))
        except DatasheetError as error:
            bad.append(error)
    return Loaded(tuple(good), tuple(bad))


def datasheet_files(directory: str | Path) -> list[Path]:
    """The ``*.toml`` files in *directory*, sorted by name."""
    return sorted(Path(directory).glob("*.toml"))


def _syntax_error(name: str, message: str) -> DatasheetError:
    found = _SYNTAX_AT.search(message)
    if not found:
        return DatasheetError(name, "file", f"invalid TOML: {message}")
    text = message[: found.start()]
    return DatasheetError(name, f"line {found[1]}", f"invalid TOML: {text} (column {found[2]})")


def _datasheet(name: str, data: Mapping[str, Any]) -> Datasheet:
    _known_keys(data, _TOP_KEYS, "")
    tolerance = _tolerance(data, "", DEFAULT_TOLERANCE)
    drive = _drive(_table(data, "drive", ""))
    lines = data.get("specs")
    if lines is None and "features" in data:  # a sheet of declared features only
        lines = []
    elif lines is None:
        raise _Problem("specs", "missing: give at least one [[specs]] line (or [features])")
    if not isinstance(lines, list) or (not lines and "features" not in data):
        raise _Problem("specs", "must be a non-empty array of tables ([[specs]])")
    specs: list[SpecLine] = []
    for index, raw in enumerate(lines):
        at = f"specs[{index}]"
        if not isinstance(raw, dict):
            raise _Problem(at, f"must be a table, not {_type(raw)}")
        line = _line(raw, at, tolerance)
        for other, earlier in enumerate(specs):
            if earlier.id == line.id:
                raise _Problem(f"{at}.id", f"{line.id!r} repeats specs[{other}].id")
        specs.append(line)
    source = _opt_str(data, "source", "") or ""
    try:
        health = parse_profile(data["health"], name) if "health" in data else None
        baseline = parse_tolerances(data["baseline"], name) if "baseline" in data else None
        features = parse_features(data["features"], name) if "features" in data else None
    except (HealthProfileError, ToleranceError, FeatureError) as exc:
        raise _Problem(exc.where, exc.problem) from None
    return Datasheet(
        path=name,
        drive=drive,
        specs=tuple(specs),
        source=source,
        health=health,
        baseline=baseline,
        features=features,
    )


def _drive(raw: Mapping[str, Any]) -> Drive:
    at = "drive"
    _known_keys(raw, _DRIVE_KEYS, at)
    return Drive(
        name=_name(raw, "name", at),
        models=_globs(raw, "model", at, required=True),
        capacities_gb=_capacities(raw, at),
        firmware=_globs(raw, "firmware", at, required=False),
        form_factor=_name(raw, "form_factor", at) if "form_factor" in raw else "",
        interface=_name(raw, "interface", at) if "interface" in raw else "",
    )


def _capacities(raw: Mapping[str, Any], at: str) -> tuple[float, ...]:
    """``capacity_gb``: a sold capacity, or an array of them (a product line)."""
    value = _get(raw, "capacity_gb", at)
    many = isinstance(value, list)
    items = value if many else [value]
    if many and not items:
        raise _Problem(f"{at}.capacity_gb", "must be a number or a non-empty array of numbers")
    found = []
    for index, item in enumerate(items):
        where = f"{at}.capacity_gb[{index}]" if many else f"{at}.capacity_gb"
        capacity = _number({"capacity_gb": item}, "capacity_gb", at, where)
        if capacity <= 0:
            raise _Problem(where, f"must be positive, not {capacity:g}")
        found.append(_within(capacity, MAX_CAPACITY_GB, where, "a capacity (GB)"))
    return tuple(found)


def _per_tb(raw: Mapping[str, Any], at: str, metric: Metric) -> bool:
    """``per_tb = true``: the figure is per TB of capacity (throughput and IOPS only)."""
    value = raw.get("per_tb", False)
    if not isinstance(value, bool):
        raise _Problem(f"{at}.per_tb", f"must be true or false, not {_type(value)} {value!r}")
    if value and metric.dimension == "latency":
        raise _Problem(f"{at}.per_tb", f"a {metric} line is not per TB: latency does not scale")
    return value


def _line(raw: Mapping[str, Any], at: str, default_tolerance: float) -> SpecLine:
    _known_keys(raw, _LINE_KEYS, at)
    line_id = _name(raw, "id", at)
    if not _ID.match(line_id):
        raise _Problem(f"{at}.id", f"{line_id!r}: use lower-case letters, digits, '-' and '_'")
    metric = _metric(_str(raw, "metric", at), f"{at}.metric")
    unit_name = _unit(_str(raw, "unit", at), metric, f"{at}.unit")
    pattern = _choice(raw, "pattern", at, ("seq", "rnd"))
    read_pct = _read_pct(raw, at)
    if metric.dimension == "latency" and read_pct not in (0, 100):
        raise _Problem(f"{at}.direction", "a latency line needs direction read or write")
    block_size = _block_size(raw, at)
    qd = _positive_int(raw, "qd", at)
    jobs = _positive_int(raw, "jobs", at, default=1)
    state = _state(_str(raw, "state", at), f"{at}.state")
    value = _number(raw, "value", at)
    if value <= 0:
        raise _Problem(f"{at}.value", f"must be positive, not {value:g}")
    limit = MAX_BASE[metric.dimension] / float(UNITS[unit_name].factor)
    _within(value, limit, f"{at}.value", f"{metric} in {unit_name}")
    kind = _kind(raw, at, metric)
    if kind == "bound" and "tolerance" in raw:
        raise _Problem(f"{at}.tolerance", "a bound (measured ≤ spec) takes no tolerance")
    return SpecLine(
        id=line_id,
        metric=metric,
        unit=unit_name,
        pattern=pattern,
        read_pct=read_pct,
        block_size=block_size,
        qd=qd,
        jobs=jobs,
        state=state,
        value=value,
        kind=kind,
        tolerance=_tolerance(raw, at, default_tolerance),
        note=_opt_str(raw, "note", at) or "",
        per_tb=_per_tb(raw, at, metric),
    )


def _metric(text: str, where: str) -> Metric:
    found = _METRIC.match(text)
    if not found:
        raise _Problem(
            where, f"unknown metric {text!r}: use throughput, iops, latency-mean or latency-pNN"
        )
    if text.startswith("latency"):
        if found[1] is None:
            return Metric("latency")
        percentile = float(found[1])
        if not 0 < percentile < 100:
            raise _Problem(where, f"percentile {found[1]} is not within (0, 100)")
        return Metric("latency", percentile)
    return Metric("throughput" if text == "throughput" else "iops")


def _unit(text: str, metric: Metric, where: str) -> str:
    fitting = ", ".join(u.name for u in UNITS.values() if u.dimension == metric.dimension)
    try:
        found = unit(text)
    except KeyError:
        raise _Problem(where, f"unknown unit {text!r}: {metric} takes {fitting}") from None
    if found.dimension != metric.dimension:
        raise _Problem(where, f"{text!r} measures {found.dimension}; {metric} takes {fitting}")
    return found.name


def _read_pct(raw: Mapping[str, Any], at: str) -> int:
    direction = _choice(raw, "direction", at, ("read", "write", "mixed"))
    share = raw.get("read_share")
    if direction != "mixed":
        if share is not None:
            raise _Problem(f"{at}.read_share", f"contradicts direction {direction!r}")
        return 100 if direction == "read" else 0
    if share is None:
        raise _Problem(f"{at}.read_share", "missing: direction 'mixed' needs a read share in %")
    if not _is_int(share) or not 0 < share < 100:
        raise _Problem(f"{at}.read_share", f"must be an integer 1..99 (%), not {share!r}")
    return int(share)


def _block_size(raw: Mapping[str, Any], at: str) -> int:
    where = f"{at}.block_size"
    value = _get(raw, "block_size", at)
    if _is_int(value):
        size = int(value)
    elif isinstance(value, str) and (found := _SIZE.match(value.strip())):
        size = int(found[1]) * _SIZE_UNITS[found[2]]
    else:
        raise _Problem(where, f"{value!r}: write bytes or a size such as '4KiB', '128KiB', '1MiB'")
    if size <= 0 or size % 512 or size > MAX_BLOCK_SIZE:
        raise _Problem(
            where,
            f"{value!r} is not a positive multiple of 512 bytes up to {MAX_BLOCK_SIZE >> 20} MiB",
        )
    return size


def _state(text: str, where: str) -> StateSpec:
    try:
        return parse_state(text)
    except ConfigError as exc:
        raise _Problem(where, str(exc)) from None


def _kind(raw: Mapping[str, Any], at: str, metric: Metric) -> Kind:
    kind: Kind = (
        "ceiling" if _choice(raw, "kind", at, ("ceiling", "bound")) == "ceiling" else "bound"
    )
    expected = KIND_OF[metric.dimension]
    if kind != expected:
        why = "measured ≤ spec" if expected == "bound" else "measured ≥ tolerance × spec"
        raise _Problem(f"{at}.kind", f"a {metric} line is a {expected} ({why}), not a {kind}")
    return kind


def _tolerance(raw: Mapping[str, Any], at: str, default: float) -> float:
    if "tolerance" not in raw:
        return default
    value = _number(raw, "tolerance", at)
    if not 0 < value <= 1:
        raise _Problem(_key(at, "tolerance"), f"{value:g} is not within (0, 1]")
    return value


# --- typed access -------------------------------------------------------------


def _key(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _type(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names |= {list: "an array", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _known_keys(raw: Mapping[str, Any], known: tuple[str, ...], at: str) -> None:
    for key in raw:
        if key not in known:
            raise _Problem(_key(at, key), f"unknown key: use {', '.join(known)}")


def _get(raw: Mapping[str, Any], key: str, at: str) -> Any:
    if key not in raw:
        raise _Problem(_key(at, key), "missing")
    return raw[key]


def _table(raw: Mapping[str, Any], key: str, at: str) -> Mapping[str, Any]:
    value = _get(raw, key, at)
    if not isinstance(value, dict):
        raise _Problem(_key(at, key), f"must be a table, not {_type(value)}")
    return value


def _str(raw: Mapping[str, Any], key: str, at: str) -> str:
    value = _get(raw, key, at)
    if not isinstance(value, str) or not value.strip():
        raise _Problem(_key(at, key), f"must be a non-empty string, not {_type(value)}")
    return value.strip()


def _name(raw: Mapping[str, Any], key: str, at: str) -> str:
    """A name the report, the database and the terminal show: one printable line."""
    value = _str(raw, key, at)
    problem = name_problem(value)
    if problem is not None:
        raise _Problem(_key(at, key), f"{value!r} {problem}")
    return value


def _opt_str(raw: Mapping[str, Any], key: str, at: str) -> str | None:
    return _str(raw, key, at) if key in raw else None


def _number(raw: Mapping[str, Any], key: str, at: str, where: str | None = None) -> float:
    value = _get(raw, key, at)
    where = where or _key(at, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Problem(where, f"must be a number, not {_type(value)} {value!r}")
    if not math.isfinite(value):
        raise _Problem(where, f"must be a finite number, not {value!r}")
    return float(value)


def _within(value: float, limit: float, where: str, what: str) -> float:
    if value > limit:
        raise _Problem(where, f"{value:g} is beyond any drive: {what} is at most {limit:g}")
    return value


def _positive_int(raw: Mapping[str, Any], key: str, at: str, default: int | None = None) -> int:
    if default is not None and key not in raw:
        return default
    value = _get(raw, key, at)
    if not _is_int(value):
        raise _Problem(_key(at, key), f"must be an integer, not {_type(value)} {value!r}")
    if value < 1:
        raise _Problem(_key(at, key), f"must be at least 1, not {value}")
    limit = LIMITS.get(key)
    if limit is not None and value > limit[0]:
        raise _Problem(_key(at, key), f"{value} is beyond {limit[1]} ({limit[0]:,} at most)")
    return int(value)


def _choice(raw: Mapping[str, Any], key: str, at: str, choices: tuple[str, ...]) -> Any:
    value = _str(raw, key, at)
    if value not in choices:
        raise _Problem(_key(at, key), f"unknown {key} {value!r}: use {' or '.join(choices)}")
    return value


def _globs(raw: Mapping[str, Any], key: str, at: str, *, required: bool) -> tuple[str, ...]:
    if key not in raw and not required:
        return ()
    value = _get(raw, key, at)
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise _Problem(_key(at, key), f"must be a string or an array of strings, not {value!r}")
    return tuple(i.strip() for i in items)
