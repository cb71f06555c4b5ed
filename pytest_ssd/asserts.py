"""Whose asserts pytest rewrites: pytest-ssd's method drivers only.

pytest rewrites the asserts of every module of a plugin's distribution, here all of
``pytest_ssd``.  Only a method's run (``pytest_ssd/methods/<method>/run.py``) checks with
``assert`` (what fio did, named in a failure as a test's asserts are); everything else
raises :class:`~pytest_ssd.errors.SsdError`.
A rewritten module is parsed, rewritten and compiled by pytest from its source into a
cache of its own, so where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, common in
container images, or a read-only install) every process compiles the ~160 modules it loads
again: every xdist worker, 0.9 s of CPU of a worker's start against 0.44 s when Python
loads them from the bytecode compiled at install (issue 30: 16 workers on 2 vCPUs).

:func:`rewrite_methods_only` runs when this module is imported, which ``pytest_ssd`` does
first of all, before its other modules; outside pytest, or with ``--assert=plain``, there is
nothing to change.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = "pytest_ssd"
#: where the methods' folders are (read without importing them: this runs first of all)
METHODS = Path(__file__).resolve().parent / "methods"


def rewritten() -> tuple[str, ...]:
    """The modules whose asserts pytest still rewrites: each method's run."""
    return tuple(
        f"{PACKAGE}.methods.{folder.name}.run"
        for folder in sorted(METHODS.iterdir())
        if (folder / "run.py").is_file()
    )


def rewrite_methods_only() -> None:
    """Leave pytest-ssd's modules but the method drivers to Python's own import."""
    for finder in sys.meta_path:
        # pytest's AssertionRewritingHook keeps the names it rewrites in this set
        marked = getattr(finder, "_must_rewrite", None)
        if isinstance(marked, set) and PACKAGE in marked:
            marked.discard(PACKAGE)
            finder.mark_rewrite(*rewritten())  # type: ignore[attr-defined]  # the same hook's


rewrite_methods_only()
