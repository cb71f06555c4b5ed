"""A package's public names, imported from their modules when first asked for (PEP 562).

A package ``__init__`` that imports every module it re-exports makes each of its modules
cost every process that imports any one of them: ``pytest_ssd.db.arrays`` brought the
database's reader, writer and sqlite3 into every xdist worker (issue 30).  A package lists
its names with :func:`exports` instead; mypy reads them from ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, modules: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of *package*: each name of *modules* (module → names) is
    imported from its module (relative to *package*) the first time it is asked for;
    ``"alias=name"`` gives the module's *name* as *alias*."""
    where = {
        alias: (module, attr)
        for module, names in modules.items()
        for alias, _, attr in (entry.partition("=") for entry in names)
    }

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = where[name]
        value = getattr(importlib.import_module(module, package), attr or name)
        setattr(sys.modules[package], name, value)  # asked for once
        return value

    return __getattr__
