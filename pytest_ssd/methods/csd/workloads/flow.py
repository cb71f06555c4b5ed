"""The consumer SSD method's flow (seed 000 "cSSD Test", METHOD §4).

purge -> quick profiles at FOB -> cssd -> measurements -> purge -> fill drive
-> RND + trim steps -> the measurements again.  The two measurement rounds are
phases of the ``dut_state`` marker: parametrize a measurement with
:data:`CSSD_ROUNDS` and it runs once in each.
"""

from __future__ import annotations

import pytest

#: measure after cssd reached by the SEQ fill (phase 1) and after the fill drive (phase 2)
CSSD_ROUNDS = [
    pytest.param(1, marks=pytest.mark.dut_state("cssd", phase=1), id="cssd-1"),
    pytest.param(2, marks=pytest.mark.dut_state("cssd", phase=2), id="cssd-2"),
]
#: the fill drive starts from a purged device in phase 2 and leaves it filled
FILL_DRIVE_STATE = pytest.mark.dut_state("fob", pristine=True, leaves="filled", phase=2)
