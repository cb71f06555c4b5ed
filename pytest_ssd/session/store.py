"""The run store: the run folder, the ``latest`` link, the database writer and results.json."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ssd.db.runid import is_run_id
from pytest_ssd.db.url import DbUrl
from pytest_ssd.results.files import storage_error

if TYPE_CHECKING:  # the controller's: a worker never opens the database
    from pytest_ssd.db import DriveRef
    from pytest_ssd.db.export import ResultsExport
    from pytest_ssd.db.lab import RunRecords

LATEST = "latest"


@dataclass
class RunStore:
    """Where the run's results go: its folder under the report folder, and the database."""

    report_dir: Path
    db_url: DbUrl
    run_id: str
    run_dir: Path
    #: what the user should know about the run folder (shown in the terminal header)
    warnings: list[str] = field(default_factory=list)
    db: RunRecords | None = None
    #: results.json, exported from the database
    export: ResultsExport | None = None
    #: earlier drives from the database drawn on comparison graphs (--ssd-compare)
    compared: list[DriveRef] = field(default_factory=list)
    #: the run is resumed (--ssd-resume): what its interrupted tests recorded is forgotten
    resuming: bool = False

    def compare(self, names: tuple[str, ...]) -> None:
        """The drives named to compare with; a name not in the database stops the run here."""
        if names:
            from pytest_ssd.db import ResultsDb  # noqa: PLC0415  # the controller's

            with ResultsDb(self.db_url) as db:
                self.compared = db.resolve(names)

    def check(self) -> None:
        """Refuse a database the run could not be recorded into, before anything is made."""
        from pytest_ssd.db.opening import check_writer  # noqa: PLC0415  # the controller's

        check_writer(self.db_url)

    def make_folder(self) -> None:
        """The run folder and the ``latest`` link (a one-line refusal when it cannot be made)."""
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._link_latest()
        except OSError as exc:
            raise storage_error(
                Path(exc.filename or self.run_dir), exc, "--ssd-report-dir"
            ) from None

    def unmake_folder(self, report_dir_made: bool) -> None:
        """Remove the run folder while it is empty (pytest-html makes it at configure: under
        ``-n`` a refusal comes after that), and the report folder when this session made it:
        a refused run leaves nothing."""
        with contextlib.suppress(OSError):
            self.run_dir.rmdir()
            if report_dir_made:
                self.report_dir.rmdir()

    def start(
        self, environment: dict[str, Any], devices: dict[str, tuple[dict[str, Any], str]]
    ) -> None:
        """The database's run and its devices (*devices*: description and label), results.json."""
        from pytest_ssd.db.export import ResultsExport  # noqa: PLC0415  # the controller's
        from pytest_ssd.db.lab import open_run  # noqa: PLC0415

        self.db = open_run(self.db_url, self.run_id, self.run_dir, environment)
        if self.resuming:  # the tests cut short run again: their rows would be there twice
            cut = self.db.forget_unfinished()
            if cut:
                self.warnings.append(
                    f"what {len(cut)} test(s) cut short had recorded is forgotten: they run again"
                )
        for dut_id, (description, label) in devices.items():
            self.db.add_device(dut_id, description, label)
        self.export = ResultsExport(self.run_dir, self.db.local, self.run_id)
        self.export.write()

    def _link_latest(self) -> None:
        """Point ``<report dir>/latest`` at this run, unless it is something not ours."""
        latest = self.report_dir / LATEST
        if latest.is_symlink() and not is_run_id(str(latest.readlink())):
            self.warnings.append(f"{latest} is a link pytest-ssd did not make: left as it is")
            return
        if latest.exists() and not latest.is_symlink():
            self.warnings.append(f"{latest} is not pytest-ssd's link: left as it is")
            return
        tmp = latest.with_name(f".{LATEST}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(self.run_id)
        tmp.replace(latest)
