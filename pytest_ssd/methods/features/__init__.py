"""Declared features (``suites/qual/test_features.py``): what the drive's identify data
and logs declare (``nvme id-ctrl``, ``id-ns``, ``smart-log``, ``fw-log``) against its
datasheet's ``[features]`` table (:mod:`pytest_ssd.specs.features`).

:mod:`.checks` compares (no I/O), :mod:`.run` reads the drive on its machine and records
each verdict as a ``qualification`` record (part ``features``).  Its verdicts are shown by
the report's qualification summary; the method declares no section of its own.
"""

from __future__ import annotations

#: the qualification record's part
PART = "features"
