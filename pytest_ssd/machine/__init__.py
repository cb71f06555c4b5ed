"""The machine a device is on, when it is a test host reached over SSH.

:mod:`.address` parses ``--dut=ssh://[user@]host[:port]/dev/...``; :mod:`.ssh` is
the OpenSSH connection to the host (``BatchMode``, one master connection per host
that the controller owns, every command of every process multiplexed over it);
:mod:`.slots` the channel budget all processes of the session share there;
:mod:`.agent` the host's agent, which runs what lasts on forwarded sockets.
"""
