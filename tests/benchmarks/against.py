"""The benchmarks on another revision and on this tree, taking turns, side by side.

``python -m tests.benchmarks.against REV [--rounds N] [BENCH ...]`` (or ``./run bench
--against REV [BENCH ...]``): *REV* (a commit, a tag, a branch) is checked out into a
temporary worktree, removed at the end.  Its interpreter is this tree's ``.venv`` when
that has what REV needs (``setup.cfg``: the same ``entry_points``, every requirement of
``install_requires`` and ``extras_require`` installed in a version REV accepts): the
worktree, first on ``PYTHONPATH``, is then what ``pytest_ssd`` and ``tests`` import; else
the worktree gets a venv of its own (``pip install -e .[dev]``, a few minutes).

Each *BENCH* is ``NAME`` or ``NAME:ARG,ARG`` and runs as ``python -m
tests.benchmarks.NAME ARG...`` in each tree: REV's own script where REV has it (a
benchmark drives the code it was written for), else this tree's, copied into the
worktree.  The trees take turns, the first to go alternating from round to round, so
that both meet the same load.  Every verdict line a run prints (``NAME: FIGURE   target
T   WORD``) is kept; at the end each figure is printed with its target, REV's figure of
each round and this tree's.  Without *BENCH*, the four figures that must not get worse:
the point cost here and on a test host, the memory per drive and the start-up.
"""

from __future__ import annotations

import argparse
import configparser
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.benchmarks.lab import REPO

#: the figures issue-free changes keep: point cost (here, on a host), memory per drive,
#: start-up
DEFAULT = ("orchestration", "orchestration:--host", "workers", "startup")
VERDICT = re.compile(r"^(?P<name>[^\n:]+): (?P<figure>.*?)   target (?P<target>.*?)   \w+$", re.M)
TIMEOUT_S = 4 * 3600
PIP_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Tree:
    """A pytest-ssd tree and the interpreter that runs its benchmarks."""

    name: str
    root: Path
    python: Path


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True, timeout=600
    )
    return done.stdout.strip()


def unmet(setup_cfg: str) -> str | None:
    """Why this tree's venv cannot run the revision whose ``setup.cfg`` is *setup_cfg*
    (None: it can): its entry points differ, or a requirement of its ``install_requires``
    or ``extras_require`` is not installed here in a version it accepts."""
    theirs, ours = configparser.ConfigParser(), configparser.ConfigParser()
    theirs.read_string(setup_cfg)
    ours.read(REPO / "setup.cfg")
    section = "options.entry_points"
    if dict(theirs.items(section)) != dict(ours.items(section)):
        return "its entry points differ"
    lines = theirs.get("options", "install_requires", fallback="").splitlines()
    if theirs.has_section("options.extras_require"):
        lines += [x for _, v in theirs.items("options.extras_require") for x in v.splitlines()]
    for line in filter(None, (x.strip() for x in lines)):
        wanted = Requirement(line)
        if wanted.marker is not None and not wanted.marker.evaluate():
            continue
        try:
            have = metadata.version(wanted.name)
        except metadata.PackageNotFoundError:
            return f"{wanted.name} is not installed here"
        if not wanted.specifier.contains(have, prereleases=True):
            return f"it wants {line}, {have} is installed here"
    return None


def venv_for(root: Path, rev: str) -> Path:
    """The interpreter for the worktree at *root*: this tree's when it meets REV's needs."""
    why = unmet(git("show", f"{rev}:setup.cfg"))
    if why is None:
        print(f"against: this tree's .venv has what {rev} needs: it runs there")
        return Path(sys.executable)
    print(f"against: {rev} gets a venv of its own in {root}/.venv ({why})")
    subprocess.run([sys.executable, "-m", "venv", str(root / ".venv")], check=True, timeout=600)
    python = root / ".venv" / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-e", ".[dev]"],
        check=True,
        cwd=root,
        timeout=PIP_TIMEOUT_S,
    )
    return python


def run_bench(tree: Tree, name: str, args: list[str]) -> str:
    """Run benchmark *name* in *tree*; what it printed (also shown as it goes)."""
    script = tree.root / "tests" / "benchmarks" / f"{name}.py"
    if not script.exists():  # REV lacks it: this tree's copy measures REV's code
        shutil.copy2(REPO / "tests" / "benchmarks" / f"{name}.py", script)
    env = {**os.environ, "PYTHONPATH": str(tree.root)}
    argv = [str(tree.python), "-m", f"tests.benchmarks.{name}", *args]
    print(f"against: {tree.name}: {' '.join(argv[1:])}", flush=True)
    done = subprocess.run(
        argv, check=False, capture_output=True, text=True, cwd=tree.root, env=env, timeout=TIMEOUT_S
    )
    print(done.stdout, end="", flush=True)
    if done.returncode not in (0, 1):  # 1: a target missed, still a figure
        print(f"against: {tree.name}: {name} exited {done.returncode}: {done.stderr[-1500:]}")
    return done.stdout


def table(rev: str, figures: dict[tuple[str, str], dict[str, list[str]]]) -> str:
    """Each figure: its target, then REV's and this tree's, one round a line."""
    lines = []
    for (name, target), by_tree in figures.items():
        lines.append(f"{name}   (target {target})")
        for tree in (rev, "HEAD"):
            for figure in by_tree.get(tree) or ["not measured"]:
                lines.append(f"  {tree:>12}: {figure}")
    return "\n".join(lines)


def bench_args(text: str) -> list[str]:
    """A benchmark's arguments from ``ARG,ARG``: a piece that starts no option after an
    ``--option=value`` goes on that value (``--drives=1,16`` stays one argument;
    ``--runs,3`` is two)."""
    args: list[str] = []
    for piece in text.split(","):
        if args and "=" in args[-1] and piece and not piece.startswith("-"):
            args[-1] += f",{piece}"
        elif piece:
            args.append(piece)
    return args


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the revision compared with this tree (HEAD's work tree)")
    parser.add_argument("bench", nargs="*", default=list(DEFAULT), help="NAME or NAME:ARG,ARG")
    parser.add_argument("--rounds", type=int, default=1, help="turns each tree takes (1)")
    args = parser.parse_intermixed_args()  # --rounds after the benchmarks or before them
    rev = git("rev-parse", "--short", f"{args.rev}^{{commit}}")
    figures: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory(prefix=f"ssd-against-{rev}-") as tmp:
        root = Path(tmp) / "tree"
        git("worktree", "add", "--detach", str(root), rev)
        try:
            trees = [Tree(rev, root, venv_for(root, rev)), Tree("HEAD", REPO, Path(sys.executable))]
            for turn in range(args.rounds):
                for bench in args.bench:
                    name, _, rest = bench.partition(":")
                    for tree in trees if turn % 2 == 0 else trees[::-1]:
                        said = run_bench(tree, name, bench_args(rest))
                        for found in VERDICT.finditer(said):
                            key = (found["name"], found["target"])
                            figures[key][tree.name].append(found["figure"])
        finally:
            git("worktree", "remove", "--force", str(root))
    print(f"\n=== {rev} against HEAD (this work tree), {args.rounds} round(s) ===")
    print(table(rev, figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
