"""One OpenSSH connection to a test host, shared by every command sent there.

The system ``ssh`` with ``BatchMode=yes`` (no password or host-key prompt, ever)
and the user's ``~/.ssh/config`` and known_hosts (or the file given as *config*).
:meth:`Ssh.open` starts a master connection (``-M -N``) that this process owns:
it dies with the session, so no ssh is left behind, and every later command is
multiplexed over it (``ControlPath``), a new channel instead of a new login.
An xdist worker owns none: its :class:`Ssh` names the controller's master
(*master*) and the controller's channel budget (*slots*), and never logs in.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import DeviceError, SsdError, ToolError
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.machine.held import MARK, Held, Mark, marks, ready_held, spawn_lasting
from pytest_ssd.machine.slots import Slots
from pytest_ssd.machine.stream import Piped, Socketed
from pytest_ssd.proc.folders import pid_folder
from pytest_ssd.proc.runner import Background, Completed, run, which

#: :mod:`.held`'s names the transport's modules import from here
__all__ = ["MARK", "Held", "Mark", "marks"]

SSH_INSTALL_HINT = "install openssh-client (apt-get install openssh-client)"
#: seconds ssh may take to reach a host
CONNECT_TIMEOUT_S = 10
#: how long :meth:`Ssh.open` waits for the master connection to answer
OPEN_TIMEOUT_S = 30.0
#: ssh's own exit code for its failures (the remote command's are passed through)
SSH_FAILED = 255
#: how long a master connection that is ending (its host's sshd gone) may take to exit
LOST_GRACE_S = 1.0
#: channels of short commands (:meth:`Ssh.run`) open at once on one connection, by every
#: process of the session together: with the held ones (a host's locks, its tuning, its
#: agent) under sshd's default MaxSessions 10
RUN_CHANNELS = 6
#: what ssh prints when the master refused it a channel (sshd's MaxSessions)
REFUSED = "mux_client_request_session"
#: a command is never a login of its own: without the master, ssh would connect through this
NO_SECOND_LOGIN = "ProxyCommand=false"
#: the exit code of a host script that found a program it needs missing (:func:`need`)
MISSING = 90
#: the package (Debian's name) each program the host's scripts need comes in
PACKAGES = {
    "cat": "coreutils",
    "head": "coreutils",
    "id": "coreutils",
    "readlink": "coreutils",
    "stat": "coreutils",
    "tr": "coreutils",
    "find": "findutils",
    "xargs": "findutils",
    "grep": "grep",
    "flock": "util-linux",
    "wipefs": "util-linux",
}


#: a folder whose path ssh takes as it is (no blank, no ``%`` token, no quote)
_PLAIN = re.compile(r"/[A-Za-z0-9_./-]*")
#: the longest base folder for control sockets: a socket path holds at most 107 bytes
_SHORT = 40


#: a control folder's name: this prefix, the process's pid, a dash and mkdtemp's random part
CONTROL_PREFIX = "ssd-"


def control_folder() -> Path:
    """A new 0700 folder for a session's control sockets, with a short and plain path.

    Directly under ``$XDG_RUNTIME_DIR`` when that is short and plain, else under
    ``/tmp``; never under ``$TMPDIR``, which may be long or hold blanks (a unix
    socket's path holds 107 bytes; ssh splits its options at blanks and expands
    ``%`` tokens).  Named for this process: the caller removes it, and the next session
    the folders of sessions that were killed (:func:`pytest_ssd.proc.folders.sweep_stale`).
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    plain = len(runtime) <= _SHORT and _PLAIN.fullmatch(runtime) is not None
    base = runtime if plain and os.access(runtime, os.W_OK | os.X_OK) else "/tmp"
    return pid_folder(Path(base), CONTROL_PREFIX)


def ssh_path(path: Path) -> str:
    """*path* as an ssh option's value: ``%`` written ``%%`` (ssh expands ``%`` tokens there)."""
    return str(path).replace("%", "%%")


def resolve(address: HostAddress, config: Path | None = None) -> str:
    """``user@hostname:port`` as ssh itself resolves *address* (``ssh -G``, the config applied).

    ``root@lab-07`` and ``lab-07`` with ``User root`` in the config are one host: one key.
    """
    argv = [which("ssh", SSH_INSTALL_HINT), *(["-F", str(config)] if config else []), "-G"]
    argv += [*(["-p", str(address.port)] if address.port else []), "--", address.destination]
    done = run(argv, timeout=OPEN_TIMEOUT_S)
    said = dict(line.partition(" ")[::2] for line in done.stdout.splitlines())
    if done.returncode != 0 or not {"user", "hostname", "port"} <= said.keys():
        where = f"ssh {address.destination}"
        raise DeviceError(f"{where}: ssh -G cannot resolve it: {done.last_error_line()}")
    return f"{said['user']}@{said['hostname']}:{said['port']}"


def need(*programs: str) -> str:
    """A line of ``sh`` that ends the script (exit :data:`MISSING`) naming a missing program."""
    return (
        f'for c in {" ".join(programs)}; do command -v "$c" >/dev/null 2>&1 ||'
        f' {{ echo "{MARK}missing $c"; exit {MISSING}; }}; done'
    )


def check_missing(done: Completed, where: str) -> None:
    """Raise a one-line :class:`ToolError` when a script of :func:`need` found a program missing."""
    name = marks(done.stdout).get("missing") if done.returncode == MISSING else None
    if name:
        package = PACKAGES.get(name, name)
        raise ToolError(
            f"{name} is not installed on {where}: install {package} (apt-get install {package})"
        )


@dataclass
class Ssh:
    """Commands on the host of *address*, over one master connection."""

    address: HostAddress
    #: a short folder of this connection's own (:func:`control_folder`), removed by
    #: :meth:`close` (a unix socket path holds at most 107 bytes)
    control_dir: Path
    #: an ssh_config file to use instead of ``~/.ssh/config`` (``ssh -F``)
    config: Path | None = None
    #: the socket of the master another process of the session owns (an xdist worker's
    #: connection: the controller's); None: this one opens its own
    master: Path | None = None
    #: the short channels every process of the session may have open at once here
    #: (None: this connection's own, in its folder)
    slots: Slots | None = None
    #: the host's agent's socket, forwarded here (:mod:`.agent`): what lasts goes through it
    agent: Path | None = None
    _master: Background | None = field(default=None, repr=False)

    @property
    def budget(self) -> Slots:
        return self.slots or Slots(self.control_dir / "slots", RUN_CHANNELS)

    @property
    def control_path(self) -> Path:
        """The master's socket: one per connection folder, so a short fixed name."""
        return self.master or self.control_dir / "master.sock"

    def _base(self, *extra: str) -> list[str]:
        argv = [which("ssh", SSH_INSTALL_HINT)]
        if self.config is not None:
            argv += ["-F", str(self.config)]
        argv += [
            *("-o", "BatchMode=yes"),
            *("-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"),
            *("-o", f"ControlPath={ssh_path(self.control_path)}"),
            *extra,
        ]
        if self.address.port:
            argv += ["-p", str(self.address.port)]
        return [*argv, "--", self.address.destination]

    def open(self) -> None:
        """Log in once (the master connection) or raise a one-line :class:`DeviceError`.

        A connection over another process's master (*master*) logs in never: its
        master must be there.
        """
        if self.alive:
            return
        self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.master is not None:
            if not self.master.is_socket():
                raise DeviceError(f"{self.where}: the session's master connection is gone")
            return
        self.budget.prepare()
        self.control_path.unlink(missing_ok=True)
        argv = self._base(
            "-M",
            "-N",
            *("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"),
            # a forwarded socket (fio's server) replaces a stale one; only we may use it
            *("-o", "StreamLocalBindUnlink=yes", "-o", "StreamLocalBindMask=0177"),
        )
        self._master = spawn_lasting(argv, artifacts=self.control_dir, name="master")
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while not self.control_path.exists():
            if not self._master.alive() or time.monotonic() > deadline:
                said = self._master.kill().last_error_line()
                self.close()
                raise DeviceError(f"{self.where}: {said}")
            time.sleep(0.05)
        checked = run(self._base("-O", "check"), timeout=OPEN_TIMEOUT_S)
        if checked.returncode != 0:  # every command goes through it: it must answer
            self.close()
            raise DeviceError(f"{self.where}: the master connection does not answer")

    @property
    def where(self) -> str:
        return f"ssh {self.address.destination}" + (
            f" port {self.address.port}" if self.address.port else ""
        )

    @property
    def alive(self) -> bool:
        """True while the master connection this process owns runs."""
        return self._master is not None and self._master.alive()

    def lost(self, grace: float) -> bool:
        """The master connection this process opened has ended by itself (the host's sshd went
        away, the host with it), waiting up to *grace* for a master that is ending."""
        master = self._master
        if master is None:  # never opened here, or closed by :meth:`close`
            return False
        deadline = time.monotonic() + grace
        while master.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _mux(self, *extra: str) -> list[str]:
        """ssh's argv for a channel of the master, never a login of its own (:meth:`command`)."""
        return self._base("-o", "ControlMaster=no", "-o", NO_SECOND_LOGIN, *extra)

    def command(self, argv: Sequence[str]) -> list[str]:
        """The local argv that runs *argv* on the host (quoted for its shell).

        A channel of the master or nothing: were the master gone or to refuse the
        channel (sshd's ``MaxSessions``), ssh would silently log in once more; its
        ``ProxyCommand`` then fails instead (:meth:`refused` tells it).
        """
        return [*self._mux(), shlex.join(argv)]

    def refused(self, stderr: str, what: str) -> str:
        """One line: why ssh ran no *what* (exit 255), naming a channel the master refused."""
        if REFUSED in stderr:
            return (
                f"{self.where}: the master connection refused a channel for {what} (sshd's"
                " MaxSessions); pytest-ssd opens no second login"
            )
        lines = [line for line in stderr.splitlines() if line.strip()]
        said = lines[-1] if lines else "ssh failed"
        return f"{self.where}: {said} (running {what})"

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: str | None = None,
        artifacts: Path | None = None,
        name: str | None = None,
    ) -> Completed:
        """Run *argv* on the host; :class:`DeviceError` when ssh itself failed (exit 255).

        At most :data:`RUN_CHANNELS` of them at once on this connection, all processes
        of the session together (:class:`~.slots.Slots`: the others wait their turn).
        """
        with self.budget.take():
            done = run(
                self.command(argv),
                timeout=timeout,
                stdin=stdin,
                artifacts=artifacts,
                name=name or Path(argv[0]).name,
            )
        if done.returncode == SSH_FAILED:
            raise DeviceError(self.refused(done.stderr, argv[0]))
        check_missing(done, self.where)
        return Completed(tuple(argv), done.returncode, done.stdout, done.stderr, done.seconds)

    def hold(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        """Start *argv* on the host and wait for its mark *ready*: held, or how it ended."""
        process = spawn_lasting(self.command(argv), artifacts=artifacts, name=name, stdin=True)
        return ready_held(Piped(process), ready, timeout)

    def stream(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        """:meth:`hold` through the host's agent: a forwarded socket, no session channel.

        sshd counts no forwarded channel against ``MaxSessions``: what lasts the session
        in every process (a fio server each) goes this way.  Without an agent (a host
        without perl) it is :meth:`hold`.
        """
        if self.agent is None:
            return self.hold(argv, artifacts=artifacts, name=name, ready=ready, timeout=timeout)
        try:
            channel = Socketed.connect(self.agent, tuple(argv), artifacts=artifacts, name=name)
        except OSError as exc:
            raise DeviceError(f"{self.where}: its agent cannot be reached: {exc}") from None
        return ready_held(channel, ready, timeout)

    def cancel(self, local: Path, remote: str) -> None:
        """Stop forwarding *local* (:meth:`forward`): the master holds no socket of a gone user."""
        forward = f"{ssh_path(local)}:{remote}"
        with contextlib.suppress(SsdError):
            run(self._base("-O", "cancel", "-L", forward), timeout=OPEN_TIMEOUT_S)
        local.unlink(missing_ok=True)

    def forward(self, local: Path, remote: str) -> None:
        """Make unix socket *local* here reach socket *remote* on the host (the master forwards)."""
        forward = f"{ssh_path(local)}:{remote}"
        done = run(self._base("-O", "forward", "-L", forward), timeout=OPEN_TIMEOUT_S)
        if done.returncode != 0:
            raise DeviceError(f"{self.where}: cannot forward {local}: {done.last_error_line()}")

    def close(self) -> None:
        """End the master connection this process owns (and with it every channel still open);
        a worker's connection leaves the controller's master as it is."""
        if self._master is not None:
            self._master.kill()
            self._master = None
        # this connection's folder: its socket, forwarded sockets and the master's output
        shutil.rmtree(self.control_dir, ignore_errors=True)
