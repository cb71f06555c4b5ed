"""pytest-ssd's own methods: one folder each, registered through pytest-ssd's hooks.

A method's folder holds all of it: ``__init__.py`` implements pytest-ssd's hooks
(:mod:`pytest_ssd.newhooks`: its report section and headline numbers, the figure
kinds ``ssd.plot`` draws for it) exactly as a vendor's plugin does, and the
modules its suite and its section use: ``workloads`` (its fio jobs and device
states), ``run`` (the steps run on the ``ssd`` fixture), ``figures`` (matplotlib
``Figure`` builders) and ``report`` (its section of the report).

Every subpackage here is a method: :func:`register` finds them by folder, so a
new method is a new folder (and its suite under ``suites/``).  Only the small
``__init__`` of each is loaded with the plugin; the rest is imported when its
suite is collected or the report draws it.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from types import ModuleType

import pluggy

#: marks a method's hook implementations (pytest's marker, without importing pytest)
hookimpl = pluggy.HookimplMarker("pytest")


def builtin() -> list[ModuleType]:
    """Each method folder's hook module (``pytest_ssd.methods.<name>``), by name."""
    return [
        import_module(f"{__name__}.{found.name}")
        for found in sorted(pkgutil.iter_modules(__path__), key=lambda f: f.name)
        if found.ispkg
    ]


def register(manager: pluggy.PluginManager) -> None:
    """Register every built-in method with *manager* as ``ssd-method-<name>`` (once)."""
    for module in builtin():
        name = f"ssd-method-{module.__name__.rpartition('.')[2]}"
        if manager.get_plugin(name) is None and not manager.is_blocked(name):
            manager.register(module, name)
