"""pytest-ssd's hooks called one implementation at a time, so a fault names its plugin.

pluggy calls every implementation in one go: an exception in one is a traceback
through pytest's internals (an INTERNALERROR at configure time), and a wrong
answer is found far away.  :class:`HookCall` calls one implementation and turns
what it raises into one :class:`ExtensionError` naming it — a ``conftest.py`` by
its path, an installed plugin by its name — and the hook.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pluggy import HookCaller, HookImpl

from pytest_ssd.errors import ExtensionError, call_extension, kind_of


def origin(impl: HookImpl) -> str:
    """Who implements a hook: a ``conftest.py`` by its path, an installed plugin by its name."""
    file = getattr(impl.plugin, "__file__", None)
    if isinstance(file, str) and Path(file).name == "conftest.py":
        return file
    return f"plugin {impl.plugin_name}"


@dataclass(frozen=True)
class HookCall:
    """One implementation of one of pytest-ssd's hooks, called on its own."""

    hook: str
    origin: str
    impl: HookImpl

    @property
    def where(self) -> str:
        """``pytest_ssd_purge_methods of /lab/suite/conftest.py``."""
        return f"{self.hook} of {self.origin}"

    def __call__(self, **kwargs: Any) -> object:
        if self.impl.hookwrapper or self.impl.wrapper:
            raise ExtensionError(f"{self.where} is a hook wrapper: implement it plainly")
        args = [kwargs[name] for name in self.impl.argnames]
        return call_extension(self.where, self.impl.function, *args)

    def wrong(
        self, value: object, expected: str, holding: str = "", why: str = ""
    ) -> ExtensionError:
        """``... returned a str where a PurgeProvider was expected``, and *why* it is not one."""
        what = f"{holding} holding {kind_of(value)}" if holding else kind_of(value)
        why = f" ({why})" if why else ""
        return ExtensionError(f"{self.where} returned {what} where {expected} was expected{why}")


def calls(caller: HookCaller) -> list[HookCall]:
    """The hook's implementations in the order pluggy calls them (the last registered first)."""
    return [HookCall(caller.name, origin(impl), impl) for impl in reversed(caller.get_hookimpls())]


def listed(call: HookCall, found: object, expected: str) -> list[object]:
    """The list a list-returning hook gave (a tuple too); anything else is *call*'s fault."""
    if not isinstance(found, list | tuple):
        raise call.wrong(found, f"a list of {expected}")
    return list(found)


def first_answer(
    caller: HookCaller, expected: str, problem: Callable[[object], str | None], **kwargs: Any
) -> tuple[object, HookCall] | None:
    """The first implementation's answer that is not None (a firstresult hook) and who gave
    it, checked by *problem* (why it is not *expected*, or None); None when none answers."""
    for call in calls(caller):
        found = call(**kwargs)
        if found is None:
            continue
        why = problem(found)
        if why is not None:
            raise call.wrong(found, expected, why=why)
        return found, call
    return None
