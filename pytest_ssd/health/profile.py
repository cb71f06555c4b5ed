"""Health rules: what a drive's health log must keep through each test and state transition.

A profile is a ``[health]`` table, in a datasheet or a file of its own
(``--ssd-health-profile``), one key per field, each a rule or an array of rules:

- ``"unchanged"``: the same after as before;
- ``"OP X"`` (OP one of ``== != < <= > >=``; X a number or another field, such as
  ``available_spare_threshold`` or ``warning_temperature``): holds after;
- ``"delta OP N"``: after − before compared with N.

A rule broken by a step fails the test of that step with one line naming the
field and its values before → after; a value rule already broken before the
step is not that step's fault (the first snapshot is checked alone).
"""

from __future__ import annotations

import operator
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_ssd.documents import TomlTooDeep, TooLarge, loads_toml, read_text_bounded
from pytest_ssd.errors import ConfigError
from pytest_ssd.health.log import FIELDS, HealthLog

_OPS: dict[str, Callable[[float, float], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_RULE = re.compile(
    r"^(?:(unchanged)|(delta\s+)?(==|!=|<=|>=|<|>)\s*([A-Za-z_]+|[-+]?\d+(?:\.\d+)?))$"
)
#: a profile file is a few hundred bytes
MAX_PROFILE_BYTES = 1 << 16
DEFAULT_PROFILE = "default-health.toml"


class HealthProfileError(ConfigError):
    """A health profile is wrong: the file, the key and what."""

    def __init__(self, origin: str, where: str, problem: str) -> None:
        super().__init__(f"{origin}: {where}: {problem}")
        self.where = where
        self.problem = problem


def number(value: float) -> str:
    """A health value as the log has it: '3', '49.85'."""
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


@dataclass(frozen=True)
class Rule:
    """One rule on one field (see the module's doc for the forms)."""

    field: str
    text: str
    op: str = ""
    #: a number, or the field whose value after the step is compared with
    ref: float | str = 0.0
    delta: bool = False

    @property
    def unchanged(self) -> bool:
        return not self.op

    def broken(self, before: HealthLog, after: HealthLog, first: bool) -> str | None:
        """The one line when the step from *before* to *after* broke the rule, else None.

        A field or reference the drive does not report is not judged (None).
        """
        old, new = before.values.get(self.field), after.values.get(self.field)
        if old is None or new is None:
            return None
        if self.unchanged:
            return None if new == old else self._line(old, new)
        if self.delta:
            return None if self._holds(new - old, after) is not False else self._line(old, new)
        if self._holds(new, after) is not False:
            return None
        if self._holds(old, before) is False and not first:
            return None  # broken before this step: not its fault
        return self._line(old, new, after)

    def _holds(self, value: float, log: HealthLog) -> bool | None:
        ref = log.values.get(self.ref) if isinstance(self.ref, str) else self.ref
        return None if ref is None else _OPS[self.op](value, ref)

    def _line(self, old: float, new: float, after: HealthLog | None = None) -> str:
        rule = self.text
        if isinstance(self.ref, str) and after is not None:
            rule += f" = {number(after.values[self.ref])}"
        return f"{self.field} {number(old)} → {number(new)} (rule: {rule})"


@dataclass(frozen=True)
class HealthProfile:
    """The rules, and where they came from (a file, a datasheet, or the shipped default)."""

    origin: str
    rules: tuple[Rule, ...]

    def broken(self, before: HealthLog, after: HealthLog, first: bool = False) -> list[str]:
        """Every rule the step from *before* to *after* broke, one line each."""
        lines = (rule.broken(before, after, first) for rule in self.rules)
        return [line for line in lines if line is not None]

    def unreported(self, log: HealthLog) -> list[str]:
        """The fields the rules name that *log* does not report (their rules are not judged)."""
        refs = {r.ref for r in self.rules if isinstance(r.ref, str)}
        names = {r.field for r in self.rules} | refs
        return sorted(name for name in names if name not in log.values)

    def as_dict(self) -> dict[str, object]:
        return {"origin": self.origin, "rules": [f"{r.field} {r.text}" for r in self.rules]}


def parse_profile(table: object, origin: str, at: str = "health") -> HealthProfile:
    """The profile of a ``[health]`` table; :class:`HealthProfileError` naming *origin* and key."""
    if not isinstance(table, Mapping) or not table:
        raise HealthProfileError(origin, at, "must be a table of rules, one key per field")
    rules: list[Rule] = []
    for name, value in table.items():
        texts = value if isinstance(value, list) else [value]
        where = f"{at}.{name}"
        if name not in FIELDS:
            raise HealthProfileError(origin, where, f"unknown field: use {', '.join(FIELDS)}")
        if not texts or not all(isinstance(t, str) for t in texts):
            problem = f"must be a rule or an array of rules, not {value!r}"
            raise HealthProfileError(origin, where, problem)
        rules += [_rule(name, text.strip(), origin, where) for text in texts]
    return HealthProfile(origin, tuple(rules))


def _rule(name: str, text: str, origin: str, where: str) -> Rule:
    found = _RULE.match(text)
    if found is None:
        use = "use 'unchanged', '>= 80', '< warning_temperature' or 'delta <= 1'"
        raise HealthProfileError(origin, where, f"{text!r} is no rule: {use}")
    if found[1]:
        return Rule(name, text)
    ref: float | str = found[4]
    if found[4] in FIELDS:
        if found[2]:
            raise HealthProfileError(origin, where, f"{text!r}: a delta takes a number")
    else:
        try:
            ref = float(found[4])
        except ValueError:
            problem = f"{text!r}: {found[4]!r} is no field: use {', '.join(FIELDS)}"
            raise HealthProfileError(origin, where, problem) from None
    return Rule(name, " ".join(text.split()), found[3], ref, bool(found[2]))


def load_profile(path: Path) -> HealthProfile:
    """The ``[health]`` table of the TOML file at *path* (a profile file or a datasheet)."""
    name = str(path)
    try:
        data = loads_toml(read_text_bounded(path, MAX_PROFILE_BYTES))
    except OSError as exc:
        raise HealthProfileError(name, "file", f"cannot read: {exc.strerror}") from None
    except (UnicodeDecodeError, TooLarge, TomlTooDeep, tomllib.TOMLDecodeError) as exc:
        raise HealthProfileError(name, "file", f"not a health profile: {exc}") from None
    if "health" not in data:
        raise HealthProfileError(name, "health", "missing: give a [health] table of rules")
    return parse_profile(data["health"], name)


def default_profile() -> HealthProfile:
    """The profile pytest-ssd ships, for a drive whose datasheet gives none."""
    text = resources.files("pytest_ssd.health").joinpath(DEFAULT_PROFILE).read_text("utf-8")
    data: dict[str, Any] = tomllib.loads(text)
    return parse_profile(data["health"], f"pytest-ssd's {DEFAULT_PROFILE}")
