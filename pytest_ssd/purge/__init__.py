"""Purge: return every LBA of a device under test to the never-written state.

:func:`choose` picks the strongest method the device supports (or checks a forced
one), :func:`purge` runs it and reads back a sample of blocks.
"""

from __future__ import annotations

from pytest_ssd.purge.ata import AtaSecurity, parse_hdparm_identify, query_ata
from pytest_ssd.purge.execute import PurgeResult, purge, weaker_note
from pytest_ssd.purge.methods import PurgeMethod, PurgeOption, choose, nvme_controller, options
from pytest_ssd.purge.sanitize import SanitizeLog, SanitizeState, parse_sanitize_log
from pytest_ssd.purge.tools import Runner, Tools
from pytest_ssd.purge.verify import Promise, Verification, promise, verify

__all__ = [
    "AtaSecurity",
    "Promise",
    "PurgeMethod",
    "PurgeOption",
    "PurgeResult",
    "Runner",
    "SanitizeLog",
    "SanitizeState",
    "Tools",
    "Verification",
    "choose",
    "nvme_controller",
    "options",
    "parse_hdparm_identify",
    "parse_sanitize_log",
    "promise",
    "purge",
    "query_ata",
    "verify",
    "weaker_note",
]
