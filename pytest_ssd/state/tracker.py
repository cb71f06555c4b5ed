"""The state one device is in, and what the tests' writes do to it.

Writes that stay inside a region tolerating their pattern (SEQ writes in the
cSSD SEQ region, RND writes in the RND region) keep the state but make that
region no longer pristine; any other write leaves the device in an unknown
state that the next test needing a state re-establishes.  Reads change nothing.
A job is accounted before fio runs it, whatever the test's outcome: a failed
test (a datasheet line not met, say) leaves a state as known as a passed one,
since what it wrote is already counted (a cut-short write wrote less, inside
the same span).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_ssd.fio.job import FioJob
from pytest_ssd.state.layout import Layout, layout
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import StateSpec


@dataclass(frozen=True)
class Need:
    """What a test declared: the state, whether it must be pristine, the state it leaves."""

    state: StateSpec
    pristine: bool = False
    leaves: StateSpec | None = None
    #: suites that walk the states twice (csd: measure, purge, fill, measure again) number them
    phase: int = 1


@dataclass
class DeviceState:
    """The current state of one device in this process (a device is pinned to one worker)."""

    capacity: int
    profile: Profile
    current: StateSpec | None = None
    layout: Layout | None = None
    dirty: set[str] = field(default_factory=set)
    #: why the state was last lost (shown when it is re-established)
    lost: str = "unknown at start"

    def layout_of(self, state: StateSpec) -> Layout:
        """The regions *state* lays out on this device."""
        return layout(state, self.capacity, self.profile.span(self.capacity))

    def establish(self, state: StateSpec) -> Layout:
        """The device is now in *state*, every region pristine."""
        self.current = state
        self.layout = self.layout_of(state)
        self.dirty.clear()
        self.lost = ""
        return self.layout

    def forget(self, why: str) -> None:
        self.current, self.layout, self.lost = None, None, why
        self.dirty.clear()

    def satisfies(self, need: Need) -> bool:
        return self.current == need.state and not (need.pristine and self.dirty)

    def observe(self, job: FioJob, test: str) -> None:
        """Account a job that ran on the device: writes outside their regions break the state."""
        if not job.writes or self.layout is None:
            return
        offset = job.offset
        size = job.size if job.size is not None else self.capacity - offset
        touched = [r for r in self.layout.regions if r.overlaps(offset, size)]
        if all(r.allows(job.pattern) for r in touched) and touched:
            self.dirty.update(r.name for r in touched)
            return
        wrong = ", ".join(r.name for r in touched if not r.allows(job.pattern)) or "outside"
        self.forget(
            f"{test} wrote {job.pattern.upper()} {job.name} to [{offset}, {offset + size}), "
            f"touching {wrong} of {self.current}"
        )

    def after_test(self, need: Need | None, test: str, passed: bool) -> None:
        """A test that declares ``leaves=`` sets the state when it passes.

        Any other outcome changes nothing here: every job was accounted by :meth:`observe`.
        """
        if need is not None and need.leaves is not None:
            if passed:
                self.establish(need.leaves)
            else:
                self.forget(f"{test} should have left {need.leaves} but did not pass")
