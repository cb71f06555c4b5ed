"""A run's id: made by the controller, checked in ``--ssd-resume`` and the ``latest`` link
(without the database's modules: a worker never opens the database)."""

from __future__ import annotations

import re
import time
import uuid

#: a run id of :func:`new_run_id` (or of a pytest-ssd before it: time and process id)
#: (``\A``/``\Z``: ``$`` would also match before a trailing newline, and such an id passed)
RUN_ID = re.compile(r"\A\d{8}-\d{6}-(\d+|[0-9a-f]{12})\Z")


def new_run_id() -> str:
    """A run id unique across a lab: when it started, readable, and 48 random bits.

    Sessions on many machines write into one database: a time and a process id
    can meet there, a random part does not (at 1,000 runs a second: once in ~10^5 years).
    """
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:12]
