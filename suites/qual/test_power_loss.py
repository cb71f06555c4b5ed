"""Power loss: what the drive acknowledged and flushed before a power cut survives it.

fio writes with its verification header and a flush every 16 writes, then more writes
with no flush after them; the drive's power controller cuts the power
(``--ssd-power-cycle=CMD`` or a plugin's ``pytest_ssd_power_cycle``) and fio reads back
every flushed block from its saved write state.  A drive without a controller is
skipped in one line (docs/power-loss.md).
"""

from __future__ import annotations

import pytest

from pytest_ssd import SsdBench
from pytest_ssd.methods.powerloss.run import check_power_loss
from pytest_ssd.methods.powerloss.workloads import PowerLossWorkload

MIB = 1 << 20


def test_flushed_writes_survive_a_power_cut(ssd: SsdBench, pytestconfig: pytest.Config) -> None:
    full = ssd.profile.name == "full"
    workload = PowerLossWorkload(
        acked_bytes=(1024 if full else 8) * MIB, later_bytes=(256 if full else 2) * MIB
    )
    # fails in one line naming the first lost block by LBA (and records the verdict)
    check_power_loss(ssd, pytestconfig, workload)
