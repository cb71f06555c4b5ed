"""The test order and the plan: which states a run walks through, and what that costs.

Tests are ordered by the state they need, in the method's order, so a suite
purges and preconditions as few times as possible; tests that need no state
come first; the devices' tests of one state take turns.  The plan is printed
before the first test (and by ``--collect-only``, which touches no device).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from pytest_ssd.device.identity import binary_size
from pytest_ssd.errors import ConfigError
from pytest_ssd.state.estimate import Estimate
from pytest_ssd.state.spec import StateSpec, parse_state
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import Context, Step, path
from pytest_ssd.state.testtimes import Measured
from pytest_ssd.state.tracker import Need

MARKER = "dut_state"
MARKER_HELP = (
    "dut_state(STATE, pristine=False, leaves=None, phase=1): the device state the test needs "
    "(fob, cssd, filled, used75, wipc, ss(WORKLOAD)); pristine: no writes since it was "
    "reached; leaves: the state the test leaves the device in when it passes; phase: tests "
    "run phase by phase, each phase in the method's order of states"
)
WRITES_MARKER = "ssd_writes"
#: where a state the device is in before its first test came from (the plan's words)
AT_START = "the device's state at the start"


def need_of(item: pytest.Item) -> Need | None:
    """The item's ``dut_state`` marker as a Need; ConfigError naming the test when malformed."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    try:
        return _parse(marker)
    except ConfigError as exc:
        raise ConfigError(f"{item.nodeid}: @pytest.mark.{MARKER}: {exc}") from None


def _parse(marker: pytest.Mark) -> Need:
    if len(marker.args) != 1 or not isinstance(marker.args[0], str):
        raise ConfigError("give exactly one state name, e.g. dut_state('cssd')")
    unknown = set(marker.kwargs) - {"pristine", "leaves", "phase"}
    if unknown:
        raise ConfigError(f"unknown argument(s) {', '.join(sorted(unknown))}")
    phase = marker.kwargs.get("phase", 1)
    if not isinstance(phase, int) or isinstance(phase, bool) or phase < 1:
        raise ConfigError(f"phase must be a whole number from 1, not {phase!r}")
    leaves = marker.kwargs.get("leaves")
    return Need(
        parse_state(marker.args[0]),
        pristine=bool(marker.kwargs.get("pristine", False)),
        leaves=parse_state(leaves) if leaves is not None else None,
        phase=phase,
    )


def _key(item: pytest.Item) -> tuple[int, int, str, int, int]:
    need = need_of(item)
    if need is None:
        return (0, -1, "", 0, 0)
    rank, name = need.state.rank
    return (need.phase, rank, name, int(need.leaves is not None), 0 if need.pristine else 1)


def order(items: list[pytest.Item]) -> None:
    """Sort *items* in place by the state they need, the devices' tests of a state in turn.

    Within a state, the n-th test of each device runs before the (n+1)-th of any (A B A B:
    two drives, or two builds on two drives, meet the host's drift alike); collection order
    otherwise (the sort is stable)."""
    turns: dict[tuple[object, ...], int] = {}
    keys = {}
    for item in items:
        state = _key(item)
        turn = (*state, device_of(item))
        keys[id(item)] = (state, turns.get(turn, 0))
        turns[turn] = turns.get(turn, 0) + 1
    items.sort(key=lambda item: keys[id(item)])


@dataclass
class Stage:
    """One state of the plan: the steps that reach it and the tests run in it."""

    state: str
    steps: list[Step]
    tests: list[str] = field(default_factory=list)
    source: str = ""


def simulate(items: Sequence[pytest.Item], initial: StateSpec | None, ctx: Context) -> list[Stage]:
    """The stages a device goes through for *items* (already ordered, one device)."""
    current, dirty = initial, False
    stages: list[Stage] = []
    for item in items:
        need = need_of(item)
        if need is None:
            continue
        if current != need.state or (need.pristine and dirty):
            source = current if current != need.state else None
            steps = path(source, need.state, ctx)
            origin = "unknown" if source is None else str(source)
            stages.append(Stage(str(need.state), steps, source=origin))
            current, dirty = need.state, False
        elif not stages:
            stages.append(Stage(str(need.state), [], source=AT_START))
        stages[-1].tests.append(item.nodeid)
        if need.leaves is not None:
            current, dirty = need.leaves, False
            stages.append(Stage(str(current), [], source=f"left by {item.name}"))
        elif item.get_closest_marker(WRITES_MARKER) is not None:
            dirty = True
    return stages


def render(
    device: str,
    header: str,
    stages: Sequence[Stage],
    speeds: SpeedBook,
    speed_key: str,
    *,
    measured: Measured | None = None,
) -> list[str]:
    """The plan of one device as terminal lines (*measured*: the tests' own time, as timed)."""
    lines = [f"plan for {device}: {header}"]
    purges = preconditions = written = discarded = 0
    steps = Estimate()
    for stage in stages:
        if not stage.steps:
            lines.append(
                f"  {stage.state:<10} already there ({stage.source})"
                f"{'':>4}{len(stage.tests)} test(s)"
            )
            continue
        estimate = sum((speeds.estimate(speed_key, step) for step in stage.steps), Estimate())
        stage_written = sum(s.write_bytes for s in stage.steps)
        stage_discarded = sum(s.discard_bytes for s in stage.steps)
        purges += sum(1 for s in stage.steps if s.kind == "purge")
        preconditions += int(any(s.kind in ("fio", "discard", "steady") for s in stage.steps))
        written, discarded, steps = (
            written + stage_written,
            discarded + stage_discarded,
            steps + estimate,
        )
        lines.append(f"  {stage.state:<10} from {stage.source}: {len(stage.tests)} test(s)")
        lines += [f"      - {step.text}" for step in stage.steps]
        lines.append(
            f"      writes {binary_size(stage_written)}, discards {binary_size(stage_discarded)},"
            f" {estimate.describe()}"
        )
    lines += [
        f"  total: {purges} purge(s), {preconditions} preconditioning(s), "
        f"{binary_size(written)} written, {binary_size(discarded)} discarded",
        f"  steps: {steps.describe()} (steady state not estimated)",
    ]
    if measured is not None:
        lines += _measurements(measured, steps)
    return lines


def render_stateless(device: str, header: str, measured: Measured) -> list[str]:
    """The plan of a device whose tests ask for no state (no step): their time alone."""
    lines = [f"plan for {device}: {header}", f"  {measured.tests} test(s), no device state asked"]
    return lines + _measurements(measured, Estimate())[:1]


def _measurements(measured: Measured, steps: Estimate) -> list[str]:
    """The tests' time (as timed in earlier runs, else from their fio jobs) and the run's total."""
    if not measured.timed and not measured.from_jobs:
        return [
            f"  measurements: {measured.tests} test(s) not timed on this device yet"
            " (the next plan says how long they take)"
        ]
    sources = [
        (measured.timed, "as timed in earlier runs"),
        (measured.from_jobs, "from their fio jobs"),
    ]
    said = [(n, words) for n, words in sources if n]
    basis = said[0][1] if len(said) == 1 else ", ".join(f"{n} {words}" for n, words in said)
    unknown = measured.unknown
    more = f"; {unknown} not timed yet and declaring no jobs" if unknown else ""
    tests = Estimate(measured.seconds) + measured.jobs
    return [
        f"  measurements: {tests.describe()} for {measured.timed + measured.from_jobs} of"
        f" {measured.tests} test(s) ({basis}{more})",
        f"  in all: {(steps + tests).describe()}"
        + (" and the tests not estimated" if unknown else ""),
    ]


def check(items: Sequence[pytest.Item]) -> None:
    """Every ``dut_state`` marker parses and sits on a test that uses the ``ssd`` fixture."""
    for item in items:
        if need_of(item) is not None and "ssd" not in getattr(item, "fixturenames", ()):
            raise ConfigError(
                f"{item.nodeid}: @pytest.mark.{MARKER} needs the test to use the 'ssd' fixture,"
                " which brings the device to that state"
            )


def device_of(item: pytest.Item) -> str | None:
    """The device id a test is parametrized with, or None."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("dut") if callspec is not None else None
