"""``pytest suites``: every suite at once, as a lab runs a drive through all of them."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import REPO


def test_every_suite_is_collected_at_once(run_ssd: Any) -> None:
    # csd and snia both have a test_latency.py: each suite is a package of its own
    run = run_ssd("--collect-only", "-q", suite=REPO / "suites")
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    assert "import file mismatch" not in out + run.result.stderr.str()
    for suite in ("csd", "snia"):
        assert f"suites/{suite}/test_latency.py::" in out, suite
