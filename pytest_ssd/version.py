"""pytest-ssd's version (one place: setup.cfg reads it, results record it)."""

__version__ = "0.1.0"
