"""The machine a device is on: this one, or a test host reached over SSH.

:mod:`.fs` is what the safety guard and identification read (sysfs, procfs,
device nodes), on this machine (:class:`~.fs.LocalFs`) or on a test host
(:class:`~.remote.RemoteFs`, one SSH round trip per look); :mod:`.ssh` is the
OpenSSH connection (``BatchMode``, one multiplexed connection per host).
"""
