"""NVMe Sanitize: start it, then poll the sanitize log until it completes or fails.

``nvme sanitize-log DEV -o json`` (nvme-cli 2.x, ``json_sanitize_log``) prints the
log under the device name::

    {"nvme0": {"sprog": 65535,
               "sstat": {"global_erased": 1, "no_cmplted_passes": 0,
                         "status": "(1) Most Recent Sanitize Command Completed Successfully."},
               "cdw10_info": 2, "time_over_write": 0, ...}}

SSTAT bits 2:0 (the number in the status text): 0 never sanitized, 1 completed,
2 in progress, 3 failed, 4 completed without deallocate.  SPROG counts to 65536
while in progress and reads 65535 otherwise.  ``cdw10_info`` is the CDW10 of the
sanitize command the log describes; its bits 2:0 are that command's SANACT, which
tells our sanitize from an older one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from pytest_ssd.documents import loads_json
from pytest_ssd.errors import ParseError, PurgeError
from pytest_ssd.purge.tools import Tools

NVME_HINT = "apt-get install nvme-cli"
NVME_COMMAND_TIMEOUT_S = 120.0
#: how long the log may still describe an older sanitize after ours was accepted
START_GRACE_S = 60.0
_STATUS = re.compile(r"\((\d+)\)\s*(.*)")
_WHAT = "nvme sanitize-log"


class SanitizeState(IntEnum):
    """SSTAT bits 2:0."""

    NEVER = 0
    COMPLETED = 1
    IN_PROGRESS = 2
    FAILED = 3
    COMPLETED_NO_DEALLOCATE = 4


@dataclass(frozen=True)
class SanitizeLog:
    """The parts of the sanitize log a purge acts on."""

    state: int
    status: str
    sprog: int
    sanact: int | None
    global_erased: bool | None

    @property
    def percent(self) -> float:
        """Progress of the running sanitize, 0-100."""
        return 100.0 if self.sprog == 0xFFFF else self.sprog * 100.0 / 0x10000

    @property
    def completed(self) -> bool:
        """The sanitize the log describes has completed (with or without deallocation)."""
        return self.state in (SanitizeState.COMPLETED, SanitizeState.COMPLETED_NO_DEALLOCATE)


def _body(data: object) -> dict[str, Any]:
    """The log object; nvme-cli nests it under the device name ("nvme0")."""
    if isinstance(data, dict) and "sprog" not in data and len(data) == 1:
        data = next(iter(data.values()))
    if not isinstance(data, dict) or "sprog" not in data:
        raise ParseError(f"{_WHAT}: no 'sprog' field in {json.dumps(data)[:120]}")
    return data


def _int(value: object, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ParseError(f"{_WHAT}: field {field!r} is not an integer: {value!r}")


def _state(sstat: object) -> tuple[int, str, bool | None]:
    """(SSTAT bits 2:0, status text, global data erased) from the ``sstat`` object."""
    if not isinstance(sstat, dict):
        raise ParseError(f"{_WHAT}: field 'sstat' is not an object: {sstat!r}")
    text = sstat.get("status")
    match = _STATUS.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ParseError(f"{_WHAT}: sstat status is not '(N) text': {text!r}")
    erased = sstat.get("global_erased")
    return int(match.group(1)), match.group(0), None if erased is None else bool(erased)


def parse_sanitize_log(text: str) -> SanitizeLog:
    """Parse ``nvme sanitize-log -o json``; :class:`ParseError` names what is missing."""
    try:
        body = _body(loads_json(text))
    except json.JSONDecodeError as exc:
        raise ParseError(f"{_WHAT}: output is not JSON ({exc.msg} at line {exc.lineno})") from None
    if "sstat" not in body:
        raise ParseError(f"{_WHAT}: field 'sstat' is missing")
    state, status, erased = _state(body["sstat"])
    cdw10 = body.get("cdw10_info")
    return SanitizeLog(
        state=state,
        status=status,
        sprog=_int(body["sprog"], "sprog"),
        sanact=None if cdw10 is None else _int(cdw10, "cdw10_info") & 0x7,
        global_erased=erased,
    )


def start(nvme: str, controller: str, sanact: int, tools: Tools, artifacts: Path) -> list[str]:
    """Send the sanitize command; returns its argv.  Overwrite makes one pass, not 16."""
    argv = [nvme, "sanitize", controller, f"--sanact={sanact}"]
    if sanact == 3:  # OWPASS 0 means 16 passes
        argv.append("--owpass=1")
    tools.check(argv, timeout=NVME_COMMAND_TIMEOUT_S, artifacts=artifacts, name="nvme-sanitize")
    return argv


def _read_log(nvme: str, controller: str, tools: Tools, artifacts: Path) -> SanitizeLog:
    argv = [nvme, "sanitize-log", controller, "-o", "json"]
    text = tools.check(
        argv, timeout=NVME_COMMAND_TIMEOUT_S, artifacts=artifacts, name="nvme-sanitize-log"
    )
    try:
        return parse_sanitize_log(text)
    except ParseError as exc:
        raise PurgeError(f"sanitize of {controller}: {exc}") from None


def wait(
    nvme: str,
    controller: str,
    sanact: int,
    *,
    tools: Tools,
    artifacts: Path,
    poll_interval_s: float,
    timeout_s: float,
) -> tuple[SanitizeLog, int]:
    """Poll the sanitize log until our sanitize completes: (last log, number of polls).

    :class:`PurgeError` when it failed, never started, or is still running at *timeout_s*.
    """
    started = tools.clock()
    polls = 0
    while True:
        log = _read_log(nvme, controller, tools, artifacts)
        polls += 1
        ours = log.sanact == sanact
        if ours and log.completed:
            return log, polls
        if ours and log.state == SanitizeState.FAILED:
            raise PurgeError(
                f"sanitize of {controller} failed: the sanitize log says {log.status!r}; "
                f"'nvme sanitize {controller} --sanact=1' leaves the failure mode"
            )
        waited = tools.clock() - started
        running = ours and log.state == SanitizeState.IN_PROGRESS
        if waited >= (timeout_s if running else min(timeout_s, START_GRACE_S)):
            raise PurgeError(_stuck(controller, log, running, waited))
        tools.sleep(poll_interval_s)


def _stuck(controller: str, log: SanitizeLog, running: bool, waited: float) -> str:
    if running:
        return (
            f"sanitize of {controller} still in progress after {waited:.0f} s "
            f"({log.percent:.1f}% done); it goes on in the drive: "
            f"watch 'nvme sanitize-log {controller}'"
        )
    return (
        f"sanitize of {controller} was accepted but after {waited:.0f} s the sanitize log "
        f"still says {log.status!r} (SANACT {log.sanact})"
    )
