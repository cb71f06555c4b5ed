"""The plugin's options, validated (:func:`pytest_ssd.plugin.options.from_config` reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.db.url import DbUrl, db_url
from pytest_ssd.device.drive_class import DriveClassName
from pytest_ssd.device.dut import DutSpec
from pytest_ssd.health.profile import HealthProfile
from pytest_ssd.results.location import DB_FILE
from pytest_ssd.specs.flags import DatasheetOptions


@dataclass(frozen=True)
class Options:
    """The plugin's command-line options, validated."""

    duts: tuple[DutSpec, ...]
    confirm: tuple[str, ...]
    readonly: bool
    report_dir: Path
    #: None: quick on scratch devices, full on real ones
    profile: str | None
    purge: str | None
    idle: tuple[tuple[str, float], ...] = ()
    datasheets: DatasheetOptions = field(default_factory=DatasheetOptions)
    health_interval: float = 1.0
    #: --ssd-health-profile: the rules for every device (None: each datasheet's, or the default)
    health_profile: HealthProfile | None = None
    repeat: int = 1
    cv_max: float = 0.05
    db: DbUrl = field(default_factory=lambda: db_url(Path("reports") / DB_FILE))
    labels: tuple[str, ...] = ()
    #: --ssd-build: one for every device, or one per --dut in order (none: each firmware)
    builds: tuple[str, ...] = ()
    compare: tuple[str, ...] = ()
    #: --dut-class, one per --dut in order (the rest guessed)
    classes: tuple[DriveClassName, ...] = ()
    #: --ssd-tune: METHOD §9's host settings for the session, restored afterwards
    tune: bool = False
    #: --ssd-ssh-config: the ssh_config for test hosts (None: ~/.ssh/config)
    ssh_config: Path | None = None
    #: --ssd-resume: the run to continue (a run id or ``last``), None for a new run
    resume: str | None = None
    #: --ssd-run-id: the run's id, given (a new run, or that run resumed), None for a made one
    run_id: str | None = None
    #: (option, normalized value) of the tests and the options that shape the measurements:
    #: recorded with the run, and what a resumed run must match (plugin/shape.py)
    shape: tuple[tuple[str, str], ...] = ()
