"""The session's locks and claims on a test host's devices, held in one process over SSH.

The same BSD ``flock`` as :class:`~.node.DeviceLock` takes here, so a session
on the host itself, another controller and ``flock /dev/sdb`` all see it.  One
ssh channel per host runs :data:`HOLD`: with ``perl`` on the host (Debian's
Essential ``perl-base``; no Python is assumed) it ``exec``s a small perl program
(:class:`HostLocks`) that, asked on its input, takes the ``flock`` of a node
(``lock NODE``), also holds it ``O_EXCL`` (``claim NODE``: the kernel then
refuses mounts, ``mkfs`` and other exclusive openers for the session, as here)
and lets it go (``release NODE``), answering per node.  Every device of a host
is locked in that one process on that one channel, however many there are
(sshd's ``MaxSessions`` counts channels); its title names what it holds
(``pytest-ssd lock /dev/sdb /dev/sdc``) and its pid tells the guard it is ours.
It reads the channel, so locks and claims last until this process closes it,
ends, or loses the connection: perl sees the end of its input and exits.
Without perl, each lock is a :class:`~pytest_ssd.machine.flock.HostFlock` on a
channel of its own (util-linux ``flock -o NODE cat``, the protocol the host's tune
lock uses too): the lock holds, and a claim (a session that writes) is refused in
one line.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from pytest_ssd.device.node import flock_holders, in_use, locked
from pytest_ssd.device.openers import describe
from pytest_ssd.errors import DeviceError, SafetyError, SsdError
from pytest_ssd.machine.flock import CONFLICT, RELEASE_TIMEOUT_S, HostFlock, hold_script
from pytest_ssd.machine.hostfacts import COMMANDS, sections
from pytest_ssd.machine.ssh import MARK, Held, Mark, Ssh, check_missing, need
from pytest_ssd.proc.runner import Completed

#: the node is not a block device or a file (flock would create a file there)
NOT_A_TARGET = 3
#: :data:`HOLD`'s exit code on a host without perl
NO_PERL = 4
ACQUIRE_TIMEOUT_S = 30.0
#: how long asking who holds the lock may take (after a timed-out acquisition: a slow host)
WHO_TIMEOUT_S = 10.0

CLAIM_TIMEOUT_S = 30.0

#: the host's lock process: ``perl -e PERL``, one command a line on its input
#: (``lock NODE``, ``claim NODE``, ``release NODE``), one answer a line
#: (``@@ssd:WORD NODE`` or ``@@ssd:WORD NODE<TAB>why``)
PERL = f"""
use Fcntl qw(:DEFAULT :flock);
$| = 1;
my $mark = '{MARK}';
my (%lock, %claim, @order);
sub title {{ $0 = join(" ", "pytest-ssd lock", @order); }}
sub answer {{ print $mark . $_[0] . " " . $_[1] . (defined $_[2] ? "\t$_[2]" : "") . "\n"; }}
title();
print "${{mark}}ready\n";
while (my $line = <STDIN>) {{
  chomp $line;
  my ($do, $node) = split / /, $line, 2;
  next unless defined $node;
  if ($do eq "lock") {{
    if ($lock{{$node}}) {{ answer("locked", $node); next; }}
    unless (-b $node || -f $node) {{ answer("notarget", $node); next; }}
    my $fh;
    unless (sysopen($fh, $node, O_RDONLY | O_NONBLOCK)) {{ answer("failed", $node, "$!"); next; }}
    unless (flock($fh, LOCK_EX | LOCK_NB)) {{ answer("conflict", $node); next; }}
    $lock{{$node}} = $fh; push @order, $node; title(); answer("locked", $node);
  }} elsif ($do eq "claim") {{
    unless ($lock{{$node}}) {{ answer("unclaimed", $node, "it is not locked"); next; }}
    if ($claim{{$node}}) {{ answer("claimed", $node); next; }}
    if (sysopen(my $fh, $node, O_RDONLY | O_EXCL | O_NONBLOCK)) {{
      $claim{{$node}} = $fh; answer("claimed", $node);
    }} else {{
      answer("unclaimed", $node, "$!");
    }}
  }} elsif ($do eq "release") {{
    delete $claim{{$node}}; delete $lock{{$node}};
    @order = grep {{ $_ ne $node }} @order; title(); answer("released", $node);
  }}
}}
"""

#: ``sh -c HOLD sh PERL``
HOLD = f"""
command -v perl >/dev/null 2>&1 || {{ echo "{MARK}noperl"; exit {NO_PERL}; }}
echo "{MARK}pid $$"
exec perl -e "$1"
"""

#: ``sh -c FLOCK sh NODE``: the lock without perl, on a channel of its own
FLOCK = f"""
{need("flock", "cat")}
[ -b "$1" ] || [ -f "$1" ] || exit {NOT_A_TARGET}
{hold_script('"$1"')}"""

#: ``sh -c WHO sh NODE``: the node's inode and the host's locks
WHO = f"""
echo "{MARK}inode"; stat -L -c '%d %i' -- "$1"
echo "{MARK}locks"; cat /proc/locks
"""


@dataclass
class HostLocks:
    """The one process holding the session's locks and claims on a host, on one channel."""

    ssh: Ssh
    #: where the holding channel keeps its output
    artifacts: Path
    #: the process's pid on the host (the guard's "ours")
    pid: int | None = None
    #: False on a host without perl: each lock is a ``flock(1)`` of its own, nothing claimed
    perl: bool = True
    _holder: Held | None = field(default=None, repr=False)
    #: one question at a time (devices are prepared in threads)
    _asking: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: questions sent ahead (:meth:`send_ahead`), each answered to the :meth:`ask` that follows
    _ahead: set[tuple[str, str]] = field(default_factory=set, repr=False)

    def start(self) -> Completed | None:
        """Start the process once; how its start failed (None: it runs, or the host has no perl)."""
        with self._asking:
            if self._holder is not None or not self.perl:
                return None
            held = self.ssh.hold(
                ["sh", "-c", HOLD, "sh", PERL],
                artifacts=self.artifacts,
                name="locks",
                ready="ready",
                timeout=ACQUIRE_TIMEOUT_S,
            )
            if isinstance(held, Held):
                self._holder, self.pid = held, int(held.marks["pid"])
                return None
            if held.returncode == NO_PERL:
                self.perl = False
                return None
            return held

    def send_ahead(self, do: str, node: str) -> None:
        """Send ``do node`` now; the :meth:`ask` of it that follows waits for its answer only.

        The claims of a host's drives go out together, one round trip for all of them
        instead of one each (16 drives: 0.3–0.6 s of a busy controller's start)."""
        with self._asking:
            if self._holder is not None and self._holder.send(f"{do} {node}"):
                self._ahead.add((do, node))

    def ask(self, do: str, node: str, answers: tuple[str, ...], timeout: float) -> Mark | None:
        """Its answer to ``do node`` (None: it ended or did not answer within *timeout*)."""
        with self._asking:
            if self._holder is None:
                return None
            if (do, node) in self._ahead:
                self._ahead.discard((do, node))
                return self._holder.answer(node, answers, timeout)
            return self._holder.reply(f"{do} {node}", node, answers, timeout)

    def close(self) -> None:
        """Close the channel: perl reads the end of its input and exits, letting all go."""
        with self._asking:
            if self._holder is not None:
                holder, self._holder = self._holder, None
                holder.close(RELEASE_TIMEOUT_S)


@dataclass
class RemoteLock:
    """An exclusive ``flock`` on *node* of the host *ssh* reaches, held for the session."""

    ssh: Ssh
    node: str
    #: where the holding channel keeps its output
    artifacts: Path
    #: the host's lock process, shared by its devices (None: one of this lock's own)
    host: HostLocks | None = None
    pid: int | None = None
    _own: bool = field(default=False, repr=False)
    #: without perl: ``flock(1)`` on a channel of its own
    _flock: HostFlock | None = field(default=None, repr=False)
    _claimed: bool = field(default=False, repr=False)

    def _host(self) -> HostLocks:
        if self.host is None:
            self.host, self._own = HostLocks(self.ssh, self.artifacts), True
        return self.host

    def acquire(self) -> None:
        """Take the lock or raise :class:`SafetyError` naming the process that holds it."""
        start = time.monotonic()
        host = self._host()
        failed = host.start()
        if failed is not None:
            self._failed(failed, start)
        if not host.perl:
            self._acquire_flock(start)
            return
        answers = ("locked", "conflict", "notarget", "failed")
        answer = host.ask("lock", self.node, answers, ACQUIRE_TIMEOUT_S)
        if answer is None:
            if time.monotonic() - start >= ACQUIRE_TIMEOUT_S:
                self._timed_out()
            raise DeviceError(
                f"cannot lock {self.node} on {self.ssh.where}: the lock's process ended"
            )
        if answer.word != "locked":
            self._refuse(answer.word, answer.rest)
        self.pid = host.pid

    def _acquire_flock(self, start: float) -> None:
        lock = HostFlock(
            self.ssh, FLOCK, (self.node,), self.artifacts, f"flock-{Path(self.node).name}"
        )
        failed = lock.acquire(ACQUIRE_TIMEOUT_S)
        if failed is not None:
            self._failed(failed, start)
        self._flock = lock
        self.pid = int(lock.marks["pid"])

    def _failed(self, done: Completed, start: float) -> NoReturn:
        check_missing(done, self.ssh.where)
        if time.monotonic() - start >= ACQUIRE_TIMEOUT_S:
            self._timed_out()
        word = {NOT_A_TARGET: "notarget", CONFLICT: "conflict"}.get(done.returncode, "failed")
        self._refuse(word, done.last_error_line() or f"exit code {done.returncode}")

    def _refuse(self, word: str, said: str) -> NoReturn:
        where = f"{self.ssh.where}: {self.node}"
        if word == "notarget":
            raise SafetyError(f"refusing {where}: it is not a block device or a file there")
        if word != "conflict":
            raise DeviceError(f"cannot lock {where}: {said}")
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

    def claim_ahead(self) -> None:
        """Send the claim :meth:`claim` then waits for (the device is guarded already)."""
        host = self.host
        if host is not None and host.perl and not self._claimed and self.pid is not None:
            host.send_ahead("claim", self.node)

    def claim(self) -> None:
        """Hold the device ``O_EXCL`` in the lock's process, or raise :class:`SafetyError`."""
        host = self.host
        if host is None or self._claimed or self.pid is None:
            return
        where = f"{self.node} on {self.ssh.where}"
        if not host.perl:
            raise SafetyError(
                f"refusing to write to {where}: perl is missing there (pytest-ssd holds the"
                " device open O_EXCL with it for the session); install perl or use --ssd-readonly"
            )
        answer = host.ask("claim", self.node, ("claimed", "unclaimed"), CLAIM_TIMEOUT_S)
        if answer is None:
            raise DeviceError(f"cannot claim {where}: the lock's process did not answer")
        if answer.word == "unclaimed":
            if "busy" in answer.rest.lower():
                raise SafetyError(in_use(self.node, self.ssh.where))
            raise SafetyError(f"cannot claim {where}: {answer.rest}")
        self._claimed = True

    def release(self) -> None:
        """Let the lock and claim go (a lock of its own: close its channel)."""
        if self._flock is not None:
            lock, self._flock = self._flock, None
            lock.release()
        elif self.host is not None and self.pid is not None:
            self.host.ask("release", self.node, ("released",), RELEASE_TIMEOUT_S)
        self.pid, self._claimed = None, False
        if self._own and self.host is not None:
            self.host.close()
