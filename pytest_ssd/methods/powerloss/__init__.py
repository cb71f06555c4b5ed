"""Power loss: what a drive acknowledged and flushed before a power cut survives it.

The check (:mod:`.run`) writes with fio's verification header and saved write state
(:mod:`.workloads`), has the drive's power cut by its controller (:mod:`.controller`:
``--ssd-power-cycle=CMD`` or a plugin's ``pytest_ssd_power_cycle``), then reads back
what was flushed.  The controller shipped for QEMU's NVMe namespace (:mod:`.qemu`)
rebuilds the disk from QEMU's write log (:mod:`.logwrites`) as a cut at the last
flush leaves it.  Its verdicts are ``qualification`` records (part "power loss").
"""

from __future__ import annotations

import shlex

#: the option naming the command that cuts a drive's power, and its dest (the plugin
#: declares it; loaded with the plugin, so small)
OPTION = "--ssd-power-cycle"
DEST = "ssd_power_cycle"


def command_option(text: str) -> tuple[str, ...]:
    """``--ssd-power-cycle``'s value as an argv; ValueError saying what is wrong."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise ValueError(f"{OPTION}={text!r} cannot be split into a command: {exc}") from None
    if not argv:
        raise ValueError(f"{OPTION} needs a command (the program cutting the drive's power)")
    return argv
