# pytest-ssd's batch agent, where fio runs (pytest_ssd/fio/agent.py says what and why).
# perl -e AGENT SOCKET [MARK]: serve batches on unix socket SOCKET, a forked agent each;
# MARK: print MARK.'ready' once listening.  Input a pipe: the end of it ends the agent.
use strict; use warnings;
use IO::Socket::UNIX; use IO::Select; use POSIX (); use Fcntl;
my ($path, $mark) = @ARGV;
(my $top = $path) =~ s{/[^/]*$}{};
$0 = "pytest-ssd batches $path";
$SIG{PIPE} = 'IGNORE';
unlink $path;
my $listen = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $path, Listen => 16)
  or die "batch agent: $!\n";
if (defined $mark) { $| = 1; print "${mark}ready\n" }

our ($folder, %pid, %status, %gate, %end, $node, @pins, $pinned);

# sched_setscheduler(2) by number (perl-base has no syscall.ph): the fio processes of the
# next points start under SCHED_IDLE and get the normal policy back at their release
my $SETSCHED = {x86_64 => 144, aarch64 => 119}->{(POSIX::uname())[4]};
my $IDLE = defined $SETSCHED && $> == 0;
sub policy { my ($tid, $policy) = @_; my $param = pack('i', 0); syscall($SETSCHED, $tid + 0, $policy, $param) }
sub normal {  # every thread of pid and of every process below it: SCHED_OTHER
  my @todo = ($_[0]);
  while (@todo) {
    my $p = shift @todo;
    for my $task (glob "/proc/$p/task/*") {
      my ($tid) = $task =~ m{(\d+)$} or next;
      policy($tid, 0);
      push @todo, split ' ', (slurp("$task/children") // '');
    }
  }
}

sub tree {  # pid and every process below it, from /proc
  my ($root) = @_; my %kids;
  for my $stat (glob "/proc/[0-9]*/stat") {
    open(my $fh, '<', $stat) or next; my $text = <$fh> // ''; close $fh;
    my ($parent) = $text =~ /\)\s+\S+\s+(\d+)/ or next;
    my ($p) = $stat =~ m{^/proc/(\d+)/stat$} or next;
    push @{$kids{$parent}}, $p;
  }
  my @all = ($root); my @todo = ($root);
  while (@todo) { my $p = shift @todo; for (@{$kids{$p} // []}) { push @all, $_; push @todo, $_ } }
  return @all;
}
sub state { my $stat = slurp("/proc/$_[0]/stat") // return 'gone'; $stat =~ /\)\s+(\S)/ ? $1 : 'gone' }
sub killtree {  # as pytest_ssd.proc.sweep.end: SIGTERM (fio reaps its jobs), SIGKILL when
  my ($k) = @_;  # stopped (continued, it would go on writing) or still there after 5 s
  return if exists $status{$k};
  my (%all, %termed); my $until = time + 5;
  while (1) {
    $all{$_} = 1 for tree($pid{$k});  # also what started meanwhile
    my @alive = grep { state($_) !~ /^(?:Z|X|gone)$/ } keys %all or last;
    my $late = time > $until;
    for (@alive) {
      if ($late || state($_) =~ /^[Tt]$/) { kill 'KILL', $_ }
      elsif (!$termed{$_}++) { kill 'TERM', $_ }
    }
    select(undef, undef, undef, 0.01);
  }
}
sub reap {
  my ($k, $flags) = @_;
  return 1 if exists $status{$k};
  my $r = waitpid($pid{$k}, $flags);
  return 0 unless $r == $pid{$k} || $r == -1;
  $status{$k} = $r == -1 ? -9 : ($? & 127) ? -($? & 127) : $? >> 8;
  return 1;
}
sub cleanup {
  close $_ for values %gate, values %end;
  %gate = (); %end = ();
  for my $k (keys %pid) { killtree($k); reap($k, 0) }
  system('rm', '-rf', '--', $folder) if defined $folder && -d $folder;
}
sub slurp { my ($f) = @_; open(my $fh, '<', $f) or return undef; local $/; my $t = <$fh>; close $fh; $t }
sub facts {  # the node's device number and the pinned identity's sysfs files now
  my @st = stat $node or return "it cannot be read ($!)";
  -b _ or return "it is not a block device";
  my $rdev = $st[6];
  my $major = (($rdev >> 8) & 0xfff) | (($rdev >> 32) & ~0xfff);
  my $minor = ($rdev & 0xff) | (($rdev >> 12) & ~0xff);
  my $n = "/sys/dev/block/$major:$minor";
  my $d = -e "$n/partition" ? "$n/.." : $n;
  my @found = ("$major:$minor");
  for (@pins) {
    (my $file = $_) =~ s{^n/}{$n/}; $file =~ s{^d/}{$d/};
    my $text = slurp($file); chomp $text if defined $text;
    push @found, defined $text ? "'$text'" : "missing";
  }
  return \@found;
}
sub changed {  # what differs from the facts pinned, else undef
  my $now = facts();
  return $now unless ref $now;
  return "it is device number $now->[0] now, device number $pinned->[0] when its batch started"
    if $now->[0] ne $pinned->[0];
  for my $i (1 .. $#$pinned) {
    next if $now->[$i] eq $pinned->[$i];
    return "its $pins[$i - 1] is $now->[$i] now, $pinned->[$i] when its batch started";
  }
  return undef;
}
sub tell_gate {
  my ($n, $word) = @_;
  my $fh = delete $gate{$n} or return "err gate-$n is not held";
  my $ok = syswrite($fh, "$word\n"); close $fh;
  return defined $ok ? "ok" : "ok broken";
}
sub wait_end {  # job n's end FIFO readable within s seconds: it ended
  my ($n, $s, $idle) = @_;
  alarm int($idle + $s + 1) if $idle;
  my $ready = IO::Select->new($end{$n})->can_read($s);
  if ($ready) { close delete $end{$n} }
  return $ready ? 'ok done' : 'ok not';
}
sub readn { my ($c, $len) = @_; my $buf = ''; while (length($buf) < $len) { read($c, $buf, $len - length($buf), length($buf)) or last } $buf }
sub kept {  # the files fio wrote beside its output in folder dir (per-I/O logs)
  my ($dir) = @_;
  opendir(my $dh, $dir) or return ();
  return grep { !/^\./ && !/^fio\.(?:job|stdout|stderr)$/ && !/\n/ && !-l "$dir/$_" && -f _ }
    sort readdir $dh;
}
sub output {  # printed to c: exit code, stdout, stderr, then each file kept (size, name, bytes)
  my ($c, $k, $rel) = @_;
  my $dir = "$folder/$rel";
  my $out = slurp("$dir/fio.stdout") // ''; my $err = slurp("$dir/fio.stderr") // '';
  my @files = kept($dir);
  print $c "ok $status{$k} " . length($out) . " " . length($err) . " " . @files . "\n" . $out . $err;
  for my $name (@files) {
    my $left = -s "$dir/$name" // 0;
    print $c "$left $name\n";
    if (open(my $fh, '<:raw', "$dir/$name")) {
      while ($left > 0) {
        my $got = read($fh, my $buf, $left < 65536 ? $left : 65536) or last;
        print $c $buf; $left -= $got;
      }
      close $fh;
    }
    print $c "\0" x $left if $left > 0;  # it shrank: the answer keeps its length
  }
  return undef;
}
sub serve {
  my ($c) = @_;
  $folder = "$top/b$$";
  $SIG{TERM} = sub { cleanup(); exit 1 };
  mkdir $folder, 0700 or do { print $c "err cannot make $folder: $!\n"; return };
  $c->autoflush(1);
  print $c "ok $folder " . ($IDLE ? 'idle' : 'normal') . "\n";
  my %rel; my $idle = 0;
  local $SIG{ALRM} = sub { cleanup(); exit 3 };  # the controller went silent: dead or cut off
  while (1) {
    alarm $idle;  # reading a request, doing it and answering (a full socket: a stopped reader)
    my $line = <$c>;
    last unless defined $line;
    chomp $line;
    my ($cmd, @a) = split / /, $line;
    my $answer = 'ok';
    if ($cmd eq 'put') {
      my $data = readn($c, $a[1]); my ($sub) = $a[0] =~ m{^(.*)/[^/]*$};
      mkdir "$folder/$sub" if defined $sub;
      open(my $fh, '>', "$folder/$a[0]") or do { $answer = "err cannot write $a[0]: $!" };
      if ($fh) { print $fh $data; close $fh }
    } elsif ($cmd eq 'fifo') {
      POSIX::mkfifo("$folder/$_", 0600) or $answer = "err mkfifo $_: $!" for @a;
    } elsif ($cmd eq 'pin') {
      ($node, my $number, @pins) = @a;
      my $found = facts();
      if (!ref $found) { $answer = "err changed $found" }
      elsif ($found->[0] ne $number) {
        $answer = "err changed it is device number $found->[0] now, device number $number when it was locked";
      }
      else { $pinned = $found }
    } elsif ($cmd eq 'spawn') {
      my ($k, $rel, $idle_start, @argv) = @a; $rel{$k} = $rel;
      my $pid = fork;
      if (defined $pid && $pid == 0) {
        POSIX::setsid(); chdir "$folder/$rel";
        policy(0, 5) if $IDLE && $idle_start;
        open(STDIN, '<', '/dev/null'); open(STDOUT, '>', 'fio.stdout'); open(STDERR, '>', 'fio.stderr');
        { no warnings; exec { $argv[0] } @argv } print STDERR "fio: $argv[0]: $!\n"; POSIX::_exit(127);
      }
      $pid{$k} = $pid; $answer = "ok $pid";
    } elsif ($cmd eq 'hold') {  # gates n...: each held (yes) or its job not there yet (no)
      my @said;
      for my $n (@a) {
        if ($gate{$n}) { push @said, 'yes' }
        elsif (sysopen(my $fh, "$folder/gate-$n", O_WRONLY | O_NONBLOCK)) { $gate{$n} = $fh; push @said, 'yes' }
        elsif ($!{ENXIO}) { push @said, 'no' }
        else { $answer = "err gate-$n: $!"; last }
      }
      $answer = "ok @said" if $answer eq 'ok';
    } elsif ($cmd eq 'tell') {
      $answer = tell_gate(@a);
    } elsif ($cmd eq 'go') {
      my $n = $a[0];
      my $why = $pinned ? changed() : undef;
      if (defined $why) { $answer = "err changed $why" }
      elsif (!sysopen(my $fh, "$folder/done-$n", O_RDONLY | O_NONBLOCK)) { $answer = "err done-$n: $!" }
      else { $end{$n} = $fh; $answer = tell_gate($n, 'go') }
      $answer = wait_end($n, $a[1], $idle) if $answer eq 'ok' && defined $a[1];
    } elsif ($cmd eq 'wait') {
      $answer = wait_end($a[0], $a[1], $idle);
    } elsif ($cmd eq 'alive') {  # processes k...: each running (yes) or ended (no)
      $answer = 'ok ' . join(' ', map { reap($_, POSIX::WNOHANG()) ? 'no' : 'yes' } @a);
    } elsif ($cmd eq 'read') {  # files path...: each one's length (-1: unread), then their bytes
      my @texts = map { slurp($_) } @a;
      print $c 'ok ' . join(' ', map { defined $_ ? length($_) : -1 } @texts) . "\n" . join('', map { $_ // '' } @texts);
      $answer = undef;
    } elsif ($cmd eq 'children') {
      my $p = $pid{$a[0]}; my $kids = slurp("/proc/$p/task/$p/children") // '';
      $answer = $kids =~ /\d/ ? 'ok yes' : 'ok no';
    } elsif ($cmd eq 'end') {
      my ($k, $s) = @a; my $until = time + $s;
      alarm int($idle + $s + 1) if $idle;
      until (reap($k, POSIX::WNOHANG())) { last if time > $until; select(undef, undef, undef, 0.002) }
      $answer = exists $status{$k} ? output($c, $k, $rel{$k}) : 'ok timeout';
    } elsif ($cmd eq 'kill') {
      killtree($a[0]); reap($a[0], 0); $answer = output($c, $a[0], $rel{$a[0]});
    } elsif ($cmd eq 'normal') {
      normal($pid{$a[0]}) if $IDLE;
    } elsif ($cmd eq 'idle') {
      $idle = $a[0];
    } elsif ($cmd eq 'skipall') {
      tell_gate($_, 'skip') for keys %gate;
    } else {
      $answer = "err unknown request $cmd";
    }
    alarm $idle;
    print $c "$answer\n" if defined $answer;  # undef: answered already (output)
  }
  cleanup();
}

$SIG{CHLD} = 'IGNORE';
# a batch's own agent ends with its connection, not with this one
my $waiting = IO::Select->new($listen);
$waiting->add(\*STDIN) if -p STDIN;
while (1) {
  for my $ready ($waiting->can_read) {
    if (fileno($ready) != fileno($listen)) {  # the input: its end ends the agent
      next if sysread(STDIN, my $gone, 4096);
      unlink $path; exit 0;
    }
    my $c = $listen->accept or next;
    my $pid = fork;
    if (defined $pid && $pid == 0) { $SIG{CHLD} = 'DEFAULT'; close $listen; serve($c); exit 0 }
    close $c;
  }
}
