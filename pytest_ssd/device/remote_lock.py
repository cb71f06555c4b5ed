"""The session's lock and claim on a test host's device, held in one process over SSH.

The same BSD ``flock`` as :class:`~.node.DeviceLock` takes here, so a session
on the host itself, another controller and ``flock /dev/sdb`` all see it.  One
ssh channel runs :data:`HOLD`: with ``perl`` on the host (Debian's Essential
``perl-base``; no Python is assumed) it ``exec``s a small perl program that takes
the ``flock`` and, asked on its input (``claim``), also holds the device
``O_EXCL``: the kernel then refuses mounts, ``mkfs`` and other exclusive openers
for the session, as here.  Without perl it runs util-linux ``flock -o NODE cat``:
the lock holds, and a claim (a session that writes) is refused in one line.
Either way the process reads the channel, so lock and claim last until this
process closes it, ends, or loses the connection; lock and claim live in the one
process whose pid :attr:`RemoteLock.pid` tells the guard (it is ours), and no
second channel is opened per device (sshd's ``MaxSessions``).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from pytest_ssd.device.node import flock_holders, in_use, locked
from pytest_ssd.device.openers import describe
from pytest_ssd.device.remote import COMMANDS, sections
from pytest_ssd.errors import DeviceError, SafetyError, SsdError
from pytest_ssd.machine.ssh import MARK, Held, Ssh, check_missing, need

#: flock's exit code when the lock is held elsewhere (``-E``)
CONFLICT = 75
#: the node is not a block device or a file (flock would create a file there)
NOT_A_TARGET = 3
ACQUIRE_TIMEOUT_S = 30.0
RELEASE_TIMEOUT_S = 5.0
#: how long asking who holds the lock may take (after a timed-out acquisition: a slow host)
WHO_TIMEOUT_S = 10.0

CLAIM_TIMEOUT_S = 30.0

#: perl's lock and claim: ``perl -e PERL NODE`` (it keeps the pid ``sh`` printed)
PERL = f"""
use Fcntl qw(:DEFAULT :flock);
$| = 1;
$0 = "pytest-ssd lock $ARGV[0]";  # what a refused session names as the holder
my $mark = '{MARK}';
sysopen(my $lock, $ARGV[0], O_RDONLY | O_NONBLOCK) or die "cannot open $ARGV[0]: $!\n";
flock($lock, LOCK_EX | LOCK_NB) or exit {CONFLICT};
print "${{mark}}locked\n";
my @held;
while (my $line = <STDIN>) {{
  next unless $line eq "claim\n";
  if (sysopen(my $claim, $ARGV[0], O_RDONLY | O_EXCL | O_NONBLOCK)) {{
    push @held, $claim; print "${{mark}}claimed\n";
  }} else {{
    print "${{mark}}unclaimed $!\n";
  }}
}}
"""

#: ``sh -c HOLD sh NODE PERL``
HOLD = f"""
{need("flock", "cat")}
[ -b "$1" ] || [ -f "$1" ] || exit {NOT_A_TARGET}
echo "{MARK}pid $$"
command -v perl >/dev/null 2>&1 && exec perl -e "$2" "$1"
echo "{MARK}noperl"
exec flock -n -o -E {CONFLICT} "$1" sh -c 'echo "{MARK}locked"; exec cat'
"""

#: ``sh -c WHO sh NODE``: the node's inode and the host's locks
WHO = f"""
echo "{MARK}inode"; stat -L -c '%d %i' -- "$1"
echo "{MARK}locks"; cat /proc/locks
"""


@dataclass
class RemoteLock:
    """An exclusive ``flock`` on *node* of the host *ssh* reaches, held for the session."""

    ssh: Ssh
    node: str
    #: where the holding channel keeps its output
    artifacts: Path
    _holder: Held | None = field(default=None, repr=False)
    pid: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`SafetyError` naming the process that holds it."""
        start = time.monotonic()
        held = self.ssh.hold(
            ["sh", "-c", HOLD, "sh", self.node, PERL],
            artifacts=self.artifacts,
            name="lock",
            ready="locked",
            timeout=ACQUIRE_TIMEOUT_S,
        )
        if not isinstance(held, Held):
            check_missing(held, self.ssh.where)
            if time.monotonic() - start >= ACQUIRE_TIMEOUT_S:
                self._timed_out()
            self._refuse(held.returncode, held.last_error_line())
        self._holder = held
        self.pid = int(held.marks["pid"])

    def _refuse(self, returncode: int, said: str) -> NoReturn:
        where = f"{self.ssh.where}: {self.node}"
        if returncode == NOT_A_TARGET:
            raise SafetyError(f"refusing {where}: it is not a block device or a file there")
        if returncode != CONFLICT:
            raise DeviceError(f"cannot lock {where}: {said or f'exit code {returncode}'}")
        raise SafetyError(locked(where, self._holders(timeout=60)))

    def _timed_out(self) -> NoReturn:
        who: list[str] = []
        with contextlib.suppress(SsdError):  # the host that did not answer may not answer this
            who = self._holders(timeout=WHO_TIMEOUT_S)
        why = "nobody holds it there: the host is slow to answer"
        if who:
            why = f"held by {', '.join(who)}"
        raise DeviceError(
            f"timed out waiting for the lock on {self.node} on {self.ssh.where}"
            f" after {ACQUIRE_TIMEOUT_S:g} s ({why})"
        )

    def _holders(self, timeout: float) -> list[str]:
        """The processes /proc/locks on the host names as holding a flock on the node."""
        found = sections(self.ssh.run(["sh", "-c", WHO, "sh", self.node], timeout=timeout).stdout)
        dev, _, ino = " ".join(found.get("inode", [])).partition(" ")
        pids = flock_holders(found.get("locks", []), int(dev), int(ino)) if ino else []
        commands = sections(
            self.ssh.run(["sh", "-c", COMMANDS, "sh", *map(str, pids)], timeout=timeout).stdout
        )
        return [describe(p, " ".join(commands.get(f"pid {p}", []))) for p in pids]

    def claim(self) -> None:
        """Hold the device ``O_EXCL`` in the lock's process, or raise :class:`SafetyError`."""
        holder = self._holder
        if holder is None or "claimed" in holder.marks:
            return
        where = f"{self.node} on {self.ssh.where}"
        if "noperl" in holder.marks:
            raise SafetyError(
                f"refusing to write to {where}: perl is missing there (pytest-ssd holds the"
                " device open O_EXCL with it for the session); install perl or use --ssd-readonly"
            )
        answer = holder.ask("claim", ("claimed", "unclaimed"), CLAIM_TIMEOUT_S)
        if answer is None:
            raise DeviceError(f"cannot claim {where}: the lock's process did not answer")
        if "unclaimed" in answer:
            said = answer["unclaimed"]
            if "busy" in said.lower():
                raise SafetyError(in_use(self.node, self.ssh.where))
            raise SafetyError(f"cannot claim {where}: {said}")

    def release(self) -> None:
        """Close the channel: ``cat`` ends, ``flock`` unlocks and exits."""
        if self._holder is not None:
            holder, self._holder = self._holder, None
            holder.close(RELEASE_TIMEOUT_S)
