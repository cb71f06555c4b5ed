"""A run recorded into a lab's database server, and always into a spool in its run folder.

The spool (``spool.sqlite`` in the run folder, the same schema) holds the
whole run whatever the server does: results.json is exported from it, and
``pytest-ssd sync RUN --db=URL`` uploads it.  The server gets each test's rows
as the spool does, in one transaction each.  Unreachable at the start, or lost
during the run, the server is left alone for the rest of the run: the session
goes on on the spool, and says so in one line (the summary and the report).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_ssd.db.conn import Unreachable
from pytest_ssd.db.url import DbUrl, db_url
from pytest_ssd.db.writer import RunRecords, RunWriter, TestRecords
from pytest_ssd.errors import DatabaseError
from pytest_ssd.results.record import iso

__all__ = ["SPOOL_FILE", "LabWriter", "RunRecords", "open_run"]

#: the run's own records in its folder, beside a lab's database server
SPOOL_FILE = "spool.sqlite"


def open_run(
    target: Path | str | DbUrl, run_id: str, run_dir: Path, environment: dict[str, Any]
) -> RunRecords:
    """The run's recorder: the SQLite file itself, or a lab's server with the run's spool."""
    url = db_url(target)
    if url.sqlite:
        return RunWriter(url, run_id, run_dir, environment)
    return LabWriter(url, run_id, run_dir, environment)


class LabWriter(RunRecords):
    """Records into the run folder's spool and, while it answers, into the lab's server."""

    def __init__(self, lab: DbUrl, run_id: str, run_dir: Path, environment: dict[str, Any]) -> None:
        self.lab_url = lab
        self.run_id = run_id
        self.run_dir = run_dir
        start = iso(time.time())
        self.spool = RunWriter(run_dir / SPOOL_FILE, run_id, run_dir, environment, start)
        self.lab: RunWriter | None = None
        #: the one line saying that the server was lost, and what to do
        self.lost: str | None = None
        try:
            self.lab = RunWriter(lab, run_id, run_dir, environment, start)
        except Unreachable as exc:
            self._lose(exc, "at the session's start")
        except BaseException:
            self.spool.close()
            raise

    @property
    def local(self) -> DbUrl:
        return self.spool.url

    @property
    def source(self) -> DbUrl:
        """Where the run's report reads: the server while it has the whole run, else the spool."""
        return self.lab_url if self.lab is not None else self.spool.url

    @property
    def notes(self) -> tuple[str, ...]:
        return (self.lost,) if self.lost else ()

    def _lose(self, exc: DatabaseError, when: str) -> None:
        reason = exc.reason if isinstance(exc, Unreachable) else str(exc)
        self.lost = (
            f"the lab database {self.lab_url} is unreachable ({reason}) {when}: the run is"
            f" recorded in {self.spool.url}; upload it with"
            f" 'pytest-ssd sync {self.run_dir} --db={self.lab_url}'"
        )
        if self.lab is not None:
            self.lab.close()
            self.lab = None

    def _both(self, write: Callable[[RunWriter], None], what: str) -> None:
        write(self.spool)  # a spool that fails stops the run, as the database always did
        if self.lab is not None:
            try:
                write(self.lab)
            except DatabaseError as exc:
                self._lose(exc, f"since {what}")

    def add_device(self, dut_id: str, description: dict[str, Any], label: str) -> None:
        self._both(lambda w: w.add_device(dut_id, description, label), f"device {dut_id}")

    def add(self, records: TestRecords) -> None:
        if records:
            self._both(lambda w: w.add(records), records.nodeid)

    def forget_unfinished(self) -> list[str]:
        cut: list[str] = []
        self._both(lambda w: cut.extend(w.forget_unfinished()), "the run's resumption")
        return sorted(set(cut))

    def finish(self, outcome: dict[str, int], complete: bool, end: str | None = None) -> None:
        end = end or iso(time.time())
        try:
            self._both(lambda w: w.finish(outcome, complete, end), "the run's end")
        finally:
            self.close()

    def close(self) -> None:
        self.spool.close()
        if self.lab is not None:
            self.lab.close()
