"""The machine a device is on, when it is a test host reached over SSH.

:mod:`.address` parses ``--dut=ssh://[user@]host[:port]/dev/...``; :mod:`.ssh` is
the OpenSSH connection to the host (``BatchMode``, one master connection per host
that this process owns, every command multiplexed over it).
"""
