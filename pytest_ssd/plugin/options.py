"""The plugin's command-line options: declared (``pytest_addoption``, in the groups
``pytest --help`` shows), converted and validated at the edge, read from pytest's config."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_ssd.db.url import session_db
from pytest_ssd.device.drive_class import CLASS_NAMES, dut_class
from pytest_ssd.device.dut import DEFAULT_SCRATCH_SIZE, DutSpec, dut_spec
from pytest_ssd.documents import not_a_file
from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import fio_path
from pytest_ssd.health.profile import HealthProfile, load_profile
from pytest_ssd.methods.powerloss import DEST as POWER_DEST
from pytest_ssd.methods.powerloss import OPTION as POWER_OPTION
from pytest_ssd.methods.powerloss import command_option
from pytest_ssd.plugin import against
from pytest_ssd.plugin.shape import run_shape
from pytest_ssd.purge import PurgeMethod
from pytest_ssd.results import junit
from pytest_ssd.results.location import DB_FILE, DB_OPTION, INI_OPTION
from pytest_ssd.results.location import report_dir as report_dir_of
from pytest_ssd.session.choices import Options
from pytest_ssd.session.resume import resume_option, run_id_option
from pytest_ssd.specs.flags import DatasheetOptions
from pytest_ssd.state.profile import PROFILE_NAMES, idle_option
from pytest_ssd.text import name_problem


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_OPTION,
        "pytest-ssd's report folder, relative to this file (default: reports);"
        " pytest-ssd (the command) finds the database the same way",
    )
    parser.addini(
        DB_OPTION,
        "pytest-ssd's results database: a file (relative to this file), sqlite:///FILE or"
        " postgresql://USER@HOST/DATABASE (default: results.sqlite in the report folder)",
    )
    parser.addini(junit.INI_LAYOUT, junit.INI_HELP, default=junit.LAYOUTS[0])
    for name, title, add in OPTION_GROUPS:
        add(parser.getgroup(name, title))


def _device_options(group: pytest.OptionGroup) -> None:
    """Device and safety: what is measured and what may be written."""
    group.addoption(
        "--dut",
        dest="ssd_dut",
        action="append",
        type=dut_spec,
        metavar="DEVICE",
        help="device under test: a block device (/dev/nvme0n1), a file, a test host's device"
        " (ssh://[USER@]HOST[:PORT]/dev/nvme0n1) or scratch[:SIZE] (default: scratch:2G, a loop"
        " device on a sparse file: its numbers describe no SSD); may repeat",
    )
    group.addoption(
        "--ssd-confirm",
        dest="ssd_confirm",
        action="append",
        metavar="SERIAL",
        help="allow writes to the device with this serial (or path, for devices without one);"
        " may repeat",
    )
    group.addoption(
        "--ssd-readonly",
        dest="ssd_readonly",
        action="store_true",
        help="never write: run read tests with fio --readonly and skip the rest",
    )
    group.addoption(
        "--dut-class",
        dest="ssd_class",
        action="append",
        type=dut_class,
        metavar="{" + ",".join(CLASS_NAMES) + "}",
        help="the drive's class, which decides the suites that apply (one per --dut, in order;"
        " default: guessed from model and capacity, shown in the report)",
    )
    group.addoption(
        "--ssd-purge",
        dest="ssd_purge",
        default=None,
        type=_purge_method,
        metavar="NAME",
        help="purge with this method instead of the strongest the device supports: "
        + ", ".join(m.value for m in PurgeMethod)
        + " (or one a plugin adds)",
    )
    group.addoption(
        POWER_OPTION,
        dest=POWER_DEST,
        default=None,
        type=_power_cycle,
        metavar="CMD",
        help="cut and restore the drive's power with this command (run here, the device in"
        " SSD_DUT_PATH, SSD_DUT_LABEL, SSD_DUT_SERIAL, SSD_DUT_HOST): the power-loss tests"
        " need it or a plugin's pytest_ssd_power_cycle, else they are skipped",
    )


def _method_options(group: pytest.OptionGroup) -> None:
    """Method: how it is measured."""
    group.addoption(
        "--ssd-profile",
        dest="ssd_profile",
        default=None,
        type=_profile,
        metavar="{" + ",".join(PROFILE_NAMES) + "}",
        help="full: the method verbatim; quick: the same steps scaled down (durations / 300,"
        " states on the first 16 GiB). Default: quick on scratch devices, full on real ones",
    )
    group.addoption(
        "--ssd-idle",
        dest="ssd_idle",
        action="append",
        type=idle_option,
        metavar="NAME=SECONDS",
        help="set one of the method's idle periods (full-profile seconds; quick divides them):"
        " after-purge (900), between-steps (300), fill-gap (300), between-tests (60); may repeat",
    )
    group.addoption(
        "--ssd-repeat",
        dest="ssd_repeat",
        default=1,
        type=_repeat,
        metavar="N",
        help="run every measurement N times (reads ramp + measure each time; writes"
        " trim, precondition, cool down, ramp, measure) and report mean, sd, CV, min, max and"
        " the trimmed mean",
    )
    group.addoption(
        "--ssd-cv-max",
        dest="ssd_cv_max",
        default=5.0,
        type=_percent,
        metavar="PERCENT",
        help="flag a repeated measurement unstable above this coefficient of variation (5)",
    )
    group.addoption(
        "--ssd-health-interval",
        dest="ssd_health_interval",
        default=1.0,
        type=_seconds,
        metavar="SECONDS",
        help="read the device's temperature and health every SECONDS while fio runs"
        " (nvme smart-log, hwmon or smartctl; 0: never; default 1)",
    )
    group.addoption(
        "--ssd-health-profile",
        dest="ssd_health_profile",
        default=None,
        metavar="FILE",
        help="health rules (a TOML [health] table) checked before and after each test and"
        " state transition (default: the datasheet's [health], else pytest-ssd's default)",
    )
    group.addoption(
        "--ssd-no-batch",
        dest="ssd_no_batch",
        action="store_true",
        help="run every point of a sweep in a fio process of its own (default: consecutive"
        " points share one, each job released by its test)",
    )
    group.addoption(
        "--ssd-tune",
        dest="ssd_tune",
        action="store_true",
        help="set the host for measuring during the session (governor performance, boost off,"
        " THP never, ASLR 0, scheduler none, NVMe APST off) and restore them afterwards;"
        " also on test hosts",
    )
    group.addoption(
        "--datasheet",
        dest="ssd_datasheet",
        action="append",
        metavar="FILE",
        help="check measurements against this TOML datasheet (one for all devices, or one per"
        " --dut in order); the drive it names must match unless --datasheet-force",
    )
    group.addoption(
        "--datasheet-dir",
        dest="ssd_datasheet_dir",
        action="append",
        metavar="DIR",
        help="look for a matching datasheet here (may repeat; the shipped datasheets/ last)",
    )
    group.addoption(
        "--datasheet-force",
        dest="ssd_datasheet_force",
        action="store_true",
        help="use --datasheet files even when their drive does not match the device",
    )


def _output_options(group: pytest.OptionGroup) -> None:
    """Output: where results go."""
    group.addoption(
        "--ssd-report-dir",
        dest="ssd_report_dir",
        default=None,
        metavar="DIR",
        help="where run folders (results.json, report.html, artifacts) go (default: the ini"
        " option ssd_report_dir, else reports/ beside pytest's configuration file)",
    )
    group.addoption(
        "--ssd-db",
        dest="ssd_db",
        default=None,
        metavar="URL",
        help="the results database every run is added to: a file, sqlite:///FILE or"
        " postgresql://USER@HOST/DATABASE (a lab's server; the run keeps a spool in its folder)"
        " (default: $PYTEST_SSD_DB, the ini option ssd_db, else <report dir>/results.sqlite)",
    )
    group.addoption(
        "--ssd-resume",
        dest="ssd_resume",
        default=None,
        type=resume_option,
        metavar="RUN|last",
        help="continue run RUN (or the last run) that was cut short: in its folder, under its"
        " id; the tests it finished are kept as recorded, the others run (docs/resume.md)",
    )
    group.addoption(
        "--ssd-run-id",
        dest="ssd_run_id",
        default=None,
        type=run_id_option,
        metavar="ID",
        help="the run's id: a new run under ID when the database has none, that run resumed"
        " when it was cut short, refused when it finished (a CI job's retry; docs/resume.md)",
    )


def _comparison_options(group: pytest.OptionGroup) -> None:
    """Comparison: drives side by side."""
    names = (
        (
            "--dut-label",
            "ssd_label",
            "NAME",
            "name the device's results in the database and on graphs (one per --dut, in order;"
            " default: model, capacity and firmware)",
        ),
        (
            "--ssd-build",
            "ssd_build",
            "TEXT",
            "the build under test (a firmware build's name): once for every device, or once"
            " per --dut in order (default: the device's firmware revision, else none: 'unknown"
            " build'); history's x axis, the baseline's verdicts",
        ),
        (
            "--ssd-compare",
            "ssd_compare",
            "LABEL|RUN-ID|all",
            "draw earlier drives from the database on every comparison graph: a label (its"
            " newest run), a run id (all its devices), or all; may repeat",
        ),
    )
    for option, dest, metavar, text in names:  # names people give: one check for them all
        group.addoption(
            option, dest=dest, action="append", type=_label(option), metavar=metavar, help=text
        )
    against.add_options(group)


def _hosts_options(group: pytest.OptionGroup) -> None:
    """Test hosts: --dut=ssh://...."""
    group.addoption(
        "--ssd-ssh-config",
        dest="ssd_ssh_config",
        default=None,
        metavar="FILE",
        help="the ssh_config for --dut=ssh://... test hosts (default: ~/.ssh/config)",
    )


#: pytest --help shows the options in these groups, in this order
OPTION_GROUPS: tuple[tuple[str, str, Callable[[pytest.OptionGroup], None]], ...] = (
    ("ssd-device", "pytest-ssd: device and safety", _device_options),
    ("ssd-method", "pytest-ssd: method", _method_options),
    ("ssd-output", "pytest-ssd: output", _output_options),
    ("ssd-comparison", "pytest-ssd: comparison", _comparison_options),
    ("ssd-hosts", "pytest-ssd: test hosts", _hosts_options),
)


def _profile(text: str) -> str:
    if text not in PROFILE_NAMES:
        raise argparse.ArgumentTypeError(f"--ssd-profile must be one of {', '.join(PROFILE_NAMES)}")
    return text


#: --ssd-repeat's ceiling: seed 004 repeats 3 to 10 times; 100 is already days on a real drive
MAX_REPEAT = 100
#: --ssd-health-interval's ceiling: an hour between temperature readings
MAX_HEALTH_INTERVAL_S = 3600.0


def _repeat(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPEAT:
        raise argparse.ArgumentTypeError(
            f"--ssd-repeat needs a whole number from 1 to {MAX_REPEAT}, not {text!r}"
        )
    return int(text)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage in (0, 100]")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_HEALTH_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds from 0 to {MAX_HEALTH_INTERVAL_S:g}"
        )
    return value


def _label(option: str) -> Callable[[str], str]:
    """A converter refusing a label that is blank, over 200 characters or holds controls."""

    def convert(text: str) -> str:
        problem = name_problem(text)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{option}={text!r} {problem}")
        return text

    return convert


def _purge_method(text: str) -> str:
    # a name: plugins may add methods (pytest_ssd_purge_methods); the session checks it
    if not text or not all(c.isalnum() or c in "-_." for c in text):
        raise argparse.ArgumentTypeError(f"--ssd-purge={text!r} is not a method name")
    return text


def _power_cycle(text: str) -> tuple[str, ...]:
    try:
        return command_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
