"""One OpenSSH connection to a test host, shared by every command sent there.

The system ``ssh`` with ``BatchMode=yes`` (no password or host-key prompt, ever)
and the user's ``~/.ssh/config`` and known_hosts (or the file given as *config*).
:meth:`Ssh.open` starts a master connection (``-M -N``) that this process owns:
it dies with the session, so no ssh is left behind, and every later command is
multiplexed over it (``ControlPath``), a new channel instead of a new login.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.address import SshAddress
from pytest_ssd.proc.runner import Background, Completed, run, spawn, which

SSH_INSTALL_HINT = "install openssh-client (apt-get install openssh-client)"
#: seconds ssh may take to reach a host
CONNECT_TIMEOUT_S = 10
#: how long :meth:`Ssh.open` waits for the master connection to answer
OPEN_TIMEOUT_S = 30.0
#: ssh's own exit code for its failures (the remote command's are passed through)
SSH_FAILED = 255


@dataclass
class Ssh:
    """Commands on the host of *address*, over one master connection."""

    address: SshAddress
    #: a short folder of this session's (a unix socket path holds at most 107 bytes)
    control_dir: Path
    #: an ssh_config file to use instead of ``~/.ssh/config`` (``ssh -F``)
    config: Path | None = None
    _master: Background | None = field(default=None, repr=False)

    @property
    def control_path(self) -> Path:
        port = self.address.port or 22
        return self.control_dir / f"{self.address.user or ''}@{self.address.host}:{port}"

    def _base(self, *extra: str) -> list[str]:
        argv = [which("ssh", SSH_INSTALL_HINT)]
        if self.config is not None:
            argv += ["-F", str(self.config)]
        argv += [
            *("-o", "BatchMode=yes"),
            *("-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"),
            *("-o", f"ControlPath={self.control_path}"),
            *extra,
        ]
        if self.address.port:
            argv += ["-p", str(self.address.port)]
        return [*argv, "--", self.address.destination]

    def open(self) -> None:
        """Log in once (the master connection) or raise a one-line :class:`DeviceError`."""
        if self.alive:
            return
        self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.control_path.unlink(missing_ok=True)
        argv = self._base("-M", "-N", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
        self._master = spawn(argv, artifacts=self.control_dir, name="master")
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while not self.control_path.exists():
            if not self._master.alive() or time.monotonic() > deadline:
                done = self._master.kill()
                raise DeviceError(f"{self.where}: {done.last_error_line()}")
            time.sleep(0.05)

    @property
    def where(self) -> str:
        return f"ssh {self.address.destination}" + (
            f" port {self.address.port}" if self.address.port else ""
        )

    @property
    def alive(self) -> bool:
        """True while the master connection runs."""
        return self._master is not None and self._master.alive()

    def command(self, argv: Sequence[str]) -> list[str]:
        """The local argv that runs *argv* on the host (quoted for its shell)."""
        return [*self._base("-o", "ControlMaster=no"), shlex.join(argv)]

    def run(self, argv: Sequence[str], *, timeout: float, stdin: str | None = None) -> Completed:
        """Run *argv* on the host; :class:`DeviceError` when ssh itself failed (exit 255)."""
        done = run(self.command(argv), timeout=timeout, stdin=stdin, name="ssh")
        if done.returncode == SSH_FAILED:
            raise DeviceError(f"{self.where}: {done.last_error_line()} (running {argv[0]})")
        return Completed(tuple(argv), done.returncode, done.stdout, done.stderr, done.seconds)

    def close(self) -> None:
        """End the master connection (and with it every channel still open)."""
        if self._master is not None:
            self._master.kill()
            self._master = None
        self.control_path.unlink(missing_ok=True)
