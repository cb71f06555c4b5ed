"""The plugin's command-line options read from pytest's config and validated at the edge."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.db.url import session_db
from pytest_ssd.device.dut import DEFAULT_SCRATCH_SIZE, DutSpec
from pytest_ssd.documents import not_a_file
from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import fio_path
from pytest_ssd.health.profile import HealthProfile, load_profile
from pytest_ssd.plugin.shape import run_shape
from pytest_ssd.results.location import DB_FILE, DB_OPTION, INI_OPTION
from pytest_ssd.results.location import report_dir as report_dir_of
from pytest_ssd.session.options import Options
from pytest_ssd.specs.options import DatasheetOptions


def _fio_safe(option: str, given: str | None, report_dir: Path) -> None:
    """Refuse a report folder fio could not be given: every test's logs and gates live in it.

    Checked before anything is touched (before, the first fio job with a log refused
    it, after the device had been purged).  Below it every name is made safe by
    construction: the run id, artifact folders from test ids (letters, digits, ``-_.=``),
    job names, and the batches' gates, given to fio relative to its working folder.
    """
    if given is not None and given != given.strip():
        raise pytest.UsageError(f"{option}={given!r} has blanks at its ends: remove them")
    try:
        fio_path(str(report_dir), filename=False)
    except ConfigError as exc:
        raise pytest.UsageError(f"{option}: {exc}") from None


def _ssh_config(text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text).absolute()
    try:
        kind = not_a_file(path.stat().st_mode)  # ssh would wait forever on a FIFO
    except OSError as exc:
        kind = exc.strerror or "cannot be read"
    if kind is not None:
        raise pytest.UsageError(f"--ssd-ssh-config={text}: {kind}: give an ssh_config file")
    return path


def _health_profile(text: str | None) -> HealthProfile | None:
    """--ssd-health-profile's rules; a bad file is one line (exit 4)."""
    if text is None:
        return None
    try:
        return load_profile(Path(text))
    except ConfigError as exc:
        raise pytest.UsageError(f"--ssd-health-profile: {exc}") from None


def _one_per_dut(option: str, given: tuple[str, ...], duts: int) -> None:
    if len(given) > duts:
        raise pytest.UsageError(
            f"{option} given {len(given)} times for {duts} device(s): one per --dut"
        )


def _once_or_per_dut(option: str, given: tuple[str, ...], duts: int) -> None:
    if len(given) not in (0, 1, duts):
        raise pytest.UsageError(
            f"{option} given {len(given)} times for {duts} devices: give it once (every"
            " device) or once per --dut, in order"
        )


def from_config(config: pytest.Config) -> Options:
    """The options of *config*, validated (:class:`pytest.UsageError` in one line if not)."""
    duts = tuple(config.getoption("ssd_dut") or ()) or (
        DutSpec(raw="scratch", scratch_size=DEFAULT_SCRATCH_SIZE),
    )
    given = config.getoption("ssd_report_dir")
    report_dir = (
        Path(given).absolute()
        if given
        else report_dir_of(config.inipath, config.getini(INI_OPTION) or None, Path.cwd())
    )
    _fio_safe("--ssd-report-dir" if given else INI_OPTION, given, report_dir)
    try:
        db = session_db(
            config.getoption("ssd_db"),
            config.getini(DB_OPTION) or None,
            config.inipath,
            report_dir / DB_FILE,
        )
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    labels = tuple(config.getoption("ssd_label") or ())
    _one_per_dut("--dut-label", labels, len(duts))
    classes = tuple(config.getoption("ssd_class") or ())
    _one_per_dut("--dut-class", classes, len(duts))
    resume, run_id = config.getoption("ssd_resume", None), config.getoption("ssd_run_id", None)
    if resume is not None and run_id is not None:
        raise pytest.UsageError(
            "--ssd-resume and --ssd-run-id name the run twice: give one (--ssd-run-id resumes"
            " its run when it was cut short)"
        )
    builds = tuple(config.getoption("ssd_build") or ())
    _once_or_per_dut("--ssd-build", builds, len(duts))
    return Options(
        duts=duts,
        confirm=tuple(config.getoption("ssd_confirm") or ()),
        readonly=bool(config.getoption("ssd_readonly")),
        report_dir=report_dir,
        profile=config.getoption("ssd_profile"),
        purge=config.getoption("ssd_purge"),
        health_interval=float(config.getoption("ssd_health_interval")),
        health_profile=_health_profile(config.getoption("ssd_health_profile")),
        repeat=int(config.getoption("ssd_repeat")),
        cv_max=float(config.getoption("ssd_cv_max")) / 100,
        idle=tuple(config.getoption("ssd_idle") or ()),
        datasheets=DatasheetOptions(
            files=tuple(Path(p) for p in config.getoption("ssd_datasheet") or ()),
            dirs=tuple(Path(p) for p in config.getoption("ssd_datasheet_dir") or ()),
            force=bool(config.getoption("ssd_datasheet_force")),
        ),
        db=db,
        labels=labels,
        builds=builds,
        compare=tuple(config.getoption("ssd_compare") or ()),
        classes=classes,
        tune=bool(config.getoption("ssd_tune", False)),
        ssh_config=_ssh_config(config.getoption("ssd_ssh_config", None)),
        resume=resume,
        run_id=run_id,
        shape=run_shape(config, duts),
    )
