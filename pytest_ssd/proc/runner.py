"""The one way pytest-ssd runs a subprocess.

argv list (never a shell string), a timeout, its own process group so that a
timeout or Ctrl-C terminates the program *and its children*, and an optional
artifact folder keeping the command, stdout, stderr and exit code.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_ssd.errors import ToolError, present
from pytest_ssd.proc.sweep import end

#: how long a process group gets between SIGTERM and SIGKILL
KILL_GRACE_S = 5.0
#: how long an interrupted command's output may take to be read for its artifacts
KEEP_TIMEOUT_S = 5.0
_PR_SET_PDEATHSIG = 1
#: the capability that lets a process give another the normal CPU policy back (capability.h)
_CAP_SYS_NICE = 23
#: the C library, from the symbols the process already has (Python links it):
#: ``ctypes.util.find_library`` ran ``ldconfig -p`` in every process importing this module
_LIBC = ctypes.CDLL(None, use_errno=True)


def die_with_parent(signum: int = signal.SIGTERM, parent: int | None = None) -> None:
    """Have the kernel send *signum* to this process when its parent dies (Linux prctl).

    A program pytest-ssd starts (fio above all) must not go on writing after a
    ``kill -9`` of its pytest: it runs in a session of its own, so nothing else
    would stop it.  When the parent (*parent*, if known) is already gone, exit at once.
    """
    if _LIBC.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        return  # not Linux: nothing to ask for
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def may_raise_priority() -> bool:
    """Whether this process may move another from ``SCHED_IDLE`` back to the normal policy.

    That needs CAP_SYS_NICE (root has it, a container's root may not).
    """
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> _CAP_SYS_NICE & 1)
    return False


def normal_policy(pid: int) -> None:
    """Give every thread of *pid*, and of every process below it now, the normal CPU policy."""
    todo = [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):  # gone meanwhile
                os.sched_setscheduler(int(task.name), os.SCHED_OTHER, os.sched_param(0))
                todo += [int(child) for child in (task / "children").read_text().split()]


def _started(parent: int, idle: bool) -> None:
    """In a spawned program before it runs: die with *parent*; with *idle*, ``SCHED_IDLE``."""
    die_with_parent(signal.SIGTERM, parent)
    if idle:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


@dataclass(frozen=True)
class Completed:
    """What a finished program left behind."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def check(self, what: str | None = None) -> Completed:
        """Raise :class:`ToolError` naming the program and its last stderr line on failure."""
        if self.returncode != 0:
            raise ToolError(
                f"{what or self.argv[0]} failed (exit {self.returncode}): {self.last_error_line()}"
            )
        return self

    def last_error_line(self) -> str:
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1]
        return "no output"


def which(program: str, install_hint: str) -> str:
    """The path of *program*, or a :class:`ToolError` saying how to install it."""
    path = shutil.which(program)
    if path is None:
        raise ToolError(f"{program} not found on PATH: {install_hint}")
    return path


class Stalled(ToolError):
    """A program made no progress for longer than its watch allows; it was stopped."""


#: returns why a running program is to be stopped (no progress), or None while it is fine
Watch = Callable[[], str | None]
#: how often a watched program's watch is asked
WATCH_EVERY_S = 1.0


def _ask(watch: Watch | None) -> None:
    said = watch() if watch is not None else None
    if said is not None:
        raise Stalled(said)


class LineSink(Protocol):
    """Receives a program's stdout line by line and keeps what is worth keeping."""

    def feed(self, line: str) -> None: ...

    def text(self) -> str: ...


def _communicate(
    proc: subprocess.Popen[str], stdin: str | None, timeout: float, watch: Watch | None
) -> tuple[str, str]:
    """``proc.communicate`` asking *watch* every :data:`WATCH_EVERY_S` (output is not lost)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        step = min(left, WATCH_EVERY_S) if watch is not None else left
        try:
            return proc.communicate(stdin, timeout=max(step, 0.0))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
            _ask(watch)


def _stream(
    proc: subprocess.Popen[str], timeout: float, sink: LineSink, watch: Watch | None = None
) -> tuple[str, str]:
    """Feed stdout to *sink* as it arrives; stderr is collected by a thread (no deadlock)."""
    stdout, stderr = present(proc.stdout, "stdout pipe"), present(proc.stderr, "stderr pipe")
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.append(stderr.read()), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            _ask(watch)
            if not selector.select(min(left, WATCH_EVERY_S)):
                continue
            line = stdout.readline()
            if not line:
                break
            sink.feed(line)
    proc.wait(max(deadline - time.monotonic(), 0.1))
    reader.join(KILL_GRACE_S)
    return sink.text(), "".join(errors)


def end_tree(pid: int) -> None:
    """End *pid*, its process group and every descendant (fio's jobs leave its group: ``setsid``).

    SIGTERM, then SIGKILL after :data:`KILL_GRACE_S`; a stopped one gets SIGKILL at once
    (continued, it would go on writing).  The caller reaps *pid* itself.
    """
    family = descendants(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    end([pid, *family], KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError):  # what is left in its group
        os.killpg(pid, signal.SIGKILL)


def _end(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """End *proc* and everything below it (see :func:`end_tree`), and reap it."""
    if proc.poll() is None:  # once reaped, its pid may be another process's
        end_tree(proc.pid)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # its group's last ones
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _keep(artifacts: Path, name: str, result: Completed, extra: dict[str, str]) -> None:
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / f"{name}.cmd").write_text(result.command + "\n")
    (artifacts / f"{name}.stdout").write_text(result.stdout)
    (artifacts / f"{name}.stderr").write_text(result.stderr)
    (artifacts / f"{name}.rc").write_text(f"{result.returncode}\n")
    (artifacts / f"{name}.seconds").write_text(f"{result.seconds:.3f}\n")
    for filename, text in extra.items():
        (artifacts / filename).write_text(text)


def _after_interrupt(
    proc: subprocess.Popen[str], argv: tuple[str, ...], start: float, sink: LineSink | None
) -> Completed:
    """What an interrupted command printed until it was killed (as far as can be read now)."""
    try:
        stdout, stderr = proc.communicate(timeout=KEEP_TIMEOUT_S)
    except (subprocess.TimeoutExpired, ValueError, OSError):  # pipes gone or still held
        stdout, stderr = "", ""
    stdout = (sink.text() if sink is not None else "") + (stdout or "")
    returncode = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return Completed(argv, returncode, stdout, stderr or "", time.monotonic() - start)


def run(
    argv: list[str] | tuple[str, ...],
    *,
    timeout: float,
    artifacts: Path | None = None,
    name: str | None = None,
    stdin: str | None = None,
    extra_files: dict[str, str] | None = None,
    sink: LineSink | None = None,
    cwd: Path | None = None,
    watch: Watch | None = None,
) -> Completed:
    """Run *argv* to completion and return what it printed; never raises on a non-zero exit.

    On timeout or interrupt the whole process group is terminated (SIGTERM, then
    SIGKILL), what was kept so far is written to *artifacts*, and the error or the
    interrupt propagates.  With a *sink*, stdout is fed to it line by line as it
    comes (progress) and the sink decides what is kept as stdout.  With a *watch*,
    it is asked every second; when it says why, the program is stopped the same
    way and :class:`Stalled` raised with its words.
    """
    argv = tuple(str(a) for a in argv)
    label = name or Path(argv[0]).name
    start = time.monotonic()
    parent = os.getpid()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=lambda: die_with_parent(signal.SIGTERM, parent),  # noqa: PLW1509
        )
    except FileNotFoundError as exc:
        raise ToolError(f"{argv[0]} not found: {exc.strerror}") from None
    try:
        if sink is None:
            stdout, stderr = _communicate(proc, stdin, timeout, watch)
        else:
            stdout, stderr = _stream(proc, timeout, sink, watch)
    except subprocess.TimeoutExpired:
        _end(proc)
        stdout, stderr = proc.communicate()
        stdout = sink.text() + stdout if sink is not None else stdout
        result = Completed(argv, proc.returncode, stdout, stderr, time.monotonic() - start)
        if artifacts is not None:
            _keep(artifacts, label, result, extra_files or {})
        raise ToolError(f"{label} timed out after {timeout:g} s: {result.command}") from None
    except BaseException:  # an interrupt (Ctrl-C, a signal): what it printed is kept too
        _end(proc)
        if artifacts is not None:
            _keep(artifacts, label, _after_interrupt(proc, argv, start, sink), extra_files or {})
        raise
    result = Completed(argv, proc.returncode, stdout, stderr, time.monotonic() - start)
    if artifacts is not None:
        _keep(artifacts, label, result, extra_files or {})
    return result


def descendants(pid: int) -> list[int]:
    """Every process below *pid* (children first), from /proc; empty where there is none."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


@dataclass
class Background:
    """A program running in the background (:func:`spawn`): its own process group, files."""

    proc: subprocess.Popen[bytes]
    argv: tuple[str, ...]
    artifacts: Path
    name: str
    started: float

    def alive(self) -> bool:
        return self.proc.poll() is None

    def normal_policy(self) -> None:
        """The program, its threads and what it started: the normal CPU policy (see spawn)."""
        normal_policy(self.proc.pid)

    def children(self) -> list[int]:
        """The program's own child processes now; empty when none (or the kernel cannot say)."""
        pid = self.proc.pid
        try:
            return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            return []

    def _completed(self) -> Completed:
        folder, name = self.artifacts, self.name
        return Completed(
            self.argv,
            self.proc.returncode if self.proc.returncode is not None else -signal.SIGKILL,
            (folder / f"{name}.stdout").read_text(errors="replace"),
            (folder / f"{name}.stderr").read_text(errors="replace"),
            time.monotonic() - self.started,
        )

    def _exited(self, timeout: float) -> None:
        """Block until the program exits or *timeout* passes, waking at its exit.

        ``Popen.wait(timeout)`` polls with sleeps growing to 50 ms: a batch's point
        would wait 25 ms on average beyond its fio's exit.  A pidfd is readable
        once the process exited (only this process reaps it, so its pid is its own).
        """
        if self.proc.returncode is not None:
            return
        try:
            fd = os.pidfd_open(self.proc.pid)
        except OSError:  # a kernel before 5.3: Popen.wait polls
            return
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                selector.select(timeout)
        finally:
            os.close(fd)

    def wait(self, timeout: float) -> Completed:
        """Wait for the program to end (its group is killed after *timeout*); what it left."""
        try:
            deadline = time.monotonic() + timeout
            self._exited(timeout)
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise ToolError(
                f"{self.name} timed out after {timeout:g} s: {shlex.join(self.argv)}"
            ) from None
        except BaseException:
            self.kill()
            raise
        return self._keep()

    def kill(self) -> Completed:
        """Terminate the program, its group and its descendants (SIGTERM, then SIGKILL).

        Descendants count too: fio's job processes each call ``setsid()`` and leave
        the group of the fio that forked them.
        """
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        _end(self.proc)
        return self._keep()

    def _keep(self) -> Completed:
        result = self._completed()
        (self.artifacts / f"{self.name}.cmd").write_text(result.command + "\n")
        (self.artifacts / f"{self.name}.rc").write_text(f"{result.returncode}\n")
        (self.artifacts / f"{self.name}.seconds").write_text(f"{result.seconds:.3f}\n")
        return result


def spawn(
    argv: list[str] | tuple[str, ...],
    *,
    artifacts: Path,
    name: str,
    stdin: bool = False,
    idle: bool = False,
) -> Background:
    """Start *argv* in the background, in its own session, run from *artifacts*.

    stdout and stderr go to ``<name>.stdout`` / ``<name>.stderr`` there (no pipe to
    drain); the program gets SIGTERM if this process dies.  Its stdin is empty, or
    with *stdin* a pipe held open until :meth:`Background.kill` (a program that
    reads it runs until then).  :meth:`Background.wait` or :meth:`Background.kill` ends it.
    With *idle* it runs under ``SCHED_IDLE`` (a CPU nothing else wants) until
    :meth:`Background.normal_policy`.
    """
    argv = tuple(str(a) for a in argv)
    artifacts.mkdir(parents=True, exist_ok=True)
    parent = os.getpid()
    with (
        (artifacts / f"{name}.stdout").open("wb") as out,
        (artifacts / f"{name}.stderr").open("wb") as err,
    ):
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=artifacts,
                start_new_session=True,
                preexec_fn=lambda: _started(parent, idle),  # noqa: PLW1509
            )
        except FileNotFoundError as exc:
            raise ToolError(f"{argv[0]} not found: {exc.strerror}") from None
    return Background(proc, argv, artifacts, name, time.monotonic())
