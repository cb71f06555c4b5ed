"""The one error hierarchy of pytest-ssd.

Every error the plugin raises derives from :class:`SsdError`.  Its message is
one line that says what is wrong and where; the plugin shows it without a
traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class SsdError(Exception):
    """Base of every pytest-ssd error: one line, what is wrong and where."""


class ConfigError(SsdError):
    """A command-line option or an input file is wrong."""


class DeviceError(SsdError):
    """A device cannot be found, identified, created or released."""


class SafetyError(SsdError):
    """The safety guard refuses to write to, trim or purge a target."""


class ToolError(SsdError):
    """An external program (fio, nvme, losetup ...) is missing, failed or timed out."""


class FioError(ToolError):
    """fio failed, reported a job error, or did no I/O."""


class ParseError(SsdError):
    """A tool's output could not be understood."""


class PurgeError(SsdError):
    """A purge cannot run on the device, its tool failed, or the read-back check failed."""


class DatabaseError(SsdError):
    """The results database cannot be opened, is of an unknown schema, or lacks a run asked for."""


class DatasheetError(ConfigError):
    """A datasheet file is malformed or contradicts itself.

    Carries the file, where in it (``line 5`` or a key path such as
    ``specs[3].metric``) and what is wrong; ``str()`` is the one-line message.
    """

    def __init__(self, path: str, where: str, problem: str) -> None:
        super().__init__(f"{path}: {where}: {problem}")
        self.path = path
        self.where = where
        self.problem = problem


class ExtensionError(SsdError):
    """A suite's ``conftest.py`` or a plugin, through pytest-ssd's hooks, raised or returned
    the wrong thing: the message names the plugin, the hook (or the method) and what was wrong."""


class ExtensionInterrupt(KeyboardInterrupt):
    """A KeyboardInterrupt while extension code ran (it raised one, or Ctrl-C came then): the
    run is interrupted as by Ctrl-C; the message names the plugin and the hook."""


def raised(exc: BaseException) -> str:
    """``raised ValueError: boom``: what extension code raised, on one line."""
    return f"raised {described(exc)}"


def described(exc: BaseException) -> str:
    """``ValueError: boom`` (``KeyboardInterrupt``: without a message), on one line."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:299] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def call_extension(
    where: str, function: Callable[..., T], *args: Any, keep: tuple[type[Exception], ...] = ()
) -> T:
    """``function(*args)``, extension code: what it raises is one :class:`ExtensionError`
    (``<where> raised ValueError: boom``; ``SystemExit`` too), but for the errors in *keep*
    (its documented ones); a KeyboardInterrupt stays one, naming *where*
    (:class:`ExtensionInterrupt`)."""
    try:
        return function(*args)
    except keep:
        raise
    except ExtensionInterrupt:  # said where it came from already (a hook calling another)
        raise
    except KeyboardInterrupt as exc:  # still an interrupt: the run stops as after Ctrl-C
        raise ExtensionInterrupt(f"interrupted in {where} ({described(exc)})") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001  extension code may raise anything
        raise ExtensionError(f"{where} {raised(exc)}") from None


def kind_of(value: object) -> str:
    """What *value* is, for "returned a str where a list was expected": ``a str``, ``None``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def present(value: T | None, what: str) -> T:
    """*value*, which the caller's own logic guarantees is there (instead of an ``assert``).

    ``assert`` vanishes under ``python -O`` and pytest rewrites only test modules:
    a broken guarantee is a clear :class:`SsdError` naming what was missing.
    """
    if value is None:
        raise SsdError(f"pytest-ssd internal error: {what} is missing")
    return value
