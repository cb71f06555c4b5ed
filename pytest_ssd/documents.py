"""JSON and TOML read from outside pytest-ssd: bounded in size and in nesting.

``json`` and ``tomllib`` recurse once per level of nesting: a file nested 5,000
levels deep raises ``RecursionError`` (a traceback of thousands of lines), and
one a few hundred levels deep parses but breaks whatever walks it later.  Every
document a user, a tool or a test host hands pytest-ssd is read here instead:
too deep is a decoding error like any other (a subclass of the module's own, so
each caller's handling of bad JSON or TOML applies unchanged).  Files are read here too
(:func:`read_bounded`): a regular file only, and no further than a bound.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

#: the deepest nesting accepted: pytest-ssd's own documents stay below 10 levels
MAX_DEPTH = 64


class JsonTooDeep(json.JSONDecodeError):
    """A JSON document nested deeper than :data:`MAX_DEPTH` levels."""

    def __init__(self, doc: str) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels", doc, 0)


class TomlTooDeep(tomllib.TOMLDecodeError):
    """A TOML document nested deeper than :data:`MAX_DEPTH` levels."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether *value* (dicts and lists) nests deeper than *limit* levels; no recursion."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def loads_json(text: str | bytes) -> Any:
    """``json.loads``, refusing a document nested deeper than :data:`MAX_DEPTH` levels."""
    doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except RecursionError:
        raise JsonTooDeep(doc) from None
    if too_deep(data):
        raise JsonTooDeep(doc)
    return data


def raw_decode_json(text: str, start: int) -> tuple[Any, int]:
    """``json.JSONDecoder().raw_decode`` (a document inside other text), never a RecursionError.

    No walk after it: fio's output (its caller) is read key by key, on the path between
    two point tests, where 0.3 ms a job counts.
    """
    try:
        decoded: tuple[Any, int] = json.JSONDecoder().raw_decode(text, start)
    except RecursionError:
        raise JsonTooDeep(text) from None
    return decoded


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads``, refusing a document nested deeper than :data:`MAX_DEPTH` levels."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise TomlTooDeep() from None
    if too_deep(data):
        raise TomlTooDeep()
    return data


class TooLarge(ValueError):
    """A file larger than a reader takes."""


class NotAFile(OSError):
    """A path to read that is not a regular file (an OSError: each reader's handling applies)."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{kind}, not a regular file", str(path))


#: what a path is, by its type bits, where it is not a regular file
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_a_file(mode: int) -> str | None:
    """What a path of *mode* (``st_mode``) is when it is not a regular file (None: it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at *path* (links followed), at most *limit* (TooLarge
    beyond); :class:`NotAFile` for anything else.  Every file handed to pytest-ssd is read
    here: a FIFO's open would wait for a writer forever, a device's has effects, and
    ``/dev/zero`` has no end.  What it is is looked at before the open and again on the
    descriptor, opened without waiting (it may have been replaced in between)."""
    kind = not_a_file(path.stat().st_mode)
    if kind is not None:
        raise NotAFile(path, kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        kind = not_a_file(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotAFile(path, kind)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"larger than {limit:,} bytes")
    return data


def read_text_bounded(path: Path, limit: int) -> str:
    """The UTF-8 text of the regular file at *path* (:func:`read_bounded`)."""
    return read_bounded(path, limit).decode("utf-8")
