"""``--dut=ssh://[user@]host[:port]/dev/nvme0n1``: a device on a test host."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pytest_ssd.errors import ConfigError

SCHEME = "ssh://"
#: host names and IPv4/IPv6 literals; nothing that ssh would read as an option
_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]-]+$")
_USER = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class HostAddress:
    """Where a remote device is: user, host and port for ssh, and its path there."""

    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def destination(self) -> str:
        """``user@host`` (or ``host``) as ssh takes it."""
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def label(self) -> str:
        """The host as labels show it: ``host`` or ``host:port``."""
        return f"{self.host}:{self.port}" if self.port else self.host


def is_host_address(text: str) -> bool:
    return text.startswith(SCHEME)


def spelled_apart(first: str, again: str) -> bool:
    """``--dut`` texts *first* and *again* name a host's device with two spellings of the
    host (``lab-07`` and ``root@lab-07``, a port given or not)."""
    if not (is_host_address(first) and is_host_address(again)):
        return False
    one, other = parse_address(first), parse_address(again)
    return (one.destination, one.port) != (other.destination, other.port)


def parse_address(text: str) -> HostAddress:
    """The address in *text*, or a one-line :class:`ConfigError` saying what is wrong."""
    where = f"--dut={text}"
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{where}: the port is not a number from 1 to 65535") from None
    host = parts.hostname or ""
    if parts.scheme != "ssh" or not host:
        raise ConfigError(f"{where}: give ssh://[user@]host[:port]/dev/DEVICE")
    if not _HOST.match(host) or host.startswith("-"):
        raise ConfigError(f"{where}: {host!r} is not a host name")
    user = parts.username
    if parts.password is not None:
        raise ConfigError(f"{where}: no password in the address (ssh uses your keys)")
    if user is not None and not _USER.match(user):
        raise ConfigError(f"{where}: {user!r} is not a user name")
    if not parts.path.startswith("/dev/") or parts.query or parts.fragment:
        raise ConfigError(f"{where}: the device path must start with /dev/ (e.g. /dev/nvme0n1)")
    if port == 0:
        raise ConfigError(f"{where}: the port is not a number from 1 to 65535")
    return HostAddress(host=host, path=parts.path, user=user, port=port)
