"""A run's id: made by the controller or given (``--ssd-run-id``), checked in ``--ssd-resume``,
``--ssd-run-id`` and the ``latest`` link (without the database's modules: a worker never opens
the database)."""

from __future__ import annotations

import re
import time
import uuid

#: a run id: made by :func:`new_run_id` (before it, time and process id), or given
#: (``--ssd-run-id``, e.g. a CI pipeline's and job's): a folder name and a fio path as it is
#: (letters, digits, ``._-``, a letter or digit first), never a slash or a blank
#: (``\A``/``\Z``: ``$`` would also match before a trailing newline, and such an id passed)
RUN_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
#: names that are not a run: the report folder's link, ``--ssd-resume``'s newest run
NOT_A_RUN = frozenset({"latest", "last"})


def is_run_id(text: str) -> bool:
    """Whether *text* is a run id (:data:`RUN_ID`), made or given."""
    return bool(RUN_ID.match(text)) and text not in NOT_A_RUN


def new_run_id() -> str:
    """A run id unique across a lab: when it started, readable, and 48 random bits.

    Sessions on many machines write into one database: a time and a process id
    can meet there, a random part does not (at 1,000 runs a second: once in ~10^5 years).
    """
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:12]
