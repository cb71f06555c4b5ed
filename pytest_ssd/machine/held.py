"""A program held running on a machine for as long as its input stays open, and the marks
its scripts print: what a lock holder, an agent or a fio server is, on this machine or a
test host alike (the connection beneath is a pipe or a socket: :mod:`.stream`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.machine.stream import Channel, Piped
from pytest_ssd.proc.pauses import pauses
from pytest_ssd.proc.runner import Background, Completed, spawn

#: how a script on the host marks a line of its output for pytest-ssd ("@@ssd:word rest")
MARK = "@@ssd:"
#: how long a held command may take to end by itself once its input is closed
HELD_CLOSE_TIMEOUT_S = 15.0
#: the longest pause while waiting for a held command's answer (it starts at 1 ms)
POLL_S = 0.02

#: the thread that starts what must outlive the thread asking for it (the master, held
#: commands): a process pytest-ssd starts gets the kernel's parent-death signal when the
#: *thread* that started it ends, and devices are prepared in threads that end; this one
#: lives as long as the interpreter
LASTING = ThreadPoolExecutor(1, thread_name_prefix="ssd-lasting")


def spawn_lasting(argv: list[str], **options: Any) -> Background:
    """:func:`spawn` from :data:`LASTING`: the process lives until closed or this process ends."""
    return LASTING.submit(spawn, argv, **options).result()


def marks(text: str) -> dict[str, str]:
    """The marked lines of *text*: ``{"pid": "1234", "ready": ""}``."""
    return {
        word: rest
        for line in text.splitlines()
        if line.startswith(MARK)
        for word, _, rest in [line[len(MARK) :].partition(" ")]
    }


@dataclass(frozen=True)
class Mark:
    """A marked line ``@@ssd:word key`` or ``@@ssd:word key<TAB>rest``."""

    word: str
    key: str
    rest: str

    @classmethod
    def parse(cls, line: str) -> Mark | None:
        if not line.startswith(MARK):
            return None
        word, _, tail = line[len(MARK) :].rstrip("\n").partition(" ")
        key, _, rest = tail.partition("\t")
        return cls(word, key, rest)


@dataclass
class Held:
    """A command held running on a machine for as long as its input stays open
    (:meth:`~.machine.Machine.hold`).

    The command reads its input (``cat``) to learn when to end: :meth:`close`, the
    end of this process and a lost connection all close it.
    """

    #: what it runs over: a pipe to a process (:meth:`~.machine.Machine.hold`) or a socket
    #: (:meth:`~.machine.Machine.serve`)
    channel: Channel
    #: the marked lines it printed up to its ready mark
    marks: dict[str, str]
    #: how much of its output :meth:`reply` has read
    _read: int = field(default=0, repr=False)

    def send(self, line: str) -> bool:
        """Write *line* to its input without waiting: its answer is read by :meth:`answer`,
        in the order asked (False: the command has ended)."""
        return self.channel.send(f"{line}\n".encode())

    def reply(self, line: str, key: str, answers: tuple[str, ...], timeout: float) -> Mark | None:
        """Write *line*; its first new mark ``word key[\\trest]`` with *word* among *answers*
        (None: it ended or did not answer within *timeout*)."""
        if not self.send(line):
            return None
        return self.answer(key, answers, timeout)

    def answer(self, key: str, answers: tuple[str, ...], timeout: float) -> Mark | None:
        """The first mark not read yet ``word key[\\trest]`` with *word* among *answers*; the
        marks before it are passed over (None: it ended or did not answer within *timeout*)."""
        out = self.channel.out
        deadline = time.monotonic() + timeout
        waits = pauses(POLL_S)
        while True:
            text = out.read_text()
            for got in text[self._read :].splitlines(keepends=True):
                if not got.endswith("\n"):
                    break
                self._read += len(got)
                found = Mark.parse(got)
                if found is not None and found.word in answers and found.key == key:
                    return found
            if not self.channel.alive() or time.monotonic() > deadline:
                return None
            time.sleep(next(waits))

    @property
    def alive(self) -> bool:
        return self.channel.alive()

    def ask(self, line: str, answers: tuple[str, ...], timeout: float) -> dict[str, str] | None:
        """Write *line* to its input; its marks once one of *answers* is among them (None: it
        ended or did not answer within *timeout*)."""
        if not self.send(line):
            return None
        out = self.channel.out
        deadline = time.monotonic() + timeout
        waits = pauses(POLL_S)
        while not any(word in (found := marks(out.read_text())) for word in answers):
            if not self.channel.alive() or time.monotonic() > deadline:
                return None
            time.sleep(next(waits))
        self.marks.update(found)
        return found

    def close(self, timeout: float = HELD_CLOSE_TIMEOUT_S) -> None:
        """Close its input, give it *timeout* to end by itself, then end the ssh channel."""
        self.channel.end_input()
        self.channel.ended(timeout)
        self.channel.kill()


def hold_here(
    argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
) -> Held | Completed:
    """*argv* started on this machine, held once it printed *ready*, or how it ended."""
    process = spawn_lasting(list(argv), artifacts=artifacts, name=name, stdin=True)
    return ready_held(Piped(process), ready, timeout)


def ready_held(channel: Channel, ready: str, timeout: float) -> Held | Completed:
    """*channel*'s command held once it printed the mark *ready*, or how it ended (ended at
    *timeout*)."""
    deadline = time.monotonic() + timeout
    waits = pauses(POLL_S)
    while ready not in (found := marks(channel.out.read_text())):
        if not channel.alive() or time.monotonic() > deadline:
            return channel.kill()
        time.sleep(next(waits))
    return Held(channel, found)
