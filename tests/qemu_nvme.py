"""A test host with a real NVMe controller: a QEMU guest (TCG) with one emulated namespace.

:func:`nvme_guest` boots a tiny guest (``tests/qemu/build.sh``: Debian's kernel,
a busybox initramfs) whose ``/usr`` and ``/etc`` are this machine's, shared
read-only over virtio-9p, so it has fio, nvme-cli, util-linux and OpenSSH
without an image to maintain.  The guest runs only sshd (no Python: it is about
12 times slower there); QEMU forwards a free port of 127.0.0.1 to it, and the
tests reach it as any test host: ``--dut=ssh://root@127.0.0.1:PORT/dev/nvme0n1``.
The namespace (``-device nvme,serial=QNVME0001``) is a sparse file of the test's;
*namespaces* adds more namespaces to the same controller (``-device nvme-ns``,
nsid 2, 3, ...: ``/dev/nvme0n2`` ...), each its own sparse file and logical block
size (:class:`Namespace`: a 4 KiB-sector one), nsid 1 staying ``/dev/nvme0n1`` of
512-byte sectors.

The guest is built once per machine under ``$SSD_QEMU_DIR`` (default
``/var/tmp/pytest-ssd-qemu``).  Where QEMU or the kernel package cannot be had,
the tests are skipped with the reason; a guest that does not boot fails them.
Only ever 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.own import untagged_env
from tests.sshd import Sshd, free_port, keygen, ssh_config

QEMU = "qemu-system-x86_64"
BUILD = Path(__file__).with_name("qemu") / "build.sh"
SERIAL = "QNVME0001"
BUILD_TIMEOUT_S = 900.0
#: the guest under TCG boots in 3-7 s; sshd's first login takes a few more
BOOT_TIMEOUT_S = 180.0
APPEND = "console=ttyS0 tsc_early_khz=2600000 reboot=t panic=-1 quiet loglevel=4"

STAGE2 = """\
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mkdir -p /dev/pts /dev/shm /run/sshd /run/lock
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
/usr/sbin/sshd -e -f /qn/sshd_config -E /qn/sshd.log
echo "stage2: sshd started" >/dev/console
while :; do sleep 3600; done
"""

SSHD_CONFIG = """\
Port 22
HostKey /qn/host_key
AuthorizedKeysFile /qn/authorized_keys
PidFile /run/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 64
MaxStartups 64
"""


@dataclass(frozen=True)
class Namespace:
    """A namespace added to the guest's controller: its size and logical (= physical) block."""

    size_mib: int
    block_size: int = 512


def namespace_image(folder: Path, nsid: int) -> Path:
    """The sparse file behind namespace *nsid* of the guest booted in *folder*."""
    return folder / ("nvme.img" if nsid == 1 else f"nvme-n{nsid}.img")


def _namespaces(image: Path, added: Sequence[Namespace], log: Path | None) -> list[str]:
    """The controller and its namespaces: nsid 1 on *image* (its writes logged to *log*),
    then each of *added*."""
    drive = _drive(image, log)
    if not added:  # the controller's own namespace, as the guest always had
        return [*drive, "-device", f"nvme,serial={SERIAL},drive=nv0"]
    argv = [*drive, "-device", f"nvme,id=nvme0,serial={SERIAL}"]
    argv += ["-device", "nvme-ns,drive=nv0,nsid=1"]
    for nsid, ns in enumerate(added, start=2):
        path = namespace_image(image.parent, nsid)
        sizes = f"logical_block_size={ns.block_size},physical_block_size={ns.block_size}"
        argv += ["-drive", f"file={path},if=none,id=nv{nsid},format=raw,discard=unmap"]
        argv += ["-device", f"nvme-ns,drive=nv{nsid},nsid={nsid},{sizes}"]
    return argv


def qemu_dir() -> Path:
    return Path(os.environ.get("SSD_QEMU_DIR", "/var/tmp/pytest-ssd-qemu"))


def build() -> Path:
    """The guest's kernel and initramfs (built once); skip the test when they cannot be had."""
    if shutil.which(QEMU) is None:
        pytest.skip(f"no {QEMU} here (apt-get install qemu-system-x86 busybox-static kmod cpio)")
    for tool in ("busybox", "depmod", "cpio", "xz", "apt-get"):
        if shutil.which(tool) is None:
            pytest.skip(f"building the NVMe guest needs {tool} (see tests/qemu/build.sh)")
    folder = qemu_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:  # xdist workers build it one at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            ["bash", str(BUILD), str(folder)],
            check=False,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the NVMe guest could not be built: {said}")
    return folder


def _argv(
    built: Path,
    share: Path,
    image: Path,
    port: int,
    console: Path,
    *,
    namespaces: Sequence[Namespace] = (),
    log: Path | None = None,
) -> list[str]:
    def fs(tag: str, path: Path, readonly: bool) -> list[str]:
        ro = ",readonly=on" if readonly else ""
        return [
            "-fsdev",
            f"local,id=f_{tag},path={path},security_model=passthrough{ro}",
            "-device",
            f"virtio-9p-device,fsdev=f_{tag},mount_tag={tag}",
        ]

    return [
        QEMU,
        *("-M", "microvm,pcie=on,acpi=on,rtc=on", "-accel", "tcg", "-cpu", "max"),
        *("-smp", "2", "-m", "1G", "-display", "none", "-monitor", "none"),
        *("-no-reboot", "-nodefaults", "-serial", f"file:{console}"),
        *("-kernel", str(built / "vmlinux"), "-initrd", str(built / "initramfs.cpio.gz")),
        *("-append", APPEND),
        *fs("usr", Path("/usr"), True),
        *fs("etc", Path("/etc"), True),
        *fs("qn", share, False),
        *("-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22"),
        *("-device", "virtio-net-device,netdev=n0"),
        *_namespaces(image, namespaces, log),
    ]


def _drive(image: Path, log: Path | None) -> list[str]:
    if log is None:
        return ["-drive", f"file={image},if=none,id=nv0,format=raw,discard=unmap"]
    # every write and flush logged (blklogwrites: dm-log-writes' format), QEMU's pid beside
    logged = f"driver=blklogwrites,file.filename={image},log.filename={log}"
    return [
        "-pidfile",
        str(log.with_suffix(".pid")),
        "-drive",
        f"{logged},if=none,id=nv0,discard=unmap",
    ]


def _logged_in(config: Path, port: int) -> bool:
    argv = ["ssh", "-F", str(config), "-p", str(port), "-o", "BatchMode=yes"]
    argv += ["-o", "ConnectTimeout=5", "root@127.0.0.1", "true"]
    done = subprocess.run(argv, check=False, capture_output=True, timeout=60)
    return done.returncode == 0


@contextlib.contextmanager
def nvme_guest(
    folder: Path,
    size_mib: int = 1024,
    *,
    namespaces: Sequence[Namespace] = (),
    log_writes: Path | None = None,
) -> Iterator[Sshd]:
    """Boot the guest with a namespace of *size_mib* (and the *namespaces* after it, nsid 2
    on); its sshd as a test host while it runs.

    With *log_writes*, QEMU logs namespace 1's writes and flushes there (its pid in the file
    beside it, ``.pid``: ``pytest_ssd.methods.powerloss.qemu`` cuts its power)."""
    built = build()
    share = folder / "share"
    share.mkdir(parents=True)
    share.chmod(0o700)
    host_pub = keygen(share / "host_key")
    (share / "authorized_keys").write_text(keygen(folder / "client_key") + "\n")
    (share / "stage2.sh").write_text(STAGE2)
    (share / "sshd_config").write_text(SSHD_CONFIG)
    image = namespace_image(folder, 1)
    sizes = {1: size_mib, **{n: ns.size_mib for n, ns in enumerate(namespaces, start=2)}}
    for nsid, mib in sizes.items():
        with namespace_image(folder, nsid).open("wb") as fh:
            fh.truncate(mib << 20)
    if log_writes is not None:
        log_writes.write_bytes(b"")  # a new log (blklogwrites opens it, never creates it)
    port = free_port()
    config = ssh_config(folder, port, host_pub)
    console = folder / "console.log"
    guest = subprocess.Popen(
        _argv(built, share, image, port, console, namespaces=namespaces, log=log_writes),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(folder / "qemu.stderr").open("wb"),
        start_new_session=True,
        env=untagged_env(),  # it outlives the test that started it: not that test's
    )
    try:
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while not _logged_in(config, port):
            if guest.poll() is not None or time.monotonic() > deadline:
                tail = console.read_text(errors="replace")[-2000:] if console.exists() else ""
                pytest.fail(f"the NVMe guest did not come up (qemu rc {guest.poll()}):\n{tail}")
            time.sleep(1)
        yield Sshd(port, config, folder)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(guest.pid, signal.SIGTERM)
        try:
            guest.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(guest.pid, signal.SIGKILL)
            guest.wait()
