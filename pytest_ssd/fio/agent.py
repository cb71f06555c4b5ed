"""A fio batch's gates and fio processes, where fio runs: a small perl agent there.

A batch's gates are FIFOs that fio's jobs read in their prerun and its processes
are fio's own (:mod:`pytest_ssd.fio.batch`).  Both must be where fio runs, so
:data:`AGENT` (perl: a test host has it for the locks already, no Python is
assumed there) does there what a batch needs of a FIFO or a process — make the
FIFOs and job files, start a point's fio (under ``SCHED_IDLE`` until its
release), hold a gate, write a word to it, wait for a job's end FIFO, wait for a
fio and send back its output and the files it wrote beside it (its per-I/O logs),
read small files there (the CPU record around a point, the stall watch's counters: a
request instead of an SSH command to a test host) — one line a request.  A
controller silent for :data:`IDLE_S` (dead, or cut off without a word) ends its batch
there.  The order of releases, the holding of
gates and what a failure means stay in :class:`~pytest_ssd.fio.batch.Batch`.
This machine and a test host run the same agent and the same :class:`Gates`;
only how its socket is reached differs:

* on a test host, the fio server's channel starts it beside ``fio --server`` in
  the server's folder (:data:`~pytest_ssd.fio.server.SERVE`); it listens on a
  unix socket there, reached through the SSH master like the server's
  (``ssh -O forward``).  sshd counts no forwarded connection against
  ``MaxSessions`` ("setting it to 0 will prevent all shell, login and subsystem
  sessions while still permitting forwarding", sshd_config(5)), so a host's
  batches take no channel of the budget beyond the server's;
* on this machine, :func:`here` starts it at the session's first batch, held
  by this process (:meth:`~pytest_ssd.machine.machine.Machine.hold`), on a
  socket in a private ``0700`` folder: it ends when its input closes (this
  process exits or dies) and gets the parent-death signal.

Each batch is a connection of its own, served by a forked agent in a folder of
its own.  The end of a connection ends its batch: a closed socket (the batch
closed, pytest killed, the master lost) makes the agent kill every process it
started (fio, its jobs, their gates' shells) and remove the batch's folder;
what a point's fio wrote there reached the point's artifacts with its output.
On a test host the server channel's end also kills whatever has the server's
folder in its command line (every path given to them is absolute) and removes
that folder.

Before writing ``go`` to a gate the agent checks the pinned device itself
(:meth:`Gates.pin`): the node's device number, and the sysfs files of the device
and its disk that its identity is read from, byte for byte, against what they
were when the batch started (right before the session's full check of the
device), so each release is checked at the gate, without a snapshot of the host.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.pinned import Pinned, changed
from pytest_ssd.errors import FioError, SsdError
from pytest_ssd.fio.job import FIO_INSTALL_HINT, FioJob
from pytest_ssd.fio.watch import EVERY_S, StallWatch, capacity, stall_watch
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.ssh import MARK, Held, control_folder
from pytest_ssd.proc import Completed

#: how long an answer may take beyond the time asked for (a host under load)
ANSWER_S = 60.0
#: how long a release waits on the host for its job's end before it answers (the
#: batch's liveness interval: the caller checks fio and the stall watch meanwhile)
FIRST_WAIT_S = 0.5
#: the agent's socket in its folder (on a test host: the fio server's)
SOCKET = "batch.sock"
#: how long this machine's agent may take to listen
START_TIMEOUT_S = 30.0
#: how long this machine's agent may take to end once its input closed
STOP_TIMEOUT_S = 5.0
#: a file's bytes are written to the point's artifacts this much at a time
CHUNK = 1 << 16
#: seconds the agent waits for a word from the controller before it ends the batch there
#: (a dead controller, a network gone without a word); between two requests of a batch
#: the controller is silent only for a point test's set-up and tear-down
IDLE_S = 300
#: shortens :data:`IDLE_S` (the tests' silent controller); never lengthens it
IDLE_ENV = "PYTEST_SSD_BATCH_IDLE_S"

#: what a device's pinned identity is read from, relative to the device's sysfs folder
#: (``n``) and its disk's (``d``): number, size, model, serial, wwid, loop backing
PIN_FILES = (
    "n/dev",
    "n/size",
    "d/device/model",
    "d/device/serial",
    "d/serial",
    "d/device/wwid",
    "d/wwid",
    "d/loop/backing_file",
    "d/loop/offset",
)

#: ``perl -e AGENT SOCKET [MARK]``: serve batches on unix socket SOCKET, a forked agent
#: each (``batch_agent.pl`` beside this module)
AGENT = (Path(__file__).parent / "batch_agent.pl").read_text()


def idle_limit() -> int:
    """:data:`IDLE_S`, or ``PYTEST_SSD_BATCH_IDLE_S`` when shorter (tests)."""
    with contextlib.suppress(ValueError):
        value = int(os.environ.get(IDLE_ENV, ""))
        if 0 < value <= IDLE_S:
            return value
    return IDLE_S


class AgentLost(FioError):
    """The batch's connection to its agent ended."""


@dataclass
class Gates:
    """One batch's gates and fio processes where fio runs, through its agent's socket."""

    #: the agent's socket here (a test host's: forwarded)
    socket_path: Path
    #: the machine fio runs on (the device's size and the stall watch read there)
    machine: Machine
    #: the batch's folder where fio runs (the agent made it; removed with the batch)
    folder: str = ""
    #: :meth:`pin` noted the device: every release checks it
    pinned: bool = False
    #: the device's node there (pinned)
    node: str = ""
    #: the agent starts fio under SCHED_IDLE and gives it the normal policy back
    idle: bool = False
    _sock: socket.socket | None = field(default=None, repr=False)
    _held: set[int] = field(default_factory=set)
    #: jobs whose end the agent said with their release
    _ended: set[int] = field(default_factory=set)
    #: a batch started early holds its gates in a thread meanwhile
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def watch_after(self) -> float:
        """A job is watched once it runs longer than the watch's interval (its counters
        are read by the agent: a request, on a test host too)."""
        return EVERY_S

    @property
    def checks_device(self) -> bool:
        return self.pinned

    @property
    def at(self) -> str:
        """The machine at the start of a message."""
        return self.machine.where or "this machine"

    def where(self, target: str) -> str:
        """*target* in a message (with the host it is on)."""
        return self.machine.naming(target)

    def capacity(self, target: str) -> int | None:
        return capacity(self.machine, target)

    def watch(self, jobs: Sequence[FioJob], target: str, where: str) -> StallWatch | None:
        return stall_watch(self.machine, jobs, target, where, self)

    def connect(self) -> None:
        """Connect; the agent makes the batch's folder there (FioError in one line if not)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(ANSWER_S)
        try:
            sock.connect(str(self.socket_path))
        except OSError as exc:
            sock.close()
            raise FioError(f"{self.at}: the fio batch agent cannot be reached: {exc}") from None
        self._sock = sock
        self._reader = sock.makefile("rb")
        self.folder, _, policy = self.ask("").partition(" ")  # the agent speaks first
        self.idle = policy == "idle"
        self.ask(f"idle {idle_limit()}")

    def ask(self, request: str, data: bytes = b"", wait: float = 0.0) -> str:
        """Send *request* (and *data*); the agent's answer after ``ok``.  *wait*: seconds the
        agent may take on purpose beyond :data:`ANSWER_S`."""
        with self._lock:
            return self._answer(request, data, wait)

    def ask_output(
        self, request: str, keep: Path, wait: float = 0.0
    ) -> tuple[int, str, str] | None:
        """A process's exit code, stdout and stderr (None: it runs on after *wait*); the
        files it wrote beside them (its per-I/O logs) are written to folder *keep*."""
        with self._lock:
            head = self._answer(request, b"", wait)
            if head == "timeout":
                return None
            code, out_size, err_size, files = (int(word) for word in head.split())
            out = self._bytes(out_size).decode(errors="replace")
            err = self._bytes(err_size).decode(errors="replace")
            for _ in range(files):
                size, _, name = self._line().partition(" ")
                self._copy(int(size), keep / name if _plain(name) else None)
            return code, out, err

    def _answer(self, request: str, data: bytes, wait: float) -> str:
        sock = self._sock
        if sock is None:
            raise AgentLost(f"{self.at}: the fio batch's agent connection is closed")
        try:
            sock.settimeout(ANSWER_S + wait)
            if request:
                sock.sendall(request.encode() + b"\n" + data)
        except OSError as exc:
            raise self._lost(str(exc)) from None
        word, _, rest = (line := self._line()).partition(" ")
        if word == "err" and rest.startswith("changed "):
            raise changed(self.node, rest.removeprefix("changed "))
        if word != "ok":
            raise FioError(f"{self.at}: the fio batch agent: {rest or line}")
        return rest

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        """Each of small files *paths*' text where fio runs, in one request (None: unread;
        every one None once the agent is lost).  A path with white space in it goes to the
        machine (a request's words are split on spaces)."""
        if any(not path or any(c.isspace() for c in path) for path in paths):
            return self.machine.read_many(paths)
        if not paths:
            return []
        with self._lock:
            try:
                head = self._answer(f"read {' '.join(paths)}", b"", 0.0)
                texts = [
                    self._bytes(int(size)) if int(size) >= 0 else None for size in head.split()
                ]
            except AgentLost:
                return [None] * len(paths)
        return [None if text is None else text.decode(errors="replace") for text in texts]

    def _lost(self, how: str) -> AgentLost:
        self.close()
        return AgentLost(f"{self.at}: the fio batch's agent was lost ({how})")

    def _line(self) -> str:
        try:
            line = self._reader.readline()
        except OSError as exc:
            raise self._lost(str(exc)) from None
        if not line.endswith(b"\n"):
            raise self._lost("connection ended")
        return line.decode(errors="replace").rstrip("\n")

    def _bytes(self, size: int) -> bytes:
        try:
            data = self._reader.read(size)
        except OSError as exc:
            raise self._lost(str(exc)) from None
        if len(data) != size:
            raise self._lost("mid-answer")
        return data

    def _copy(self, size: int, to: Path | None) -> None:
        """*size* bytes of the answer into file *to* (None: read and dropped)."""
        with to.open("wb") if to is not None else contextlib.nullcontext() as out:
            while size > 0:
                data = self._bytes(min(size, CHUNK))
                if out is not None:
                    out.write(data)
                size -= len(data)

    # --- the batch's files ---------------------------------------------------------------

    def path(self, relative: str) -> str:
        """*relative* in the batch's folder on the host (absolute: the host's clean-up
        finds every process by the server's folder in its command line)."""
        return f"{self.folder}/{relative}" if relative else self.folder

    def fio(self) -> str:
        """The fio program there (a :class:`~pytest_ssd.errors.ToolError` with its install
        hint where there is none)."""
        return self.machine.which("fio", FIO_INSTALL_HINT)

    def jobfile(self, relative: str) -> str:
        return self.path(f"{relative or '.'}/fio.job")

    def prefix(self, relative: str) -> str:
        return self.path("") + "/"  # absolute there (the host's clean-up finds the gates' shells)

    def put(self, relative: str, text: str) -> None:
        data = text.encode()
        self.ask(f"put {relative} {len(data)}", data)

    def open(self, names: list[str]) -> None:
        """The FIFOs *names* in the batch's folder there (the agent made it)."""
        self.ask("fifo " + " ".join(names))

    def spawn(self, relative: str, argv: list[str], artifacts: Path, *, idle: bool) -> AgentFio:
        """Start *argv* in the batch folder's *relative* folder on the host (*idle*: under
        ``SCHED_IDLE`` until :meth:`AgentFio.normal_policy`)."""
        key = relative.replace("/", "_") or "all"
        self.ask(f"spawn {key} {relative or '.'} {int(idle)} {' '.join(argv)}")
        return AgentFio(self, key, tuple(argv), artifacts, time.monotonic())

    def pin_device(self, node: str, pinned: Pinned | None) -> Gates:
        """These gates with *node* pinned when it is a block device (every release then
        checks it here; else the session checks it before each); closed on a failure."""
        try:
            if pinned is not None and pinned.key[0] == "block":
                self.pin(node, (pinned.key[1], pinned.key[2]))
        except BaseException:
            self.close()
            raise
        return self

    def pin(self, node: str, number: tuple[int, int]) -> None:
        """Note the device number and identity files of *node* for every later release
        (:class:`DeviceChanged` unless *node* is device *number* now)."""
        self.node = node
        self.ask(f"pin {node} {number[0]}:{number[1]} {' '.join(PIN_FILES)}")
        self.pinned = True

    # --- gates ---------------------------------------------------------------------------

    @property
    def held(self) -> bool:
        return bool(self._held)

    def hold(self, n: int) -> bool:
        """Hold gate *n* (False: its job is not there yet)."""
        self.hold_each([n])
        return n in self._held

    def hold_each(self, gates: Sequence[int]) -> None:
        """Hold each of *gates* whose job is there, in one request."""
        asked = [n for n in gates if n not in self._held]
        if asked:
            said = self.ask(f"hold {' '.join(map(str, asked))}").split()
            self._held.update(n for n, word in zip(asked, said, strict=True) if word == "yes")

    def alive(self, keys: Sequence[str]) -> list[bool]:
        """Whether each of the fio processes *keys* still runs, in one request (none once
        the agent is lost: it ended them with the connection)."""
        if not keys:
            return []
        try:
            said = self.ask(f"alive {' '.join(keys)}").split()
        except AgentLost:
            return [False] * len(keys)
        return [word == "yes" for word in said]

    def tell(self, n: int, word: str) -> bool:
        """Write *word* to held gate *n* (False: its job left it: fio ended)."""
        self._held.discard(n)
        return self.ask(f"tell {n} {word}") != "broken"

    def release(self, n: int) -> bool:
        """Check the pinned device, then ``go`` to gate *n* (False: its job left it).

        The agent waits up to :data:`FIRST_WAIT_S` for the job's end before it answers:
        a short job's end costs no request of its own.
        """
        self._held.discard(n)
        answer = self.ask(f"go {n} {FIRST_WAIT_S:g}", wait=FIRST_WAIT_S)
        if answer == "done":
            self._ended.add(n)
        return answer != "broken"

    def ended(self, n: int, timeout: float) -> bool:
        """True once job *n* ended (its end FIFO), within *timeout*."""
        if n in self._ended:
            return True
        return self.ask(f"wait {n} {timeout:g}", wait=timeout) == "done"

    def skip_all(self) -> None:
        with contextlib.suppress(FioError):
            self.ask("skipall")
        self._held.clear()

    def close(self) -> None:
        """End the connection: the agent ends what it started and removes the folder."""
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                self._reader.close()
            sock.close()


@dataclass
class AgentFio:
    """A fio process of a batch where fio runs (:meth:`Gates.spawn`), as a Background."""

    gates: Gates
    key: str
    argv: tuple[str, ...]
    #: the process's folder here: its job file, and its output and logs once it ended
    artifacts: Path
    started: float
    done: Completed | None = None

    def alive(self) -> bool:
        return self.done is None and self.gates.alive([self.key])[0]

    def children(self) -> list[int]:
        return [1] if self.gates.ask(f"children {self.key}") == "yes" else []

    def normal_policy(self) -> None:
        """The process, its threads and what it started: the normal CPU policy."""
        self.gates.ask(f"normal {self.key}")

    def _keep(self, found: tuple[int, str, str]) -> Completed:
        code, out, err = found
        done = Completed(self.argv, code, out, err, time.monotonic() - self.started)
        # the files a local fio leaves (pytest_ssd.proc.runner.Background)
        kept = {
            "stdout": out,
            "stderr": err,
            "cmd": f"{done.command}\n",
            "rc": f"{code}\n",
            "seconds": f"{done.seconds:.3f}\n",
        }
        for suffix, text in kept.items():
            (self.artifacts / f"fio.{suffix}").write_text(text)
        self.done = done
        return done

    def wait(self, timeout: float) -> Completed:
        if self.done is not None:
            return self.done
        found = self.gates.ask_output(f"end {self.key} {timeout:g}", self.artifacts, timeout)
        if found is None:
            self.kill()
            raise FioError(f"{self.gates.at}: fio timed out after {timeout:g} s")
        return self._keep(found)

    def kill(self) -> Completed:
        if self.done is not None:
            return self.done
        try:
            killed = self.gates.ask_output(f"kill {self.key}", self.artifacts)
            return self._keep(killed or (-9, "", ""))
        except AgentLost as exc:  # the agent ended it with the connection
            self.done = Completed(self.argv, -9, "", str(exc), 0.0)
            return self.done


def _plain(name: str) -> bool:
    """*name* is a file name of the point's artifacts folder (nothing outside it)."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


@dataclass
class _Here:
    """This machine's agent: held by this process, its socket in a private folder."""

    held: Held
    folder: Path

    def stop(self) -> None:
        self.held.close(STOP_TIMEOUT_S)
        shutil.rmtree(self.folder, ignore_errors=True)


_here: list[_Here] = []
_starting = threading.Lock()


def here(machine: Machine) -> Path:
    """The socket of the batch agent of *machine*, whose programs are this process's
    children (:attr:`~pytest_ssd.machine.machine.Machine.children`): started at the
    first call of the process.

    It lasts until this process exits (its input closes) or dies (the parent-death
    signal); a batch still connected ends with its connection.  :class:`FioError` (why,
    in one line) when it cannot start (no perl).
    """
    with _starting:
        if not _here:
            folder = control_folder()  # short: a socket path holds 107 bytes
            socket_path = folder / SOCKET
            try:
                held = machine.hold(
                    ["perl", "-e", AGENT, str(socket_path), MARK],
                    artifacts=folder,
                    name="batch-agent",
                    ready="ready",
                    timeout=START_TIMEOUT_S,
                )
            except SsdError as exc:  # perl is not installed
                held = Completed(("perl",), 127, "", str(exc), 0.0)
            if not isinstance(held, Held):
                shutil.rmtree(folder, ignore_errors=True)
                raise FioError(f"the fio batch agent did not start here: {held.last_error_line()}")
            _here.append(_Here(held, folder))
            atexit.register(_here[0].stop)
        return _here[0].folder / SOCKET


def connect(socket_path: Path, machine: Machine, node: str, pinned: Pinned | None) -> Gates:
    """A batch's gates on *machine* through the agent at *socket_path*, device *node* pinned
    (:meth:`Gates.pin_device`)."""
    gates = Gates(socket_path, machine)
    gates.connect()
    return gates.pin_device(node, pinned)
