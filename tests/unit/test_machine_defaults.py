"""No parameter outside the transport defaults to this machine: its caller names the
device's machine (a default would quietly run a test host's job here)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ssd"


def local_defaults(path: Path) -> list[int]:
    """The lines of *path* where a parameter defaults to ``LOCAL``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.arguments):
            for default in [*node.defaults, *node.kw_defaults]:
                if isinstance(default, ast.Name) and default.id == "LOCAL":
                    lines.append(default.lineno)
    return lines


def test_no_parameter_outside_machine_defaults_to_this_machine() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "machine"
        for line in local_defaults(path)
    ]
    assert found == []


def test_the_check_finds_such_defaults(tmp_path: Path) -> None:
    module = tmp_path / "x.py"
    module.write_text("def f(d, *, machine=LOCAL): ...\n\n\ndef g(d, machine=LOCAL): ...\n")
    assert local_defaults(module) == [1, 4]
