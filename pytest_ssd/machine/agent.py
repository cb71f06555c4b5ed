"""A host's agent: what lasts the session, on forwarded sockets instead of session channels.

sshd's ``MaxSessions`` counts the session channels of one connection, and a
held command (a process's fio server, a gate) lasts the session: sixteen xdist
workers holding one each would pass sshd's default of 10.  Forwarded sockets
are channels sshd does not count (``sshd_config(5)``: ``MaxSessions 0`` still
permits forwarding; only ``session`` channels are counted).  So the owner of a
host's master connection runs one agent there, on one held channel: a small
``perl`` program listening on a unix socket in a fresh ``0700`` folder of the
host.  :meth:`~.ssh.Ssh.stream` reaches it with ``ssh -W SOCKET`` over the
master (a ``direct-streamlocal`` channel, no login, no session): the first line
it sends names a command (its argv, NUL-separated, in hex), the agent forks
and runs it with the connection as its input and output.  The command reads
its input to learn when to end, as a held one does: its process here closing
it, dying, or the connection lost all end it.  When the agent's own channel
closes (the session's end, ``kill -9``, a lost connection) it removes its
socket and exits; the commands it started end with their own connections.
"""

from __future__ import annotations

from pathlib import Path

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.ssh import MARK, Held, Ssh

#: :data:`AGENT`'s exit code on a host without perl (streams then take session channels)
NO_PERL = 4
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0

#: ``perl -e PERL DIR``: listen on DIR/agent.sock; one command per connection
PERL = f"""
use Socket;
$| = 1;
my $dir = $ARGV[0];
my $path = "$dir/agent.sock";
socket(my $srv, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
bind($srv, pack_sockaddr_un($path)) or die "bind $path: $!";
listen($srv, 128) or die "listen: $!";
$SIG{{CHLD}} = 'IGNORE';
my $mark = '{MARK}';
print "${{mark}}socket $path\\n${{mark}}ready\\n";
my $all = '';
vec($all, fileno(STDIN), 1) = 1;
vec($all, fileno($srv), 1) = 1;
while (1) {{
  my $n = select(my $ready = $all, undef, undef, undef);
  next if $n <= 0;
  if (vec($ready, fileno(STDIN), 1)) {{ last unless sysread(STDIN, my $gone, 4096); }}
  next unless vec($ready, fileno($srv), 1);
  accept(my $conn, $srv) or next;
  my $pid = fork();
  if (defined $pid && $pid == 0) {{
    close $srv;
    $SIG{{CHLD}} = 'DEFAULT';
    my $asked = <$conn>;
    exit 2 unless defined $asked;
    chomp $asked;
    my @argv = split /\\0/, pack("H*", $asked);
    exit 2 unless @argv;
    open(STDIN, "<&", $conn); open(STDOUT, ">&", $conn); open(STDERR, ">&", $conn);
    close $conn;
    exec {{ $argv[0] }} @argv;
    print "cannot run $argv[0]: $!\\n";
    exit 127;
  }}
  close $conn;
}}
unlink $path;
rmdir $dir;
"""

#: ``sh -c AGENT sh PERL``
AGENT = f"""
command -v perl >/dev/null 2>&1 || {{ echo "{MARK}noperl"; exit {NO_PERL}; }}
dir=$(mktemp -d /tmp/ssd-agent.XXXXXX) || exit 1
exec perl -e "$1" "$dir"
"""


def start(ssh: Ssh, artifacts: Path) -> tuple[Held, str] | None:
    """Run the agent on *ssh*'s host: its held channel and its socket there (None: no perl).

    Raises :class:`~pytest_ssd.errors.DeviceError` in one line when it did not start.
    """
    held = ssh.hold(
        ["sh", "-c", AGENT, "sh", PERL],
        artifacts=artifacts,
        name="agent",
        ready="ready",
        timeout=START_TIMEOUT_S,
    )
    if isinstance(held, Held):
        return held, held.marks["socket"]
    if held.returncode == NO_PERL:
        return None
    raise DeviceError(f"{ssh.where}: its agent did not start: {held.last_error_line()}")
