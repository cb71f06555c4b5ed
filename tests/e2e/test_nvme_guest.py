"""pytest-ssd against a real NVMe controller: QEMU's, in a guest reached as a test host.

The guest (tests/qemu_nvme.py) has one emulated namespace, ``/dev/nvme0n1``
(serial QNVME0001, 1 GiB); pytest-ssd reaches it over SSH and fio's server as
any test host.  Identification from id-ctrl and id-ns, the serial
confirmation, the guard on an NVMe namespace (ext4, mounted, partition table),
purge by ``nvme format``, trim by DSM deallocate and smart-log temperature run
for real here.  Skipped with the reason where QEMU cannot run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device import guard
from pytest_ssd.device.view import View
from pytest_ssd.host.facts import BUSY_TITLE
from pytest_ssd.host.tree import MEMORY, PREFIX
from pytest_ssd.machine.machine import SshMachine
from pytest_ssd.machine.ssh import Ssh
from tests.e2e.conftest import REPO, cssd_suite
from tests.e2e.test_admin_load import SUITE as ADMIN_LOAD
from tests.e2e.test_admin_load import assert_admin_load
from tests.e2e.test_features import SUITE as FEATURES
from tests.e2e.test_features import assert_features, guest_sheet
from tests.qemu_nvme import SERIAL, nvme_guest
from tests.sshd import Sshd

NS = "/dev/nvme0n1"
MIB = 1 << 20


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with nvme_guest(tmp_path_factory.mktemp("guest")) as booted:
        yield booted


@pytest.fixture
def shell(guest: Sshd, tmp_path: Path) -> Iterator[Ssh]:
    """Commands in the guest (set-up and clean-up), over one connection."""
    ssh = guest.client(tmp_path.name)
    ssh.open()
    try:
        yield ssh
    finally:
        ssh.close()


def _sh(ssh: Ssh, script: str) -> str:
    done = ssh.run(["sh", "-c", script], timeout=300)
    assert done.returncode == 0, f"{script}: {done.stderr}"
    return done.stdout


def _refusal(ssh: Ssh) -> str | None:
    return guard.refusal(guard.inspect(NS, view=View.of(SshMachine(ssh), NS, write=True)))


def test_a_namespace_is_identified_needs_its_serial_and_is_measured(
    guest: Sshd, run_ssd: Any
) -> None:
    url, config = guest.url(NS), f"--ssd-ssh-config={guest.config}"
    refused = run_ssd(f"--dut={url}", config)
    err = refused.result.stderr.str()
    assert refused.result.ret != 0
    where = f"ssh root@127.0.0.1 port {guest.port}"
    assert f"refusing to write to {NS} on {where} ({NS}: QEMU NVMe Ctrl" in err, err
    assert f"serial {SERIAL}" in err
    assert f"add --ssd-confirm={SERIAL}" in err
    run = run_ssd(f"--dut={url}", config, f"--ssd-confirm={SERIAL}")
    assert run.result.ret == 0, run.result.stdout.str()
    run.result.assert_outcomes(passed=4)
    (device,) = run.results()["devices"].values()
    identity = device["identity"]
    assert (identity["model"], identity["serial"], identity["transport"]) == (
        "QEMU NVMe Ctrl",
        SERIAL,
        "nvme",
    )
    # named by its host, its controller's serial and its namespace, in every test id
    assert (device["id"], identity["nsid"]) == (f"127.0.0.1_{guest.port}-{SERIAL}-n1", 1)
    assert all(f"[{device['id']}" in m["test"] for m in run.results()["measurements"])
    assert identity["size_bytes"] == 1024 * MIB and identity["nvme"]["namespace"]["lba_size"]
    assert device["health"] == "nvme smart-log"
    # the PCIe link of the controller's PCI function, from the guest's sysfs
    rows = dict(device["summary_tables"]["rows"])
    assert rows["Link"] == "PCIe, PCI function 0000:00:01.0", rows
    # QEMU's root-bus function reports no speed: said so, never guessed
    assert rows["Link speed (current / max)"] == "not reported / not reported", rows
    # the guest's own settings, its controller's features asked there with nvme-cli
    readings = {r["key"]: r for r in run.results()["run"]["host_settings"]}
    on = f" on 127.0.0.1:{guest.port}"
    assert readings["power-state"]["value"] == "PS0"
    assert readings["power-state"]["source"] == f"nvme get-feature {NS} --feature-id=2{on}"
    assert readings["apst"]["value"] is None and "Invalid Field" in readings["apst"]["source"]
    assert readings["scheduler"]["source"] == f"/sys/class/block/nvme0n1/queue/scheduler{on}"
    # the guest's 1 GiB, not this machine's memory
    assert readings["memory"]["value"].split()[1] == "MiB", readings["memory"]
    with sqlite3.connect(run.report_dir / "results.sqlite") as db:
        rows = db.execute("SELECT meta FROM series WHERE name LIKE '%.health'").fetchall()
    health = [json.loads(meta) for (meta,) in rows]
    assert len(health) == 4, "each fio run sampled (a prefill is in its read's run)"
    # QEMU's smart-log says 323 K, read over SSH on the host while fio ran
    assert all(h["source"] == "nvme smart-log" and h["samples"] >= 1 for h in health)
    assert all(abs(h["temp_max_c"] - 49.85) < 0.01 for h in health), health


def test_the_guard_refuses_a_namespace_in_use(shell: Ssh) -> None:
    try:
        _sh(shell, f"mkfs.ext4 -q -F {NS}")
        assert "ext4 signature" in (_refusal(shell) or "")
        _sh(shell, f"mkdir -p /tmp/mnt && mount -o ro {NS} /tmp/mnt")
        assert "it is mounted at /tmp/mnt" in (_refusal(shell) or "")
        _sh(shell, f"umount /tmp/mnt && wipefs -q -a {NS}")
        _sh(shell, f"printf 'label: dos\\n,64M,L\\n' | sfdisk -q {NS}")
        facts = guard.inspect(NS, view=View.of(SshMachine(shell), NS, write=True))
        assert facts.partitions == ("nvme0n1p1",) and "dos" in facts.signatures
        _sh(shell, f"mkfs.ext4 -q -F {NS}p1 && mount -o ro {NS}p1 /tmp/mnt")
        assert "it is mounted at /tmp/mnt" in (_refusal(shell) or "")
    finally:
        shell.run(
            ["sh", "-c", f"umount /tmp/mnt; wipefs -q -a {NS}p1; wipefs -q -a {NS}"], timeout=120
        )
    assert _refusal(shell) is None


def test_a_state_purges_by_nvme_format_and_trims(guest: Sshd, run_ssd: Any, tmp_path: Path) -> None:
    suite = cssd_suite(tmp_path)
    run = run_ssd(
        f"--dut={guest.url(NS)}",
        f"--ssd-ssh-config={guest.config}",
        f"--ssd-confirm={SERIAL}",
        suite=suite,
        timeout=900,
    )
    assert run.result.ret == 0, run.result.stdout.str()
    (transition,) = run.results()["transitions"]
    steps = [s for s in transition["steps"] if s["kind"] != "idle"]
    assert [s["kind"] for s in steps] == ["purge", "fio", "fio", "discard"]
    purge = steps[0]["detail"]
    assert purge.startswith("format-ses") and "read back as zeroes" in purge, purge
    commands = " ".join(p.read_text() for p in run.run_dir.rglob("nvme-format.cmd"))
    assert f"nvme format {NS} --ses=" in commands
    totals = transition["totals"]
    assert totals["discarded"] >= 256 * MIB, "the trim of the last quarter (DSM deallocate)"
    assert totals["written"] >= 2 * 1024 * MIB, "200 % SEQ, as the guest's kernel counted it"


THP = "/sys/kernel/mm/transparent_hugepage/enabled"
ASLR = "/proc/sys/kernel/randomize_va_space"
JOURNAL = "/var/lib/pytest-ssd/tune/restore.json"
#: a test that sees the guest's settings while the session runs
SEES = f"""
def test_sees_the_hosts_settings(ssd):
    run = lambda path: ssd.machine.run(["cat", path], timeout=30).stdout.strip()
    print("during:", run("{THP}"), "|", run("{ASLR}"))
"""


def _on_guest(run_ssd: Any, guest: Sshd, suite: Path, *args: str) -> Any:
    """pytest-ssd on the guest's namespace (confirmed by its serial), with *suite*."""
    url, config = guest.url(NS), f"--ssd-ssh-config={guest.config}"
    return run_ssd(f"--dut={url}", config, f"--ssd-confirm={SERIAL}", *args, suite=suite)


def _seeing(tmp_path: Path) -> Path:
    suite = tmp_path / "test_sees.py"
    suite.write_text(SEES)
    return suite


def _journal_left(shell: Ssh) -> bool:
    """A tune journal is on the guest (a session's changes not yet put back)."""
    return _sh(shell, f"test -e {JOURNAL} && echo left || echo gone").strip() == "left"


def _settings(shell: Ssh) -> tuple[str, str]:
    return _sh(shell, f"cat {THP}").strip(), _sh(shell, f"cat {ASLR}").strip()


def test_ssd_tune_sets_a_hosts_settings_and_puts_them_back(
    guest: Sshd, shell: Ssh, run_ssd: Any, tmp_path: Path
) -> None:
    before = _settings(shell)
    assert before == ("[always] madvise never", "2"), "the guest's own defaults"
    run = _on_guest(run_ssd, guest, _seeing(tmp_path), "--ssd-tune", "-s")
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    label = f"127.0.0.1:{guest.port}"
    assert "during: always madvise [never] | 0" in out, "tuned on the host while the run ran"
    assert f"{label}: --ssd-tune changed: {THP}: always -> never" in out
    assert f"{label}: --ssd-tune changed: {ASLR}: 2 -> 0" in out
    assert f"{label}: --ssd-tune restored: {THP}: always again" in out
    assert "could not set" not in out, "APST: QEMU's controller has none, so none is planned"
    # busy processes are the guest's load (a TCG guest's rcu_preempt can pass 10 %), not a setting
    unset = [line for line in out.splitlines() if "warning:" in line and BUSY_TITLE not in line]
    assert unset == [], "every setting of the guest as the method recommends"
    readings = {r["key"]: r for r in run.results()["run"]["host_settings"]}
    assert (readings["thp"]["value"], readings["aslr"]["value"]) == ("never", "0")
    tune = run.results()["run"]["tune"]
    assert f"{label}: {THP}: always -> never" in tune["changed"]
    assert _settings(shell) == before, "every setting back after the session"
    assert not _journal_left(shell)


def test_a_dead_sessions_host_settings_are_put_back_by_the_next(
    guest: Sshd, shell: Ssh, run_ssd: Any, tmp_path: Path
) -> None:
    before = _settings(shell)
    journal = {
        "pid": 999999,
        "started": "1",
        "changes": [
            {
                "kind": "file",
                "setting": "thp",
                "path": THP,
                "original": "always",
                "target": "never",
            },
            # never written: not a file --ssd-tune computes for any setting
            {
                "kind": "file",
                "setting": "aslr",
                "path": "/etc/hostname",
                "original": "x",
                "target": "0",
            },
        ],
    }
    _sh(shell, f"echo never > {THP}; mkdir -p -m 700 {Path(JOURNAL).parent}")
    done = shell.run(
        ["sh", "-c", f"umask 077; cat > {JOURNAL}"], timeout=60, stdin=json.dumps(journal)
    )
    assert done.returncode == 0, done.stderr
    hostname = _sh(shell, "cat /etc/hostname")
    run = _on_guest(run_ssd, guest, _seeing(tmp_path))
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    label = f"127.0.0.1:{guest.port}"
    assert f"{label}: recovered: {THP}: always again (left by pid 999999 on {label})" in out
    assert f"{label}: refused to restore: setting 'aslr', value 'x', at '/etc/hostname'" in out
    assert _settings(shell) == before == ("[always] madvise never", "2")
    assert _sh(shell, "cat /etc/hostname") == hostname, "a refused entry is never written"
    assert not _journal_left(shell)


def test_a_session_killed_while_tuned_leaves_the_host_to_the_next(
    guest: Sshd, shell: Ssh, run_ssd: Any, tmp_path: Path
) -> None:
    before = _settings(shell)
    suite = tmp_path / "test_waits.py"
    suite.write_text("import time\n\ndef test_waits(ssd):\n    time.sleep(120)\n")
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        f"--rootdir={REPO}",
        f"--ssd-report-dir={tmp_path / 'killed'}",
        "-p",
        "no:cacheprovider",
        f"--dut={guest.url(NS)}",
        f"--ssd-ssh-config={guest.config}",
        f"--ssd-confirm={SERIAL}",
        "--ssd-tune",
    ]
    log = (tmp_path / "killed.log").open("w")
    session = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _settings(shell) != ("always madvise [never]", "0"):  # every setting tuned
            assert session.poll() is None, (tmp_path / "killed.log").read_text()
            assert time.monotonic() < deadline, "the session never tuned the guest"
            time.sleep(0.5)
    finally:
        os.killpg(session.pid, signal.SIGKILL)  # pytest, its ssh master and channels
        session.wait(60)
        log.close()
    assert _journal_left(shell)
    assert _settings(shell) == ("always madvise [never]", "0"), "nobody put them back"
    run = _on_guest(run_ssd, guest, _seeing(tmp_path))
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    label = f"127.0.0.1:{guest.port}"
    assert f"{label}: recovered: {THP}: always again (left by pid" in out
    assert f"{label}: recovered: {ASLR}: 2 again (left by pid" in out
    assert _settings(shell) == before
    assert not _journal_left(shell)
    # the killed session's copy of the guest's files (made here) is gone with the next
    assert not list(MEMORY.glob(f"{PREFIX}{session.pid}-*"))


def test_ssd_tune_is_refused_while_another_session_holds_the_hosts_tune_lock(
    guest: Sshd, shell: Ssh, run_ssd: Any, tmp_path: Path
) -> None:
    before = _settings(shell)
    lock = f"{Path(JOURNAL).parent}/tune.lock"
    _sh(shell, f"mkdir -p -m 700 {Path(JOURNAL).parent}")
    holder = shell.run(
        ["sh", "-c", f"flock -n -o {lock} sleep 60 >/dev/null 2>&1 & sleep 0.5; echo $!"],
        timeout=60,
    ).stdout.strip()
    try:
        run = _on_guest(run_ssd, guest, _seeing(tmp_path), "--ssd-tune")
    finally:
        _sh(shell, f"kill {holder} 2>/dev/null; true")
    assert run.result.ret != 0
    err = run.result.stderr.str()
    named = f"pytest-ssd (pid {holder} (flock -n -o {lock} sleep 60)) has tuned ssh "
    assert named in err and f"port {guest.port} and is still running" in err, err
    assert "Traceback" not in err
    assert _settings(shell) == before


GOLDEN_LOG = REPO / "tests" / "golden" / "health" / "nvme-smart-log.json"
STAND_IN = "/tmp/ssd-health-stand-in"
#: ``nvme`` first on the guest's PATH: nvme-cli itself, but for a smart log that worsens
#: once the flag file exists, and an error log with its one new entry
NVME_STAND_IN = f"""#!/bin/sh
case "$1" in
smart-log) [ -e {STAND_IN}/worse ] && exec cat {STAND_IN}/smart-log.json ;;
error-log) exec cat {STAND_IN}/error-log.json ;;
esac
exec /usr/sbin/nvme "$@"
"""
#: the first test's drive worsens while it runs; the second's does not
WORSENS = f"""
def test_first(ssd):
    ssd.machine.run(["touch", "{STAND_IN}/worse"], timeout=30)

def test_second(ssd):
    pass
"""


def _stand_in(shell: Ssh) -> None:
    worse = {**json.loads(GOLDEN_LOG.read_text()), "media_errors": "3", "num_err_log_entries": "1"}
    errors = {"errors": [{"error_count": 1, "sqid": 1, "status_field": 0x281}]}
    files = {"smart-log.json": json.dumps(worse), "error-log.json": json.dumps(errors)}
    _sh(shell, f"mkdir -p {STAND_IN} && mount -t tmpfs tmpfs /usr/local/sbin")
    for name, text in {**files, "nvme": NVME_STAND_IN}.items():
        _sh(shell, f"cat > {STAND_IN}/{name} <<'EOF'\n{text}\nEOF")
    _sh(shell, f"cp {STAND_IN}/nvme /usr/local/sbin/nvme && chmod +x /usr/local/sbin/nvme")


def test_health_rules_keep_qemus_smart_log_and_fail_the_test_that_broke_one(
    guest: Sshd, shell: Ssh, run_ssd: Any, tmp_path: Path
) -> None:
    suite = tmp_path / "test_health.py"
    suite.write_text(WORSENS)
    kept = _on_guest(run_ssd, guest, suite)
    kept.result.assert_outcomes(passed=2)  # the real smart log: no flag is read
    steps = [d["values"] for d in kept.results()["derived"] if d["name"] == "ssd.health"]
    assert [s["verdict"] for s in steps] == ["kept", "kept"], steps
    assert steps[0]["after"]["temperature"] == 49.85 and steps[0]["source"] == "nvme smart-log"
    costs = [s["snapshot_s"] for s in steps]
    print(f"snapshot cost on the guest: {costs} s per test")
    (device,) = kept.results()["devices"].values()
    assert device["health_rules"]["origin"] == "pytest-ssd's default-health.toml"
    try:
        _stand_in(shell)
        run = _on_guest(run_ssd, guest, suite)
    finally:
        shell.run(["sh", "-c", f"umount /usr/local/sbin; rm -rf {STAND_IN}"], timeout=60)
    out = run.result.stdout.str()
    run.result.assert_outcomes(passed=1, failed=1)
    assert "Traceback" not in out + run.result.stderr.str() and "INTERNALERROR" not in out
    line = (
        "health: media_errors 0 → 3 (rule: unchanged);"
        " health: error_log_entries 0 → 1 (rule: unchanged)"
    )
    assert line in out, out
    steps = [d for d in run.results()["derived"] if d["name"] == "ssd.health"]
    first, second = (s["values"] for s in steps)
    assert first["newest_error"] == {"error_count": 1, "sqid": 1, "status_field": 0x281}
    assert (first["verdict"], second["verdict"]) == ("broken", "kept"), "the first broke it"
    page = (run.run_dir / "report.html").read_text()
    assert "Drive health" in page and "<b>0 → 3</b>" in page


def test_admin_load_and_declared_features_on_a_real_controller(
    guest: Sshd, run_ssd: Any, tmp_path: Path
) -> None:
    """suites/qual's admin load (QD32 polled at 1/s) and declared features, one session."""
    url, config = guest.url(NS), f"--ssd-ssh-config={guest.config}"
    run = run_ssd(
        f"--dut={url}",
        config,
        f"--ssd-confirm={SERIAL}",
        f"--datasheet={guest_sheet(tmp_path)}",
        str(FEATURES),
        "-k",
        "qd32-1per or feature or endurance",
        "-v",
        "--durations=6",
        suite=ADMIN_LOAD,
        timeout=600,
    )
    assert "Traceback" not in run.result.stdout.str() + run.result.stderr.str()
    assert_admin_load(run)
    assert_features(run)


INTEGRITY = REPO / "suites" / "qual" / "test_integrity.py"


def test_data_integrity_after_trim_and_purge_on_a_real_controller(
    guest: Sshd, run_ssd: Any
) -> None:
    """suites/qual's integrity checks whose answer the controller declares: a trimmed range
    reads as id-ns DLFEAT says (QEMU: 1, zeroes) and a purge by ``nvme format`` leaves no
    old header; the kept data reads back as written."""
    run = run_ssd(
        f"--dut={guest.url(NS)}",
        f"--ssd-ssh-config={guest.config}",
        f"--ssd-confirm={SERIAL}",
        "-k",
        "after_trim or after_purge",
        suite=INTEGRITY,
        timeout=900,
    )
    assert run.result.ret == 0, run.result.stdout.str()
    checks = {
        d["values"]["check"]: d["values"]
        for d in run.results()["derived"]
        if d["name"] == "qualification"
    }
    assert {c["verdict"] for c in checks.values()} == {"pass"}, checks
    trimmed = " ".join(c["detail"] for name, c in checks.items() if "trim" in name)
    assert "DLFEAT bits 2:0 = 1" in trimmed, checks
    assert "after purge" in checks, checks
    purged = run.run_dir.rglob("nvme-format.cmd")
    assert any(f"nvme format {NS} --ses=" in p.read_text() for p in purged)
