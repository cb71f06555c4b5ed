"""A test host's device identified exactly as a local one: its sysfs attributes, copied here.

One command prints every attribute :func:`~.identity.identify_block` reads (the
device's and its disk's: size, queue limits, model, serial, firmware, loop
backing) as ``grep -H`` lines; they are written into a small copy of the host's
``/sys`` (the same paths, so the transport is told by the same rules) and
``identify_block`` reads that copy.  NVMe devices are asked ``nvme id-ctrl`` and
``id-ns`` on the host.  The identity names the device by its path on the host.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pytest_ssd.device import nvme
from pytest_ssd.device.identity import DeviceIdentity, identify_block
from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.ssh import MARK, marks, need

#: the attributes identify_block reads, relative to the device ($n) and its disk ($d)
_NODE = ("size", "partition")
_DISK = (
    "queue/logical_block_size",
    "queue/physical_block_size",
    "queue/rotational",
    "queue/discard_max_bytes",
    "queue/scheduler",
    "device/model",
    "device/serial",
    "device/firmware_rev",
    "device/rev",
    "serial",
    "loop/backing_file",
    "loop/dio",
)
READ_TIMEOUT_S = 60.0

#: ``sh -c ATTRIBUTES sh NAME``
ATTRIBUTES = f"""
{need("readlink", "grep")}
n=$(readlink -e "/sys/class/block/$1") || exit 3
d=$n; [ -e "$n/partition" ] && d=${{n%/*}}
echo "{MARK}node $n"
echo "{MARK}disk $d"
grep -H '' {" ".join(f'"$n/{a}"' for a in _NODE)} {" ".join(f'"$d/{a}"' for a in _DISK)} \\
  2>/dev/null
exit 0
"""


def _copy(text: str, root: Path) -> Path:
    """Write the ``grep -H`` lines of *text* under *root*; the device's folder there.

    A line is ``PATH:VALUE`` and sysfs paths hold colons (``pci0000:00``): each line is
    matched against the paths asked for.
    """
    found = marks(text)
    node, disk = found.get("node", ""), found.get("disk", "")
    if not node.startswith("/sys/") or not disk.startswith("/sys/"):
        raise DeviceError(f"the host printed no sysfs folder for the device: {text[:200]!r}")
    asked = [f"{node}/{a}" for a in _NODE] + [f"{disk}/{a}" for a in _DISK]
    for line in text.splitlines():
        path = next((p for p in asked if line.startswith(f"{p}:")), None)
        if path is None:
            continue
        value = line[len(path) + 1 :]
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as fh:
            fh.write(value + "\n")
    copied = root / node.lstrip("/")
    copied.mkdir(parents=True, exist_ok=True)
    return copied


def identify_remote(
    machine: Machine, path: str, kernel_name: str, artifacts: Path | None = None
) -> DeviceIdentity:
    """Identify block device *kernel_name* of *machine*, opened there as *path*."""
    done = machine.run(
        ["sh", "-c", ATTRIBUTES, "sh", kernel_name], timeout=READ_TIMEOUT_S, name="sysfs"
    )
    if done.returncode != 0:
        raise DeviceError(f"{machine.where}: block device {kernel_name} is not in its /sys")
    with tempfile.TemporaryDirectory(prefix="ssd-sysfs-") as tmp:
        root = Path(tmp)
        node = _copy(done.stdout, root)
        link = root / "sys" / "class" / "block" / kernel_name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(node)
        return identify_block(
            Path(path),
            kernel_name,
            sysfs_root=root / "sys",
            query_nvme=lambda device: nvme.query(device, artifacts, machine),
        )
