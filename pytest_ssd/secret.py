"""Secrets given to pytest-ssd are never written: :func:`masked` hides them, in one place.

A lab may give the results database's password in its URL
(``postgresql://lab:PASSWORD@host/ssd``, ``?password=PASSWORD``), in a libpq keyword
(``password=PASSWORD``) or an option of its own (``--vendor-token=...``).  Whatever records
or shows the command line or the environment (results.json's ``run``, the report, the
databases' ``runs`` rows, messages naming a database) goes through :func:`masked`: each
such value becomes ``***``.  The way to keep a password off the command line altogether
(libpq's ``~/.pgpass``, ``PGPASSFILE``, ``PGSERVICE``, ``PGPASSWORD``) is in
docs/database.md; pytest-ssd records no environment variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: what a secret is written as
MASK = "***"
#: the words of a name that says its value is secret (an option, a query's or libpq's
#: keyword, a variable): ``password``, ``sslpassword``, ``--vendor-token``, ``API_KEY``
_NAMED = re.compile(r"[\w.-]*(?:password|passwd|secret|token|api[_-]?key)[\w.-]*", re.I)
#: a URL's password: ``scheme://user:PASSWORD@`` (as libpq reads it: up to the ``@``
#: before any ``/``)
_USERINFO = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^/@:\s]*):[^/@\s]*@")
#: ``NAME=VALUE`` of such a name, where a name starts: the argument, a query's ``?`` or
#: ``&``, a keyword string's blank; the value up to the next of them (quoted: whole)
_ASSIGNED = re.compile(
    rf"((?:^|(?<=[\s?&;,])){_NAMED.pattern}=)('(?:[^'\\]|\\.)*'|[^\s&;,]*)", re.I
)


#: options whose value is a command pytest-ssd runs (a lab's power controller: ``ipmitool
#: -H bmc -U admin -P PASSWORD chassis power cycle``): written as its program alone, its
#: arguments ``***`` (a password flag of any tool cannot be known by its name)
COMMAND_OPTIONS = ("--ssd-power-cycle",)


def masked_command(command: str) -> str:
    """A command line as it may be written: its program, then ``***`` for any argument."""
    program, _, rest = command.strip().partition(" ")
    return f"{program} {MASK}" if rest.strip() else program


def masked_text(text: str) -> str:
    """*text* (a URL, an argument) with each password in it written ``***``."""
    for option in COMMAND_OPTIONS:
        if text.startswith(f"{option}="):
            return f"{option}={masked_command(text.removeprefix(f'{option}='))}"
    text = _USERINFO.sub(rf"\1:{MASK}@", text)
    return _ASSIGNED.sub(rf"\1{MASK}", text)


def secret_name(name: str) -> bool:
    """Whether *name* (an option, a key, a variable) says its value is a secret."""
    return _NAMED.fullmatch(name) is not None


def masked(value: Any) -> Any:
    """*value* as it may be written: every secret in it ``***``, whatever holds it.

    A string is :func:`masked_text`; a list is a command line: an argument after one
    naming a secret (``--token VALUE``, ``--metadata api_key VALUE``) is one too; a
    mapping's value under a key naming a secret is one.  What a list or a mapping holds
    is masked in turn.
    """
    if isinstance(value, str):
        return masked_text(value)
    if isinstance(value, Mapping):
        return {
            key: MASK if secret_name(str(key)) and value[key] else masked(value[key])
            for key in value
        }
    if isinstance(value, list | tuple):
        items = [masked(item) for item in value]
        for i, prior in enumerate(value[:-1]):
            if isinstance(prior, str) and secret_name(prior) and isinstance(value[i + 1], str):
                items[i + 1] = MASK
            elif prior in COMMAND_OPTIONS and isinstance(value[i + 1], str):
                items[i + 1] = masked_command(value[i + 1])
        return items if isinstance(value, list) else tuple(items)
    return value
