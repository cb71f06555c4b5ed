"""Admin commands polled on the device's machine while fio reads.

One ``sh`` there starts a polling round every 1 / rate seconds, each in the background
(a slow answer does not slow the rate, as a fleet's monitors do not wait for each
other): ``nvme smart-log``, ``nvme error-log`` and ``nvme id-ctrl`` on the device and,
where the controller declares telemetry (id-ctrl LPA bit 3), a read of the
controller-initiated telemetry log.  Each prints its exit status; the loop ends when
its stop file appears (touched when fio is done) or after its most rounds.  The loop
times itself (``started``/``ended``, that machine's clock): the rounds it started are
counted over the time it ran, not over fio's, since it sees the stop file a while after
fio ends.  The same on this machine and on a test host: it goes through
:class:`~pytest_ssd.machine.Machine`.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from pytest_ssd.machine.machine import Machine
from pytest_ssd.proc import Completed

#: ``sh -c POLL sh STOP GAP MOST NVME DEVICE TELEMETRY``
POLL = """
stop=$1 gap=$2 most=$3 nvme=$4 dev=$5 tele=$6
i=0
echo "started $(date +%s.%N)"
while [ ! -e "$stop" ] && [ "$i" -lt "$most" ]; do
  (
    for log in smart-log error-log id-ctrl; do
      "$nvme" "$log" "$dev" -o json >/dev/null 2>&1
      echo "$log $?"
    done
    if [ "$tele" = 1 ]; then
      "$nvme" telemetry-log "$dev" --controller-init --data-area=1 \
        --output-file=/dev/null >/dev/null 2>&1
      echo "telemetry-log $?"
    fi
  ) &
  i=$((i + 1))
  sleep "$gap"
done
echo "ended $(date +%s.%N)"
wait
rm -f -- "$stop"
echo "rounds $i"
"""
#: the commands of a round, as the script names them
COMMANDS = ("smart-log", "error-log", "id-ctrl")
TELEMETRY = "telemetry-log"
#: how long past its planned time the poller may run before it is stopped
GRACE_S = 120.0


@dataclass(frozen=True)
class Polled:
    """What a poller did: rounds started, each command's answers and failures, its time."""

    rounds: int
    answered: dict[str, int]
    failed: dict[str, int]
    elapsed_s: float

    @property
    def rate(self) -> float:
        """Rounds per second, as achieved."""
        return self.rounds / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "rounds": self.rounds,
            "answered": self.answered,
            "failed": self.failed,
            "elapsed_s": self.elapsed_s,
            "rate": self.rate,
        }


def parse_polled(done: Completed, elapsed_s: float) -> Polled:
    """The poller's output: a ``NAME STATUS`` line per command, then ``rounds N``.

    Its time is the loop's own (``started`` to ``ended``); *elapsed_s*, as this process
    measured it, only when the loop's times are missing."""
    answered: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    rounds = 0
    times: dict[str, float] = {}
    for line in done.stdout.splitlines():
        name, _, status = line.partition(" ")
        if name == "rounds" and status.isdecimal():
            rounds = int(status)
        elif name in ("started", "ended"):
            try:
                times[name] = float(status)
            except ValueError:
                continue
        elif status.isdecimal():
            (answered if status == "0" else failed)[name] += 1
    if len(times) == 2 and times["ended"] > times["started"]:
        elapsed_s = times["ended"] - times["started"]
    return Polled(rounds, dict(answered), dict(failed), elapsed_s)


@dataclass
class Poller:
    """``with Poller(machine, nvme, device, rate, ...) as poller: run fio`` then
    :attr:`polled`; started before fio and stopped when fio is done."""

    machine: Machine
    nvme: str
    device: Path
    rate: float
    telemetry: bool
    #: how long fio is planned to run (the poller's most rounds: that, and a grace)
    planned_s: float
    artifacts: Path
    polled: Polled | None = None
    _stop: str = field(default_factory=lambda: f"/tmp/pytest-ssd-adminload-{uuid.uuid4().hex}")
    _done: Completed | None = None
    _thread: threading.Thread | None = None
    _started: float = 0.0
    #: times it was started: each run's output kept apart in the artifacts
    _runs: int = 0

    def argv(self) -> list[str]:
        most = math.ceil((self.planned_s + GRACE_S) * self.rate)
        gap = f"{1 / self.rate:.3f}"
        tele = "1" if self.telemetry else "0"
        return [
            "sh",
            "-c",
            POLL,
            "sh",
            self._stop,
            gap,
            str(most),
            self.nvme,
            str(self.device),
            tele,
        ]

    def _run(self) -> None:
        self._done = self.machine.run(
            self.argv(),
            timeout=self.planned_s + 2 * GRACE_S,
            artifacts=self.artifacts,
            name=f"adminload-poller-{self._runs}",
        )

    def __enter__(self) -> Poller:
        self.polled, self._done = None, None
        self._runs += 1
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="ssd-adminload", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        elapsed = time.monotonic() - self._started
        self.machine.run(["touch", "--", self._stop], timeout=60)
        if self._thread is not None:
            self._thread.join(timeout=self.planned_s + 2 * GRACE_S)
        # a poller that ended by its most rounds leaves the stop file just touched
        self.machine.run(["rm", "-f", "--", self._stop], timeout=60)
        if self._done is not None:
            self.polled = parse_polled(self._done, elapsed)
