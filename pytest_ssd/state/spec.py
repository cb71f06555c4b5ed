"""Device states as names: ``fob``, ``cssd``, ``filled``, ``used75``, ``wipc``, ``ss(WORKLOAD)``.

A test declares the state it needs with ``@pytest.mark.dut_state("cssd")``;
this module parses those names and the workload of a steady state, e.g.
``ss(rnd-4k-write-qd32)`` or ``ss(seq-128k-write-qd256, snia)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob, Pattern, format_bytes

#: the method's order (METHOD §1, seed 000): a suite walks the states in this order
STATE_ORDER = ("fob", "filled", "cssd", "used75", "wipc", "ss")
SteadyRule = Literal["fio", "snia"]

_SS = re.compile(r"^ss\(\s*([^,()\s]+)\s*(?:,\s*(fio|snia)\s*)?\)$")
_WORKLOAD = re.compile(
    r"^(?P<pattern>seq|rnd)-(?P<bs>\d+)(?P<unit>[km]?)-(?P<dir>read|write|\d{1,2}r)"
    r"(?:-qd(?P<qd>\d+))?(?:-t(?P<jobs>\d+))?$"
)
_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20}
KNOWN = "fob, cssd, filled, used75, wipc, ss(WORKLOAD) such as ss(rnd-4k-write-qd32)"


@dataclass(frozen=True)
class Workload:
    """The workload a steady state is reached with: 'rnd-4k-write-qd32'."""

    pattern: Pattern
    block_size: int
    read_pct: int
    iodepth: int = 32
    numjobs: int = 1

    def __str__(self) -> str:
        direction = {0: "write", 100: "read"}.get(self.read_pct, f"{self.read_pct}r")
        bs = format_bytes(self.block_size).removesuffix("iB").lower()
        jobs = f"-t{self.numjobs}" if self.numjobs > 1 else ""
        return f"{self.pattern}-{bs}-{direction}-qd{self.iodepth}{jobs}"

    def job(self, name: str, **kwargs: object) -> FioJob:
        """This workload as a fio job; *kwargs* set region, duration and the rest."""
        return FioJob(
            name=name,
            pattern=self.pattern,
            block_size=self.block_size,
            iodepth=self.iodepth,
            numjobs=self.numjobs,
            read_pct=self.read_pct,
            **kwargs,  # type: ignore[arg-type]
        )


def parse_workload(text: str) -> Workload:
    """'rnd-4k-write-qd32' -> Workload; ConfigError naming the grammar otherwise."""
    match = _WORKLOAD.match(text.strip().lower())
    if not match:
        raise ConfigError(
            f"workload {text!r}: write it as PATTERN-BS-DIRECTION[-qdN][-tN], "
            "e.g. rnd-4k-write-qd32, seq-128k-write-qd256, rnd-4k-70r-qd1"
        )
    direction = match["dir"]
    read_pct = {"read": 100, "write": 0}.get(direction)
    if read_pct is None:
        read_pct = int(direction[:-1])
    block_size = int(match["bs"]) * _UNIT[match["unit"]]
    if block_size <= 0 or block_size % 512:
        raise ConfigError(f"workload {text!r}: block size must be a multiple of 512 B")
    return Workload(
        pattern="seq" if match["pattern"] == "seq" else "rnd",
        block_size=block_size,
        read_pct=read_pct,
        iodepth=int(match["qd"] or 32),
        numjobs=int(match["jobs"] or 1),
    )


@dataclass(frozen=True)
class StateSpec:
    """A device state: its name and, for a steady state, the workload and the rule."""

    name: str
    workload: Workload | None = None
    rule: SteadyRule = "fio"

    def __str__(self) -> str:
        if self.name != "ss":
            return self.name
        rule = ", snia" if self.rule == "snia" else ""
        return f"ss({self.workload}{rule})"

    @property
    def rank(self) -> tuple[int, str]:
        """Sort key in the method's order."""
        return STATE_ORDER.index(self.name), str(self)


def parse_state(text: str) -> StateSpec:
    """'cssd' or 'ss(rnd-4k-write-qd32, snia)' -> StateSpec; ConfigError for anything else."""
    clean = text.strip()
    if clean in STATE_ORDER and clean != "ss":
        return StateSpec(clean)
    match = _SS.match(clean)
    if match:
        rule: SteadyRule = "snia" if match[2] == "snia" else "fio"
        return StateSpec("ss", parse_workload(match[1]), rule)
    raise ConfigError(f"unknown device state {text!r}: use one of {KNOWN}")
