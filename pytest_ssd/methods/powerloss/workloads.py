"""The power-loss workload as fio argv: the write phase before the cut, the verify pass after.

One fio process writes two regions, one after the other (``stonewall``):

* ``acked``: random writes with fio's verification header (crc32c, the block's
  offset inside), a flush (``fdatasync``) every *flush_every* writes and one at its
  end (``end_fsync``); fio saves its write state when it ends
  (``verify_state_save``, into ``--aux-path``).  Everything it wrote was
  acknowledged and then flushed: it must survive the cut.
* ``later``: random writes with no flush after them, in another region, for as long
  as *later_s* at most: what is in flight and in the drive's volatile cache when the
  power goes (a cut may keep any of them; they are not checked).  The cut comes while
  they run; the trigger file (fio's ``--trigger-file``) then ends fio if the cut left
  it running.

After the cut, the verify pass replays ``acked``'s offsets from the saved state
(``verify_state_load``, ``verify_only``) and reads each block back; with
``continue_on_error=verify`` it names every block that did not survive.

Without flushes (*flush_every* 0) nothing promises ``acked`` survives: the check
must then find it lost, which shows it can tell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob

#: the job whose blocks are checked after the cut
ACKED = "acked"
#: the file that ends the write phase's fio (in its state folder)
TRIGGER = "trigger"
#: the state file fio writes for it in ``--aux-path`` (a local run: prefix "local", job 0)
STATE_FILE = f"local-{ACKED}-0-verify.state"
#: what fio says of a block that did not verify:
#: ``verify: bad magic header 0, wanted acca at file /dev/x offset 49152, length 4096 (...)``
_BAD_BLOCK = re.compile(r"^(?P<what>.*?) at file .* offset (?P<offset>\d+), length (?P<length>\d+)")

MIB = 1 << 20


@dataclass(frozen=True)
class PowerLossWorkload:
    """What is written before the cut: *acked_bytes* flushed, then *later_bytes* not."""

    acked_bytes: int = 16 * MIB
    later_bytes: int = 4 * MIB
    block_size: int = 4096
    iodepth: int = 4
    #: writes between two flushes of ``acked``; 0: no flush at all (the negative case)
    flush_every: int = 16
    #: where ``acked`` starts; ``later`` follows it, a block size apart
    offset: int = 0
    #: the longest ``later`` writes (over its region again and again) if nothing ends it
    later_s: int = 120
    seed: int = 0x5EED

    def __post_init__(self) -> None:
        sizes = (self.acked_bytes, self.later_bytes, self.offset)
        if self.block_size <= 0 or self.block_size % 512 or any(n % self.block_size for n in sizes):
            raise ConfigError(
                f"power-loss workload: sizes {sizes} must be multiples of the block size"
                f" {self.block_size} (itself a multiple of 512)"
            )
        if self.acked_bytes <= 0 or self.later_bytes < 0 or self.flush_every < 0:
            raise ConfigError("power-loss workload: acked_bytes > 0, later_bytes and flushes >= 0")

    @property
    def flushed(self) -> bool:
        return self.flush_every > 0

    @property
    def check(self) -> str:
        """The qualification check it makes."""
        return "flushed writes survive" if self.flushed else "writes without a flush"

    @property
    def span(self) -> int:
        """Bytes from the start of ``acked`` to the end of ``later``."""
        return self.acked_bytes + self.block_size + self.later_bytes

    @property
    def blocks(self) -> int:
        """Blocks of ``acked``: the ones checked."""
        return self.acked_bytes // self.block_size

    def jobs(self) -> tuple[FioJob, ...]:
        """What the write phase writes, as the device's state accounts writes."""
        at = self.offset + self.acked_bytes + self.block_size
        spans = [(ACKED, self.offset, self.acked_bytes), ("later", at, self.later_bytes)]
        return tuple(
            FioJob(name, "rnd", self.block_size, read_pct=0, offset=offset, size=size)
            for name, offset, size in spans
            if size
        )

    def _common(self, fio: str, device: str, state_dir: str) -> list[str]:
        return [
            fio,
            f"--aux-path={state_dir}",
            f"--filename={device}",
            "--ioengine=libaio",
            "--direct=1",
            f"--bs={self.block_size}",
            f"--iodepth={self.iodepth}",
            "--randrepeat=1",
            f"--randseed={self.seed}",
            "--output-format=json",
        ]

    def _acked(self) -> list[str]:
        return [
            f"--name={ACKED}",
            "--rw=randwrite",
            f"--offset={self.offset}",
            f"--size={self.acked_bytes}",
            "--verify=crc32c",
        ]

    def write_argv(self, fio: str, device: str, state_dir: str) -> list[str]:
        """Both jobs, ``acked`` saving its write state in *state_dir* when it ends; fio
        ends when the file ``TRIGGER`` appears in *state_dir*."""
        flushes = [f"--fdatasync={self.flush_every}", "--end_fsync=1"] if self.flushed else []
        later = []
        if self.later_bytes:
            later = [
                "--name=later",
                "--stonewall",
                "--rw=randwrite",
                f"--offset={self.jobs()[-1].offset}",
                f"--size={self.later_bytes}",
                "--time_based",
                f"--runtime={self.later_s}",
            ]
        return [
            *self._common(fio, device, state_dir),
            f"--trigger-file={state_dir}/{TRIGGER}",
            *self._acked(),
            "--do_verify=0",
            "--verify_state_save=1",
            *flushes,
            *later,
        ]

    def verify_argv(self, fio: str, device: str, state_dir: str) -> list[str]:
        """``acked`` read back as far as its saved state says it wrote, every bad block named."""
        return [
            *self._common(fio, device, state_dir),
            *self._acked(),
            "--verify_only=1",
            "--verify_state_load=1",
            "--continue_on_error=verify",
        ]


@dataclass(frozen=True)
class BadBlock:
    """A block the verify pass found not as written: fio's words, its offset and length."""

    what: str
    offset: int
    length: int


def bad_blocks(stderr: str) -> list[BadBlock]:
    """The blocks fio's verify pass named (``verify: bad magic header ... offset N``)."""
    found = []
    for line in stderr.splitlines():
        match = _BAD_BLOCK.match(line.strip())
        if match and "verify" in match["what"]:
            found.append(BadBlock(match["what"], int(match["offset"]), int(match["length"])))
    return sorted(found, key=lambda b: b.offset)
