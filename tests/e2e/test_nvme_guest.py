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
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device import guard
from pytest_ssd.device.remote import SshView
from pytest_ssd.machine.ssh import Ssh
from tests.e2e.conftest import cssd_suite
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
    return guard.refusal(guard.inspect(NS, view=SshView.snapshot(ssh, NS, write=True)))


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
        facts = guard.inspect(NS, view=SshView.snapshot(shell, NS, write=True))
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
