"""The kernel's block-device events of a machine, from ``udevadm monitor --kernel`` held there.

What pyudev's netlink monitor gives on this machine, a test host gives through its
``udevadm``: ``udevadm monitor --kernel --subsystem-match=block --property`` held
running there for the session (:meth:`~.machine.Machine.serve`: the host's agent,
off sshd's session budget), each event a paragraph of ``KEY=value`` lines in its
output, read as it grows (:meth:`KernelEvents.take`, never waiting).  The kernel
source needs no udevd.  A host without ``udevadm`` offers no events: :func:`start`
raises :class:`~pytest_ssd.errors.ToolError` saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import ToolError
from pytest_ssd.machine.held import MARK, Held
from pytest_ssd.machine.machine import Machine

#: held until its input closes; ready once udevadm is started (it listens within
#: milliseconds, long before the session's first test: no wait for it at start-up)
SCRIPT = """
udevadm monitor --kernel --subsystem-match=block --property & m=$!
echo "@@ssd:ready"
cat >/dev/null
kill "$m" 2>/dev/null
"""
START_TIMEOUT_S = 30.0
#: an event's first line: ``KERNEL[47058.112755] change   /devices/... (block)``
EVENT_START = "KERNEL["
INSTALL_HINT = "udevadm comes with udev or systemd (apt-get install udev)"


@dataclass
class KernelEvents:
    """``udevadm monitor`` held on a machine: the events it printed, taken as they come."""

    held: Held
    _read: int = field(default=0, repr=False)

    def take(self) -> list[dict[str, str]]:
        """The events printed since the last take (complete paragraphs only), each its
        properties (``ACTION``, ``DEVNAME``, ``DEVPATH``, ...)."""
        try:
            text = self.held.channel.out.read_text(errors="replace")[self._read :]
        except OSError:
            return []
        events, used = parse_events(text)
        self._read += used
        return events

    @property
    def alive(self) -> bool:
        return self.held.alive

    def close(self) -> None:
        self.held.close()


def parse_events(text: str) -> tuple[list[dict[str, str]], int]:
    """The complete events in *text* (paragraphs ended by a blank line) and how many
    characters they took (a paragraph still being written is left for the next read)."""
    events = []
    used = 0
    while (end := text.find("\n\n", used)) >= 0:
        paragraph = text[used:end]
        used = end + 2
        lines = [line for line in paragraph.strip("\n").splitlines() if not line.startswith(MARK)]
        if lines and lines[0].startswith(EVENT_START):
            events.append(dict(line.partition("=")[::2] for line in lines[1:] if "=" in line))
    return events, used


def start(machine: Machine, artifacts: Path) -> KernelEvents:
    """``udevadm monitor`` held on *machine* (its output kept in *artifacts*);
    :class:`ToolError` in one line when the machine offers no events."""
    machine.which("udevadm", INSTALL_HINT)
    artifacts.mkdir(parents=True, exist_ok=True)
    held = machine.serve(
        ["sh", "-c", SCRIPT],
        artifacts=artifacts,
        name="udevadm-monitor",
        ready="ready",
        timeout=START_TIMEOUT_S,
    )
    if not isinstance(held, Held):
        said = held.last_error_line()
        raise ToolError(f"udevadm monitor did not start{machine.on}: {said}")
    return KernelEvents(held)
