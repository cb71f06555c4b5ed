"""Which change-point method finds a real step and ignores noise: each on the same series.

The methods, each given a trace of 200 builds × 5 repeats and answering the builds where a
step starts:

- **fit + verdicts**: the site's own (:func:`pytest_ssd.site_pages.steps.judged_steps`),
  and the same judging each step on the two builds beside it only (the site before it
  also judged a step on up to 10 builds a side);
- **E-divisive**: E-divisive means as MongoDB's ``signal-processing-algorithms`` implements
  it (its defaults: p 0.05, 100 permutations), on the builds' medians; and, to tell the
  proposer from the judge, the same points judged by the verdicts as the site judges its
  fit's;
- **pairs**: every build judged against the one before by the verdicts, no fit (what
  ``pytest-ssd compare`` between consecutive builds would raise).

The noise: real fio on a direct-I/O loop device (4 KiB random reads and writes, queue
depth 16, 1 s a run, ``--runs`` runs each), each run's IOPS and p99 divided by the
median of its kind; a build's 5 repeats are 5 consecutive recorded runs from a random
place in the recording, so they carry what runs back to back share. Beside it, generated
noise: log-normal, builds scattering by 2 %, repeats by 3 %. Into each, 100 series a case:
noise alone, and one step (IOPS × 0.5, × 0.85, × 1.2; p99 by the inverse: a slower drive)
at a random build between 20 and 180. A step is found when a method names its build or
one beside it; any other build it names is a false alert.

Run: ``python -m tests.benchmarks.changepoints [--runs N] [--noise FILE] [--save FILE]``;
E-divisive needs ``signal-processing-algorithms`` (it pins numpy < 2): install it with
this package into a separate virtualenv and run the benchmark with that one's python.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from pytest_ssd.site_pages.steps import ALERTING, judge_steps, judged_steps
from pytest_ssd.verdict.judge import judge
from tests.benchmarks.lab import loop_device, sh

BUILDS = 200
REPEATS = 5
SERIES = 100
#: the steps injected (IOPS' factor; p99 takes its inverse), None: noise alone
CASES: tuple[float | None, ...] = (None, 0.5, 0.85, 1.2)
#: a build named this close to a step (but not beside it) is a misplaced find
NEAR = 5
#: a step lands between these builds, so that each side has builds to judge it on
FIRST, LAST = 20, 180
#: fio's job for each kind of recorded noise
WORKLOADS = ("randread", "randwrite")
RUNS = 100
RUN_S = 1
INSTALL = (
    "E-divisive skipped: signal-processing-algorithms is not installed (it pins numpy < 2):"
    " python3 -m venv /tmp/cp && /tmp/cp/bin/pip install signal-processing-algorithms -e ."
    " && /tmp/cp/bin/python -m tests.benchmarks.changepoints"
)

Levels = list[list[float]]
Method = Callable[[Levels, str], list[int]]


def _fio(device: Path, rw: str, seconds: int) -> tuple[float, float]:
    """One fio run on *device*: its IOPS and p99 completion latency (µs)."""
    out = sh(
        "fio",
        "--name=noise",
        f"--filename={device}",
        f"--rw={rw}",
        "--bs=4k",
        "--iodepth=16",
        "--ioengine=libaio",
        "--direct=1",
        "--size=256M",
        "--time_based",
        f"--runtime={seconds}",
        "--output-format=json",
        timeout=60 + seconds,
    )
    side = json.loads(out)["jobs"][0]["read" if rw == "randread" else "write"]
    return float(side["iops"]), float(side["clat_ns"]["percentile"]["99.000000"]) / 1000


def record(runs: int) -> dict[str, list[float]]:
    """*runs* fio runs of each workload on a fresh direct-I/O loop device, in order:
    ``{"randread iops": [...], "randread p99_us": [...], ...}``."""
    found: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, loop_device(Path(tmp), 512) as dev:
        # written first: reads of a sparse file's holes would never reach the disk
        sh("fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M", "--direct=1",
           "--size=256M", "--output-format=json", timeout=300)  # fmt: skip
        for rw in WORKLOADS:
            for _ in range(runs):
                iops, p99 = _fio(dev, rw, RUN_S)
                found.setdefault(f"{rw} iops", []).append(iops)
                found.setdefault(f"{rw} p99_us", []).append(p99)
    return found


def describe_noise(recorded: dict[str, list[float]]) -> None:
    """The recording's run-to-run spread, per kind: what the series are made of."""
    for kind, values in recorded.items():
        v = np.asarray(values)
        logs = np.log(v / np.median(v))
        blocks = [float(np.median(v[i : i + REPEATS])) for i in range(0, len(v) - REPEATS + 1)]
        print(
            f"  recorded {kind}: {len(v)} runs, median {np.median(v):,.0f}, run-to-run"
            f" {100 * float(np.std(logs, ddof=1)):.1f} % (sd of log), 5 in a row's median"
            f" moves by {100 * float(np.std(np.log(blocks), ddof=1)):.1f} %"
        )


@dataclass(frozen=True)
class Trace:
    """One generated series: its builds' repeats, its metric, where its step is."""

    levels: Levels
    metric: str
    step: int | None


def _factor(case: float | None, metric: str) -> float:
    if case is None:
        return 1.0
    return case if metric == "iops" else 1 / case


def recorded_traces(
    recorded: dict[str, list[float]], case: float | None, rng: np.random.Generator
) -> list[Trace]:
    """SERIES traces of recorded noise, each of one kind in turn, a step as *case* says."""
    kinds = sorted(recorded)
    traces = []
    for n in range(SERIES):
        kind = kinds[n % len(kinds)]
        noise = np.asarray(recorded[kind]) / np.median(recorded[kind])
        metric = kind.split()[1]
        step = int(rng.integers(FIRST, LAST)) if case is not None else None
        levels = []
        for b in range(BUILDS):
            start = int(rng.integers(0, len(noise) - REPEATS + 1))
            level = _factor(case, metric) if step is not None and b >= step else 1.0
            levels.append([float(v) * level * 10_000 for v in noise[start : start + REPEATS]])
        traces.append(Trace(levels, metric, step))
    return traces


def generated_traces(case: float | None, rng: np.random.Generator) -> list[Trace]:
    """SERIES traces of log-normal noise (builds 2 %, repeats 3 %), half IOPS, half p99."""
    traces = []
    for n in range(SERIES):
        metric = "iops" if n % 2 == 0 else "p99_us"
        step = int(rng.integers(FIRST, LAST)) if case is not None else None
        builds = np.exp(rng.normal(0, 0.02, BUILDS))
        levels = []
        for b in range(BUILDS):
            level = _factor(case, metric) if step is not None and b >= step else 1.0
            repeats = np.exp(rng.normal(0, 0.03, REPEATS))
            levels.append([float(v) for v in 10_000 * level * builds[b] * repeats])
        traces.append(Trace(levels, metric, step))
    return traces


def fit_and_verdicts(levels: Levels, metric: str) -> list[int]:
    return [at for at, _ in judged_steps(levels, "p", "read", metric)]


def fit_and_two_builds(levels: Levels, metric: str) -> list[int]:
    """The site's fit, each step judged on the two builds beside it only (no wider look)."""
    return [at for at, _ in judged_steps(levels, "p", "read", metric, side=0)]


def pairs(levels: Levels, metric: str) -> list[int]:
    return [
        at
        for at, (a, b) in enumerate(pairwise(levels), start=1)
        if judge("p", "read", metric, a, b).verdict in ALERTING
    ]


def _medians(levels: Levels) -> list[float]:
    return [float(np.median(v)) for v in levels]


def e_divisive_method() -> tuple[Method, Method] | None:
    """E-divisive on the builds' medians, and its points judged by the verdicts; None when
    signal-processing-algorithms is not installed."""
    try:
        # optional: it pins numpy < 2, so it lives in a virtualenv of its own
        from signal_processing_algorithms.energy_statistics import energy_statistics  # noqa: PLC0415
    except ImportError:
        return None

    def alone(levels: Levels, metric: str) -> list[int]:
        return sorted(
            int(i)
            for i in energy_statistics.e_divisive(_medians(levels), pvalue=0.05, permutations=100)
        )

    def judged(levels: Levels, metric: str) -> list[int]:
        cuts = alone(levels, metric)
        return [at for at, _ in judge_steps(levels, cuts, "p", "read", metric)]

    return alone, judged


@dataclass
class Score:
    """What a method answered on 100 series of one case: steps found and missed, false
    alerts and, of those, the ones a few builds from the step (misplaced, not made up)."""

    counts: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, named: Sequence[int], step: int | None) -> None:
        hits = [at for at in named if step is not None and abs(at - step) <= 1]
        if step is not None:
            self.counts["found" if hits else "missed"] += 1
            self.counts["near"] += sum(1 < abs(at - step) <= NEAR for at in named)
        self.counts["false"] += len(named) - min(len(hits), 1)

    def line(self, stepped: bool) -> str:
        c = self.counts
        found = f"found {c['found']:3d}, missed {c['missed']:3d}, " if stepped else ""
        near = f" ({c['near']} of them 2-{NEAR} builds from the step)" if c["near"] else ""
        return f"{found}{c['false']:3d} false alerts{near}, {self.seconds:.1f} s"


def score(method: Method, traces: Sequence[Trace]) -> Score:
    result = Score()
    started = time.perf_counter()
    answers = [method(t.levels, t.metric) for t in traces]
    result.seconds = time.perf_counter() - started
    for t, named in zip(traces, answers, strict=True):
        result.add(named, t.step)
    return result


def _case_name(case: float | None) -> str:
    return "noise alone" if case is None else f"IOPS {100 * (case - 1):+.0f} % step"


def compare(
    source: str, make: Callable[[float | None], list[Trace]], methods: dict[str, Method]
) -> dict[str, Any]:
    """Every method on 100 series of every case of *source*; printed, and returned."""
    print(f"{source} noise, {SERIES} series × {BUILDS} builds × {REPEATS} repeats a case:")
    table: dict[str, Any] = {}
    for case in CASES:
        traces = make(case)
        line = []
        for name, method in methods.items():
            np.random.seed(46)  # E-divisive's permutations draw from numpy's global state
            s = score(method, traces)
            table[f"{_case_name(case)} / {name}"] = {**s.counts, "seconds": s.seconds}
            line.append(f"    {name:<29} {s.line(case is not None)}")
        print(f"  {_case_name(case)}:", *line, sep="\n")
    return table


def main_(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="changepoints", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="fio runs a workload")
    parser.add_argument("--noise", type=Path, help="a recording saved before (--save)")
    parser.add_argument("--save", type=Path, help="keep the recording and the figures here")
    args = parser.parse_args(argv)
    methods: dict[str, Method] = {
        "fit + verdicts": fit_and_verdicts,
        "fit + verdicts on two builds": fit_and_two_builds,
    }
    edivisive = e_divisive_method()
    if edivisive is None:
        print(INSTALL)
    else:
        methods["E-divisive"], methods["E-divisive + verdicts"] = edivisive
    methods["pairs"] = pairs
    if args.noise:
        recorded = json.loads(args.noise.read_text())["recorded"]
    else:
        started = time.perf_counter()
        recorded = record(args.runs)
        print(f"recorded {args.runs} fio runs a workload in {time.perf_counter() - started:.0f} s")
    describe_noise(recorded)
    rng = np.random.default_rng(46)
    figures = {
        "recorded": compare("recorded", lambda c: recorded_traces(recorded, c, rng), methods),
        "generated": compare("generated", lambda c: generated_traces(c, rng), methods),
    }
    if args.save:
        args.save.write_text(json.dumps({"recorded": recorded, "figures": figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main_())
