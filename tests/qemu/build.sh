#!/usr/bin/env bash
# Build the TCG guest of the emulated-NVMe tests (tests/qemu_nvme.py); safe to run twice.
#   build.sh DIR     everything goes under DIR:
#     kpkg/                 Debian's generic linux-image (the cloud flavour has no 9p), unpacked
#     vmlinux               the uncompressed kernel for -M microvm
#     initramfs.cpio.gz     busybox + nvme/virtio/9p/ext4/virtio_net modules + /init
# The guest mounts this machine's /usr and /etc read-only over virtio-9p and DIR read-write;
# its /init runs DIR/stage2.sh (written by the tests: network, sshd).  Needs qemu-system-x86,
# busybox-static, xz-utils, cpio and apt (for the kernel package); no Python in the guest.
set -euo pipefail
Q=${1:?usage: build.sh DIR}
mkdir -p "$Q"
if ldd /bin/busybox >/dev/null 2>&1; then  # the initramfs has no libc: a static busybox only
    echo "build: /bin/busybox is not static (apt-get install busybox-static)" >&2
    exit 1
fi

if [ ! -f "$Q/kpkg/.done" ]; then
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
    [ -n "$pkg" ] || { echo "build: apt knows no linux-image-amd64" >&2; exit 1; }
    (cd "$Q" && apt-get download "$pkg" >/dev/null 2>&1) ||
        { apt-get update -qq && (cd "$Q" && apt-get download "$pkg" >/dev/null); }
    rm -rf "$Q/kpkg" && mkdir -p "$Q/kpkg"
    dpkg -x "$Q"/"$pkg"_*.deb "$Q/kpkg"
    rm -f "$Q"/"$pkg"_*.deb
    touch "$Q/kpkg/.done"
fi
KVER=$(ls "$Q/kpkg/lib/modules" | head -1)
depmod -b "$Q/kpkg" "$KVER"

# microvm boots an ELF: the xz stream inside the bzImage, decompressed
if [ ! -s "$Q/vmlinux" ]; then
    Z="$Q/kpkg/boot/vmlinuz-$KVER"
    off=$(grep -abo $'\xfd7zXZ\x00' "$Z" | head -1 | cut -d: -f1)
    tail -c +$((off + 1)) "$Z" | xz -dc >"$Q/vmlinux.tmp" 2>/dev/null || true
    head -c 4 "$Q/vmlinux.tmp" | grep -q ELF || { echo "build: no ELF kernel in $Z" >&2; exit 1; }
    mv "$Q/vmlinux.tmp" "$Q/vmlinux"
fi

R=$Q/initramfs
rm -rf "$R"
mkdir -p "$R"/{bin,proc,sys,dev,mods,newroot}
cp /bin/busybox "$R/bin/busybox"
: >"$R/mods/order"
for m in nvme 9pnet_virtio 9p virtio_pci virtio_mmio virtio_net ext4 loop; do
    modprobe -d "$Q/kpkg" -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
    cp "$ko" "$R/mods/"
    basename "$ko" >>"$R/mods/order"
done
cat >"$R/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m 2>/dev/null; done
N=/newroot
mount -t tmpfs -o size=1G,mode=755 root $N
mkdir -p $N/usr $N/etc $N/proc $N/sys $N/dev $N/run $N/tmp $N/root $N/var/tmp $N/var/lib $N/bb $N/qn
chmod 1777 $N/tmp $N/var/tmp
ln -s usr/bin $N/bin; ln -s usr/lib $N/lib; ln -s usr/lib64 $N/lib64; ln -s usr/sbin $N/sbin
O=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $O,ro,cache=loose usr $N/usr
mount -t 9p -o $O,ro,cache=loose etc $N/etc
mount -t 9p -o $O,cache=mmap qn $N/qn
cp /bin/busybox $N/bb/busybox
mount --move /proc $N/proc
mount --move /sys $N/sys
mount --move /dev $N/dev
exec switch_root $N /bb/busybox sh /qn/stage2.sh
EOF
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 >"$Q/initramfs.cpio.gz")
echo "build: kernel $KVER, $(wc -l <"$R/mods/order") modules"
