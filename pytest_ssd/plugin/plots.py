"""Figures a test asked the controller to draw (:meth:`pytest_ssd.SsdBench.plot`).

Registered on the controller only: a worker sends the measurement on the test's
report and never loads matplotlib for it; the controller draws the figure before
pytest-html reads the report's extras, and saves it beside the test's artifacts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_html import extras

from pytest_ssd import figures
from pytest_ssd.bench import PLOT_EXTRA, PLOTS
from pytest_ssd.results.record import Measurement


def draw(extra: dict[str, Any]) -> dict[str, Any]:
    """A plot extra drawn: pytest-html's PNG extra, the PNG and SVG saved in its folder."""
    builder = extra["builder"]
    if builder not in PLOTS:  # the report came from a worker of another version
        missing: dict[str, Any] = extras.html(f"<p>no figure {builder!r}</p>")
        return missing
    fig = getattr(figures, builder)(Measurement.from_json(extra["measurement"]))
    rendered = figures.render_for_test(fig)
    rendered.save(Path(extra["folder"]), extra["name"])
    png: dict[str, Any] = extras.png(rendered.png_base64, extra["name"])
    return png


class Plots:
    """Draws the figures a test's report asks for, before the report is shown or stored."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = getattr(report, "extras", None)
        if found and any(e.get("format_type") == PLOT_EXTRA for e in found):
            report.extras = [  # type: ignore[attr-defined]  # pytest-html's attribute
                draw(e) if e.get("format_type") == PLOT_EXTRA else e for e in found
            ]
