"""A device's id: what a lab means by the drive, never its place among the ``--dut`` options.

One definition, used wherever a device is named (test ids, results.json, the database,
junit, CSV, resume and baseline pairing): on this machine the drive's serial (an NVMe
namespace's ``SERIAL-n2``, a partition's ``SERIAL-p1``), else the name of its node
(``loop3``, ``disk.img``); on a test host the same after the host as the address writes
it, with its port unless 22 (``rig7-SERIAL``, ``127.0.0.1_2222-loop10``).  Scratch devices
have no identity that outlasts the session: ``scratch``, ``scratch-2``.  Every id holds only
``[A-Za-z0-9._-]``, which pytest ids, file names and junit properties all take.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from pytest_ssd.errors import ConfigError

SCRATCH = "scratch"
#: what a test id, a file name and a junit property name all take
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: an NVMe namespace's kernel name: its namespace number, for a run that did not record nsid
_NVME_NAME = re.compile(r"^nvme\d+(?:c\d+)?n(\d+)")
_SSH_PORT = "22"
#: what ``--collect-only`` (which opens no device) says of the ids it shows
UNOPENED = (
    "--collect-only opens no device: this machine's devices are identified without a lock"
    " for their ids, a test host's (not reached) are named by host and path"
)


def safe(text: str) -> str:
    """*text* with each run of characters a test id cannot hold as one ``_``."""
    return _UNSAFE.sub("_", text).strip("_") or "_"


def host_part(label: str) -> str:
    """A test host's label (``host``, ``host:port``) as ids write it: port 22 left out."""
    host, colon, port = label.rpartition(":")
    if colon and port == _SSH_PORT and (":" not in host or host.endswith("]")):
        label = host
    return safe(label)


def identity_key(identity: Mapping[str, Any], host: str | None = None) -> str:
    """The id of the drive *identity* describes (a :meth:`DeviceIdentity.as_dict`, as read
    or as a run recorded it), in test host *host* (its label; None: this machine)."""
    serial = identity.get("serial")
    if serial:
        name = safe(str(serial)) + _namespace(identity) + _partition(identity)
    else:
        path = str(identity.get("path") or "")
        name = safe(PurePosixPath(path).name or path)
    return f"{host_part(host)}-{name}" if host else name


def recorded_key(description: Mapping[str, Any]) -> str:
    """The id of a device from its description (``Dut.describe``, as results.json and the
    database keep it): its identity's, or the id a scratch device was given."""
    if description.get("scratch"):
        return str(description.get("id"))
    return identity_key(description.get("identity") or {}, description.get("host"))


def _namespace(identity: Mapping[str, Any]) -> str:
    """``-n<nsid>`` for an NVMe namespace: one controller's namespaces share its serial."""
    nsid = identity.get("nsid")
    if nsid is None and identity.get("transport") == "nvme":
        found = _NVME_NAME.match(str(identity.get("kernel_name") or ""))
        nsid = found.group(1) if found else None
    return f"-n{nsid}" if nsid is not None else ""


def _partition(identity: Mapping[str, Any]) -> str:
    """``-p<n>`` for a partition: it carries its disk's serial."""
    number = identity.get("partition")
    return f"-p{number}" if number else ""


def device_ids(named: Sequence[tuple[str, str | None]], *, opened: bool = True) -> list[str]:
    """Each ``--dut``'s id in order (*named*: the option as given and its drive's key, None
    for a scratch device).  Two that come out the same refuse the run in one line; in a run
    that opens no device (not *opened*: ``--collect-only``) the second is numbered instead
    (``disk``, ``disk-2``)."""
    ids: list[str] = []
    given: dict[str, str] = {}
    scratch = 0
    for raw, drive in named:
        if drive is None:
            scratch += 1
        base = drive or (SCRATCH if scratch == 1 else f"{SCRATCH}-{scratch}")
        key, n = base, 1
        while key in given and not opened:
            n += 1
            key = f"{base}-{n}"
        if key in given:
            raise ConfigError(
                f"--dut={given[key]} and --dut={raw} are both device {key} (a device is named"
                " by its host and serial, else its host and node name): two drives reporting"
                " one serial, or two files of one name; measure them in separate runs or"
                " rename one"
            )
        given[key] = raw
        ids.append(key)
    return ids
