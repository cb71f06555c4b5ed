"""What udev and the kernel's device events say of block devices, on any machine.

:mod:`.info` identifies a block device as udev does (WWN, serial, model, its
``/dev/disk/by-id`` links, its parent controller): on this machine through pyudev,
on a test host from ``udevadm info`` over the machine's commands.  :mod:`.events`
watches the kernel's block-device events during a session (pyudev's netlink
monitor here, ``udevadm monitor --kernel`` on a test host:
:mod:`pytest_ssd.machine.uevents`) so that a device under test that drops off the
bus or changes size is named at that moment.  :mod:`.namespaces` finds the other
namespaces of an NVMe device's controller and what was written to them.
"""
