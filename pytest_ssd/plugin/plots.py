"""Figures a test asked the controller to draw (:meth:`pytest_ssd.SsdBench.plot`).

Registered on the controller only: a worker sends the measurement on the test's
report and never loads matplotlib for it; the controller draws the figure (a kind
of pytest-ssd's, a method's or a plugin's: ``pytest_ssd_figure_kinds``) before
pytest-html reads the report's extras, and saves it beside the test's artifacts.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from pluggy import HookCaller
from pytest_html import extras

from pytest_ssd.bench import GENERIC_KINDS, PLOT_EXTRA
from pytest_ssd.errors import ExtensionError, call_extension
from pytest_ssd.extensions import FigureKind, figure_kinds
from pytest_ssd.results.record import Measurement


def _drawn(kind: FigureKind, extra: dict[str, Any]) -> dict[str, Any]:
    """pytest-html's PNG extra of *kind* drawn, the PNG and SVG saved in its folder."""
    from pytest_ssd import figures  # noqa: PLC0415  # matplotlib: when a test draws

    measurement = Measurement.from_json(extra["measurement"])
    where = f"figure kind {kind.name!r} of {kind.origin}: draw()"
    fig = call_extension(where, kind.draw, measurement)
    rendered = call_extension(f"{where} (rendering it)", figures.render_for_test, fig)
    rendered.save(Path(extra["folder"]), extra["name"])
    png: dict[str, Any] = extras.png(rendered.png_base64, extra["name"])
    return png


def draw(extra: dict[str, Any], caller: HookCaller) -> dict[str, Any]:
    """A plot extra drawn; a kind that is gone or fails to draw is one line in its place."""
    try:
        kind = figure_kinds(caller, GENERIC_KINDS).get(extra["builder"])
        why = f"no figure kind {extra['builder']!r}"  # a worker of another version asked
        return _drawn(kind, extra) if kind is not None else _failed(why)
    except ExtensionError as exc:
        return _failed(str(exc))


def _failed(why: str) -> dict[str, Any]:
    missing: dict[str, Any] = extras.html(f"<p>{html.escape(why)}</p>")
    return missing


class Plots:
    """Draws the figures a test's report asks for, before the report is shown or stored."""

    def __init__(self) -> None:
        self.caller: HookCaller | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.caller = session.config.hook.pytest_ssd_figure_kinds

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = getattr(report, "extras", None)
        caller = self.caller
        if caller is not None and found and any(e.get("format_type") == PLOT_EXTRA for e in found):
            report.extras = [  # type: ignore[attr-defined]  # pytest-html's attribute
                draw(e, caller) if e.get("format_type") == PLOT_EXTRA else e for e in found
            ]
