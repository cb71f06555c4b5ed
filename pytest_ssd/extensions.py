"""What suites and plugins add to a session through pytest-ssd's hooks (:mod:`.newhooks`).

The session below the pytest glue knows no pytest: the plugin turns the hooks
into this object, and the session, its devices and their state keepers use it.

Every implementation is called on its own (:mod:`.hookcall`): extension code that
raises or returns the wrong thing is one line naming it and the hook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pluggy import HookCaller, HookRelay

from pytest_ssd.device.drive_class import DriveClass
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ExtensionError, kind_of
from pytest_ssd.health.sources import PluginSource, Source, source_problem
from pytest_ssd.hookcall import calls, first_answer, listed
from pytest_ssd.purge.extra import PurgeProvider, provider_problem
from pytest_ssd.results.record import Measurement

if TYPE_CHECKING:  # drawn on the controller: a worker that validates a kind loads no matplotlib
    from matplotlib.figure import Figure


def _no_class(identity: DeviceIdentity) -> DriveClass | None:
    return None


def _no_source(identity: DeviceIdentity) -> Source | None:
    return None


@dataclass(frozen=True, kw_only=True)
class Extensions:
    """The hooks' answers: a drive's class, a health source, added purge methods."""

    #: the class of a drive that is not scratch, before pytest-ssd's guess (None: guess)
    drive_class: Callable[[DeviceIdentity], DriveClass | None] = _no_class
    #: a device's health source, before pytest-ssd's own (None: find one)
    health_source: Callable[[DeviceIdentity], Source | None] = _no_source
    #: purge methods tried before pytest-ssd's own
    purge_methods: tuple[PurgeProvider, ...] = ()

    @property
    def purge_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.purge_methods)


def purge_methods(caller: HookCaller) -> tuple[PurgeProvider, ...]:
    """Every implementation's purge methods, each checked (ExtensionError at the first bad one)."""
    added: list[PurgeProvider] = []
    for call in calls(caller):
        for provider in listed(call, call(), "PurgeProvider"):
            problem = provider_problem(provider)
            if problem is not None:
                raise call.wrong(provider, "a PurgeProvider", kind_of([]), problem)
            added.append(provider)  # type: ignore[arg-type]  # checked: provider_problem
    return tuple(added)


def drive_class(caller: HookCaller, identity: DeviceIdentity) -> DriveClass | None:
    """The first implementation's class of *identity* (None: pytest-ssd guesses)."""
    for call in calls(caller):
        found = call(identity=identity)
        if found is None:
            continue
        if not isinstance(found, DriveClass):
            raise call.wrong(found, "a DriveClass or None")
        return found
    return None


def health_source(caller: HookCaller, identity: DeviceIdentity) -> Source | None:
    """The first implementation's health source for *identity*, its reads checked."""
    answer = first_answer(caller, "a health source or None", source_problem, identity=identity)
    if answer is None:
        return None
    found, call = answer
    return PluginSource(found, call.origin)  # type: ignore[arg-type]  # checked: source_problem


def from_hooks(hook: HookRelay) -> Extensions:
    """The session's :class:`Extensions` from pytest's hook relay (``config.hook``).

    The purge methods are asked for now (a bad one refuses the run before anything is
    made); drive classes and health sources when a device is resolved.
    """
    return Extensions(
        drive_class=lambda identity: drive_class(hook.pytest_ssd_drive_class, identity),
        health_source=lambda identity: health_source(hook.pytest_ssd_health_source, identity),
        purge_methods=purge_methods(hook.pytest_ssd_purge_methods),
    )


@dataclass(frozen=True)
class FigureKind:
    """A figure ``ssd.plot(name, measurement, title)`` draws (``pytest_ssd_figure_kinds``).

    *draw* gets the test's :class:`~pytest_ssd.results.record.Measurement` and returns a
    matplotlib ``Figure``; it runs where the report is written (the controller under
    xdist), so the process that runs the test never loads matplotlib for it.
    """

    name: str
    draw: Callable[[Measurement], Figure]
    #: who declared it: a conftest.py's path or ``plugin NAME`` (set by pytest-ssd)
    origin: str = ""


def _kind_problem(kind: FigureKind) -> str | None:
    if not isinstance(kind.name, str) or not kind.name.isidentifier():
        return "its name is not an identifier (a str: 'qos_curve')"
    return None if callable(kind.draw) else "its draw is not callable"


def figure_kinds(caller: HookCaller, generic: Sequence[FigureKind] = ()) -> dict[str, FigureKind]:
    """The figures ``ssd.plot`` draws by name: the *generic* ones (pytest-ssd's), then every
    implementation's, each checked (ExtensionError at the first bad one or a name taken)."""
    found = {kind.name: kind for kind in generic}
    for call in calls(caller):
        for kind in listed(call, call(), "FigureKind"):
            if not isinstance(kind, FigureKind):
                raise call.wrong(kind, "a FigureKind", kind_of([]))
            problem = _kind_problem(kind)
            if problem is not None:
                raise call.wrong(kind, "a FigureKind", kind_of([]), problem)
            taken = found.get(kind.name)
            if taken is not None:
                raise ExtensionError(
                    f"{call.where} and {taken.origin} both declare the figure kind"
                    f" {kind.name!r}: one must take another name"
                )
            found[kind.name] = replace(kind, origin=call.origin)
    return found
