"""fio jobs as typed data, rendered to a job file.

A :class:`FioJob` says *what* to measure (pattern, block size, queue depth,
read share, region, duration or amount); :func:`render` turns a list of them
into one job file, serialised with ``stonewall`` so that several measurements
share one fio start-up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.results import DEFAULT_PERCENTILES

Pattern = Literal["seq", "rnd"]

#: how to get fio where it is missing
FIO_INSTALL_HINT = "install it with 'apt-get install fio' (Debian/Ubuntu) or 'dnf install fio'"
#: fio accepts at most 20 entries in percentile_list
MAX_PERCENTILES = 20
#: the deepest queue a job may ask for: io_uring's IORING_MAX_ENTRIES (32768), the
#: smallest limit of the engines used (fio 3.33's iodepth has no maximum of its own and
#: crashed on 1e9: a double free)
MAX_IODEPTH = 32768
#: fio 3.33's REAL_MAX_JOBS (os/os.h): jobs of one fio process, numjobs clones included
MAX_NUMJOBS = 4096
#: the largest block a job may ask for (fio allocates iodepth x bs of buffers)
MAX_BLOCK_SIZE = 128 << 20
#: the longest a job may run: a week (the method's longest steady-state caps are a day)
MAX_RUNTIME_S = 7 * 24 * 3600.0


#: what a path given to fio may hold: fio cuts option values at ';' and '#', expands '$VAR'
#: and strips surrounding blanks, so anything else is refused rather than escaped
_FIO_PATH = re.compile(r"^[\w/.+,=@~:-](?:[\w /.+,=@~:-]*[\w/.+,=@~:-])?$")

#: an option a job adds (``ioengine``, ``extra``): a fio option name, and a value without
#: anything fio would cut, expand or read as a new line (a newline starts a new option)
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_OPTION_VALUE = re.compile(r"^[\w.:%,+/=@-]*$")


def _unsafe_options(options: Sequence[tuple[str, str]]) -> list[str]:
    """The problem with options fio would cut, expand or read as another option (or none)."""
    unsafe = [
        f"{k}={v}" for k, v in options if not (_OPTION_NAME.match(k) and _OPTION_VALUE.match(v))
    ]
    if not unsafe:
        return []
    return [
        f"option(s) {', '.join(map(repr, unsafe))} hold what fio would cut, expand or read as"
        " another option (allowed: letters, digits and . : % , + / = @ - _)"
    ]


def fio_path(path: str, *, filename: bool = True) -> str:
    """*path* as a fio option value; in ``filename=`` (*filename*), ``:`` escaped as ``\\:``.

    fio splits ``filename=`` into several files at ``:``; other path options (logs) keep it.

    Raises :class:`ConfigError` for a path fio would read as something else.
    """
    if not _FIO_PATH.match(path):
        bad = sorted({c for c in path if not _FIO_PATH.match(c) and c != " "})
        shown = " ".join(repr(c) for c in bad) or "blanks at its ends"
        raise ConfigError(
            f"fio cannot be given the path {path!r} safely: it holds {shown} (fio cuts option"
            " values at ';' and '#', expands '$' and strips blanks); rename it"
        )
    return path.replace(":", "\\:") if filename else path


def format_bytes(n: int) -> str:
    """Binary size for names and labels: 4096 -> '4KiB', 131072 -> '128KiB'."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def fio_seconds(seconds: float) -> str:
    """A duration as fio reads it: whole seconds plain ('3'), else milliseconds ('300ms').

    fio does not take fractions: ``runtime=0.3`` is read as no limit at all.
    """
    if seconds == int(seconds):
        return str(int(seconds))
    return f"{round(seconds * 1000)}ms"


class Span(Protocol):
    """A byte range of the target: a :class:`~pytest_ssd.state.layout.Region`."""

    @property
    def offset(self) -> int: ...

    @property
    def size(self) -> int: ...


@dataclass(frozen=True)
class FioJob:
    """One fio job: a workload on a region of the target.

    Duration is either time (``runtime_s`` after ``ramp_s``) or an amount of
    I/O (``io_bytes``); with neither, fio does one pass over the region.
    """

    name: str
    pattern: Pattern
    block_size: int
    iodepth: int = 1
    numjobs: int = 1
    read_pct: int = 100
    offset: int = 0
    size: int | None = None
    runtime_s: float | None = None
    ramp_s: float = 0.0
    io_bytes: int | None = None
    ioengine: str = "libaio"
    direct: bool = True
    fsync: int = 0
    log_avg_ms: int | None = None
    #: a completion-latency log line per I/O (time, clat, direction, size): the bytes done
    #: by any time, exactly; only the clat log is written (fio's slat and lat are off)
    io_log: bool = False
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    #: the job's own random stream (offsets, read/write mix): the same whatever the job's place
    #: in its fio process (see :func:`fio_seed`); None: fio's default, which depends on it
    seed: int | None = None
    extra: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def on(cls, region: Span, **fields: Any) -> FioJob:
        """A job over *region*: ``FioJob.on(ssd.region("rnd"), name=..., pattern="rnd", ...)``."""
        return cls(offset=region.offset, size=region.size, **fields)

    def __post_init__(self) -> None:
        problems = []
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            problems.append(f"name {self.name!r} must be letters, digits, '-' or '_'")
        if self.block_size <= 0 or self.block_size % 512 or self.block_size > MAX_BLOCK_SIZE:
            problems.append(
                f"block size {self.block_size} is not a positive multiple of 512 up to"
                f" {MAX_BLOCK_SIZE >> 20} MiB"
            )
        if not 1 <= self.iodepth <= MAX_IODEPTH or not 1 <= self.numjobs <= MAX_NUMJOBS:
            problems.append(
                f"iodepth {self.iodepth} and numjobs {self.numjobs} must lie within"
                f" 1..{MAX_IODEPTH} and 1..{MAX_NUMJOBS} (fio's and its engines' limits)"
            )
        times = [t for t in (self.runtime_s, self.ramp_s) if t is not None]
        if not all(math.isfinite(t) and t <= MAX_RUNTIME_S for t in times):
            problems.append(f"runtime and ramp time must be finite, at most {MAX_RUNTIME_S:g} s")
        amounts = [n for n in (self.size, self.io_bytes) if n is not None]
        if any(n <= 0 for n in amounts) or self.offset < 0:
            problems.append("size and io_bytes must be positive and the offset not negative")
        if not 0 <= self.read_pct <= 100:
            problems.append(f"read share {self.read_pct} % is not within 0..100")
        if (self.runtime_s is not None and self.runtime_s < 0.001) or self.ramp_s < 0:
            problems.append("runtime must be at least 1 ms and ramp time not negative")
        if self.seed is not None and not (0 <= self.seed < SEED_LIMIT and self.numjobs == 1):
            problems.append(
                f"a seed is 0 .. 2**48 - 1 and for one job (numjobs=1), not {self.seed}"
            )
        if self.runtime_s is not None and self.io_bytes is not None:
            problems.append("give runtime_s or io_bytes, not both")
        if self.io_log and self.log_avg_ms:
            problems.append("a per-I/O log (io_log) is not averaged: drop log_avg_ms")
        problems += _unsafe_options((("ioengine", self.ioengine), *self.extra))
        if len(self.percentiles) > MAX_PERCENTILES:
            problems.append(f"fio takes at most {MAX_PERCENTILES} percentiles")
        if problems:
            raise ConfigError(f"fio job {self.name!r}: " + "; ".join(problems))

    @property
    def writes(self) -> bool:
        """Whether the job writes to the target (the safety guard cares)."""
        return self.read_pct < 100

    @property
    def rw(self) -> str:
        prefix = "rand" if self.pattern == "rnd" else ""
        if self.read_pct == 100:
            return f"{prefix}read"
        if self.read_pct == 0:
            return f"{prefix}write"
        return f"{prefix}rw"

    @property
    def planned_seconds(self) -> float:
        """Seconds the job is asked to run (0 when it runs by amount)."""
        return self.runtime_s + self.ramp_s if self.runtime_s is not None else 0.0

    @property
    def label(self) -> str:
        """Short human label: 'RND 4KiB Q32T1 read'."""
        direction = {100: "read", 0: "write"}.get(self.read_pct, f"{self.read_pct}% read")
        bs = format_bytes(self.block_size)
        return f"{self.pattern.upper()} {bs} Q{self.iodepth}T{self.numjobs} {direction}"

    def options(self) -> list[tuple[str, str]]:
        """The job's fio options, in job-file order."""
        opts: list[tuple[str, str]] = [
            ("rw", self.rw),
            ("bs", str(self.block_size)),
            ("iodepth", str(self.iodepth)),
            ("numjobs", str(self.numjobs)),
            ("ioengine", self.ioengine),
            ("direct", "1" if self.direct else "0"),
            ("offset", str(self.offset)),
        ]
        if self.numjobs > 1:
            opts.append(("group_reporting", "1"))
        if 0 < self.read_pct < 100:
            opts.append(("rwmixread", str(self.read_pct)))
        if self.size is not None:
            opts.append(("size", str(self.size)))
        if self.runtime_s is not None:
            opts += [("time_based", "1"), ("runtime", fio_seconds(self.runtime_s))]
        if self.ramp_s:
            opts.append(("ramp_time", fio_seconds(self.ramp_s)))
        if self.io_bytes is not None:
            opts.append(("io_size", str(self.io_bytes)))
        if self.fsync:
            opts.append(("fsync", str(self.fsync)))
        if self.percentiles:
            opts.append(("percentile_list", ":".join(f"{p:g}" for p in self.percentiles)))
        opts.extend(self.extra)
        return opts

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["rw"] = self.rw
        data["label"] = self.label
        data["percentiles"] = list(self.percentiles)
        data["extra"] = dict(self.extra)
        return data


#: a job's seed is below 2**48: fio gets it times 2**16, room for a thread number's factors of 2
SEED_LIMIT = 1 << 48
_SEED_SHIFT = 16
_U64 = 1 << 64


def fio_seed(seed: int, thread: int) -> int:
    """The ``randseed`` that gives the job numbered *thread* in its fio process the random
    stream a lone fio run of it gets with ``randseed = seed * 2**16``.

    fio 3.33 seeds a job's generators with ``randseed * thread_number`` (init.c
    ``setup_random_seeds``; with the default ``randrepeat=1`` the offsets even ignore
    randseed: ``FIO_RANDSEED * thread_number``).  So the same job would read other
    LBAs as the 2nd job of a process than alone, and every point of a sweep run
    one fio process each would hit the same LBAs.  With ``randrepeat=0`` and this
    seed, ``fio_seed * thread`` = ``seed * 2**16`` (mod 2**64) wherever the job runs.
    Returned as fio parses it: a signed 64-bit number.
    """
    target = seed << _SEED_SHIFT
    twos = (thread & -thread).bit_length() - 1  # thread = 2**twos * odd
    if twos > _SEED_SHIFT:
        raise ConfigError(f"fio job number {thread}: too many jobs in one fio process")
    odd = thread >> twos
    modulus = _U64 >> twos
    value = ((target >> twos) * pow(odd, -1, modulus)) % modulus
    # fio parses randseed as a signed 64-bit number and keeps its bits: 2**63 and above
    # are written as the negative number with the same bits
    return value - _U64 if value >= _U64 >> 1 else value


def render(jobs: Sequence[FioJob], filename: str, log_prefix: str | None = None) -> str:
    """Render *jobs* as one fio job file on *filename*; jobs after the first wait (stonewall).

    With ``log_prefix``, jobs that ask for logs write ``<prefix>-<job>_bw.N.log``
    and ``_lat`` logs averaged over ``log_avg_ms``, or (``io_log``) one
    ``<prefix>-<job>_clat.N.log`` line per I/O.
    """
    if not jobs:
        raise ConfigError("no fio job to render")
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ConfigError(f"fio job names repeat: {', '.join(names)}")
    lines = ["[global]", f"filename={fio_path(filename)}", ""]
    for index, job in enumerate(jobs):
        lines.append(f"[{job.name}]")
        if index:
            lines.append("stonewall")
        lines += [f"{key}={value}" for key, value in job.options()]
        if job.seed is not None:
            thread = 1 + sum(other.numjobs for other in jobs[:index])
            lines += ["randrepeat=0", f"randseed={fio_seed(job.seed, thread)}"]
        if log_prefix is not None and job.log_avg_ms:
            stem = fio_path(f"{log_prefix}-{job.name}", filename=False)
            lines += [
                f"write_bw_log={stem}",
                f"write_lat_log={stem}",
                f"log_avg_msec={job.log_avg_ms}",
            ]
        elif log_prefix is not None and job.io_log:
            stem = fio_path(f"{log_prefix}-{job.name}", filename=False)
            lines += [f"write_lat_log={stem}", "disable_slat=1", "disable_lat=1"]
        lines.append("")
    return "\n".join(lines)
