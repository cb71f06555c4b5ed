"""Devices prepared at once, in threads, with what must go in ``--dut`` order kept in order.

Resolving, guarding and identifying a device mostly waits on a test host (one
SSH round trip after another), so every ``--dut`` is prepared in a thread of
its own.  Two steps still go in the order the devices were named: the
duplicate check (the second naming of a device is the refused one) and taking
the lock (two namings of one device the check cannot see, one here and one
through a test host on this machine, are refused as when prepared one by one).
:func:`prepare` raises the error of the first ``--dut`` that failed, so a
refusal is the one line it always was.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
#: threads preparing devices at once (each mostly waits on a host's answers)
THREADS = 16


@dataclass
class Turns:
    """A step each of *count* threads takes in index order: the turn of *index* comes once
    every earlier one has taken theirs, or ended without it."""

    count: int
    _done: list[threading.Event] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._done = [threading.Event() for _ in range(self.count)]

    @contextlib.contextmanager
    def turn(self, index: int) -> Iterator[None]:
        for earlier in self._done[:index]:
            earlier.wait()
        try:
            yield
        finally:
            self._done[index].set()

    def leave(self, index: int) -> None:
        """*index* takes no (more) turns: the later ones go on without it."""
        self._done[index].set()


@dataclass
class Order:
    """The in-order steps of one device's preparation: its index and the shared turns."""

    index: int
    #: the duplicate check
    naming: Turns
    #: taking the lock
    locking: Turns

    def leave(self) -> None:
        self.naming.leave(self.index)
        self.locking.leave(self.index)


def attempt(items: Sequence[T], step: Callable[[T, Order], R]) -> list[R | BaseException]:
    """``step(item, order)`` for every item at once: each one's result or error, in order,
    once every thread has ended."""
    naming, locking = Turns(len(items)), Turns(len(items))

    def one(index: int) -> R:
        order = Order(index, naming, locking)
        try:
            return step(items[index], order)
        finally:
            order.leave()

    if len(items) <= 1:
        return [_outcome(one, i) for i in range(len(items))]
    with ThreadPoolExecutor(min(THREADS, len(items)), thread_name_prefix="ssd-dut") as pool:
        futures = [pool.submit(one, i) for i in range(len(items))]
        errors = [f.exception() for f in futures]  # waits for all: nothing is left running
    return [f.result() if e is None else e for f, e in zip(futures, errors, strict=True)]


def _outcome(call: Callable[[int], R], index: int) -> R | BaseException:
    try:
        return call(index)
    except Exception as exc:  # noqa: BLE001 - kept as the item's outcome, raised by first()
        return exc


def first(outcomes: Sequence[R | BaseException]) -> list[R]:
    """The results, or the first item's error (in order)."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return list(outcomes)  # type: ignore[arg-type]  # no error among them


def prepare(items: Sequence[T], step: Callable[[T, Order], R]) -> list[R]:
    """``step(item, order)`` for every item at once; the results in order, or the first
    item's error (in *items*' order) once every thread has ended."""
    return first(attempt(items, step))


def each(items: Sequence[T], step: Callable[[T], R]) -> list[R]:
    """``step(item)`` for every item at once; the results in order (the first error raised)."""
    return prepare(items, lambda item, _: step(item))
