"""The lab's site (``pytest-ssd site``): every series across builds as static pages.

:mod:`.data` reads the series from the results database (through :mod:`pytest_ssd.db`),
:mod:`.steps` finds their step changes and judges each with the noise-aware verdicts,
:mod:`.pages` renders the pages and :mod:`.write` writes only those whose input changed.
"""

from __future__ import annotations

from pytest_ssd.site_pages.write import SiteResult, build_site

__all__ = ["SiteResult", "build_site"]
