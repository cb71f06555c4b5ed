"""This machine's files read in process (pytest_ssd/machine/localcopy.py) give the copy the
snapshot's sh command gives, file for file (what a test host's copy is made from)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_ssd.host.tree import READS, host_readings, read_tree
from pytest_ssd.machine import localcopy
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.machine.snapshot import Reads, parse_all, script


def _copy(text: str, root: Path) -> dict[str, str]:
    """Every file of the copy of *text* under *root* that does not change from one moment
    to the next (no process's file, no clock, no memory counter)."""
    found = parse_all(text, READS, root, [""])[""]
    files = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_file() and not path.is_symlink() and not name.startswith(("sample/", "proc/")):
            files[name] = "" if "cpufreq/scaling_cur_freq" in name else path.read_text()
    files["nodes"] = repr(sorted(found.nodes.items()))
    return files


def test_the_copy_read_here_is_the_copy_the_command_gives(tmp_path: Path) -> None:
    argv = ["sh", "-c", script(READS), "sh", "", "0"]
    by_sh = _copy(LOCAL.run(argv, timeout=60).check("sh").stdout, tmp_path / "sh")
    here = _copy(localcopy.text(READS, 0), tmp_path / "here")
    assert here == by_sh
    assert any(name.endswith("transparent_hugepage/enabled") for name in here)


def test_a_file_is_cut_into_lines_as_grep_cuts_it(tmp_path: Path) -> None:
    odd = tmp_path / "odd"
    odd.write_bytes(b"a\rb\x0cc\nlast")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "binary").write_bytes(b"x\0y\n")
    said = localcopy.text(Reads(files=(f"{tmp_path}/*",)), 0).split("\n")
    assert [line for line in said if line.startswith(str(tmp_path))] == [
        f"{odd}:a\rb\x0cc",
        f"{odd}:last",
    ]


def test_this_process_is_the_session_whose_processes_are_not_others(tmp_path: Path) -> None:
    tree = read_tree(LOCAL, tmp_path, 0.2)
    assert tree.marks["session"] == str(os.getpid())
    assert (tree.sample.procfs / str(os.getpid()) / "stat").is_file(), "sampled twice"
    busy = next(r for r in host_readings(tree, LOCAL, {}, 0.2) if r.key == "busy-processes")
    assert f" {os.getpid()} " not in (busy.value or "")
