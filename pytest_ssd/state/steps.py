"""Transitions between device states as steps: purge, fio writes, discards, idle, steady state.

:func:`path` finds the cheapest way from the current state to the one a test
needs (fewest bytes written, then fewest steps): ``filled`` -> ``cssd`` skips
the SEQ fill, a device in an unknown state is purged first.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from pytest_ssd.errors import present
from pytest_ssd.fio.job import FioJob, format_bytes
from pytest_ssd.state.layout import layout, used_end
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import StateSpec, Workload

KiB, MiB = 1 << 10, 1 << 20
StepKind = Literal["purge", "fio", "discard", "idle", "steady"]
#: WDPC caps (METHOD §3): at most 23 x capacity written on the way to steady state
STEADY_CAP_FACTOR = 23
#: a purge counts as this many bytes when paths are compared: never free, never decisive alone
PURGE_COST = 1

FOB = StateSpec("fob")


@dataclass(frozen=True)
class Step:
    """One thing done to the device on the way to a state."""

    kind: StepKind
    name: str
    text: str
    jobs: tuple[FioJob, ...] = ()
    write_bytes: int = 0
    discard: tuple[int, int] | None = None  # (offset, size)
    idle_s: float = 0.0
    steady: Workload | None = None
    steady_rule: str = "fio"

    @property
    def discard_bytes(self) -> int:
        return self.discard[1] if self.discard else 0

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.name,
            "text": self.text,
            "write_bytes": self.write_bytes,
            "discard_bytes": self.discard_bytes,
            "idle_s": self.idle_s,
        }


@dataclass(frozen=True)
class Context:
    """What step sizes depend on: the device's capacity and the profile."""

    capacity: int
    profile: Profile
    purge_name: str = "purge"

    @property
    def span(self) -> int:
        return self.profile.span(self.capacity)

    def idle(self, name: str, full_s: float) -> list[Step]:
        seconds = self.profile.seconds(full_s)
        return (
            [Step("idle", f"idle-{name}", f"idle {seconds:g} s ({name})", idle_s=seconds)]
            if seconds > 0
            else []
        )


def _seq_write(name: str, text: str, shape: tuple[int, int], size: int, amount: int) -> Step:
    """SEQ write of *amount* bytes over [0, size) with *shape* = (block size, queue depth)."""
    block_size, iodepth = shape
    job = FioJob(
        name=name,
        pattern="seq",
        block_size=block_size,
        iodepth=iodepth,
        read_pct=0,
        size=size,
        io_bytes=amount,
        percentiles=(),
    )
    return Step("fio", name, text, jobs=(job,), write_bytes=amount)


#: purges the kernel counts as a discard of the whole device (blkdiscard, a punched hole)
DISCARDING_PURGES = ("discard", "punch-hole")


def purge_steps(ctx: Context) -> list[Step]:
    # the plan says what the kernel's counters will say: a discard purge discards it all
    whole = (0, ctx.capacity) if ctx.purge_name in DISCARDING_PURGES else None
    return [
        Step("purge", "purge", f"purge ({ctx.purge_name})", discard=whole),
        *ctx.idle("after-purge", ctx.profile.idle.after_purge_s),
    ]


def seq_fill_200(ctx: Context) -> list[Step]:
    span = ctx.span
    text = f"SEQ 128 KiB QD32 write of 200 % of {format_bytes(span)}"
    return [
        _seq_write("cssd-seq", text, (128 * KiB, 32), span, 2 * span),
        *ctx.idle("between-steps", ctx.profile.idle.between_steps_s),
    ]


def rnd_and_trim(ctx: Context) -> list[Step]:
    cssd = layout(StateSpec("cssd"), ctx.capacity, ctx.span)
    rnd, trimmed = cssd.region("rnd"), cssd.region("trimmed")
    job = FioJob.on(
        rnd,
        name="cssd-rnd",
        pattern="rnd",
        block_size=4 * KiB,
        iodepth=32,
        read_pct=0,
        percentiles=(),
    )
    between = ctx.profile.idle.between_steps_s
    return [
        Step(
            "fio",
            "cssd-rnd",
            f"RND 4 KiB QD32 write over the RND region {rnd.describe()}",
            jobs=(job,),
            write_bytes=rnd.size,
        ),
        *ctx.idle("between-steps", between),
        Step(
            "discard",
            "cssd-trim",
            f"discard the last 25 %: {trimmed.describe()}",
            discard=(trimmed.offset, trimmed.size),
        ),
        *ctx.idle("between-steps", between),
    ]


def fill_passes(ctx: Context) -> list[Step]:
    """Fill drive (METHOD §4.2): SEQ 128 KiB QD256, 100 % twice with a rest between."""
    span = ctx.span
    passes = [
        _seq_write(
            f"fill-{n}",
            f"fill pass {n}: SEQ 128 KiB QD256 write of 100 % ({format_bytes(span)})",
            (128 * KiB, 256),
            span,
            span,
        )
        for n in (1, 2)
    ]
    return [passes[0], *ctx.idle("fill-gap", ctx.profile.idle.fill_gap_s), passes[1]]


def used75(ctx: Context) -> list[Step]:
    end = used_end(ctx.span)
    text = f"SEQ 1 MiB QD8 write of the first 75 % ({format_bytes(end)})"
    return [_seq_write("used75", text, (MiB, 8), end, end)]


def wipc(ctx: Context) -> list[Step]:
    span = ctx.span
    text = f"WIPC: SEQ 128 KiB QD256 write of 2 x {format_bytes(span)}"
    return [_seq_write("wipc", text, (128 * KiB, 256), span, 2 * span)]


def steady(ctx: Context, target: StateSpec) -> list[Step]:
    workload = present(target.workload, "the steady state's workload")
    held = ctx.profile.ss_duration
    rule = (
        "SNIA rounds (5-round window, 20 % range, 10 % slope, <= 25 rounds)"
        if target.rule == "snia"
        else f"fio bw_slope 10 % held {held:g} s"
    )
    cap = STEADY_CAP_FACTOR * ctx.span
    text = f"{workload} until steady state: {rule}; at most {format_bytes(cap)}"
    name = f"ss-{workload}"
    return [Step("steady", name, text, steady=workload, steady_rule=target.rule)]


def precondition_workload(ctx: Context, workload: Workload) -> list[Step]:
    """Workload-dependent preconditioning: the workload itself over 2 x the span."""
    span = ctx.span
    job = workload.job(
        f"wdpc-{workload}".replace("_", "-"), size=span, io_bytes=2 * span, percentiles=()
    )
    text = f"{workload} write of 2 x {format_bytes(span)}"
    return [Step("fio", job.name, text, jobs=(job,), write_bytes=2 * span)]


Edge = Callable[[Context, StateSpec], list[Step]]


def _edges(source: StateSpec | None, target: StateSpec) -> Iterator[tuple[StateSpec, Edge]]:
    """Direct transitions out of *source* (None: unknown) that can lead to *target*."""
    yield FOB, lambda ctx, _: purge_steps(ctx)
    if source is None:
        return
    name = source.name
    if name == "fob":
        yield StateSpec("cssd"), lambda ctx, _: seq_fill_200(ctx) + rnd_and_trim(ctx)
        yield StateSpec("filled"), lambda ctx, _: fill_passes(ctx)
        yield StateSpec("used75"), lambda ctx, _: used75(ctx)
        yield StateSpec("wipc"), lambda ctx, _: wipc(ctx)
    if name == "filled":
        yield StateSpec("cssd"), lambda ctx, _: rnd_and_trim(ctx)
    if name == "cssd":
        yield StateSpec("used75"), lambda ctx, _: used75(ctx)
    if target.name == "ss" and name in ("wipc", "ss") and source != target:
        yield target, steady if name == "wipc" else _retarget


def _retarget(ctx: Context, target: StateSpec) -> list[Step]:
    """From one steady state to another: the new workload over 2 x span, then to steady state."""
    workload = present(target.workload, "the steady state's workload")
    return precondition_workload(ctx, workload) + steady(ctx, target)


@dataclass(order=True)
class _Node:
    cost: tuple[int, int]
    order: int
    state: StateSpec | None = field(compare=False)
    steps: list[Step] = field(compare=False)


def path(current: StateSpec | None, target: StateSpec, ctx: Context) -> list[Step]:
    """The cheapest steps from *current* (None: unknown or broken) to *target*.

    Cost: bytes written (a purge counts :data:`PURGE_COST`), then number of steps.
    """
    if current == target:
        return []
    queue = [_Node((0, 0), 0, current, [])]
    seen: set[str] = set()
    counter = 0
    while queue:
        node = heapq.heappop(queue)
        key = str(node.state)
        if node.state == target:
            return node.steps
        if key in seen:
            continue
        seen.add(key)
        for state, edge in _edges(node.state, target):
            steps = edge(ctx, target)
            cost = sum(s.write_bytes + (PURGE_COST if s.kind == "purge" else 0) for s in steps)
            counter += 1
            total = (node.cost[0] + cost, node.cost[1] + len(steps))
            heapq.heappush(queue, _Node(total, counter, state, node.steps + steps))
    raise AssertionError(f"no path from {current} to {target}")  # every state is reachable
