"""The environment record: facts, busy processes, warnings, and the report's rows."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_ssd.db import RunInfo
from pytest_ssd.host import HostRecord, Reading, Roots, TuneLog
from pytest_ssd.host.facts import busy_processes, cpu_frequency, memory
from pytest_ssd.host.record import side_by_side, tune_summary
from pytest_ssd.report.sections.general import environment
from tests.unit.host_fakes import fake_host, put

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int, name: str, ppid: int, ticks: int) -> str:
    return f"{pid} ({name}) R {ppid} 0 0 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 100 0 0"


def test_cpu_frequency_from_cpufreq_else_cpuinfo(tmp_path: Path) -> None:
    roots = Roots(*fake_host(tmp_path))
    assert cpu_frequency(roots).value == "3400 MHz (intel_pstate)"
    bare = Roots(tmp_path / "none", tmp_path / "proc")
    put(bare.procfs, "cpuinfo", "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.010")
    assert cpu_frequency(bare).value == "2596 MHz (no cpufreq driver)"
    assert cpu_frequency(Roots(tmp_path / "x", tmp_path / "y")).value is None


def test_memory(tmp_path: Path) -> None:
    roots = Roots(*fake_host(tmp_path))
    assert memory(roots).value == "15.5 GiB total, 11.4 GiB available"


def test_busy_processes_leave_out_ours_and_the_idle(tmp_path: Path) -> None:
    procfs = tmp_path / "proc"
    me = 50
    start = {100: ("stress", 1, 0), 200: ("fio", me, 0), 300: ("sshd", 1, 0), 50: ("py", 1, 0)}
    for pid, (name, ppid, ticks) in start.items():
        put(procfs, f"{pid}/stat", _stat(pid, name, ppid, ticks))

    def half_a_second(seconds: float) -> None:
        # stress: a whole CPU; fio (our child): a whole CPU; sshd: 2 %
        put(procfs, "100/stat", _stat(100, "stress", 1, TICKS // 2))
        put(procfs, "200/stat", _stat(200, "fio", me, TICKS // 2))
        put(procfs, "300/stat", _stat(300, "sshd", 1, TICKS // 100))

    reading = busy_processes(Roots(tmp_path, procfs), 0.5, half_a_second, me=me)
    assert reading.value == "1 (stress 100 100%)"
    assert reading.differs and reading.recommended == "0"
    idle = busy_processes(Roots(tmp_path, procfs), 0.5, lambda s: None, me=me)
    assert idle.value == "0" and not idle.differs


def _reading(key: str, value: str | None, rec: str | None, device: str | None = None) -> Reading:
    return Reading(key, key.upper(), value, rec, "why", device)


def test_record_warnings_and_dict() -> None:
    record = HostRecord(
        (
            _reading("thp", "madvise", "never"),
            _reading("aslr", "0", "0"),
            _reading("governor", None, "performance"),
            _reading("scheduler", "bfq", "none", "sdb"),
        ),
        TuneLog(requested=True, changed=["x: 2 -> 0"]),
    )
    assert record.warnings() == [
        "THP is madvise, the method recommends never",
        "SCHEDULER (sdb) is bfq, the method recommends none",
    ]
    assert [r.key for r in record.unavailable()] == ["governor"]
    data = record.as_dict()
    assert data["tune"] == {
        "requested": True,
        "recovered": [],
        "refused": [],
        "changed": ["x: 2 -> 0"],
        "skipped": [],
    }
    assert Reading.from_dict(data["host_settings"][3]) == record.readings[3]
    lines = record.table_lines()
    assert lines[0].split() == ["THP", "madvise", "(recommended:", "never)"]
    assert lines[2].split()[1:] == ["not", "available", "here", "(why)"]


def _env(*readings: Reading, tune: TuneLog | None = None) -> dict[str, object]:
    record = HostRecord(readings, tune or TuneLog())
    return {"host": "lab", **record.as_dict()}


def test_side_by_side_marks_and_fills_gaps() -> None:
    this = _env(_reading("thp", "never", "never"), _reading("governor", None, "performance"))
    older = _env(_reading("thp", "always", "never"))
    rows = side_by_side([this, older, {"host": "before issue 8"}])
    assert [name for name, _ in rows] == ["THP", "GOVERNOR"]
    thp, governor = (cells for _, cells in rows)
    assert [(c.text, c.warn) for c in thp] == [
        ("never", False),
        ("always (recommended: never)", True),
        ("not recorded", False),
    ]
    assert governor[0].text == "not available here (why)" and governor[1].text == "not recorded"


def test_tune_summary() -> None:
    assert tune_summary({}) == "not recorded"
    assert tune_summary(_env()) == "not used"
    tuned = TuneLog(requested=True, changed=["a -> b"], skipped=["c: no"])
    assert tune_summary(_env(tune=tuned)) == "changed a -> b; could not set: c: no"
    assert tune_summary(_env(tune=TuneLog(requested=True))) == "nothing to change"


def test_report_section_shows_settings_and_warnings() -> None:
    env = _env(
        _reading("thp", "madvise", "never"),
        _reading("governor", None, "performance"),
        tune=TuneLog(requested=True, changed=["aslr: 2 -> 0"]),
    )
    run = RunInfo("r1", "start", "end", True, {"passed": 1}, "/tmp/r1", env, ())
    body = environment([run]).body
    assert '<b class="ssd-warn">madvise (recommended: never)</b>' in body
    assert "not available here (why)" in body
    assert "<td>Warnings</td><td>THP is madvise, the method recommends never</td>" in body
    assert "<td>--ssd-tune</td><td>changed aslr: 2 -&gt; 0</td>" in body
