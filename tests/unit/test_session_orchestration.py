"""The session's orchestration with fake sites (as pytest-xdist tests its DSession): devices
are files in a temporary folder, each machine a name; no root, no device, no fio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.dut import DutSpec
from pytest_ssd.device.pinned import DeviceChanged, Pinned
from pytest_ssd.errors import ConfigError, SafetyError
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.session import SsdSession
from pytest_ssd.session.choices import Options
from pytest_ssd.session.devices import Devices
from pytest_ssd.site import Sites, Tuning
from tests.unit.session_fakes import FakeSites

MIB = 1 << 20


def _file(folder: Path, name: str, size: int = 64 * MIB) -> Path:
    path = folder / name
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def _spec(path: Path, host: str | None = None) -> DutSpec:
    address = HostAddress(host=host, path=str(path)) if host else None
    return DutSpec(raw=f"ssh://{host}{path}" if host else str(path), path=path, address=address)


def _options(tmp_path: Path, *specs: DutSpec, readonly: bool = False, **more: Any) -> Options:
    confirm = tuple(str(s.path) for s in specs)
    return Options(
        duts=specs,
        confirm=confirm,
        readonly=readonly,
        report_dir=tmp_path / "reports",
        profile=None,
        purge=None,
        **more,
    )


def _devices(options: Options) -> tuple[Devices, FakeSites]:
    sites = FakeSites()
    return Devices(options, sites=sites), sites


def test_one_resolution_for_every_site(tmp_path: Path) -> None:
    here, there = _file(tmp_path, "a.img"), _file(tmp_path, "b.img")
    devices, sites = _devices(_options(tmp_path, _spec(here), _spec(there, "host-b")))
    devices.resolve()
    assert list(devices.duts) == ["a.img", "host-b-b.img"], "in the order given, by host"
    local, host = sites.sites["here"], sites.sites["host-b"]
    steps = ["view a.img", "ahead a.img", "claim a.img"]
    assert local.events == ["lock a.img", *steps], "locked, guarded, claimed"
    assert host.events == ["lock b.img", *(e.replace("a.img", "b.img") for e in steps)], "there"
    b = devices.duts["host-b-b.img"]
    assert b.label.endswith(" on host-b") and b.lock_pid == 4242 and b.pinned is not None
    assert devices.warnings == ["a.img: a fake summary", "host-b-b.img: a fake summary"]
    assert devices.services["host-b-b.img"].machine.where == "ssh root@host-b"


def test_a_sites_devices_are_all_guarded_before_their_claims_go_out_together(
    tmp_path: Path,
) -> None:
    names = ("a.img", "b.img", "c.img")
    specs = [_spec(_file(tmp_path, name), "h") for name in names]
    devices, sites = _devices(_options(tmp_path, *specs))
    devices.resolve()
    events = sites.sites["h"].events
    assert events == [
        *(f"lock {n}" for n in names),
        *(f"view {n}" for n in names),
        *(f"ahead {n}" for n in names),
        *(f"claim {n}" for n in names),
    ], "each claim sent once every device is guarded, then each answer taken in order"


def test_a_device_named_twice_is_refused_on_its_site(tmp_path: Path) -> None:
    same = _file(tmp_path, "a.img")
    devices, sites = _devices(_options(tmp_path, _spec(same, "h"), _spec(same, "h")))
    with pytest.raises(SafetyError, match=r"same device as --dut=ssh://h.*a\.img on h\)"):
        devices.resolve()
    assert sites.sites["h"].events.count("lock a.img") == 1, "the second is never locked"


def test_readonly_locks_and_checks_but_never_claims_or_guards(tmp_path: Path) -> None:
    devices, sites = _devices(_options(tmp_path, _spec(_file(tmp_path, "a.img")), readonly=True))
    devices.resolve()
    assert sites.sites["here"].events == ["lock a.img", "view a.img"], "the same-device check"
    assert devices.duts["a.img"].claimed == frozenset()


def test_a_lock_held_elsewhere_refuses_before_any_claim(tmp_path: Path) -> None:
    devices, sites = _devices(_options(tmp_path, _spec(_file(tmp_path, "a.img"), "h")))
    sites.of(HostAddress("h", "/x")).held.add("a.img")  # type: ignore[attr-defined]
    with pytest.raises(SafetyError, match="locked by another session"):
        devices.resolve()
    assert not any(e.startswith("claim") for e in sites.sites["h"].events)


def test_a_worker_adopts_the_devices_the_controller_resolved(tmp_path: Path) -> None:
    options = _options(
        tmp_path, _spec(_file(tmp_path, "a.img")), _spec(_file(tmp_path, "b.img"), "h")
    )
    controller, _ = _devices(options)
    controller.resolve()
    worker, sites = _devices(options)
    # as the handoff file carries it under -n (pytest_ssd.session.handoff): through JSON
    worker.adopt(json.loads(json.dumps(controller.workerinput())), {})
    for dut_id, dut in controller.duts.items():
        again = worker.duts[dut_id]
        assert (again.path, again.address, again.pinned) == (dut.path, dut.address, dut.pinned)
        assert again.identity == dut.identity, "the controller's identification"
    assert worker.services["h-b.img"].site is sites.sites["h"]
    assert not any(e.startswith(("lock", "claim")) for s in sites.sites.values() for e in s.events)


def test_each_site_lists_its_devices_for_the_host_record(tmp_path: Path) -> None:
    options = _options(
        tmp_path, _spec(_file(tmp_path, "a.img")), _spec(_file(tmp_path, "b.img"), "h")
    )
    devices, _ = _devices(options)
    devices.resolve()
    tuning = devices.tuning()
    assert isinstance(tuning, Tuning) and sorted(tuning.here) == ["h/h-b.img", "here/a.img"]


def test_the_services_guard_checks_the_device_and_its_confirmation(tmp_path: Path) -> None:
    path = _file(tmp_path, "a.img")
    devices, _ = _devices(_options(tmp_path, _spec(path)))
    devices.resolve()
    services = devices.services["a.img"]
    services.guard()  # the same file, confirmed
    services.dut.pinned = Pinned.of(("here file", 0, 0), services.dut.identity)  # another file
    with pytest.raises(DeviceChanged, match=r"a\.img"):
        services.guard()


class _Parts:
    """Stand-ins for the session's parts that record the order they are closed in."""

    def __init__(self, failing: str | None = None) -> None:
        self.closed: list[str] = []
        self.failing = failing

    def step(self, name: str) -> Any:
        def close(*args: object) -> list[str]:
            self.closed.append(name)
            if name == self.failing:
                raise OSError(f"{name} failed")
            return []

        return close


def _session(tmp_path: Path, parts: _Parts, monkeypatch: pytest.MonkeyPatch) -> SsdSession:
    session = SsdSession(_options(tmp_path), "run", tmp_path / "run", worker=False)
    monkeypatch.setattr(session.environment, "restore", parts.step("restore settings"))
    monkeypatch.setattr(session.devices, "close", parts.step("close machines"))
    monkeypatch.setattr(session.devices, "release_scratch", parts.step("release scratch"))
    monkeypatch.setattr(session.mark, "close", parts.step("stop leftovers"))
    return session


ORDER = ["restore settings", "close machines", "release scratch", "stop leftovers"]


def test_close_runs_every_step_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _Parts()
    session = _session(tmp_path, parts, monkeypatch)
    session.close()
    assert parts.closed == ORDER
    session.close()  # twice: each part's close is safe to run again
    assert parts.closed == ORDER * 2


@pytest.mark.parametrize("failing", ["restore settings", "close machines"])
def test_close_runs_every_step_when_one_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    parts = _Parts(failing)
    session = _session(tmp_path, parts, monkeypatch)
    with pytest.raises(OSError, match=f"{failing} failed"):
        session.close()
    assert parts.closed == ORDER, "the steps after the failing one ran all the same"


def _locked_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SsdSession, _Parts]:
    """A session of one device on host h that another session holds locked."""
    parts = _Parts()
    spec = _spec(_file(tmp_path, "a.img"), "h")
    session = SsdSession(_options(tmp_path, spec), "run", tmp_path / "run", worker=False)
    sites = FakeSites()
    sites.of(spec.address).held.add("a.img")  # type: ignore[attr-defined]
    session.devices.sites = sites
    monkeypatch.setattr("pytest_ssd.session.which", lambda *args: "/usr/bin/fio")
    monkeypatch.setattr(session.environment, "recover", parts.step("recover settings"))
    monkeypatch.setattr(session.environment, "restore", parts.step("restore settings"))
    monkeypatch.setattr(session.mark, "open", parts.step("mark"))
    monkeypatch.setattr(session.mark, "close", parts.step("stop leftovers"))
    return session, parts


def test_a_refused_device_closes_the_session_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, parts = _locked_elsewhere(tmp_path, monkeypatch)
    with pytest.raises(SafetyError, match="locked by another session"):
        session.open([])
    assert parts.closed == ["mark", "recover settings", "restore settings", "stop leftovers"]
    assert not (tmp_path / "run").exists(), "a refused run leaves no run folder"


def test_under_workers_the_devices_open_apart_and_a_refusal_leaves_the_closing_to_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-n: :meth:`open_devices` runs in a thread while xdist starts workers; closing there would
    sweep the workers as "left running", so the plugin closes once they have ended."""
    session, parts = _locked_elsewhere(tmp_path, monkeypatch)
    session.prepare()
    assert parts.closed == ["mark", "recover settings"], "marked before any worker starts"
    with pytest.raises(SafetyError, match="locked by another session"):
        session.open_devices()
    assert parts.closed == ["mark", "recover settings"], "not closed from the thread"
    session.close()
    assert parts.closed[2:] == ["restore settings", "stop leftovers"]
    assert not (tmp_path / "run").exists(), "no run folder before start_run"


def test_two_spellings_of_one_host_are_one_machine(tmp_path: Path) -> None:
    """``root@h`` and ``h`` with ``User root`` are one host: looked at once and connected
    as the first ``--dut`` spells it (a refusal names it so, whichever thread is first)."""
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  User root\n")
    sites = Sites()
    sites.machines.config = config
    spelled = HostAddress("127.0.0.1", "/dev/loop0", user="root", port=2222)
    bare = HostAddress("127.0.0.1", "/dev/loop1", port=2222)
    other_port = HostAddress("127.0.0.1", "/dev/loop0", user="root", port=2223)
    assert sites.machine_of(spelled) == sites.machine_of(bare) == "root@127.0.0.1:2222"
    assert sites.machine_of(other_port) != sites.machine_of(spelled)
    assert sites.machine_of(None) is None


def test_a_devices_id_is_what_it_is_whatever_the_order_of_the_options(tmp_path: Path) -> None:
    """Two hosts' devices of one name: each keeps its id when the --dut options swap (a
    numbering by position gave the second 'disk.img-2'); a resumed run's keep theirs."""
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    one = _spec(_file(tmp_path / "1", "disk.img"), "h1")
    two = _spec(_file(tmp_path / "2", "disk.img"), "h2")
    found = []
    for order in ((one, two), (two, one)):
        devices, _ = _devices(_options(tmp_path, *order))
        devices.resolve()
        found.append({dut.address: dut_id for dut_id, dut in devices.duts.items()})
    assert found[0] == found[1] == {one.address: "h1-disk.img", two.address: "h2-disk.img"}
    devices, _ = _devices(_options(tmp_path, two, one))
    devices.recorded = {"h1-disk.img": "disk.img", "h2-disk.img": "disk.img-2"}
    devices.resolve()
    assert devices.ids == ["disk.img-2", "disk.img"], "the run resumed named them so"


def test_two_devices_of_one_id_are_refused(tmp_path: Path) -> None:
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    one, two = _file(tmp_path / "1", "disk.img"), _file(tmp_path / "2", "disk.img")
    devices, _ = _devices(_options(tmp_path, _spec(one), _spec(two)))
    with pytest.raises(ConfigError, match=f"--dut={one} and --dut={two} are both device disk.img"):
        devices.resolve()
