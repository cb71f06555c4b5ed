"""tests/browser.py's page check on small hand-written pages: it must see what a reader sees.

Each test loads one page in a real headless Chromium (about a second each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import PageCheck, check_page, find_chromium

pytestmark = pytest.mark.skipif(
    find_chromium() is None, reason="no chromium, chromium-browser or google-chrome on PATH"
)

# A valid 1x1 PNG.
PNG = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
SECTIONS = (
    '<section class="ssd-section" id="ssd-devices"><h2>Devices</h2></section>'
    '<section class="ssd-section" id="ssd-environment"><h2>Environment</h2></section>'
)
REQUIRED = ("#ssd-devices", "#ssd-environment")
HEAD = '<meta charset="utf-8"><title>page</title>'


def check(tmp_path: Path, body: str, required: tuple[str, ...] = REQUIRED) -> PageCheck:
    """Write *body* into a page in *tmp_path*, check it, and check the screenshot is a PNG."""
    page = tmp_path / "page.html"
    page.write_text(f"<!DOCTYPE html><html><head>{HEAD}</head><body>{body}</body></html>")
    shot = tmp_path / "shots" / "page.png"
    result = check_page(page, required, screenshot=shot, timeout=30)
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    return result


def test_clean_page_has_no_problems(tmp_path: Path) -> None:
    result = check(tmp_path, f'{SECTIONS}<img alt="chart" src="{PNG}">')
    assert result.problems() == []
    assert result.sections == ["ssd-devices", "ssd-environment"]
    assert result.images == 1


def test_console_error_is_reported(tmp_path: Path) -> None:
    result = check(tmp_path, f'{SECTIONS}<script>console.error("x")</script>')
    assert len(result.console_errors) == 1
    assert result.console_errors[0].startswith("console.error: x")
    assert result.problems() == [f"console error: {result.console_errors[0]}"]


def test_uncaught_exception_is_reported(tmp_path: Path) -> None:
    result = check(tmp_path, f'{SECTIONS}<script>throw new Error("boom")</script>')
    assert len(result.console_errors) == 1
    assert "Error: boom" in result.console_errors[0]


def test_image_that_does_not_decode_is_reported(tmp_path: Path) -> None:
    result = check(tmp_path, f'{SECTIONS}<img alt="bad" src="data:image/png;base64,AAAA">')
    assert result.images == 1
    assert result.broken_images == ['data:image/png;base64,AAAA (alt "bad")']
    assert result.problems() == [f"image did not decode: {result.broken_images[0]}"]


def test_missing_image_file_is_reported_as_broken_and_as_failed_load(tmp_path: Path) -> None:
    result = check(tmp_path, f'{SECTIONS}<img alt="gone" src="figures/gone.png">')
    assert len(result.broken_images) == 1
    assert result.broken_images[0].endswith('figures/gone.png (alt "gone")')
    assert any("Failed to load resource" in error for error in result.console_errors)


def test_missing_section_is_reported(tmp_path: Path) -> None:
    result = check(tmp_path, SECTIONS, required=(*REQUIRED, "#ssd-suite-smoke"))
    assert result.missing == ["#ssd-suite-smoke"]
    assert result.problems() == ["missing element: #ssd-suite-smoke"]


def test_hidden_image_without_source_is_no_image(tmp_path: Path) -> None:
    """pytest-html keeps a hidden ``<img src="">`` in the media viewer of results without media."""
    body = f'{SECTIONS}<div style="display:none"><img src=""></div><img alt="chart" src="{PNG}">'
    result = check(tmp_path, body)
    assert result.problems() == []
    assert result.images == 1
