"""What sysfs on a test host says of a disk's link and SCSI device, copied here for the summary.

The device summary reads the PCIe link of an NVMe controller's PCI function,
the SATA link of a libata port and the SCSI device's vendor and cache type by
walking up from the disk's ``device`` link (:mod:`.link`).  On a test host one
command prints the disk's folder, where its ``device`` link leads (and, with
native NVMe multipath, its controllers), and every such attribute on the way
up; :func:`mirror` writes them into a small copy of the host's ``/sys`` with
the same links, so :func:`~.summary.summarize` reads it exactly as a local one.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.ssh import MARK, marks, need

READ_TIMEOUT_S = 60.0
#: the attributes the summary reads above the disk (link.py, summary.py)
_ATTRIBUTES = (
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "sata_spd",
    "hw_sata_spd_limit",
    "vendor",
    "model",
    "rev",
    "cache_type",
)
_LINE = re.compile(rf"^(/sys/.*?/(?:{'|'.join(_ATTRIBUTES)})):(.*)$")

#: ``sh -c SCRIPT sh NAME``
SCRIPT = f"""
{need("readlink", "grep")}
n=$(readlink -e "/sys/class/block/$1") || exit 3
d=$n; [ -e "$n/partition" ] && d=${{n%/*}}
echo "{MARK}disk $d"
dev=$(readlink -e "$d/device") || exit 0
echo "{MARK}device $dev"
up() {{
  p=$1
  while [ "$p" != /sys ] && [ "$p" != / ] && [ -n "$p" ]; do
    grep -H '' "$p"/current_link_speed "$p"/current_link_width "$p"/max_link_speed \\
      "$p"/max_link_width "$p"/link*/ata_link/link*/sata_spd \\
      "$p"/link*/ata_link/link*/hw_sata_spd_limit 2>/dev/null
    p=${{p%/*}}
  done
}}
up "$dev"
grep -H '' "$dev"/vendor "$dev"/model "$dev"/rev "$dev"/scsi_disk/*/cache_type 2>/dev/null
for c in "$dev"/nvme*; do
  case ${{c##*/}} in nvme*n*) continue ;; esac
  r=$(readlink -e "$c") || continue
  echo "{MARK}controller ${{c##*/}} $r"
  up "$r"
done
exit 0
"""


def _inside(root: Path, path: str) -> Path:
    if not path.startswith("/sys/") or "/../" in path:
        raise DeviceError(f"the host printed no sysfs path: {path[:200]!r}")
    return root / path.lstrip("/")


def mirror(text: str, root: Path, kernel_name: str) -> Path:
    """Write the script's output under *root*; the copy's ``sys`` folder."""
    found = marks(text)
    disk = _inside(root, found.get("disk", ""))
    disk.mkdir(parents=True, exist_ok=True)
    node = root / "sys" / "class" / "block" / kernel_name
    node.parent.mkdir(parents=True, exist_ok=True)
    node.symlink_to(disk)
    if "device" in found:
        device = _inside(root, found["device"])
        device.mkdir(parents=True, exist_ok=True)
        (disk / "device").symlink_to(device)
        for line in text.splitlines():
            if line.startswith(f"{MARK}controller "):
                name, _, path = line.removeprefix(f"{MARK}controller ").partition(" ")
                controller = _inside(root, path)
                controller.mkdir(parents=True, exist_ok=True)
                if re.fullmatch(r"nvme\d+", name):
                    (device / name).symlink_to(controller)
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            target = _inside(root, match.group(1))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(match.group(2) + "\n")
    return root / "sys"


def sysfs_copy(machine: Machine, kernel_name: str, root: Path) -> Path:
    """A copy of what the summary reads of *kernel_name*'s sysfs on *machine*, under *root*."""
    done = machine.run(
        ["sh", "-c", SCRIPT, "sh", kernel_name], timeout=READ_TIMEOUT_S, name="sysfs-links"
    )
    if done.returncode != 0:
        raise DeviceError(f"{machine.where}: block device {kernel_name} is not in its /sys")
    return mirror(done.stdout, root, kernel_name)
