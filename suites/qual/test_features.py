"""The drive's declared features against its datasheet's ``[features]`` (docs/features.md).

One test per feature: what ``nvme id-ctrl``, ``id-ns`` and the logs declare against what the
sheet states, met / not met / not judged as a datasheet's speed lines are.  A device that is
not NVMe, or has no datasheet with ``[features]``, is skipped in one line.
"""

from __future__ import annotations

import pytest

from pytest_ssd import SsdBench
from pytest_ssd.methods.features.checks import CHECKS
from pytest_ssd.methods.features.run import check_declared, check_endurance, write_job


@pytest.mark.parametrize("feature", list(CHECKS))
def test_declared_feature(ssd: SsdBench, feature: str) -> None:
    check_declared(ssd, feature)


@pytest.mark.ssd_jobs(jobs=lambda ssd: [write_job(ssd)])
def test_endurance(ssd: SsdBench) -> None:
    check_endurance(ssd)
