"""A power cut of a QEMU NVMe namespace logged by QEMU's ``blklogwrites`` driver.

Killing QEMU loses nothing: the host's page cache holds every write it made to the
image.  QEMU's ``blklogwrites`` block driver (QEMU 7.2 has it) logs every write and
flush the namespace completes in the dm-log-writes format (:mod:`.logwrites`), and
from that log the disk is rebuilt as a cut at the last flush leaves it::

    --ssd-power-cycle="python -m pytest_ssd.methods.powerloss.qemu
        --pid QEMU_PID --log LOG --image IMAGE --work FOLDER [--later-seed N]"

The cut: QEMU is stopped (SIGSTOP: the guest and the drive freeze at once), the
log is read, the disk after the cut is rebuilt in *FOLDER* (from the disk of the
previous cut, else ``--base``, the image as QEMU started, else zeroes: it started
empty), every range the log touched since then is copied back into the image in
place (QEMU keeps it open), and QEMU goes on (SIGCONT).  The guest, its sshd and the
session's connection to it live on; the namespace now reads as the drive would after
the power came back.  Writes after the last flush are all lost, or a random half of
them (``--later-seed``): a cache may have written any of them.  Only the process
named by ``--pid`` is signalled.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import SsdError
from pytest_ssd.methods.powerloss.logwrites import WriteLog, read_log, rebuild, restore

#: how long QEMU's threads may take to stop
STOP_TIMEOUT_S = 10.0
#: what the work folder remembers between two cuts of one log
STATE = "cuts.json"


@dataclass(frozen=True)
class Previous:
    """The last cut of this log: the entries it consumed and the disk it left."""

    start: int = 0
    base: Path | None = None

    @classmethod
    def load(cls, work: Path, base: Path | None = None) -> Previous:
        file = work / STATE
        if not file.exists():
            return cls(0, base)
        data = json.loads(file.read_text())
        return cls(int(data["start"]), Path(data["base"]))

    def save(self, work: Path) -> None:
        (work / STATE).write_text(json.dumps({"start": self.start, "base": str(self.base)}))


def _stopped(pid: int) -> bool:
    """Whether every thread of *pid* is stopped (state T)."""
    tasks = Path(f"/proc/{pid}/task")
    states = [(t / "stat").read_text().rpartition(")")[2].split()[0] for t in tasks.iterdir()]
    return all(s in "Tt" for s in states)


def _freeze(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while not _stopped(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGCONT)
            raise SsdError(f"QEMU (pid {pid}) did not stop within {STOP_TIMEOUT_S:g} s")
        time.sleep(0.01)


def cut(
    log_path: Path,
    image: Path,
    work: Path,
    later_seed: int | None = None,
    base: Path | None = None,
) -> str:
    """Rebuild *image* (in place) as the cut at the last flush leaves it, from *base* (the
    image as QEMU started, None: zeroes) or the previous cut's disk; one line."""
    previous = Previous.load(work, base)
    log: WriteLog = read_log(log_path)
    at = log.at_last_flush(previous.start)
    if later_seed is not None:
        at = log.random_later(at, later_seed)
    number = sum(1 for _ in work.glob("cut-*.img")) + 1
    rebuilt = work / f"cut-{number}.img"
    rebuild(log, at, rebuilt, previous.base, image.stat().st_size)
    restore(log, rebuilt, image, previous.start)
    Previous(len(log.entries), rebuilt).save(work)
    return f"QEMU blklogwrites: {at.describe(log)}, {len(log.flushes(previous.start))} flush(es)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_ssd.methods.powerloss.qemu",
        description="Cut the power of a QEMU namespace logged by blklogwrites (at its last flush).",
    )
    parser.add_argument("--pid", type=int, required=True, help="the QEMU process")
    parser.add_argument("--log", type=Path, required=True, help="blklogwrites' log file")
    parser.add_argument("--image", type=Path, required=True, help="the namespace's raw image")
    parser.add_argument("--work", type=Path, required=True, help="a folder for the rebuilt disks")
    parser.add_argument(
        "--base", type=Path, default=None, help="the image as QEMU started (default: zeroes)"
    )
    parser.add_argument(
        "--later-seed", type=int, help="keep a random half of the writes after the flush"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    try:
        _freeze(args.pid)
    except (OSError, SsdError) as exc:
        print(f"cannot stop QEMU (pid {args.pid}): {exc}", file=sys.stderr)
        return 1
    try:
        print(cut(args.log, args.image, args.work, args.later_seed, args.base))
    except (OSError, SsdError, ValueError) as exc:
        print(f"the cut failed: {exc}", file=sys.stderr)
        return 1
    finally:
        os.kill(args.pid, signal.SIGCONT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
