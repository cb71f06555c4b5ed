"""examples/lab-ci.yml run as written: every job's lines, in stage order, by bash.

The pipeline's YAML is read as GitLab reads it for what the jobs run: ``extends:``
(hashes merged, the rest replaced), the global and the job's ``variables:`` (each
value's ``$NAME`` expanded, as GitLab does), ``rules: - if: $NAME``; each job's
``before_script`` and ``script`` in one bash (``set -eo pipefail``, GitLab's shell
executor), its ``after_script`` in another, in a folder of its own (its checkout:
the repository's files linked, ``run`` copied so that it runs there). What a lab sets
in its project's variables the test sets: the drives are loop devices behind a local
sshd (tests/sshd.py; a loop device has no serial: SERIAL is its path, which is what
confirms it), the database a role with a password on a local PostgreSQL
(tests/pgserver.py; the password in PGPASSWORD), suites/smoke on the quick profile.

Pipeline 1 (build b1, no baseline: no gate) has its first qualify job killed
(``kill -9`` of its process group) once a test is recorded, as a lost controller
would; the job again (GitLab's retry) resumes that run, and once more finds it
finished and is refused without running anything. Pipeline 2 (build b2 against b1)
qualifies the same drives and its gates pass. Each pipeline's pages job builds the lab's
site from the database (the marks of SITE_MARKS kept in it) and publishes it as public/;
the second writes again only what its runs changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import REPO, kill_everything_of
from tests.pgserver import Postgres
from tests.sshd import Sshd, local_sshd

EXAMPLE = REPO / "examples" / "lab-ci.yml"
#: what ./run installs the venv from when they are newer than its stamp
INSTALLED_FROM = ("setup.cfg", "pyproject.toml")
#: what GitLab's shell executor runs each script with (bash)
PROLOGUE = "set -eo pipefail\n"
JOB_TIMEOUT_S = 600
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
#: the drives' slots in the example, each to a loop device of the test's
SLOTS = ("host-a-nvme0", "host-b-nvme0")
#: the drive whose qualify job is killed and retried
CUT = SLOTS[0]
#: the site's marks as the project keeps them (a File variable): kept in the published site
MARKS = {"0123456789abcdef@b1": "expected"}


@dataclass(frozen=True)
class Job:
    """One job of the pipeline, its ``extends:`` resolved."""

    name: str
    spec: dict[str, Any]

    @property
    def stage(self) -> str:
        return str(self.spec.get("stage", "test"))

    def lines(self, key: str) -> list[str]:
        return [str(line) for line in self.spec.get(key, [])]

    def variables(
        self, pipeline: Mapping[str, str], overrides: Mapping[str, str]
    ) -> dict[str, str]:
        """The job's environment as GitLab gives it: the pipeline's (*pipeline*: predefined and
        global), the job's, the project's (*overrides*), every value expanded."""
        given = {**pipeline, **_values(self.spec.get("variables", {})), **overrides}
        given["CI_JOB_NAME"] = self.name
        given["CI_JOB_NAME_SLUG"] = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        return {name: _expand(value, given) for name, value in given.items()}

    def runs(self, env: Mapping[str, str]) -> bool:
        """Whether its ``rules:`` put it in the pipeline (only ``- if: $NAME`` is read)."""
        for rule in self.spec.get("rules", [{"if": None}]):
            condition = rule.get("if")
            if condition is None:
                return True
            found = re.fullmatch(r"\$(\w+)", condition)
            assert found, f"{self.name}: a rule the test cannot read: {condition!r}"
            if env.get(found.group(1)):
                return True
        return False


def _values(variables: Mapping[str, Any]) -> dict[str, str]:
    """``NAME: value`` or ``NAME: {value: ..., description: ...}``."""
    return {
        name: str(value["value"] if isinstance(value, dict) else value)
        for name, value in variables.items()
    }


def _expand(value: str, env: Mapping[str, str], depth: int = 10) -> str:
    """*value* with every ``$NAME``/``${NAME}`` of *env* in it (undefined: empty), nested."""
    for _ in range(depth):
        expanded = VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)
        if expanded == value:
            return value
        value = expanded
    raise AssertionError(f"variables that name each other: {value!r}")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _resolved(name: str, document: dict[str, Any]) -> dict[str, Any]:
    spec = dict(document[name])
    parents = spec.pop("extends", [])
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents:
        merged = _merge(merged, _resolved(parent, document))
    return _merge(merged, spec)


def pipeline() -> tuple[dict[str, str], list[Job]]:
    """The example's global variables, and its jobs in stage order (the file's within one)."""
    document = yaml.safe_load(EXAMPLE.read_text())
    stages = document["stages"]
    jobs = [
        Job(name, _resolved(name, document))
        for name, spec in document.items()
        if isinstance(spec, dict) and not name.startswith(".") and name != "variables"
    ]
    return _values(document.get("variables", {})), sorted(jobs, key=lambda j: stages.index(j.stage))


@dataclass(frozen=True)
class Ran:
    """What one attempt of a job did."""

    job: str
    code: int
    output: str
    after: int
    folder: Path


class Lab:
    """The project's side of the pipeline: its variables, each job's checkout."""

    def __init__(self, root: Path, project: dict[str, str], drives: dict[str, Path]) -> None:
        self.root = root
        self.project = project
        self.drives = drives
        self.globals, self.jobs = pipeline()

    def job(self, name: str) -> Job:
        return next(job for job in self.jobs if job.name == name)

    def env(self, job: Job, pipeline_id: int, more: Mapping[str, str]) -> dict[str, str]:
        predefined = {"CI_PIPELINE_ID": str(pipeline_id), "CI_PROJECT_DIR": str(self.folder(job))}
        slot = str(_values(job.spec.get("variables", {})).get("SLOT", ""))
        drive = {"DRIVE": str(self.drives[slot]), "SERIAL": str(self.drives[slot])} if slot else {}
        given = job.variables({**predefined, **self.globals}, {**self.project, **drive, **more})
        return {**os.environ, **given}

    def folder(self, job: Job) -> Path:
        return self.root / "builds" / job.name

    def checkout(self, job: Job) -> Path:
        """A fresh checkout for an attempt (GitLab cleans the build folder): the repository's
        files linked, ``run`` copied (it runs in its own folder)."""
        folder = self.folder(job)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for entry in REPO.iterdir():
            if entry.name not in ("run", ".git", *INSTALLED_FROM):
                (folder / entry.name).symlink_to(entry)
        shutil.copy2(REPO / "run", folder / "run")
        # the venv is the checkout's own, linked: a job's ./run must never install into it
        # (pip would write this folder's path into its scripts), so what it was installed
        # from is no newer than its stamp here
        stamp = REPO / ".venv" / ".installed"
        if not stamp.is_file():
            pytest.skip(f"{stamp} is missing: set the venv up with ./run tests first")
        installed = stamp.stat().st_mtime
        for name in INSTALLED_FROM:
            shutil.copy2(REPO / name, folder / name)
            made = min((folder / name).stat().st_mtime, installed)
            os.utime(folder / name, (made, made))
        return folder

    def start(self, job: Job, pipeline_id: int, **more: str) -> subprocess.Popen[str]:
        """The job's ``before_script`` and ``script`` in one bash, in its own process group."""
        folder = self.checkout(job)
        script = PROLOGUE + "\n".join(job.lines("before_script") + job.lines("script")) + "\n"
        return subprocess.Popen(
            ["bash", "-c", script],
            cwd=folder,
            env=self.env(job, pipeline_id, more),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def finish(self, job: Job, proc: subprocess.Popen[str], pipeline_id: int, **more: str) -> Ran:
        """Wait for *proc* (:meth:`start`), then run the job's ``after_script``."""
        output, _ = proc.communicate(timeout=JOB_TIMEOUT_S)
        after = subprocess.run(
            ["bash", "-c", PROLOGUE + "\n".join(job.lines("after_script")) + "\n"],
            cwd=self.folder(job),
            env=self.env(job, pipeline_id, more),
            capture_output=True,
            text=True,
            timeout=JOB_TIMEOUT_S,
            check=False,
        )
        assert after.returncode == 0, f"{job.name}'s after_script:\n{after.stdout}{after.stderr}"
        return Ran(job.name, proc.returncode, output, after.returncode, self.folder(job))

    def run(self, name: str, pipeline_id: int, **more: str) -> Ran:
        job = self.job(name)
        return self.finish(job, self.start(job, pipeline_id, **more), pipeline_id, **more)

    def stage(self, stage: str, pipeline_id: int, **more: str) -> dict[str, Ran]:
        """Every job of *stage* its rules put in the pipeline, at once (as runners do)."""
        jobs = [
            job
            for job in self.jobs
            if job.stage == stage and job.runs(self.env(job, pipeline_id, more))
        ]
        started = [(job, self.start(job, pipeline_id, **more)) for job in jobs]
        return {job.name: self.finish(job, proc, pipeline_id, **more) for job, proc in started}


def _finished_tests(spool: Path) -> int:
    with (
        contextlib.suppress(sqlite3.Error),
        sqlite3.connect(f"file:{spool}?mode=ro", uri=True) as c,
    ):
        return int(c.execute("SELECT count(*) FROM tests WHERE outcome IS NOT NULL").fetchone()[0])
    return 0


def _cut(lab: Lab, name: str, pipeline_id: int, spool: Path, server: Sshd, **more: str) -> str:
    """The job started and killed (``kill -9`` of its process group) once a test is recorded;
    its output."""
    job = lab.job(name)
    proc = lab.start(job, pipeline_id, **more)
    try:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while _finished_tests(spool) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None, "the job ended before it was cut:\n" + proc.communicate()[0]
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        kill_everything_of(spool.parent)
    assert server.settled() == [], "what the killed run's logins ran on the host ended with them"
    return output


def _junit(ran: Ran) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The job's junit file (what GitLab's test report reads): its suite's properties, and
    each test case's."""
    suite = next(ET.parse(ran.folder / "junit.xml").getroot().iter("testsuite"))
    cases = [_properties(case.find("properties")) for case in suite.iter("testcase")]
    return _properties(suite.find("properties")), cases


def _properties(element: ET.Element | None) -> dict[str, str]:
    found = [] if element is None else element.iter("property")
    return {p.get("name", ""): p.get("value", "") for p in found}


def _published(lab: Lab, pipeline_id: int, **more: str) -> tuple[int, int]:
    """The pipeline's publish stage: the pages job's site in public/, the marks in it; the
    pages it wrote and kept."""
    ran = lab.stage("publish", pipeline_id, **more)["pages"]
    assert ran.code == 0, ran.output
    public = ran.folder / "public"
    assert (public / "index.html").is_file() and (public / "alerts.html").is_file(), ran.output
    assert json.loads((public / "marks.json").read_text()) == MARKS
    found = re.search(r"^site: (\d+) pages written, (\d+) kept \(unchanged\)", ran.output, re.M)
    assert found, ran.output
    return int(found.group(1)), int(found.group(2))


@contextlib.contextmanager
def _lab(tmp_path: Path, postgres: Postgres, loop_device: Any) -> Iterator[tuple[Lab, Sshd]]:
    password = f"pw-{os.getpid()}-{time.monotonic_ns()}"
    role = f"lab_{time.monotonic_ns()}"
    db = postgres.password_user(role, password)
    drives = {slot: loop_device(256) for slot in SLOTS}
    with local_sshd(tmp_path / "host") as server:
        files = tmp_path / "ci-files"  # where GitLab writes File variables
        files.mkdir()
        key, known = files / "SSH_PRIVATE_KEY", files / "SSH_KNOWN_HOSTS"
        shutil.copy(server.folder / "client_key", key)
        key.chmod(0o644)  # the job makes it private (ssh refuses a key others may read)
        shutil.copy(server.folder / "known_hosts", known)
        project = {
            "LAB_DB": db,
            "PGPASSWORD": password,
            "SSH_PRIVATE_KEY": str(key),
            "SSH_KNOWN_HOSTS": str(known),
            "HOST": "127.0.0.1",
            "SSH_PORT": str(server.port),
            "SSD_REPORTS": str(tmp_path / "reports"),
            "SUITE": "smoke",
            "PROFILE": "quick",
            "REPEAT": "1",
            "ALLOW_UNKNOWN": "100",  # one run a side: every verdict unknown (docs/baseline.md)
            "SITE_DIR": str(tmp_path / "site"),
            "SITE_MARKS": str(files / "SITE_MARKS"),
        }
        (files / "SITE_MARKS").write_text(json.dumps(MARKS) + "\n")
        yield Lab(tmp_path, project, drives), server


def test_the_example_pipeline_runs_as_written_and_its_retry_resumes(
    tmp_path: Path, postgres: Postgres, loop_device: Any
) -> None:
    with _lab(tmp_path, postgres, loop_device) as (lab, server):
        stages = [job.stage for job in lab.jobs]
        assert stages == sorted(stages, key=["qualify", "gate", "report", "publish"].index)
        reports = Path(lab.project["SSD_REPORTS"])
        cut_id = f"ci-101-{CUT}"
        spool = reports / cut_id / "spool.sqlite"

        # pipeline 1, build b1: the first drive's job cut as a lost controller cuts it
        cut = _cut(lab, f"qualify-{CUT}", 101, spool, server, BUILD="b1")
        assert "resuming run" not in cut, cut
        others = lab.stage("qualify", 101, BUILD="b1")  # the retry, and the other drives
        retried = others[f"qualify-{CUT}"]
        assert retried.code == 0, retried.output
        assert f"resuming run {cut_id}: " in retried.output, retried.output
        kept = int(re.search(rf"resuming run {cut_id}: (\d+) test", retried.output).group(1))
        assert kept >= 1, retried.output
        for slot in SLOTS:
            ran = others[f"qualify-{slot}"]
            assert ran.code == 0, ran.output
            suite, cases = _junit(ran)
            assert suite["ssd.run_id"] == f"ci-101-{slot}", suite
            assert len(cases) == 4, cases  # every test once, the kept ones too
            label = f"b1 127.0.0.1 {lab.drives[slot]}"
            assert {case["ssd.label"] for case in cases} == {label}, cases
            assert {case["ssd.build"] for case in cases} == {"b1"}, cases
            # the drive's id: its test host and node (a loop device has no serial)
            device = f"127.0.0.1-{lab.drives[slot].name}"
            assert {case["ssd.device"] for case in cases} == {device}, cases
            assert (ran.folder / "run-pages" / "report.html").is_file()
        # no baseline: no gate
        assert lab.stage("gate", 101, BUILD="b1") == {}
        report = lab.stage("report", 101, BUILD="b1")["lab-report"]
        assert report.code == 0 and (report.folder / "lab-compare.html").is_file(), report.output
        first = _published(lab, 101, BUILD="b1")
        assert first[1] == 0, "a new site: no page kept"

        # the job once more (a retry after its run finished): refused, nothing run again
        again = lab.run(f"qualify-{CUT}", 101, BUILD="b1")
        assert again.code == 4, again.output
        refused = f"ERROR: --ssd-run-id={cut_id}: run {cut_id} finished ("
        assert refused in again.output and "it is not run again" in again.output, again.output
        assert "passed" not in again.output, again.output

        # pipeline 2, build b2 judged against b1
        qualified = lab.stage("qualify", 102, BUILD="b2", BASELINE="b1")
        assert all(ran.code == 0 for ran in qualified.values()), qualified
        gates = lab.stage("gate", 102, BUILD="b2", BASELINE="b1")
        assert sorted(gates) == [f"gate-{slot}" for slot in SLOTS]
        for ran in gates.values():
            assert ran.code == 0, ran.output
            assert (ran.folder / "gate.html").is_file()
        assert lab.stage("report", 102, BUILD="b2", BASELINE="b1")["lab-report"].code == 0
        written, kept = _published(lab, 102, BUILD="b2", BASELINE="b1")
        assert written >= 1 and kept >= 1, (written, kept)
