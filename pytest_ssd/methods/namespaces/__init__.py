"""Sector sizes and namespaces (``suites/qual/test_namespaces.py``): the device's logical
block is the one its namespace declares, and the other namespaces of its controller are
never written (the block layer's counters: :mod:`pytest_ssd.device.udev.namespaces`).

:mod:`.run` makes the checks on the ``ssd`` fixture and records each as a
``qualification`` record (part ``namespaces``); the method declares no section of its own.
"""

from __future__ import annotations

#: the qualification record's part
PART = "namespaces"
