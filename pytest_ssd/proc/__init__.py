"""Running external programs: one runner for every subprocess."""

from __future__ import annotations

from pytest_ssd.proc.runner import Background, Completed, run, spawn, which

__all__ = ["Background", "Completed", "run", "spawn", "which"]
