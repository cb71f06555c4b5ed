"""Open an HTML page in headless Chromium and check what a reader would see.

Why the DevTools protocol over ``--remote-debugging-pipe`` rather than ``--dump-dom`` with an
injected checker script: only the protocol sees every console error as the browser reports it
(``console.error``/``console.assert``, uncaught exceptions, and the "Failed to load resource"
entries of images or scripts that do not load), whereas an injected script misses errors raised
before it runs and never sees failed loads. The pipe needs no websocket library and no free TCP
port: Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4.
The page is the real file (no copy), so relative links to figures resolve as for a reader.

Images are checked after every ``<img>`` has finished loading: an image whose natural width or
height is 0 did not decode. An ``<img>`` with no ``src`` that is not displayed (pytest-html keeps
one, hidden, in the media viewer of each result without media) is no image and is not counted.

The browser runs in its own process group with a throw-away profile; the group is killed when
the check ends, also on a timeout or an error, so no renderer outlives a test.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
VIEWPORT_WIDTH = 1280
VIEWPORT_HEIGHT = 800
MAX_SCREENSHOT_HEIGHT = 16384  # CSS px; taller pages are cut (GPU texture limits)
#: a section's screenshot in tiles of at most this height (CSS px)
SECTION_TILE = 6000
CLOSE_TIMEOUT = 5.0
JsonObject = dict[str, Any]


class BrowserError(RuntimeError):
    """Chromium could not be started, died, or did not answer in time."""


@dataclass(frozen=True)
class PageCheck:
    """What the browser saw on one page."""

    console_errors: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    images: int = 0
    broken_images: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    #: in-page links (``href="#x"``) whose target is not on the page
    dead_links: list[str] = field(default_factory=list)
    #: visible elements that reach past the window's right edge (a reader must scroll sideways)
    overflow: list[str] = field(default_factory=list)
    #: images the page shows smaller than drawn (squeezed to fit): unreadable at 100 % zoom
    shrunk: list[str] = field(default_factory=list)
    #: in-page links, in order
    links: list[str] = field(default_factory=list)
    #: the ids of the report's figures (``figure.ssd-figure``)
    figures: list[str] = field(default_factory=list)
    #: the screenshot of each ``section.ssd-section`` (when asked for), by id
    section_shots: dict[str, Path] = field(default_factory=dict)
    #: how far down the page each required selector's first element begins, CSS px
    tops: dict[str, float] = field(default_factory=dict)
    #: table cells whose text contrasts less than 4.5:1 with what is behind it (WCAG AA)
    low_contrast: list[str] = field(default_factory=list)
    #: each test's graph in pytest-html's results table (every row opened): how wide it is shown, px
    test_graphs: dict[str, float] = field(default_factory=dict)
    #: every URL the page requested (itself, its scripts, images, fetches), in order
    requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per problem a reader would meet; empty when the page is fine."""
        return [
            *(f"console error: {text}" for text in self.console_errors),
            *(f"missing element: {selector}" for selector in self.missing),
            *(f"image did not decode: {label}" for label in self.broken_images),
            *(f"link to nothing: #{target}" for target in self.dead_links),
            *(f"wider than the window: {what}" for what in self.overflow),
            *(f"shown smaller than drawn: {what}" for what in self.shrunk),
            *(f"table text too faint: {what}" for what in self.low_contrast),
        ]


def first_on_path(names: Sequence[str]) -> str | None:
    """The path of the first of *names* on PATH, or None."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def find_chromium() -> str | None:
    """The first Chromium-like browser on PATH, or None."""
    return first_on_path(BROWSERS)


def check_page(
    html: Path,
    required: Sequence[str],
    screenshot: Path,
    timeout: float = 60,
    *,
    width: int = VIEWPORT_WIDTH,
    sections_to: Path | None = None,
) -> PageCheck:
    """Load *html* in headless Chromium *width* CSS px wide, check it, save a full-page PNG.

    *required* are CSS selectors that must each match at least one element. With
    *sections_to*, each report section is also saved there as ``<id>.png``. Raises
    BrowserError when no browser is found or it fails; page problems are in the result.
    """
    browser = find_chromium()
    if browser is None:
        raise BrowserError(f"none of {', '.join(BROWSERS)} is on PATH")
    deadline = time.monotonic() + timeout
    with launch(browser, deadline) as cdp:
        session = open_page(cdp, width)
        load(cdp, session, html.resolve().as_uri())
        found = evaluate(cdp, session, _checker_js(required))
        take_screenshot(cdp, session, screenshot, width)
        shots = _section_shots(cdp, session, sections_to) if sections_to else {}
        errors = console_errors(cdp, session)
    return PageCheck(
        requests=requested(cdp, session),
        console_errors=errors,
        missing=list(found["missing"]),
        images=int(found["images"]),
        broken_images=list(found["broken"]),
        sections=list(found["sections"]),
        dead_links=list(found["dead"]),
        overflow=list(found["overflow"]),
        shrunk=list(found["shrunk"]),
        links=list(found["links"]),
        figures=list(found["figures"]),
        section_shots=shots,
        low_contrast=list(found["faint"]),
        test_graphs={str(k): float(v) for k, v in found["graphs"]},
        tops={str(k): float(v) for k, v in found["tops"].items()},
    )


class EventLog:
    """A browser connection's events, all kept in ``events``; a subclass's ``_receive``
    reads the next message (and appends it to ``events`` when it is an event)."""

    def __init__(self) -> None:
        self.events: list[JsonObject] = []

    def wait_for(self, what: str, matches: Callable[[JsonObject], bool]) -> JsonObject:
        """Wait for (or find among those received) the first event ``matches(event)`` accepts."""
        seen = 0
        while True:
            for event in self.events[seen:]:
                if matches(event):
                    return event
            seen = len(self.events)
            self._receive(what)

    def _receive(self, what: str) -> JsonObject:
        raise NotImplementedError


class _Cdp(EventLog):
    """A minimal DevTools protocol client on Chromium's debugging pipe.

    Commands are answered in order of ids; events that arrive meanwhile are kept in
    ``events`` (all of them: console errors are collected from there at the end).
    """

    def __init__(self, to_browser: int, from_browser: int, deadline: float, log: Path) -> None:
        super().__init__()
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.deadline = deadline
        self.log = log
        self._buffer = b""
        self._next_id = 0

    def send(self, method: str, params: JsonObject | None = None, session: str = "") -> JsonObject:
        """Send one command and wait for its result (BrowserError if it fails)."""
        self._next_id += 1
        message: JsonObject = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(method)
            if reply.get("id") == message["id"]:
                break
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
        result: JsonObject = reply.get("result", {})
        return result

    def _receive(self, what: str) -> JsonObject:
        """The next message; events are also appended to ``events``."""
        while b"\0" not in self._buffer:
            self._buffer += self._read(what)
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: JsonObject = json.loads(raw)
        if "method" in message:
            self.events.append(message)
        return message

    def _read(self, what: str) -> bytes:
        left = self.deadline - time.monotonic()
        ready = select.select([self.from_browser], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            raise BrowserError(f"timed out waiting for {what}{self._log_tail()}")
        chunk = os.read(self.from_browser, 1 << 20)
        if not chunk:
            raise BrowserError(f"browser exited while waiting for {what}{self._log_tail()}")
        return chunk

    def _log_tail(self) -> str:
        text = self.log.read_text(errors="replace").strip() if self.log.exists() else ""
        return f"; browser said:\n{text[-2000:]}" if text else ""


class _Fds:
    """The pipe ends this process owns, each closed exactly once.

    Closing a number twice could close an unrelated file that was given the number meanwhile.
    Ends are moved to numbers >= 10 so the child's moves onto fds 3 and 4 cannot clobber them.
    """

    def __init__(self) -> None:
        self.open: set[int] = set()

    def pipe(self) -> tuple[int, int]:
        """A new pipe: (read end, write end), both close-on-exec."""
        ends = os.pipe()
        try:
            read, write = (self._keep(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)) for fd in ends)
        finally:
            for fd in ends:
                os.close(fd)
        return read, write

    def _keep(self, fd: int) -> int:
        self.open.add(fd)
        return fd

    def close(self, *fds: int) -> None:
        """Close those of *fds* that are still open."""
        for fd in fds:
            if fd in self.open:
                self.open.discard(fd)
                os.close(fd)

    def close_all(self) -> None:
        self.close(*self.open)


def _browser_argv(browser: str, profile: Path) -> list[str]:
    """Chromium's command line: headless, as root, throw-away profile, no network chatter."""
    return [
        browser,
        "--headless",
        "--no-sandbox",  # required as root
        "--disable-gpu",
        "--disable-dev-shm-usage",  # a small /dev/shm (containers) would crash renderers
        "--remote-debugging-pipe",
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--mute-audio",
        f"--window-size={VIEWPORT_WIDTH},{VIEWPORT_HEIGHT}",
        "about:blank",
    ]


_TRAMPOLINE = """
import os, sys
read, write = map(int, sys.argv[1].split(","))
os.dup2(read, 3)
os.dup2(write, 4)
os.close(read)
os.close(write)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def start_in_group(
    argv: Sequence[str],
    log: Path,
    *,
    pass_fds: Sequence[int] = (),
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a browser in a process group of its own (killed whole at the end), its output
    into *log*."""
    with log.open("wb") as log_fh:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=subprocess.STDOUT,
            pass_fds=pass_fds,
            start_new_session=True,
            env=env,
        )


@contextlib.contextmanager
def launch(browser: str, deadline: float) -> Iterator[_Cdp]:
    """Start *browser* on a debugging pipe; close it and kill its process group on exit.

    A tiny Python trampoline moves the pipe ends onto fds 3 and 4 and execs the browser, so
    no ``preexec_fn`` runs in the forked child (unsafe with threads) and no shell limits the
    fd numbers (dash only redirects fds 0-9).
    """
    with contextlib.ExitStack() as stack:
        fds = _Fds()
        stack.callback(fds.close_all)
        cmd_read, cmd_write = fds.pipe()
        out_read, out_write = fds.pipe()
        tmp = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="ssd-chromium-", ignore_cleanup_errors=True)
        )
        profile, log = Path(tmp) / "profile", Path(tmp) / "browser.log"
        child_fds = f"{cmd_read},{out_write}"
        argv = [sys.executable, "-c", _TRAMPOLINE, child_fds, *_browser_argv(browser, profile)]
        proc = start_in_group(argv, log, pass_fds=(cmd_read, out_write))
        fds.close(cmd_read, out_write)  # the browser's ends: EOF on ours when it exits
        cdp = _Cdp(cmd_write, out_read, deadline, log)
        try:
            yield cdp
        finally:
            _close(cdp, proc)


def _close(cdp: _Cdp, proc: subprocess.Popen[bytes]) -> None:
    """Ask the browser to close, then kill whatever is left of its process group.

    Safe after the leader is reaped: a group id is not reused while any member lives, and
    when none does the kill finds nothing.
    """
    if proc.poll() is None:
        cdp.deadline = min(cdp.deadline, time.monotonic() + CLOSE_TIMEOUT)
        with contextlib.suppress(BrowserError, OSError, subprocess.TimeoutExpired):
            cdp.send("Browser.close")
            proc.wait(timeout=max(cdp.deadline - time.monotonic(), 0))
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=CLOSE_TIMEOUT)


def open_page(cdp: _Cdp, width: int) -> str:
    """A new tab, attached in flat mode; its session id. Console, log and request reporting on."""
    target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    attach = {"targetId": target, "flatten": True}
    session: str = cdp.send("Target.attachToTarget", attach)["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        cdp.send(f"{domain}.enable", session=session)
    cdp.send("Page.setLifecycleEventsEnabled", {"enabled": True}, session=session)
    _set_viewport(cdp, session, width, VIEWPORT_HEIGHT)
    return session


def _set_viewport(cdp: _Cdp, session: str, width: int, height: int) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    cdp.send("Emulation.setDeviceMetricsOverride", metrics, session=session)


def load(cdp: _Cdp, session: str, url: str) -> None:
    """Navigate and wait for the load event of this navigation (not of about:blank)."""
    nav = cdp.send("Page.navigate", {"url": url}, session=session)
    if nav.get("errorText"):
        raise BrowserError(f"cannot open {url}: {nav['errorText']}")
    loader = nav.get("loaderId")

    def loaded(event: JsonObject) -> bool:
        params = event.get("params", {})
        return (
            event.get("sessionId") == session
            and event["method"] == "Page.lifecycleEvent"
            and params.get("name") == "load"
            and params.get("loaderId") == loader
        )

    cdp.wait_for(f"the load event of {url}", loaded)


def evaluate(cdp: _Cdp, session: str, expression: str) -> JsonObject:
    """Run *expression* (may return a promise) in the page; its JSON value."""
    params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
    reply = cdp.send("Runtime.evaluate", params, session=session)
    if "exceptionDetails" in reply:
        raise BrowserError(f"checker script failed: {_exception_text(reply['exceptionDetails'])}")
    value: JsonObject = reply["result"]["value"]
    return value


def hover(cdp: _Cdp, session: str, x: float, y: float) -> None:
    """Move the mouse to (x, y) CSS px of the viewport, as a reader's pointer does."""
    move = {"type": "mouseMoved", "x": x, "y": y}
    cdp.send("Input.dispatchMouseEvent", move, session=session)


_CHECKER = """
async (required, settleMs) => {
  // every row of pytest-html's results table opened, as "Show all details" does: its graphs show
  document.getElementById('show_all_details')?.click();
  const loaded = (img) => img.complete ? null : new Promise((done) => {
    img.addEventListener('load', done, {once: true});
    img.addEventListener('error', done, {once: true});
  });
  const images = [...document.images].filter(
    (img) => img.getAttribute('src') || img.getAttribute('srcset') || img.getClientRects().length);
  await Promise.all(images.map(loaded));
  await new Promise((done) => setTimeout(done, settleMs));
  const label = (img) => {
    const src = img.getAttribute('src') || img.currentSrc || '(no src)';
    const alt = img.getAttribute('alt');
    return (src.length > 60 ? src.slice(0, 60) + '…' : src) + (alt ? ` (alt "${alt}")` : '');
  };
  // WCAG's relative luminance and contrast ratio of a cell's text on its background
  const rgb = (text) => (text.match(/[0-9.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
    .map((c) => c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  const behind = (el) => {
    for (let at = el; at; at = at.parentElement) {
      const colour = rgb(getComputedStyle(at).backgroundColor);
      if (colour.length === 3 || (colour.length === 4 && colour[3] > 0)) return colour;
    }
    return [255, 255, 255];
  };
  const ratio = (el) => {
    const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(behind(el))];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
  const cells = [...document.querySelectorAll('td, th')]
    .filter((el) => el.getClientRects().length && el.textContent.trim());
  const mediaName = (img) => img.closest('.media')?.querySelector('.media__name')?.textContent;
  const targets = [...document.querySelectorAll('a[href^="#"]')]
    .map((a) => a.getAttribute('href').slice(1));
  return {
    missing: required.filter((selector) => !document.querySelector(selector)),
    tops: Object.fromEntries(required.filter((selector) => document.querySelector(selector))
      .map((selector) => [selector,
        document.querySelector(selector).getBoundingClientRect().top + window.scrollY])),
    images: images.length,
    broken: images.filter((img) => !img.naturalWidth || !img.naturalHeight).map(label),
    sections: [...document.querySelectorAll('section.ssd-section')].map((s) => s.id),
    shrunk: images.filter((img) => img.getClientRects().length && img.naturalWidth
      && img.width < img.naturalWidth - 1)
      .map((img) => `${label(img)}: ${img.width} of ${img.naturalWidth} px`),
    links: targets,
    figures: [...document.querySelectorAll('figure.ssd-figure')].map((f) => f.id),
    graphs: [...document.querySelectorAll('div.media img')]
      .filter((img) => img.getClientRects().length)
      .map((img, i) => [`${i + 1}: ${mediaName(img) || label(img)}`,
        img.getBoundingClientRect().width]),
    dead: targets.filter((id) => !document.getElementById(id)),
    faint: cells.filter((el) => ratio(el) < 4.5).slice(0, 20).map((el) =>
      `"${el.textContent.trim().slice(0, 30)}" ${getComputedStyle(el).color}` +
      ` (${ratio(el).toFixed(1)}:1)`),
    overflow: [...document.querySelectorAll('body *')].filter((el) => {
      const rects = el.getClientRects();
      if (!rects.length || getComputedStyle(el).visibility === 'hidden') return false;
      const box = el.getBoundingClientRect();
      // only the outermost too-wide element is worth naming: its parent must fit
      const parent = el.parentElement.getBoundingClientRect();
      const edge = window.innerWidth + 1;
      return box.width > 0 && box.right > edge && parent.right <= edge;
    }).map((el) => `<${el.tagName.toLowerCase()}${el.id ? ' id=' + el.id : ''}` +
      `${el.getAttribute('alt') ? ' alt="' + el.getAttribute('alt') + '"' : ''}> ` +
      `${Math.round(el.getBoundingClientRect().right)} px`)
      .concat(document.documentElement.scrollWidth > window.innerWidth
        ? [`the page: ${document.documentElement.scrollWidth} px`] : []),
  };
}
"""


def _checker_js(required: Sequence[str], settle_ms: int = 50) -> str:
    """The in-page check; *settle_ms* lets errors of just-scheduled callbacks surface."""
    return f"({_CHECKER.strip()})({json.dumps(list(required))}, {settle_ms})"


def take_screenshot(cdp: _Cdp, session: str, path: Path, width: int) -> None:
    """A PNG of the whole page (up to MAX_SCREENSHOT_HEIGHT): the viewport grown to fit it."""
    size = cdp.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
    height = min(max(int(size["height"]), VIEWPORT_HEIGHT), MAX_SCREENSHOT_HEIGHT)
    _set_viewport(cdp, session, width, height)
    shot = cdp.send("Page.captureScreenshot", {"format": "png"}, session=session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


_SECTION_BOXES = """
[...document.querySelectorAll('section.ssd-section')].map((s) => {
  const box = s.getBoundingClientRect();
  return {id: s.id, x: box.left + scrollX, y: box.top + scrollY, width: box.width,
          height: box.height};
})
"""


def _section_shots(cdp: _Cdp, session: str, folder: Path) -> dict[str, Path]:
    """Each report section as ``<id>.png`` in *folder*; a section taller than
    :data:`SECTION_TILE` continues in ``<id>-2.png``, ``<id>-3.png`` ... (one capture cannot
    be taller than the GPU's texture, and what lies past the viewport is painted only when
    asked: ``captureBeyondViewport``)."""
    folder.mkdir(parents=True, exist_ok=True)
    shots = {}
    for box in evaluate(cdp, session, _SECTION_BOXES):
        if not box["width"] or not box["height"]:
            continue
        top, bottom, part = box["y"], box["y"] + box["height"], 1
        while top < bottom:
            clip = {"x": box["x"], "y": top, "width": box["width"]}
            clip |= {"height": min(SECTION_TILE, bottom - top), "scale": 1}
            shot = cdp.send(
                "Page.captureScreenshot",
                {"format": "png", "clip": clip, "captureBeyondViewport": True},
                session=session,
            )
            path = folder / (f"{box['id']}.png" if part == 1 else f"{box['id']}-{part}.png")
            path.write_bytes(base64.b64decode(shot["data"]))
            shots.setdefault(box["id"], path)
            top, part = top + SECTION_TILE, part + 1
    return shots


def console_errors(cdp: _Cdp, session: str) -> list[str]:
    """The errors the console of the page of *session* showed so far, in order."""
    return [text for event in cdp.events if (text := _console_error(event, session))]


def requested(cdp: _Cdp, session: str) -> list[str]:
    """The URL of every request the page of *session* made, in order (Network events)."""
    return [
        str(event["params"]["request"]["url"])
        for event in cdp.events
        if event.get("sessionId") == session and event["method"] == "Network.requestWillBeSent"
    ]


def _console_error(event: JsonObject, session: str) -> str | None:
    """The text of *event* if it is an error a reader's console would show, else None."""
    if event.get("sessionId") != session:
        return None
    params = event.get("params", {})
    method = event["method"]
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        text = " ".join(_remote_text(arg) for arg in params.get("args", []))
        return f"console.{params['type']}: {text}{_where(params.get('stackTrace'))}"
    if method == "Runtime.exceptionThrown":
        return _exception_text(params["exceptionDetails"])
    if method == "Log.entryAdded" and params["entry"].get("level") == "error":
        entry = params["entry"]
        url = entry.get("url", "")
        return f"{entry.get('text', '')}{f' ({_short(url)})' if url else ''}"
    return None


def _remote_text(obj: JsonObject) -> str:
    """A console argument or thrown value as the console prints it (objects by description)."""
    if "value" in obj:
        return str(obj["value"])
    return str(obj.get("description") or obj.get("unserializableValue") or obj.get("type"))


def _exception_text(details: JsonObject) -> str:
    """As the console shows it: "Uncaught (in promise) Error: boom (page.html:3)"."""
    prefix = str(details.get("text", "Uncaught"))
    exception = details.get("exception")
    thrown = _remote_text(exception).splitlines()[0] if exception else ""
    line = details.get("lineNumber")
    url = details.get("url")
    where = f" ({_short(url)}:{line + 1})" if url and line is not None else ""
    return f"{prefix} {thrown}".strip() + where


def _where(stack: JsonObject | None) -> str:
    frames = (stack or {}).get("callFrames") or []
    if not frames:
        return ""
    top = frames[0]
    return f" ({_short(top.get('url', ''))}:{top.get('lineNumber', 0) + 1})"


def _short(url: str) -> str:
    """A URL shortened for a message: data: URIs cut, file: URLs to their file name."""
    if url.startswith("data:"):
        return url[:40] + "…"
    if url.startswith("file://"):
        return url.rsplit("/", 1)[-1]
    return url
