"""A real OpenSSH server on 127.0.0.1 for the tests: its own keys, port and config.

Nothing of the machine's ssh set-up is used or changed: the host key, the
client key, ``authorized_keys``, ``known_hosts`` and an ssh_config (``ssh -F``)
naming them are generated in a folder of the test's.  Only ever 127.0.0.1.

What its logins start is the test's, and found as such (``tests/own.py``): every login
carries the server's own tag in its environment (sshd's ``SetEnv``), and the host's
``mktemp`` records each folder it makes in the server's folder.
"""

from __future__ import annotations

import contextlib
import os
import shlex
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
from tests.own import TAG_ENV, new_tag, tagged, untagged_env

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 20.0
#: a root login's PATH (Debian's sshd)
LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: the host's ``mktemp``: the real one, and each path it made recorded (:meth:`Sshd.made`)
MKTEMP = """#!/bin/sh
made=$({real} "$@") || exit $?
printf '%s\\n' "$made" >> {record}
printf '%s\\n' "$made"
"""


@dataclass(frozen=True)
class Sshd:
    """A running server: where it listens and the ssh_config that reaches it."""

    port: int
    config: Path
    folder: Path
    #: every login's tag (:data:`tests.own.TAG_ENV`): what they start carries it ("": the
    #: host is not this machine, as a QEMU guest)
    tag: str = ""

    def url(self, path: str, user: str = "root") -> str:
        return f"ssh://{user}@127.0.0.1:{self.port}{path}"

    def device_id(self, node: Path) -> str:
        """The id of a device without a serial reached through this server (a loop device):
        its host as the address writes it, its port, and its node's name."""
        return f"127.0.0.1_{self.port}-{node.name}"

    def logins(self) -> int:
        """How many times a client logged in (sshd's log: one line per authentication)."""
        return (self.folder / "sshd.log").read_text().count("Accepted publickey")

    def processes(self) -> dict[int, str]:
        """What this server's logins started that still runs: pid -> command line."""
        return tagged(self.tag) if self.tag else {}

    def made(self) -> list[str]:
        """The folders (and files) the host's ``mktemp`` made for this server's logins."""
        record = self.folder / "made"
        return record.read_text().splitlines() if record.exists() else []

    def left(self) -> list[str]:
        """What this server's logins started that is still there: processes and folders."""
        running = [f"{pid} {cmdline}" for pid, cmdline in self.processes().items()]
        return running + [path for path in self.made() if os.path.lexists(path)]

    def settled(self, seconds: float = 20) -> list[str]:
        """:meth:`left` once nothing is, or after *seconds* (a host's processes end on EOF)."""
        deadline = time.monotonic() + seconds
        while (left := self.left()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

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
def local_sshd(
    folder: Path, options: str = "", max_sessions: int = 64, path: str = LOGIN_PATH
) -> Iterator[Sshd]:
    """Start sshd on a free 127.0.0.1 port; stopped when the block ends (skip without sshd).

    *options* are more lines of its sshd_config (not ``SetEnv``: sshd takes the first
    only); *max_sessions* its ``MaxSessions`` (sshd's own default is 10); *path* the
    logins' ``PATH`` (after the folder of the recording ``mktemp``).
    """
    if not Path(SSHD).exists() or shutil.which("ssh") is None:
        pytest.skip("no OpenSSH here (apt-get install openssh-server openssh-client)")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    host_pub = keygen(folder / "host_key")
    (folder / "authorized_keys").write_text(keygen(folder / "client_key") + "\n")
    port = free_port()
    tag = new_tag()
    (folder / "bin").mkdir(exist_ok=True)
    real = shutil.which("mktemp", path=LOGIN_PATH)
    assert real is not None, "coreutils' mktemp"
    (folder / "bin" / "mktemp").write_text(
        MKTEMP.format(real=shlex.quote(real), record=shlex.quote(str(folder / "made")))
    )
    (folder / "bin" / "mktemp").chmod(0o755)
    (folder / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"MaxSessions {max_sessions}\nMaxStartups 64\nLogLevel VERBOSE\n"
        f"SetEnv {TAG_ENV}={tag} PATH={folder / 'bin'}:{path}\n" + options
    )
    config = ssh_config(folder, port, host_pub)
    with _serving(folder, port):
        yield Sshd(port, config, folder, tag)


@contextlib.contextmanager
def _serving(folder: Path, port: int) -> Iterator[None]:
    """sshd of *folder*'s sshd_config, listening on *port* until the block ends."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    with (folder / "sshd.log").open("ab") as log:
        server = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(folder / "sshd_config")],
            stdout=log,
            stderr=log,
            env=untagged_env(),  # it outlives the test that started it: not that test's
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
    killed (only this server's); the other processes its logins had started (by its tag:
    also those that left its tree), pid: name (:func:`end_left` ends those still there once
    the caller is done)."""
    started = {pid: _command(pid) for pid in server.processes()}
    tree = _descendants(int((server.folder / "sshd.pid").read_text()))
    for pid in tree:
        if _command(pid).startswith("sshd"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    # a process that ended while they were read has no name left: it did not survive
    return {pid: name for pid, name in started.items() if name}


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
