"""Where a state puts things on the device: regions with the writes they tolerate.

cSSD (METHOD §1): RND region = [0, R) with R = 8 GiB or 1/8 of the span,
whichever is smaller; SEQ region = [R, 75 %); trimmed = [75 %, 100 %).
SEQ tests touch only the SEQ region, RND tests only the RND region.  A write
that stays in a region tolerating its pattern keeps the state (it is what the
method's measurements do); any other write breaks it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from pytest_ssd.errors import present
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.state.spec import StateSpec

MiB, GiB = 1 << 20, 1 << 30
RND_REGION_MAX = 8 * GiB
RND_REGION_FRACTION = 8
USED_FRACTION = 0.75
#: region boundaries are whole MiB: aligned for every LBA size and erase unit seen
ALIGN = MiB
Tolerates = Literal["seq", "rnd", "any", "none"]


@dataclass(frozen=True)
class Region:
    """A byte range of the device and the writes that keep the state intact there."""

    name: str
    offset: int
    size: int
    tolerates: Tolerates

    @property
    def end(self) -> int:
        return self.offset + self.size

    def head(self, size: int) -> Region:
        """The first *size* bytes of the region (all of it when it is smaller)."""
        return replace(self, size=min(size, self.size))

    def contains(self, offset: int, size: int) -> bool:
        return self.offset <= offset and offset + size <= self.end

    def overlaps(self, offset: int, size: int) -> bool:
        return offset < self.end and self.offset < offset + size

    def allows(self, pattern: str) -> bool:
        return self.tolerates in ("any", pattern)

    def describe(self) -> str:
        return (
            f"{self.name} [{format_bytes(self.offset)}, {format_bytes(self.end)}) "
            f"{format_bytes(self.size)}"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "offset": self.offset,
            "size": self.size,
            "tolerates": self.tolerates,
        }


@dataclass(frozen=True)
class Layout:
    """The regions of one state on one device (on the profile's span)."""

    state: StateSpec
    capacity: int
    span: int
    regions: tuple[Region, ...]
    notes: tuple[str, ...] = ()

    def region(self, name: str) -> Region:
        for region in self.regions:
            if region.name == name:
                return region
        known = ", ".join(r.name for r in self.regions)
        raise KeyError(f"state {self.state} has no region {name!r} (it has {known})")

    def as_dict(self) -> dict[str, object]:
        regions = [r.as_dict() for r in self.regions]
        return {
            "state": str(self.state),
            "capacity": self.capacity,
            "span": self.span,
            "regions": regions,
            "notes": list(self.notes),
        }


def _down(n: int) -> int:
    return n // ALIGN * ALIGN


def rnd_region_size(span: int) -> tuple[int, str | None]:
    """R = min(8 GiB, span / 8), whole MiB; the note says when it was scaled."""
    scaled = _down(span // RND_REGION_FRACTION)
    if scaled >= RND_REGION_MAX:
        return RND_REGION_MAX, None
    note = (
        f"RND region scaled to {format_bytes(scaled)} (8 GiB or 1/8 of "
        f"{format_bytes(_down(span))}, whichever is smaller)"
    )
    return scaled, note


def used_end(span: int) -> int:
    """The end of the used 75 %, whole MiB."""
    return _down(int(span * USED_FRACTION))


def layout(state: StateSpec, capacity: int, span: int) -> Layout:
    """The regions of *state* on a device of *capacity* bytes using its first *span* bytes."""
    notes: list[str] = []
    if span < capacity:
        notes.append(
            f"states use the first {format_bytes(_down(span))} of "
            f"{format_bytes(_down(capacity))} (quick profile)"
        )
    tail = [Region("unused", span, capacity - span, "none")] if span < capacity else []
    used = used_end(span)
    if state.name == "cssd":
        rnd, note = rnd_region_size(span)
        notes += [note] if note else []
        regions = [
            Region("rnd", 0, rnd, "rnd"),
            Region("seq", rnd, used - rnd, "seq"),
            Region("trimmed", used, span - used, "none"),
        ]
    elif state.name == "used75":
        regions = [Region("used", 0, used, "any"), Region("free", used, span - used, "none")]
    elif state.name == "ss":
        pattern = present(state.workload, "the steady state's workload").pattern
        regions = [Region("device", 0, span, pattern)]
    elif state.name == "wipc":
        regions = [Region("device", 0, span, "seq")]
    else:  # fob, filled
        regions = [Region("device", 0, span, "any")]
    return Layout(state, capacity, span, (*regions, *tail), tuple(notes))
