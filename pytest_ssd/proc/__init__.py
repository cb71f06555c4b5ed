"""Running external programs: one runner for every subprocess."""

from __future__ import annotations

from pytest_ssd.proc.runner import Completed, run, which

__all__ = ["Completed", "run", "which"]
