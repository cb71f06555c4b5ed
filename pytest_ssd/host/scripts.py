"""The shell scripts that keep --ssd-tune's lock and journal on a machine (:mod:`.tune`).

Each runs there as ``sh -c SCRIPT sh FOLDER``: *FOLDER* is the journal's folder (the
tests' own), or empty for the machine's private state folder's ``tune``
(``$PYTEST_SSD_STATE_DIR``, else ``/var/lib/pytest-ssd`` for root, else
``$XDG_STATE_HOME/pytest-ssd``: :mod:`pytest_ssd.statedir`'s rules, checked the same way).
"""

from __future__ import annotations

from pytest_ssd.machine.flock import CONFLICT, hold_script
from pytest_ssd.machine.ssh import MARK

RESTORE_FILE = "restore.json"
LOCK_FILE = "tune.lock"
TIMEOUT_S = 60.0
#: the machine's tune folder ``$d`` (``$1`` if given: the tests' own) made and checked:
#: the state folder and it, real folders of the user, private
PRIVATE = """
refuse() {
  echo "refusing pytest-ssd's state folder $1: it $2; make it a private folder (chmod 700)" \\
    "or remove it" >&2
  exit 3
}
check() {
  (umask 077; mkdir -p "$1") || exit 3
  [ -d "$1" ] && [ ! -L "$1" ] || refuse "$1" "is not a folder (a symlink or a file)"
  set -- "$1" $(stat -c '%u %a' "$1")
  [ "$2" = "$(id -u)" ] || refuse "$1" "is owned by uid $2, not by uid $(id -u)"
  case $3 in
    *[2367]?|*[2367]) refuse "$1" "is writable by others (mode $(printf %04d "$3"))" ;;
  esac
}
d=$1
if [ -z "$d" ]; then
  b=${PYTEST_SSD_STATE_DIR:-}
  if [ -z "$b" ]; then
    b=/var/lib/pytest-ssd
    [ "$(id -u)" = 0 ] || b="${XDG_STATE_HOME:-$HOME/.local/state}/pytest-ssd"
  fi
  check "$b"
  d="$b/tune"
fi
check "$d"
"""
#: the journal ``$d/restore.json``, if there is one, after a ``journal`` mark: a regular
#: file of the user, private (nobody else may read it either); else why it is refused
#: (sh text with no single quote: the lock's holder runs it)
JOURNAL = f"""
f="$d/{RESTORE_FILE}"
if [ -e "$f" ] || [ -L "$f" ]; then
  if [ ! -f "$f" ] || [ -L "$f" ]; then echo "{MARK}refused $f is not a file"
  else
    set -- $(stat -c "%u %a" "$f")
    if [ "$1" != "$(id -u)" ]; then echo "{MARK}refused $f is owned by uid $1"
    else
      case $2 in
        *[1-7]?|*[1-7]) echo "{MARK}refused $f is not private (mode $2): check and delete it" ;;
        *) echo "{MARK}journal"; cat -- "$f"; echo; echo "{MARK}end" ;;
      esac
    fi
  fi
fi
"""
#: ``sh -c HOLD sh FOLDER``: the lock (a private file), its holder's pid and start time
#: there, and the journal read under it; when a live session holds it, each holder
#: ``/proc/locks`` names, with its command
HOLD = f"""{PRIVATE}
umask 077
echo "{MARK}dir $d"
if ! flock -n -o "$d/{LOCK_FILE}" true; then
  i=$(stat -c %i "$d/{LOCK_FILE}")
  while read -r n kind advisory mode pid file rest; do
    [ "$kind" = FLOCK ] && [ "${{file##*:}}" = "$i" ] || continue
    echo "{MARK}holder $pid $(tr '\\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
  done < /proc/locks
  exit {CONFLICT}
fi
export d
{hold_script(f'"$d/{LOCK_FILE}"', then=JOURNAL)}"""
#: ``sh -c READ sh FOLDER``: the journal (who holds the lock, when /proc/locks did not say)
READ = PRIVATE + JOURNAL
#: ``sh -c WRITE sh FOLDER`` with the journal on its input: durable before it counts
WRITE = f"""{PRIVATE}
t="$d/.{RESTORE_FILE}.$$.tmp"
(umask 077; cat > "$t") && sync && mv -f "$t" "$d/{RESTORE_FILE}" && sync
"""
DROP = f'{PRIVATE}\nrm -f "$d/{RESTORE_FILE}"'
