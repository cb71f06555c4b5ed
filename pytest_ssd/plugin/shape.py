"""What makes a run the run it is: its tests and the options that shape what it measures.

Recorded with the run (its environment's ``shape``) and compared when a session
resumes it (``--ssd-resume``): a resumed run continues exactly the run it names,
or is refused in one line naming what differs (:func:`pytest_ssd.session.resume.differences`).
Values are normalized, not the strings typed: paths absolute, expressions without
extra blanks, numbers as numbers, the profile as each device gets it (``quick`` on a
scratch device is the same with or without ``--ssd-profile=quick``).

Not part of it (they may differ): ``-n``, ``--ssd-no-batch``, ``--ssd-compare``,
``--ssd-confirm``, the report folder, the database, ``--ssd-ssh-config``, output
options (``-v``, ``--junitxml`` ...).  The devices are checked on their own
(:meth:`pytest_ssd.session.resume.Resumed.check_devices`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.dut import DEFAULT_SCRATCH_SIZE, DutSpec
from pytest_ssd.state.profile import IDLE_NAMES, profile_for

#: pytest's selection: what decides which tests are the run's
SELECTION = (
    ("-k", "keyword"),
    ("-m", "markexpr"),
    ("--deselect", "deselect"),
    ("--ignore", "ignore"),
    ("--ignore-glob", "ignore_glob"),
)
#: option -> its dest, for the options compared as given (normalized by their converters)
MEASURED = (
    ("--ssd-repeat", "ssd_repeat"),
    ("--ssd-cv-max", "ssd_cv_max"),
    ("--ssd-purge", "ssd_purge"),
    ("--ssd-readonly", "ssd_readonly"),
    ("--ssd-tune", "ssd_tune"),
    ("--ssd-health-interval", "ssd_health_interval"),
    ("--datasheet-force", "ssd_datasheet_force"),
    ("--ssd-baseline", "ssd_baseline"),
    ("--ssd-baseline-tolerance", "ssd_baseline_tolerance"),
    ("--dut-class", "ssd_class"),
    ("--dut-label", "ssd_label"),
    ("--ssd-build", "ssd_build"),
)
#: options naming files or folders: compared as absolute paths
PATHS = (
    ("--ssd-health-profile", "ssd_health_profile"),
    ("--datasheet", "ssd_datasheet"),
    ("--datasheet-dir", "ssd_datasheet_dir"),
)
_FIELDS = {field: name for name, field in IDLE_NAMES.items()}


def run_shape(config: pytest.Config, duts: Iterable[DutSpec]) -> tuple[tuple[str, str], ...]:
    """(option, normalized value) of everything that makes the run what it is."""
    return _shape(config.option, config.args, config.invocation_params.dir, duts)


def argv_shape(config: pytest.Config, argv: list[str]) -> dict[str, str] | None:
    """The shape of a run recorded before runs kept theirs: its command line (``argv``, as
    :mod:`pytest_ssd.results.runinfo` records it) read by this session's options, its
    relative paths from this session's folder (None: not a command line they read)."""
    # runinfo's argv: ["python", "-m", "pytest", *args] or [program, *args]
    args = argv[3:] if argv[:3] == ["python", "-m", "pytest"] else argv[1:]
    try:
        option = config._parser.parse_known_args(args)
    except pytest.UsageError:  # a value this pytest-ssd refuses: not comparable
        return None
    duts = option.ssd_dut or (DutSpec(raw="scratch", scratch_size=DEFAULT_SCRATCH_SIZE),)
    tests = option.file_or_dir or config.args  # none given: this session's testpaths
    return dict(_shape(option, tests, config.invocation_params.dir, duts))


def _shape(
    option: Any, args: Iterable[str], here: Path, duts: Iterable[DutSpec]
) -> tuple[tuple[str, str], ...]:
    tests = sorted(_node(here, arg) for arg in args)
    shape = [("tests", " ".join(tests))]
    shape += [(name, _text(getattr(option, dest, None))) for name, dest in SELECTION[:2]]
    shape += [(name, _listed(getattr(option, dest, None))) for name, dest in SELECTION[2:]]
    idle = tuple(getattr(option, "ssd_idle", None) or ())
    profiles = [profile_for(option.ssd_profile, spec.is_scratch, idle).name for spec in duts]
    shape.append(("--ssd-profile", ", ".join(dict.fromkeys(profiles))))
    shape.append(
        ("--ssd-idle", " ".join(f"{_FIELDS[f]}={s:g}" for f, s in sorted(dict(idle).items())))
    )
    shape += [(name, _value(getattr(option, dest, None))) for name, dest in MEASURED]
    shape += [(name, _paths(here, getattr(option, dest, None))) for name, dest in PATHS]
    return tuple(shape)


def _node(here: Path, arg: str) -> str:
    """A test path or node id (``path::name``) with its path absolute."""
    path, sep, rest = arg.partition("::")
    return f"{(here / path).resolve()}{sep}{rest}"


def _text(value: object) -> str:
    return " ".join(str(value or "").split())


def _listed(values: object) -> str:
    return " ".join(sorted(str(v) for v in values or ())) if isinstance(values, list) else ""


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):  # NAME=VALUE
        return "=".join(_value(v) for v in value)
    if isinstance(value, list):  # in the order given: one per --dut
        return ", ".join(_value(v) for v in value)
    return "" if value is None else str(value)


def _paths(here: Path, value: object) -> str:
    given = value if isinstance(value, list) else [] if value is None else [value]
    return ", ".join(str((here / str(p)).resolve()) for p in given)
