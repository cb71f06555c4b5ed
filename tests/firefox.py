"""Open pages in headless Firefox over WebDriver BiDi and see what a reader would see.

Why BiDi: it is the protocol Firefox speaks natively (its CDP support is gone), and it
reports every console entry and JavaScript error (``log.entryAdded``) and every request a
page makes (``network.beforeRequestSent``) as events, from the moment a page starts to load.
It runs over a websocket: the small client here (handshake, masked text frames out, frames in)
keeps the tests free of a websocket dependency.

Firefox is started with ``--remote-debugging-port=0`` (it picks a free port and prints
``WebDriver BiDi listening on ws://127.0.0.1:PORT``) and a fresh throw-away profile, in its
own process group; the group is killed when the check ends, also on a timeout or an error,
so no content process outlives a test.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tests.browser import EventLog, JsonObject, first_on_path, start_in_group

BROWSERS = ("firefox-esr", "firefox")
#: the Debian package that provides it
PACKAGE = "firefox-esr"
LISTENING = re.compile(rb"WebDriver BiDi listening on (ws://[\d.]+:\d+)")
CLOSE_TIMEOUT = 5.0


class FirefoxError(RuntimeError):
    """Firefox could not be started, died, or did not answer in time."""


def find_firefox() -> str | None:
    """The first Firefox on PATH, or None."""
    return first_on_path(BROWSERS)


class _WebSocket:
    """A websocket client on a socket (RFC 6455): text frames, masked out, unmasked in."""

    def __init__(self, url: str, deadline: float) -> None:
        parsed = urlparse(url)
        self.deadline = deadline
        self.sock = socket.create_connection((parsed.hostname, parsed.port), timeout=5)
        self._buffer = b""
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {parsed.path or '/'} HTTP/1.1\r\nHost: {parsed.netloc}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        while b"\r\n\r\n" not in self._buffer:
            self._buffer += self._read(4096, "the websocket handshake")
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise FirefoxError(f"websocket refused: {head.decode(errors='replace')[:200]}")

    def send(self, text: str) -> None:
        self._frame(0x1, text.encode())

    def _frame(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self, what: str) -> str:
        """The next text message (fragments joined; pings answered)."""
        message = b""
        while True:
            first, second = self._exactly(2, what)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._exactly(2, what))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._exactly(8, what))[0]
            payload = self._exactly(size, what)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise FirefoxError(f"the browser closed the connection while waiting for {what}")
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1):
                message += payload
                if first & 0x80:
                    return message.decode()

    def _exactly(self, size: int, what: str) -> bytes:
        while len(self._buffer) < size:
            self._buffer += self._read(1 << 16, what)
        chunk, self._buffer = self._buffer[:size], self._buffer[size:]
        return chunk

    def _read(self, size: int, what: str) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise FirefoxError(f"timed out waiting for {what}")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(size)
        except TimeoutError as exc:
            raise FirefoxError(f"timed out waiting for {what}") from exc
        if not chunk:
            raise FirefoxError(f"the browser went away while waiting for {what}")
        return chunk


class Bidi(EventLog):
    """A WebDriver BiDi session: commands answered by id, every event kept in ``events``."""

    def __init__(self, ws: _WebSocket) -> None:
        super().__init__()
        self.ws = ws
        self._next_id = 0

    def send(self, method: str, params: JsonObject | None = None) -> JsonObject:
        """Send one command and wait for its result (FirefoxError if it fails)."""
        self._next_id += 1
        self.ws.send(json.dumps({"id": self._next_id, "method": method, "params": params or {}}))
        while True:
            reply = self._receive(method)
            if reply.get("id") == self._next_id:
                break
        if reply.get("type") == "error":
            raise FirefoxError(f"{method}: {reply.get('error')}: {reply.get('message')}")
        result: JsonObject = reply.get("result", {})
        return result

    def _receive(self, what: str) -> JsonObject:
        message: JsonObject = json.loads(self.ws.receive(what))
        if message.get("type") == "event":
            self.events.append(message)
        return message


@dataclass(frozen=True)
class Tab:
    """A browsing context of a :class:`Bidi` session, with what a test does in it."""

    bidi: Bidi
    context: str

    def load(self, url: str) -> None:
        """Navigate and wait until the page has loaded (its load event)."""
        self.bidi.send(
            "browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"}
        )

    def evaluate(self, expression: str) -> Any:
        """Run *expression* (may return a promise) in the page; its value, through JSON."""
        reply = self.bidi.send(
            "script.evaluate",
            {
                "expression": f"Promise.resolve({expression}).then((v) => JSON.stringify(v))",
                "target": {"context": self.context},
                "awaitPromise": True,
            },
        )
        if reply.get("type") != "success":
            details = reply.get("exceptionDetails", {})
            raise FirefoxError(f"script failed: {details.get('text', reply)}")
        return json.loads(reply["result"]["value"])

    def hover(self, x: float, y: float) -> None:
        """Move the mouse to (x, y) CSS px of the viewport, as a reader's pointer does."""
        move = {"type": "pointerMove", "x": round(x), "y": round(y), "origin": "viewport"}
        pointer = {"type": "pointer", "id": "mouse", "actions": [move]}
        pointer["parameters"] = {"pointerType": "mouse"}
        self.bidi.send("input.performActions", {"context": self.context, "actions": [pointer]})

    def console_errors(self) -> list[str]:
        """The console errors and uncaught JavaScript errors this tab logged, in order."""
        return [
            f"{params.get('type')}: {params.get('text')}"
            for params in self._events("log.entryAdded")
            if params.get("level") == "error"
        ]

    def requests(self) -> list[str]:
        """The URL of every request this tab made (pages, scripts, images, fetches)."""
        return [params["request"]["url"] for params in self._events("network.beforeRequestSent")]

    def _events(self, method: str) -> list[JsonObject]:
        found = []
        for event in self.bidi.events:
            params = event.get("params", {})
            context = params.get("source", {}).get("context", params.get("context"))
            if event.get("method") == method and context == self.context:
                found.append(params)
        return found


def _wait_for_address(proc: subprocess.Popen[bytes], log: Path, deadline: float) -> str:
    """The websocket address Firefox prints once its BiDi server listens."""
    while time.monotonic() < deadline:
        found = LISTENING.search(log.read_bytes())
        if found:
            return found.group(1).decode() + "/session"
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    said = log.read_text(errors="replace").strip()[-2000:]
    raise FirefoxError(f"Firefox did not start its BiDi server; it said:\n{said}")


@contextlib.contextmanager
def firefox_tab(
    browser: str, timeout: float, width: int = 1280, height: int = 800
) -> Iterator[Tab]:
    """Headless Firefox with a fresh profile, a BiDi session subscribed to console and
    network events, and its first tab *width* × *height*; the process group killed on exit."""
    deadline = time.monotonic() + timeout
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="ssd-firefox-", ignore_cleanup_errors=True)
        )
        profile, log = Path(tmp) / "profile", Path(tmp) / "firefox.log"
        profile.mkdir()
        argv = [browser, "--headless", "--remote-debugging-port=0", "--profile", str(profile)]
        argv += ["--no-remote", "about:blank"]
        proc = start_in_group(argv, log, env={**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"})
        stack.callback(_close, proc)
        ws = _WebSocket(_wait_for_address(proc, log, deadline), deadline)
        stack.callback(ws.sock.close)
        bidi = Bidi(ws)
        bidi.send("session.new", {"capabilities": {}})
        bidi.send("session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]})
        context = bidi.send("browsingContext.getTree", {"maxDepth": 0})["contexts"][0]
        tab = Tab(bidi, str(context["context"]))
        viewport = {"width": width, "height": height}
        bidi.send("browsingContext.setViewport", {"context": tab.context, "viewport": viewport})
        yield tab


def _close(proc: subprocess.Popen[bytes]) -> None:
    """Kill Firefox's process group (also after its leader is reaped: a group id is not
    reused while any member lives, and when none does the kill finds nothing)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=CLOSE_TIMEOUT)
