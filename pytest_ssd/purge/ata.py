"""ATA security state of a SATA drive, from ``hdparm -I DEV``.

hdparm prints the IDENTIFY DEVICE security word as one line per flag, ``"\\t%s\\t%s"``
with "not" or nothing first (``\\tnot\\tfrozen``, ``\\t\\tsupported``), then the
estimated erase times (``2min for SECURITY ERASE UNIT. 8min for ENHANCED ...``).
It leaves the whole ``Security:`` section out when the drive has no security feature.
A drive the BIOS froze at boot rejects SECURITY ERASE until it is power-cycled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import ToolError
from pytest_ssd.purge.tools import Tools

HDPARM_HINT = "apt-get install hdparm"
HDPARM_TIMEOUT_S = 60.0
#: how to lift the freeze lock; the BIOS sets it at boot, a power cycle of the drive clears it
UNFREEZE_HINT = (
    "suspend and resume the machine (e.g. 'rtcwake -m mem -s 10') "
    "or hot-plug the drive's power, then retry"
)
_FLAG = re.compile(r"(?:(not)\s+)?(\S.*)")
_ERASE_TIME = re.compile(r"(\d+)min for (ENHANCED )?SECURITY ERASE UNIT")
_LEVEL = re.compile(r"Security level (\w+)")


@dataclass(frozen=True)
class AtaSecurity:
    """The ATA Security feature set state; erase times in minutes as the drive estimates them."""

    supported: bool
    enabled: bool = False
    locked: bool = False
    frozen: bool = False
    expired: bool = False
    enhanced_erase_supported: bool = False
    erase_minutes: int | None = None
    enhanced_erase_minutes: int | None = None
    level: str | None = None

    def blocker(self, enhanced: bool) -> str | None:
        """Why SECURITY ERASE (*enhanced* or normal) cannot run now, or None when it can."""
        if not self.supported:
            return "the drive does not support the ATA Security feature set"
        if enhanced and not self.enhanced_erase_supported:
            return "the drive does not support enhanced security erase"
        if self.frozen:
            return f"ATA security is frozen: {UNFREEZE_HINT}"
        if self.locked:
            return "ATA security is locked: unlock the drive with its password first"
        if self.enabled:
            return "a user password is already set: disable it first (hdparm --security-disable)"
        if self.expired:
            return "the security count has expired: power-cycle the drive, then retry"
        return None

    def minutes(self, enhanced: bool) -> int | None:
        """The drive's estimate for the erase in minutes, when it gives one."""
        return self.enhanced_erase_minutes if enhanced else self.erase_minutes


def _section(text: str) -> list[str] | None:
    """The indented lines under ``Security:``, or None when there is no such section."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Security:":
            body = []
            for follow in lines[i + 1 :]:
                if not follow[:1].isspace():
                    break
                body.append(follow.strip())
            return body
    return None


def parse_hdparm_identify(text: str) -> AtaSecurity:
    """The security state in ``hdparm -I`` output; no ``Security:`` section means unsupported."""
    body = _section(text)
    if body is None:
        return AtaSecurity(supported=False)
    flags: dict[str, bool] = {}
    times: dict[bool, int] = {}
    level = None
    for line in body:
        for minutes, enhanced in _ERASE_TIME.findall(line):
            times[bool(enhanced)] = int(minutes)
        if found := _LEVEL.match(line):
            level = found.group(1)
        elif (match := _FLAG.fullmatch(line)) and not _ERASE_TIME.search(line):
            flags[" ".join(match.group(2).split())] = match.group(1) is None
    return AtaSecurity(
        supported=flags.get("supported", False),
        enabled=flags.get("enabled", False),
        locked=flags.get("locked", False),
        frozen=flags.get("frozen", False),
        expired=flags.get("expired: security count", False),
        enhanced_erase_supported=flags.get("supported: enhanced erase", False),
        erase_minutes=times.get(False),
        enhanced_erase_minutes=times.get(True),
        level=level,
    )


def query_ata(
    path: str | Path, tools: Tools | None = None, artifacts: Path | None = None
) -> AtaSecurity:
    """Run ``hdparm -I`` on *path*; :class:`ToolError` when hdparm is missing or fails."""
    tools = tools or Tools()
    hdparm = tools.which("hdparm", HDPARM_HINT)
    done = tools.run(
        [hdparm, "-I", str(path)], timeout=HDPARM_TIMEOUT_S, artifacts=artifacts, name="hdparm-I"
    )
    if done.returncode != 0:
        raise ToolError(
            f"hdparm -I {path} failed (exit {done.returncode}): {done.last_error_line()}"
        )
    return parse_hdparm_identify(done.stdout)
