"""Writing the site: only the pages whose input changed (a hash of each in the state file).

``DIR/.site-state.json`` holds, per page, the hash of what it was rendered from (a
series' data, as JSON; the small index and alerts pages are hashed as rendered); a page
whose hash is unchanged and whose file is there is neither rendered nor written again.
``DIR/marks.json`` holds a person's marks of alerts
(``{"SERIES@BUILD": "expected" | "regression"}``): read, never rewritten.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pytest_ssd.db.reader import ResultsDb
from pytest_ssd.errors import ConfigError
from pytest_ssd.results.files import write_atomic
from pytest_ssd.site_pages.data import read_series
from pytest_ssd.site_pages.pages import alerts_page, index_page, series_input, series_page
from pytest_ssd.site_pages.steps import alerts_of
from pytest_ssd.version import __version__

STATE_FILE = ".site-state.json"
MARKS_FILE = "marks.json"
MARKS = ("expected", "regression")
ASSETS = ("chart.js",)


@dataclass(frozen=True)
class SiteResult:
    """What a build of the site did."""

    written: int
    kept: int
    alerts: int
    index: Path

    def line(self) -> str:
        return (
            f"site: {self.written} pages written, {self.kept} kept (unchanged),"
            f" {self.alerts} alerts -> {self.index}"
        )


def read_marks(folder: Path) -> dict[str, str]:
    """The marks file's marks; a ConfigError naming the file and the entry when one is bad."""
    path = folder / MARKS_FILE
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: not a JSON object of marks ({e})") from e
    if not isinstance(found, dict):
        raise ConfigError(f'{path}: give an object {{"SERIES@BUILD": "expected"|"regression"}}')
    for key, mark in found.items():
        if mark not in MARKS:
            raise ConfigError(f"{path}: {key!r} is marked {mark!r}: give one of {', '.join(MARKS)}")
    return {str(k): str(v) for k, v in found.items()}


def _state(folder: Path) -> dict[str, str]:
    try:
        found = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: every page is written again
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def build_site(db: ResultsDb, folder: Path) -> SiteResult:
    """Write the site of *db* into *folder*: only the pages whose input changed."""
    folder.mkdir(parents=True, exist_ok=True)
    marks = read_marks(folder)
    series = read_series(db.conn)
    run_dirs = {r.id: r.run_dir for r in db.runs()}
    alerts = {s.found.key: alerts_of(s) for s in series}
    every = [a for found in alerts.values() for a in found]
    # each file: (its input, how it is rendered from it); the small pages are their input
    files: dict[str, tuple[str, Callable[[str], str]]] = {
        "index.html": (index_page(series, every, run_dirs), str),
        "alerts.html": (alerts_page(every, marks, run_dirs), str),
    }
    for s in series:
        given = series_input(s, alerts[s.found.key], run_dirs)
        files[f"series/{s.found.key}.html"] = (given, series_page)
    chart = resources.files(__package__).joinpath("chart.js").read_text(encoding="utf-8")
    files |= {f"assets/{name}": (chart, str) for name in ASSETS}
    before, after = _state(folder), {}
    written = kept = 0
    for name, (given, render) in files.items():
        # the renderer's version too: a newer pytest-ssd renders every page again
        digest = hashlib.sha256(f"{__version__}\n{given}".encode()).hexdigest()
        after[name] = digest
        path = folder / name
        page = name.endswith(".html")  # the assets are written alike, not counted as pages
        if before.get(name) == digest and path.is_file():
            kept += page
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, render(given))
        written += page
    write_atomic(folder / STATE_FILE, json.dumps(after, indent=1, sort_keys=True) + "\n")
    return SiteResult(written, kept, len(every), folder / "index.html")
