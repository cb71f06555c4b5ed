"""What a drive cannot take, and why: blocks its logical block size refuses, writes under its IU.

One rule for every method: the enterprise sweeps skip such points, WSAT and the
datasheet suite skip such tests before their state is reached, and the SNIA
rounds leave such cells out, each saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.device.drive_class import IndirectionUnit
from pytest_ssd.fio.job import FioJob


@dataclass(frozen=True)
class Limits:
    """What a drive cannot take: blocks under its LBA size, writes under its IU."""

    lba_size: int = 512
    iu: IndirectionUnit | None = None

    def skip_block(self, block_size: int) -> str | None:
        """Why the device cannot take I/O of *block_size* (None: it can)."""
        if block_size < self.lba_size:
            return f"{block_size} B is smaller than the {self.lba_size} B logical block"
        if block_size % self.lba_size:
            return f"{block_size} B is not a multiple of the {self.lba_size} B logical block"
        return None

    def skip(self, job: FioJob) -> str | None:
        """Why *job* is skipped on this drive (None: it runs)."""
        reason = self.skip_block(job.block_size)
        if reason is None and job.writes and self.iu is not None:
            return self.iu.skips_write(job.block_size)
        return reason
