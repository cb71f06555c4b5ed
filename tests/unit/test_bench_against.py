"""The benchmarks' comparison with another revision (tests/benchmarks/against.py)."""

from __future__ import annotations

from tests.benchmarks.against import VERDICT, bench_args, table, unmet
from tests.benchmarks.lab import REPO, verdict


def test_every_verdict_line_is_a_figure_with_its_target() -> None:
    said = "\n".join(
        [
            "orchestration: 12 points",
            verdict("workers", "47.9 MiB per drive", "<= 45 MiB per drive", False),
            "start-up: 0.62 s (median of 5)   target not slower than the revision compared"
            "   REPORTED",
        ]
    )
    found = [(m["name"], m["figure"], m["target"]) for m in VERDICT.finditer(said)]
    assert found == [
        ("workers", "47.9 MiB per drive", "<= 45 MiB per drive"),
        ("start-up", "0.62 s (median of 5)", "not slower than the revision compared"),
    ]
    shown = table("735cc81", {("workers", "<= 45"): {"HEAD": ["47.9"]}})
    assert shown.splitlines() == [
        "workers   (target <= 45)",
        "       735cc81: not measured",
        "          HEAD: 47.9",
    ]


def test_this_trees_venv_runs_a_revision_whose_needs_it_meets() -> None:
    ours = (REPO / "setup.cfg").read_text()
    assert unmet(ours) is None
    pinned = next(line for line in ours.splitlines() if "==" in line).strip()
    name = pinned.split("==")[0]
    assert unmet(ours.replace(pinned, f"{name}==0.0.1")) == (
        f"it wants {name}==0.0.1, {pinned.split('==')[1]} is installed here"
    )
    absent = ours.replace(pinned, f"{pinned}\n    no-such-package-here==1.0")
    assert unmet(absent) == "no-such-package-here is not installed here"
    moved = ours.replace("[options.entry_points]", "[options.entry_points]\nx = y")
    assert unmet(moved) == "its entry points differ"


def test_an_options_value_with_commas_stays_one_argument() -> None:
    assert bench_args("--drives=1,16,--report-only") == ["--drives=1,16", "--report-only"]
    assert bench_args("--runs,3") == ["--runs", "3"]
