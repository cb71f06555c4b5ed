"""The session's locks and claims on a test host's devices, held in one process over SSH.

The same BSD ``flock`` and ``O_EXCL`` claim as this process holds here
(:class:`~.locks.HereLocks`), so a session on the host itself, another controller
and ``flock /dev/sdb`` all see it.  One
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
lock uses too): the lock holds, and a claim (a session that writes) is refused.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from pytest_ssd.errors import DeviceError, SsdError
from pytest_ssd.machine.facts import describe
from pytest_ssd.machine.flock import CONFLICT, RELEASE_TIMEOUT_S, HostFlock, hold_script
from pytest_ssd.machine.hostfacts import COMMANDS, sections
from pytest_ssd.machine.locks import Answer, NodeLocks, flock_holders
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
sub key {{ my @s = stat($_[0]); -b $_[0] ? "block $s[6]" : "file $s[0] $s[1]"; }}
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
    $lock{{$node}} = $fh; push @order, $node; title(); answer("locked", $node, key($fh));
  }} elsif ($do eq "claim") {{
    unless ($lock{{$node}}) {{ answer("unclaimed", $node, "it is not locked"); next; }}
    if ($claim{{$node}}) {{ answer("claimed", $node); next; }}
    unless (-b $lock{{$node}}) {{ answer("claimed", $node); next; }}
    if (sysopen(my $fh, $node, O_RDONLY | O_EXCL | O_NONBLOCK)) {{
      if (key($fh) ne key($lock{{$node}})) {{ answer("changed", $node); next; }}
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
class HostLocks(NodeLocks):
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
    #: without perl: each node's ``flock(1)`` on a channel of its own
    _flocks: dict[str, HostFlock] = field(default_factory=dict, repr=False)

    @property
    def where(self) -> str:
        return self.ssh.where

    def start(self) -> Completed | None:
        """Start the process once; how its start failed (None: it runs, or the host has no perl)."""
        with self._asking:
            if self._holder is not None or not self.perl:
                return None
            argv, out = ["sh", "-c", HOLD, "sh", PERL], self.artifacts
            held = self.ssh.hold(
                argv, artifacts=out, name="locks", ready="ready", timeout=ACQUIRE_TIMEOUT_S
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

    def lock(self, node: str) -> Answer:
        start = time.monotonic()
        failed = self.start()
        if failed is not None:
            return self._failed(node, failed, start)
        if not self.perl:
            return self._flock(node, start)
        answers = ("locked", "conflict", "notarget", "failed")
        answer = self.ask("lock", node, answers, ACQUIRE_TIMEOUT_S)
        if answer is None:
            if time.monotonic() - start >= ACQUIRE_TIMEOUT_S:
                self._timed_out(node)
            raise DeviceError(f"cannot lock {node} on {self.where}: the lock's process ended")
        rest = answer.rest
        if answer.word == "locked":
            kind, _, number = rest.partition(" ")
            if kind == "block" and number.isdigit():
                rest = f"block {os.major(int(number))} {os.minor(int(number))}"
        return Answer({"failed": "unopened"}.get(answer.word, answer.word), rest, self.pid)

    def _flock(self, node: str, start: float) -> Answer:
        lock = HostFlock(self.ssh, FLOCK, (node,), self.artifacts, f"flock-{Path(node).name}")
        failed = lock.acquire(ACQUIRE_TIMEOUT_S)
        if failed is not None:
            return self._failed(node, failed, start)
        self._flocks[node] = lock
        return Answer("locked", "", int(lock.marks["pid"]))

    def _failed(self, node: str, done: Completed, start: float) -> Answer:
        check_missing(done, self.where)
        if time.monotonic() - start >= ACQUIRE_TIMEOUT_S:
            self._timed_out(node)
        word = {NOT_A_TARGET: "notarget", CONFLICT: "conflict"}.get(done.returncode, "error")
        return Answer(word, done.last_error_line() or f"exit code {done.returncode}")

    def _timed_out(self, node: str) -> NoReturn:
        who: dict[int, str] = {}
        with contextlib.suppress(SsdError):  # the host that did not answer may not answer this
            who = self._holders(node, timeout=WHO_TIMEOUT_S)
        why = "nobody holds it there: the host is slow to answer"
        if who:
            why = f"held by {', '.join(describe(p, c) for p, c in who.items())}"
        raise DeviceError(
            f"timed out waiting for the lock on {node} on {self.where}"
            f" after {ACQUIRE_TIMEOUT_S:g} s ({why})"
        )

    def holders(self, node: str) -> dict[int, str]:
        return self._holders(node, timeout=60)

    def _holders(self, node: str, timeout: float) -> dict[int, str]:
        """The processes /proc/locks on the host names as holding a flock on *node*."""
        found = sections(self.ssh.run(["sh", "-c", WHO, "sh", node], timeout=timeout).stdout)
        dev, _, ino = " ".join(found.get("inode", [])).partition(" ")
        pids = flock_holders(found.get("locks", []), int(dev), int(ino)) if ino else []
        commands = sections(
            self.ssh.run(["sh", "-c", COMMANDS, "sh", *map(str, pids)], timeout=timeout).stdout
        )
        return {p: " ".join(commands.get(f"pid {p}", [])) for p in pids}

    def claim_ahead(self, node: str) -> None:
        if self.perl and node not in self._flocks:
            self.send_ahead("claim", node)

    def claim(self, node: str) -> Answer:
        if not self.perl:
            return Answer(
                "refused",
                "perl is missing there (pytest-ssd holds the device open O_EXCL with it for"
                " the session); install perl",
            )
        answer = self.ask("claim", node, ("claimed", "unclaimed", "changed"), CLAIM_TIMEOUT_S)
        if answer is None:
            return Answer("error", "the lock's process did not answer")
        return Answer(answer.word, answer.rest)

    def release(self, node: str) -> None:
        lock = self._flocks.pop(node, None)
        if lock is not None:
            lock.release()
        elif self.pid is not None:
            self.ask("release", node, ("released",), RELEASE_TIMEOUT_S)

    def close(self) -> None:
        """Close the channel: perl reads the end of its input and exits, letting all go (and
        each ``flock(1)``'s channel, on a host without perl)."""
        with self._asking:
            if self._holder is not None:
                holder, self._holder = self._holder, None
                holder.close(RELEASE_TIMEOUT_S)
        while self._flocks:
            self._flocks.popitem()[1].release()
