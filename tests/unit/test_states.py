"""Device states: names, regions, the cheapest path, what writes do, and the plan."""

from __future__ import annotations

import argparse

import pytest

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.state.layout import layout, rnd_region_size
from pytest_ssd.state.profile import QUICK_SPAN_CAP, Profile, idle_option, profile_for
from pytest_ssd.state.spec import StateSpec, Workload, parse_state
from pytest_ssd.state.steps import Context, path
from pytest_ssd.state.tracker import DeviceState, Need

MiB, GiB = 1 << 20, 1 << 30
FULL, QUICK = Profile("full"), Profile("quick")


def names(steps: list) -> list[str]:  # type: ignore[type-arg]
    return [s.name for s in steps if s.kind != "idle"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cssd", StateSpec("cssd")),
        (" fob ", StateSpec("fob")),
        ("ss(rnd-4k-write-qd32)", StateSpec("ss", Workload("rnd", 4096, 0, 32))),
        (
            "ss(seq-128k-write-qd256, snia)",
            StateSpec("ss", Workload("seq", 131072, 0, 256), "snia"),
        ),
        ("ss(rnd-4k-70r-qd1-t4)", StateSpec("ss", Workload("rnd", 4096, 70, 1, 4))),
    ],
)
def test_state_names_parse(text: str, expected: StateSpec) -> None:
    assert parse_state(text) == expected
    assert parse_state(str(expected)) == expected, "str() round-trips"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("warm", "unknown device state 'warm'"),
        ("ss", "unknown device state"),
        ("ss(rnd-4k-sideways)", "PATTERN-BS-DIRECTION"),
        ("ss(rnd-3-write)", "multiple of 512"),
    ],
)
def test_bad_state_names_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_state(text)


def test_cssd_regions_follow_the_method_on_a_large_device() -> None:
    cssd = layout(StateSpec("cssd"), 1000 * GiB, 1000 * GiB)
    rnd, seq, trimmed = (cssd.region(n) for n in ("rnd", "seq", "trimmed"))
    assert (rnd.offset, rnd.size) == (0, 8 * GiB)
    assert (seq.offset, seq.end) == (8 * GiB, 750 * GiB)
    assert (trimmed.offset, trimmed.end) == (750 * GiB, 1000 * GiB)
    assert cssd.notes == (), "8 GiB fits: nothing scaled"
    assert (rnd.tolerates, seq.tolerates, trimmed.tolerates) == ("rnd", "seq", "none")


def test_small_device_scales_the_rnd_region_and_says_so() -> None:
    size, note = rnd_region_size(2 * GiB)
    assert size == 256 * MiB
    assert note is not None and "1/8 of 2GiB" in note
    assert rnd_region_size(64 * GiB) == (8 * GiB, None)


def test_quick_profile_confines_states_to_its_span() -> None:
    capacity = 4000 * GiB
    cssd = layout(StateSpec("cssd"), capacity, QUICK.span(capacity))
    assert cssd.span == QUICK_SPAN_CAP
    assert cssd.region("unused").offset == QUICK_SPAN_CAP
    assert any("quick profile" in n for n in cssd.notes)
    assert QUICK.seconds(900) == 3.0 and QUICK.seconds(60) == 1.0 and FULL.seconds(900) == 900


def test_paths_take_the_fewest_bytes() -> None:
    ctx = Context(2 * GiB, QUICK)
    cssd, filled, wipc = parse_state("cssd"), parse_state("filled"), parse_state("wipc")
    assert names(path(None, cssd, ctx)) == ["purge", "cssd-seq", "cssd-rnd", "cssd-trim"]
    assert names(path(filled, cssd, ctx)) == ["cssd-rnd", "cssd-trim"], "filled skips the SEQ fill"
    assert names(path(cssd, parse_state("used75"), ctx)) == ["used75"]
    assert names(path(cssd, wipc, ctx)) == ["purge", "wipc"]
    assert path(cssd, cssd, ctx) == []
    ss = parse_state("ss(rnd-4k-write-qd32)")
    assert names(path(None, ss, ctx)) == ["purge", "wipc", "ss-rnd-4k-write-qd32"]
    other = parse_state("ss(seq-128k-write-qd256)")
    assert names(path(other, ss, ctx)) == ["wdpc-rnd-4k-write-qd32", "ss-rnd-4k-write-qd32"]


def test_cssd_steps_write_what_the_method_says() -> None:
    steps = path(parse_state("fob"), parse_state("cssd"), Context(2 * GiB, FULL))
    written = sum(s.write_bytes for s in steps)
    assert written == 2 * 2 * GiB + 256 * MiB
    (trim,) = [s for s in steps if s.kind == "discard"]
    assert trim.discard == (1536 * MiB, 512 * MiB)
    idle = [s.idle_s for s in steps if s.kind == "idle"]
    assert idle == [300.0, 300.0, 300.0], "full profile: the method's idle periods"


def _tracker(state: str = "cssd") -> DeviceState:
    tracker = DeviceState(2 * GiB, QUICK)
    tracker.establish(parse_state(state))
    return tracker


@pytest.mark.parametrize(
    ("method", "discarded"), [("discard", 2 * GiB), ("punch-hole", 2 * GiB), ("format-ses1", 0)]
)
def test_the_plan_counts_a_discard_purge_as_discarding_the_device(
    method: str, discarded: int
) -> None:
    # the plan once said "purge (discard) ... discards 0 B" and the purge discarded 2.0 GiB
    steps = path(None, parse_state("fob"), Context(2 * GiB, QUICK, method))
    purge = next(s for s in steps if s.kind == "purge")
    assert purge.discard_bytes == discarded
    assert purge.text == f"purge ({method})"


def test_writes_inside_their_region_keep_the_state_but_not_pristine() -> None:
    tracker = _tracker()
    rnd = tracker.layout.region("rnd")  # type: ignore[union-attr]
    tracker.observe(FioJob("r", "rnd", 4096, offset=0, size=rnd.size), "t1")  # a read
    assert tracker.satisfies(Need(parse_state("cssd"), pristine=True))
    tracker.observe(FioJob("w", "rnd", 4096, read_pct=0, offset=0, size=rnd.size), "t2")
    assert tracker.satisfies(Need(parse_state("cssd")))
    assert not tracker.satisfies(Need(parse_state("cssd"), pristine=True))
    assert tracker.dirty == {"rnd"}


@pytest.mark.parametrize(
    ("pattern", "offset", "size", "touched"),
    [
        ("seq", 0, 4 * MiB, "rnd"),  # SEQ write into the RND region
        ("seq", 1536 * MiB, MiB, "trimmed"),  # a write into the trimmed quarter
        ("rnd", 1000 * MiB, 1000 * MiB, "trimmed"),
    ],  # crosses into the trimmed quarter
)
def test_writes_outside_their_region_break_the_state(
    pattern: str, offset: int, size: int, touched: str
) -> None:
    tracker = _tracker()
    job = FioJob("w", pattern, 4096, read_pct=0, offset=offset, size=size)  # type: ignore[arg-type]
    tracker.observe(job, "suite::t")
    assert tracker.current is None
    assert "suite::t" in tracker.lost and touched in tracker.lost


def test_a_test_that_leaves_a_state_sets_it_only_when_it_passes() -> None:
    need = Need(parse_state("fob"), leaves=parse_state("filled"))
    tracker = _tracker("fob")
    tracker.after_test(need, "fill", passed=True)
    assert tracker.current == parse_state("filled")
    tracker.after_test(need, "fill", passed=False)
    assert tracker.current is None and "did not pass" in tracker.lost
    plain = _tracker("cssd")
    plain.after_test(Need(parse_state("cssd")), "t", passed=False)
    assert plain.current == parse_state("cssd"), "a failed read changes nothing"


def test_a_failed_test_whose_writes_were_accounted_keeps_the_state() -> None:
    # a datasheet line not met is a normal result: re-preconditioning after it cost a
    # 960 GB drive hours (plan: 0 purges, 2 preconditionings; actual: 4 and 5)
    tracker = _tracker("cssd")
    assert tracker.layout is not None
    seq = tracker.layout.region("seq")
    job = FioJob("w", "seq", 128 << 10, read_pct=0, offset=seq.offset, size=seq.size, runtime_s=1)
    tracker.observe(job, "t")
    tracker.after_test(Need(parse_state("cssd")), "t", passed=False)
    assert tracker.current == parse_state("cssd") and tracker.dirty == {"seq"}


def test_idle_periods_are_parameters_scaled_by_the_profile() -> None:
    option = idle_option("after-purge=60")
    assert option == ("after_purge_s", 60.0)
    assert profile_for(None, scratch=False, idle=(option,)).idle.after_purge_s == 60
    assert profile_for(None, scratch=True).name == "quick"
    assert profile_for(None, scratch=False).name == "full"
    steps = path(None, parse_state("fob"), Context(GiB, profile_for("full", False, (option,))))
    assert [s.idle_s for s in steps if s.kind == "idle"] == [60.0]
    for bad in ("after-purge", "nap=3", "fill-gap=-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="NAME=SECONDS"):
            idle_option(bad)


def test_phases_walk_the_states_twice_in_the_method_order(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("pytest_ssd_suite = True")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.dut_state("cssd", phase=2)
        def test_cssd_again(ssd): pass

        @pytest.mark.dut_state("fob", pristine=True, leaves="filled", phase=2)
        def test_fill(ssd): pass

        @pytest.mark.dut_state("cssd")
        def test_cssd(ssd): pass

        @pytest.mark.dut_state("fob")
        def test_fob(ssd): pass
        """
    )
    result = pytester.runpytest("--collect-only", "-q", "--dut=scratch:1G")
    order = [line.split("::")[1].split("[")[0] for line in result.outlines if "::" in line]
    assert order == ["test_fob", "test_cssd", "test_fill", "test_cssd_again"]
    out = result.stdout.str()
    assert "fob        from cssd" in out, "phase 2 purges back to fob"
    assert "cssd       from filled" in out, "and skips the SEQ fill after the fill drive"
