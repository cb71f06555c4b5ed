"""A real OpenSSH server on 127.0.0.1 for the tests: its own keys, port and config.

Nothing of the machine's ssh set-up is used or changed: the host key, the
client key, ``authorized_keys``, ``known_hosts`` and an ssh_config (``ssh -F``)
naming them are generated in a folder of the test's.  Only ever 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_ssd.machine.address import parse_address
from pytest_ssd.machine.ssh import Ssh

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Sshd:
    """A running server: where it listens and the ssh_config that reaches it."""

    port: int
    config: Path
    folder: Path

    def url(self, path: str, user: str = "root") -> str:
        return f"ssh://{user}@127.0.0.1:{self.port}{path}"

    def logins(self) -> int:
        """How many times a client logged in (sshd's log: one line per authentication)."""
        return (self.folder / "sshd.log").read_text().count("Accepted publickey")

    def client(self, name: str, url: str | None = None) -> Ssh:
        """An :class:`Ssh` to this server (*name* keeps its control socket apart, short)."""
        control = Path(f"/tmp/ssd-ssh-{os.getpid()}-{name[-12:]}")
        return Ssh(parse_address(url or self.url("/dev/null")), control, config=self.config)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def keygen(path: Path) -> str:
    """A new ed25519 key at *path* (no passphrase); its public line."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )
    return path.with_suffix(".pub").read_text().strip()


def ssh_config(folder: Path, port: int, host_pub: str) -> Path:
    """An ssh_config reaching 127.0.0.1:*port* with *folder*'s client key, that host key only."""
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    config = folder / "ssh_config"
    config.write_text(
        f"Host 127.0.0.1\n  IdentityFile {folder / 'client_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {folder / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
    )
    return config


def _banner(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as sock:
        sock.settimeout(2)
        return sock.recv(64).startswith(b"SSH-")
    return False


@contextlib.contextmanager
def one_at_a_time(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """Tests that count what is left on the host take turns, across xdist workers.

    The lock file is in the folder every worker's temporary folder is in.
    """
    with (tmp_path_factory.getbasetemp().parent / f"{name}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def local_sshd(folder: Path, options: str = "", max_sessions: int = 64) -> Iterator[Sshd]:
    """Start sshd on a free 127.0.0.1 port; stopped when the block ends (skip without sshd).

    *options* are more lines of its sshd_config; *max_sessions* its ``MaxSessions``
    (sshd's own default is 10).
    """
    if not Path(SSHD).exists() or shutil.which("ssh") is None:
        pytest.skip("no OpenSSH here (apt-get install openssh-server openssh-client)")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    host_pub = keygen(folder / "host_key")
    (folder / "authorized_keys").write_text(keygen(folder / "client_key") + "\n")
    port = free_port()
    (folder / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"MaxSessions {max_sessions}\nMaxStartups 64\nLogLevel VERBOSE\n" + options
    )
    config = ssh_config(folder, port, host_pub)
    with _serving(folder, port):
        yield Sshd(port, config, folder)


@contextlib.contextmanager
def _serving(folder: Path, port: int) -> Iterator[None]:
    """sshd of *folder*'s sshd_config, listening on *port* until the block ends."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    with (folder / "sshd.log").open("ab") as log:
        server = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(folder / "sshd_config")], stdout=log, stderr=log
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not _banner(port):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(folder / 'sshd.log').read_text()}")
                time.sleep(0.1)
            yield
        finally:
            server.terminate()
            server.wait(timeout=10)


@contextlib.contextmanager
def restarted(server: Sshd) -> Iterator[Sshd]:
    """*server* started again (after :func:`stop`): the same port, keys and config."""
    with _serving(server.folder, server.port):
        yield server


def _children() -> dict[int, list[int]]:
    """Every process's children, by parent pid (from /proc)."""
    found: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rpartition(")")[2].split()
            found.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return found


def _descendants(pid: int) -> list[int]:
    children, found, todo = _children(), [], [pid]
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


def _command(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip()
    return ""


def stop_sshd(server: Sshd) -> dict[int, str]:
    """Stop *server* as a host loses it: its listener and the sshd processes of its connections
    killed (only this server's); the other processes its logins had started, pid: name
    (:func:`end_left` ends those still there once the caller is done)."""
    tree = {
        pid: _command(pid) for pid in _descendants(int((server.folder / "sshd.pid").read_text()))
    }
    for pid, name in tree.items():
        if name.startswith("sshd"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    # a process that ended while the tree was read has no name left: it did not survive
    return {pid: name for pid, name in tree.items() if name and not name.startswith("sshd")}


def end_left(started: dict[int, str], timeout: float) -> list[str]:
    """Give *started* (:func:`stop_sshd`) *timeout* to end by themselves, then kill those
    still running; their names."""
    deadline = time.monotonic() + timeout
    while (left := {p: n for p, n in started.items() if _command(p) == n}) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return [f"{name} ({pid})" for pid, name in left.items()]
