"""What pytest-ssd puts in a ``--junitxml`` file: numbers and short words, never records.

A test's ``user_properties`` carry whole records as JSON (measurements, series,
verdicts: the controller stores them in the database and results.json).  A CI
reads the file instead: there each property is a number (or a short word such as
the suite), under a name unique within its test, and a value fio could not
resolve is left out rather than written ``None``.

Two layouts (the ini option ``ssd_junit_layout``):

- ``testcase`` (the default): the properties inside each ``<testcase>``, as pytest
  writes them; Jenkins' JUnit plugin, GitLab and junitparser read them there;
- ``strict``: what ``junit-10.xsd`` allows (Jenkins' xUnit plugin validates against
  it): no ``<properties>`` in a testcase, so they move to the ``<testsuite>``, each
  named ``<classname>::<test name>::<property>``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator

from pytest_ssd.results.record import DERIVED_PROPERTY, PROPERTY, SERIES_PROPERTY, SPEC_PROPERTY
from pytest_ssd.results.transition import TRANSITION_PROPERTY

INI_LAYOUT = "ssd_junit_layout"
LAYOUTS = ("testcase", "strict")
INI_HELP = (
    "pytest-ssd's --junitxml layout: testcase (properties in each testcase; the default) or"
    " strict (junit-10.xsd, which Jenkins' xUnit plugin checks: properties in the testsuite)"
)
#: a word longer than this is not a property a CI reads (a message, a record)
LONGEST_WORD = 80
#: significant digits of a figure in the file
DIGITS = 6
#: a rounded figure below this is written without a point (1e15: no exponent either)
WHOLE = 1e15
#: what str() makes of a value that is not there
_ABSENT = {"None", "nan", "NaN", "inf", "-inf", ""}
#: whole records, for the database and results.json (their figures are properties of their own)
RECORDS = {PROPERTY, DERIVED_PROPERTY, SERIES_PROPERTY, SPEC_PROPERTY, TRANSITION_PROPERTY}


#: the parts of a drive's name (``ssd.<part>``, ``ssd.device.<id>.<part>``: plugin/drives.py):
#: words as the drive gives them, never figures (a build "2.0" or a firmware "1.10" is not 2
#: or 1.1; a serial of digits keeps its zeros)
DRIVE_WORDS = frozenset({"device", "host", "model", "serial", "firmware", "build", "label"})


def is_word(name: str) -> bool:
    """Whether property *name* is a drive's name part, written as given."""
    return name.startswith("ssd.") and name.rsplit(".", 1)[-1] in DRIVE_WORDS


def is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def compact(text: str) -> str:
    """A number to 6 significant digits (fio's figures hold no more), a whole number as is."""
    if text.lstrip("-").isdigit():
        return text
    rounded = float(f"{float(text):.{DIGITS}g}")
    whole = rounded.is_integer() and abs(rounded) < WHOLE
    return str(int(rounded)) if whole else repr(rounded)


def keep(name: str, value: str) -> bool:
    """A property worth a CI's reading: a finite number, or a short word that is not JSON."""
    if is_number(value):
        return True
    return value not in _ABSENT and len(value) <= LONGEST_WORD and value[:1] not in "{["


def _flat(name: str, value: str) -> Iterator[tuple[str, str]]:
    """*value* itself, or a note's JSON object as one property per field (``name.field``)."""
    if name in RECORDS:
        return
    if value[:1] != "{":
        yield name, value
        return
    try:
        fields = json.loads(value)
    except ValueError:
        return
    for key, item in fields.items() if isinstance(fields, dict) else ():
        if not isinstance(item, dict | list):
            yield f"{name}.{key}", str(int(item) if isinstance(item, bool) else item)


def properties(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The properties of one test as the file has them: kept ones, each name once.

    A name that comes back (a job measured twice under one name) gets ``#2``, ``#3`` ...
    """
    seen: Counter[str] = Counter()
    kept: list[tuple[str, str]] = []
    for name, value in (flat for pair in pairs for flat in _flat(*pair)):
        if not keep(name, value):
            continue
        seen[name] += 1
        text = compact(value) if is_number(value) and not is_word(name) else value
        kept.append((name if seen[name] == 1 else f"{name}#{seen[name]}", text))
    return kept


def suite_name(classname: str, test: str, name: str) -> str:
    """A test's property as a suite property (the strict layout)."""
    return f"{classname}::{test}::{name}"
