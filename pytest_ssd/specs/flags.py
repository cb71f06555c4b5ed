"""The datasheet options, parsed without loading the datasheet machinery (:mod:`.selection`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DatasheetOptions:
    """``--datasheet``, ``--datasheet-dir`` and ``--datasheet-force``."""

    files: tuple[Path, ...] = ()
    dirs: tuple[Path, ...] = ()
    force: bool = False
