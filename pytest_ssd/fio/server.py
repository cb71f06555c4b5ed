"""fio's own server on a machine fio does not run on as a child of this process (a test
host), for the session: jobs go there with ``fio --client``.

:meth:`FioServer.start` runs, served by the machine (:meth:`Machine.serve
<pytest_ssd.machine.machine.Machine.serve>`: a test host's agent, off sshd's session
budget), ``fio --server`` on a unix socket in a fresh ``0700`` folder there
(``mktemp -d``): fio's protocol has no
authentication, so it never listens on a network port.  The machine forwards that socket
here (:meth:`~pytest_ssd.machine.machine.Machine.forward`: a socket only this user may
open), and :func:`~pytest_ssd.fio.engine.run_jobs` runs ``fio --client=sock:fio.sock``
here: the job file and ``--readonly`` go there, fio's JSON (``client_stats``) and its
per-I/O logs come back.  :class:`FioServers` keeps one server a machine for this process.

Where the host has perl, the stream starts the batch agent beside it
(:mod:`pytest_ssd.fio.agent`: the gates of batched points), on a second socket
in that folder, forwarded the same way.

The stream ends the server: when this process closes it (or dies, or loses the
connection), the script on the host terminates every process of that server
— fio, its jobs, the batch agent and the batches' fio and gates — found by the
server's folder in their command line, and removes the folder.
:meth:`FioServer.leftovers` looks for them afterwards.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import FioError, SsdError
from pytest_ssd.fio.agent import AGENT, Gates
from pytest_ssd.fio.agent import SOCKET as AGENT_SOCKET
from pytest_ssd.machine.held import MARK, Held, marks
from pytest_ssd.machine.machine import Machine
from pytest_ssd.proc import Completed

START_TIMEOUT_S = 60.0
#: shortens :data:`START_TIMEOUT_S` (the tests' slow host); never lengthens it
START_ENV = "PYTEST_SSD_FIO_SERVER_START_S"
STOP_TIMEOUT_S = 15.0
#: the name ``fio --client`` is given (relative: fio appends it to the logs' names)
CLIENT_SOCKET = "fio.sock"

#: this server's processes on the host: its folder in their command line (``[/]``: not
#: the grep matching them)
_OURS = """ours() {
  grep -l -a -e "$dir[/]" /proc/[0-9]*/cmdline 2>/dev/null |
    sed -e 's|^/proc/||' -e 's|/cmdline$||'
}"""

#: end this server's fio processes and remove its folder: SIGTERM, SIGKILL at once for a
#: stopped one (continued, it would go on writing), SIGKILL for any left after 5 s
_STOP = """stop() {
  pids=$(ours); [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
  for p in $(ours); do
    case $(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) in T|t) kill -KILL "$p" 2>/dev/null;; esac
  done
  i=0; while [ -n "$(ours)" ] && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
  pids=$(ours); [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  rm -rf "$dir"
}"""

#: ``sh -c SERVE sh AGENT``: start (and the batch agent where perl is), report, wait for
#: the channel to close, clean up.  A mark that cannot be written (the controller gave
#: up and closed the channel: SIGPIPE is ignored, the write fails) ends the server too.
SERVE = f"""
trap '' PIPE
command -v fio >/dev/null || {{ echo "fio is not installed on the host" >&2; exit 127; }}
dir=$(mktemp -d /tmp/ssd-fio.XXXXXX) || exit 1
{_OURS}
{_STOP}
setsid fio --server=sock:$dir/fio.sock >"$dir/log" 2>&1 </dev/null & pid=$!
agent=no
if command -v perl >/dev/null; then
  setsid perl -e "$1" "$dir/{AGENT_SOCKET}" >"$dir/agent.log" 2>&1 </dev/null & agent=yes
fi
{{ echo "{MARK}dir $dir" && echo "{MARK}pid $pid" && echo "{MARK}agent $agent"; }} ||
  {{ stop; exit 4; }}
i=0
while [ ! -S "$dir/fio.sock" ]; do
  if ! kill -0 $pid 2>/dev/null || [ $i -gt 300 ]; then
    cat "$dir/log" >&2; stop; exit 4
  fi
  i=$((i + 1)); sleep 0.1
done
echo "{MARK}ready" || {{ stop; exit 4; }}
cat >/dev/null
stop
echo "{MARK}stopped"
"""

#: ``sh -c LEFT sh DIR``: pids of fio processes of the server that had folder DIR
LEFT = f"""dir=$1
{_OURS}
ours
"""

#: ``sh -c REMOVE sh DIR``: end the server that has folder DIR, remove the folder
REMOVE = f"""dir=$1
{_OURS}
{_STOP}
stop
"""


def start_timeout() -> float:
    """How long the server may take to listen: ``PYTEST_SSD_FIO_SERVER_START_S`` (tests)."""
    text = os.environ.get(START_ENV, "")
    with contextlib.suppress(ValueError):
        value = float(text)
        if 0 < value <= START_TIMEOUT_S:
            return value
    return START_TIMEOUT_S


@dataclass
class FioServer:
    """``fio --server`` on *machine*, for as long as this object runs it."""

    machine: Machine
    #: where the channel's output is kept
    artifacts: Path
    #: the host's folder of the server (its socket is in it)
    folder: str | None = None
    #: the batch agent runs beside the server (the host has perl)
    agent: bool = False
    _channel: Held | None = field(default=None, repr=False)

    @property
    def socket(self) -> Path:
        """The forwarded socket here (in the machine's short folder of sockets)."""
        return self.machine.sockets / f"fio-{self.artifacts.name[-24:]}.sock"

    @property
    def agent_socket(self) -> Path:
        """The batch agent's forwarded socket here."""
        return self.socket.with_name(self.socket.name.replace("fio-", "batch-", 1))

    def start(self) -> None:
        """Start the server and forward its socket; :class:`FioError` in one line if not.

        A server that did not start (in time) is ended on the host and its folder removed.
        """
        timeout = start_timeout()
        held = self.machine.serve(
            ["sh", "-c", SERVE, "sh", AGENT],
            artifacts=self.artifacts,
            name="fio-server",
            ready="ready",
            timeout=timeout,
        )
        if not isinstance(held, Held):
            raise self._failed(held, timeout)
        self._channel = held
        self.folder = held.marks["dir"]
        self.agent = held.marks.get("agent") == "yes"
        try:
            self.machine.forward(self.socket, f"{self.folder}/fio.sock")
            if self.agent:
                self.machine.forward(self.agent_socket, f"{self.folder}/{AGENT_SOCKET}")
        except BaseException:
            self.stop()
            raise

    def _failed(self, ended: Completed, timeout: float) -> FioError:
        """The one line of a server that did not start, once it is gone from the host."""
        folder = marks(ended.stdout).get("dir")
        removed = ""
        if folder is not None:  # the channel's end stops it there too: this makes sure
            with contextlib.suppress(SsdError):
                self.machine.run(["sh", "-c", REMOVE, "sh", folder], timeout=STOP_TIMEOUT_S)
            removed = f" and removed {folder}"
        if ended.seconds < timeout:
            return FioError(
                f"{self.machine.where}: fio --server did not start: {ended.last_error_line()}"
            )
        return FioError(
            f"{self.machine.where}: fio --server did not listen within {timeout:g} s (a slow or"
            f" overloaded host); stopped it there{removed}"
        )

    @property
    def stopped(self) -> bool:
        """:meth:`stop` ended it (a stall, the session's end): a new server is needed."""
        return self.folder is not None and self._channel is None

    @property
    def alive(self) -> bool:
        """The channel (and with it the server) runs."""
        return self._channel is not None and self._channel.alive

    def _lost(self) -> FioError:
        return FioError(f"{self.machine.where}: the fio server is not running (connection lost?)")

    def client_args(self, cwd: Path) -> list[str]:
        """fio's arguments to run its jobs here, from *cwd* (a link to the socket goes there)."""
        if not self.alive:
            raise self._lost()
        link = cwd / CLIENT_SOCKET
        link.unlink(missing_ok=True)
        link.symlink_to(self.socket)
        return [f"--client=sock:{CLIENT_SOCKET}"]

    def batch_gates(self, machine: Machine) -> Gates | None:
        """A connection to the batch agent, for one batch on *machine* (the host's: None
        when it has no perl)."""
        if not self.agent:
            return None
        if not self.alive:
            raise self._lost()
        gates = Gates(self.agent_socket, machine)
        gates.connect()
        return gates

    def fetched(self, folder: Path) -> None:
        """Give the logs fio sent back their own names (fio appends the client's name)."""
        for log in folder.glob(f"*.log.{CLIENT_SOCKET}"):
            log.rename(log.with_name(log.name.removesuffix(f".{CLIENT_SOCKET}")))
        (folder / CLIENT_SOCKET).unlink(missing_ok=True)

    def stop(self) -> None:
        """Close the channel: the host ends every fio of this server and removes its folder."""
        if self._channel is not None:
            channel, self._channel = self._channel, None
            channel.close(STOP_TIMEOUT_S)
            if self.folder is not None:
                self.machine.unforward(self.socket, f"{self.folder}/fio.sock")
                if self.agent:
                    self.machine.unforward(self.agent_socket, f"{self.folder}/{AGENT_SOCKET}")
        self.socket.unlink(missing_ok=True)
        self.agent_socket.unlink(missing_ok=True)

    def leftovers(self) -> list[int]:
        """Pids of this server's fio processes still on the host (none after :meth:`stop`)."""
        if self.folder is None:
            return []
        done = self.machine.run(["sh", "-c", LEFT, "sh", self.folder], timeout=60)
        return [int(p) for p in done.stdout.split() if p.isdigit()]


@dataclass
class FioServers:
    """This process's fio server on each machine that needs one, started on first use."""

    #: by the machine's identity: the machine and its server
    _servers: dict[int, tuple[Machine, FioServer]] = field(default_factory=dict, repr=False)

    def on(self, machine: Machine) -> FioServer:
        """*machine*'s fio server for this process, started on first use.

        One that did not start is gone from the machine (see :meth:`FioServer.start`),
        one stopped after a stall too: the next use starts another.
        """
        known = self._servers.get(id(machine))
        if known is None or known[1].stopped:
            fio = FioServer(machine, machine.sockets / "fio-server")
            fio.start()
            self._servers[id(machine)] = (machine, fio)
            return fio
        return known[1]

    def close(self) -> list[str]:
        """Stop every server and check that no fio of theirs is left; what was.

        Each is taken out before it is stopped: a second call (an interrupted close run
        again at exit) neither stops nor reports it again.
        """
        problems = []
        while self._servers:
            _, (machine, fio) = self._servers.popitem()
            fio.stop()
            with contextlib.suppress(SsdError):  # the connection is gone: its end killed them
                left = fio.leftovers()
                if left:
                    pids = ", ".join(map(str, left))
                    problems.append(f"{machine.where}: fio processes {pids} were left running")
        return problems
