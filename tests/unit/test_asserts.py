"""pytest rewrites the asserts of pytest-ssd's method drivers only (issue 30).

pytest marks every module of a plugin's distribution for rewriting: installed from a wheel,
all of ``pytest_ssd``.  Rewritten, every process (each xdist worker) parsed, rewrote and
compiled the ~160 modules it loads again where bytecode is not written; now the rest of the
package loads as any library does, from its bytecode.
"""

from __future__ import annotations

import json
import sys

import pytest

from pytest_ssd import asserts

#: a worker's test: which of pytest-ssd's modules pytest's hook loaded (rewrote)
LOADERS = """
import json, sys

import pytest_ssd.methods.esd.run


def test_loaders():
    found = {name: type(getattr(module, "__loader__", None)).__name__
             for name, module in list(sys.modules.items()) if name.startswith("pytest_ssd")}
    with open("loaders.json", "w") as fh:
        json.dump(found, fh)
"""


def test_a_worker_rewrites_the_method_drivers_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_loaders=LOADERS)
    # -p pytest_ssd marks the whole package for rewriting, as pytest does for a wheel's files
    result = pytester.runpytest_subprocess("-p", "pytest_ssd", "-n", "1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    loaders = json.loads((pytester.path / "loaders.json").read_text())
    assert "pytest_ssd.bench" in loaders and "pytest_ssd.plugin" in loaders
    rewritten = {n for n, loader in loaders.items() if loader == "AssertionRewritingHook"}
    # the package and the module that unmarks it load before the unmarking; of a method's
    # folder (its hooks, workloads, figures) only its run
    assert "pytest_ssd.methods.esd.workloads" in loaders and "pytest_ssd.methods" in loaders
    assert rewritten - {"pytest_ssd", "pytest_ssd.asserts"} == {"pytest_ssd.methods.esd.run"}


class _Hook:
    """What rewrite_methods_only reads of pytest's hook."""

    def __init__(self, marked: set[str]) -> None:
        self._must_rewrite = marked

    def mark_rewrite(self, *names: str) -> None:
        self._must_rewrite.update(names)


def test_only_the_package_mark_is_replaced() -> None:
    ours, others, unrelated = _Hook({"pytest_ssd", "pytest_html"}), _Hook({"xdist"}), object()
    saved = list(sys.meta_path)
    sys.meta_path[:0] = [ours, others, unrelated]  # type: ignore[list-item]
    try:
        asserts.rewrite_methods_only()
    finally:
        sys.meta_path[:] = saved
    runs = {f"pytest_ssd.methods.{m}.run" for m in ("esd", "namespaces", "snia", "wsat")}
    assert ours._must_rewrite == {*runs, "pytest_html"}
    assert others._must_rewrite == {"xdist"}
