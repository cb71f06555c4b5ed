"""What a held command on a host runs over: a session channel, or a socket to the host's agent.

:class:`Piped` is a local ``ssh`` process (a session channel of the master: sshd
counts it against ``MaxSessions``); :class:`Socketed` is a connection to the
host's agent through the master's forward of its socket (:mod:`.agent`: a
``direct-streamlocal`` channel, which sshd does not count).  Both keep what the
command prints in ``<name>.stdout`` of their artifacts folder, where
:class:`~.ssh.Held` reads its marks.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_ssd.proc.runner import Background, Completed

#: how long connecting to the agent's forwarded socket may take
CONNECT_TIMEOUT_S = 30.0
#: how long the reader may take to finish once the connection is shut
READER_JOIN_S = 5.0


class Channel(Protocol):
    """What :class:`~.ssh.Held` needs of what its command runs over."""

    @property
    def out(self) -> Path:
        """The file its command's output goes to."""

    def alive(self) -> bool:
        """True while the command may still print (its channel is open)."""

    def send(self, data: bytes) -> bool:
        """Write *data* to the command's input (False: it is closed)."""

    def end_input(self) -> None:
        """Close the command's input: it learns it is to end."""

    def ended(self, timeout: float) -> None:
        """Wait at most *timeout* for the command to end by itself."""

    def kill(self) -> Completed:
        """End the channel now; how the command ended."""


@dataclass
class Piped:
    """A local ``ssh`` running the command on a session channel (:func:`~.runner.spawn`)."""

    process: Background

    @property
    def out(self) -> Path:
        return self.process.artifacts / f"{self.process.name}.stdout"

    def alive(self) -> bool:
        return self.process.alive()

    def send(self, data: bytes) -> bool:
        stdin = self.process.proc.stdin
        if stdin is None:
            return False
        try:
            stdin.write(data)
            stdin.flush()
        except OSError:
            return False
        return True

    def end_input(self) -> None:
        stdin = self.process.proc.stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()

    def ended(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.proc.wait(timeout)

    def kill(self) -> Completed:
        return self.process.kill()


@dataclass
class Socketed:
    """A connection to the host's agent (its forwarded socket *path* here) running *argv*.

    A thread copies what the command prints to :attr:`out` until the connection ends.
    """

    argv: tuple[str, ...]
    artifacts: Path
    name: str
    _sock: socket.socket = field(repr=False)
    _reader: threading.Thread = field(repr=False)
    _started: float = field(default_factory=time.monotonic, repr=False)

    @classmethod
    def connect(cls, path: Path, argv: tuple[str, ...], *, artifacts: Path, name: str) -> Socketed:
        """Ask the agent behind *path* to run *argv* (the first line: NUL-separated, in hex).

        Raises :class:`OSError` when the socket cannot be reached.
        """
        artifacts.mkdir(parents=True, exist_ok=True)
        out = artifacts / f"{name}.stdout"
        out.write_bytes(b"")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(str(path))
            sock.settimeout(None)
            sock.sendall("\0".join(argv).encode().hex().encode() + b"\n")
        except BaseException:
            sock.close()
            raise
        reader = threading.Thread(target=_copy, args=(sock, out), name=f"ssd-{name}", daemon=True)
        reader.start()
        return cls(argv, artifacts, name, sock, reader)

    @property
    def out(self) -> Path:
        return self.artifacts / f"{self.name}.stdout"

    def alive(self) -> bool:
        return self._reader.is_alive()

    def send(self, data: bytes) -> bool:
        try:
            self._sock.sendall(data)
        except OSError:
            return False
        return True

    def end_input(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)

    def ended(self, timeout: float) -> None:
        self._reader.join(timeout)

    def kill(self) -> Completed:
        by_itself = not self.alive()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(READER_JOIN_S)
        self._sock.close()
        text = self.out.read_text(errors="replace")
        seconds = time.monotonic() - self._started
        return Completed(self.argv, 0 if by_itself else -9, text, "", seconds)


def _copy(sock: socket.socket, out: Path) -> None:
    """Append what *sock* receives to *out* until the connection ends."""
    with out.open("ab") as fh, contextlib.suppress(OSError):
        while data := sock.recv(65536):
            fh.write(data)
            fh.flush()
