"""What a run cut short left in the database: the tests it finished, the rows of the others.

A test is finished once its outcome is in ``tests`` (its call, or the setup that
failed or skipped it): that row is written after the test's records, so a
record without it belongs to a test that was interrupted.  A resumed run
(``--ssd-resume``) keeps the finished tests, forgets the rows of the others
(they run again, and record again), and numbers its rows after the last one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.db.conn import Conn
from pytest_ssd.db.schema import SEQ_TABLES

#: the tables whose rows belong to one test (column ``test``: its node id)
TEST_TABLES = ("measurements", "derived", "verdicts", "transitions", "series")
#: rows that belong to a measurement of ``measurements``
_OF_MEASUREMENT = ("metrics", "percentiles")
_UNFINISHED = "run_id = ? AND test NOT IN (SELECT nodeid FROM tests WHERE run_id = ?)"


@dataclass(frozen=True)
class FinishedTest:
    """A test the run finished: its outcome as recorded, and the time it took."""

    nodeid: str
    outcome: str
    #: the test's recorded duration and that of the state transition it ran before it
    seconds: float
    message: str | None = None
    #: its plain properties as its reports carried them (junit, the report): from the run folder
    properties: tuple[tuple[str, object], ...] = ()


def last_seq(conn: Conn, run_id: str) -> int:
    """The highest row number of run *run_id* (0: a new run)."""
    found = [
        conn.execute(f"SELECT max(seq) FROM {table} WHERE run_id = ?", (run_id,)).fetchone()[0]
        for table in SEQ_TABLES
    ]
    return max((int(n) for n in found if n is not None), default=0)


def forget_unfinished(conn: Conn, run_id: str) -> list[str]:
    """Delete the records of run *run_id*'s tests that have no outcome; those tests."""
    key = (run_id, run_id)
    cut = {
        row[0]
        for table in TEST_TABLES
        for row in conn.execute(f"SELECT DISTINCT test FROM {table} WHERE {_UNFINISHED}", key)
    }
    for table in _OF_MEASUREMENT:
        conn.execute(
            f"DELETE FROM {table} WHERE measurement_id IN"
            f" (SELECT id FROM measurements WHERE {_UNFINISHED})",
            key,
        )
    for table in TEST_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE {_UNFINISHED}", key)
    return sorted(cut)


def finished_tests(conn: Conn, run_id: str) -> dict[str, FinishedTest]:
    """Run *run_id*'s finished tests by node id, with the seconds they took."""
    spent: dict[str, float] = {}
    for row in conn.execute(
        "SELECT test, sum(seconds) FROM transitions WHERE run_id = ? GROUP BY test", (run_id,)
    ):
        spent[row[0]] = float(row[1] or 0.0)
    rows = conn.execute(
        "SELECT nodeid, outcome, duration_s, message FROM tests"
        " WHERE run_id = ? AND outcome IS NOT NULL ORDER BY id",
        (run_id,),
    ).fetchall()
    return {
        row[0]: FinishedTest(row[0], row[1], float(row[2] or 0.0) + spent.get(row[0], 0.0), row[3])
        for row in rows
    }
