"""The sections at the top of every report: devices, host and environment, states, datasheets."""

from __future__ import annotations

import html
import shlex
from typing import Any

from pytest_ssd.db import RunInfo
from pytest_ssd.device.identity import binary_size, decimal_size
from pytest_ssd.device.scratch import SCRATCH_BANNER
from pytest_ssd.host.record import side_by_side, tune_summary
from pytest_ssd.report.conformance import conformance_html
from pytest_ssd.report.sections.base import Context, Section, table
from pytest_ssd.report.summary import tables_html
from pytest_ssd.report.transitions import transitions_html
from pytest_ssd.results.history import build_name
from pytest_ssd.results.record import verdict_order

#: environment keys shown, in this order, with their names
ENVIRONMENT = (
    ("host", "Host"),
    ("kernel", "Kernel"),
    ("machine", "Machine"),
    ("cpu", "CPU"),
    ("cpus", "CPUs"),
    ("python", "Python"),
    ("pytest", "pytest"),
    ("pytest_ssd", "pytest-ssd"),
    ("fio", "fio"),
    ("nvme_cli", "nvme-cli"),
    ("argv", "Command"),
)


def _e(value: object) -> str:
    return html.escape("—" if value is None else str(value))


def devices(ctx: Context) -> Section:
    """Every drive of the report: this run's, then those compared; scratch devices flagged."""
    rows = []
    banners = []
    for index, d in enumerate(ctx.drives):
        ident: dict[str, Any] = d.drive.description.get("identity", {})
        size = int(ident.get("size_bytes") or 0)
        role = "this run" if index < ctx.current else "compared"
        swatch = f'<span style="color:{ctx.palette.colour(d.drive.label)}">■</span>'
        rows.append(
            [
                f"{swatch} <b>{_e(d.drive.label)}</b>",
                role,
                _e(d.drive.run_id),
                _e(d.drive.dut_id),
                _e(ident.get("path")),
                _e(ident.get("model")),
                _e(ident.get("serial")),
                _e(ident.get("firmware")),
                _e(build_name(d.drive.build)),
                f"{binary_size(size)} ({decimal_size(size)})",
                f"{_e(ident.get('logical_block_size'))}/{_e(ident.get('physical_block_size'))}",
                _e(ident.get("transport")),
                _drive_class(d.drive.description),
            ]
        )
        if d.drive.scratch:
            note = d.drive.description.get("note", "")
            banners.append(
                f'<p class="ssd-scratch" style="color:#b00"><b>Scratch device'
                f" {_e(d.drive.label)}:</b> {_e(note)} — {SCRATCH_BANNER}.</p>"
            )
    header = [
        "label",
        "",
        "run",
        "id",
        "path",
        "model",
        "serial",
        "firmware",
        "build",
        "capacity",
        "LBA/phys (B)",
        "transport",
        "class",
    ]
    summaries = [
        tables_html(f"{d.drive.label} ({d.drive.dut_id})", d.drive.description["summary_tables"])
        for d in ctx.drives[: ctx.current]
        if d.drive.description.get("summary_tables")
    ]
    health = [
        f"<li><b>{_e(d.drive.label)}</b>: {_e(d.drive.description.get('health') or 'not recorded')}"
        "</li>"
        for d in ctx.drives[: ctx.current]
    ]
    body = table(header, rows) + "".join(banners)
    body += f'<p>Temperature and health from:</p><ul class="ssd-health">{"".join(health)}</ul>'

    if summaries:
        body += "<h3>Device summary</h3>" + "".join(summaries)
    return Section("ssd-devices", "Devices under test", body)


def _drive_class(description: dict[str, Any]) -> str:
    """The drive class cell: name, and how it was decided (runs before classes: a dash)."""
    found = description.get("drive_class")
    if not found:
        return _e(None)
    iu = description.get("iu") or {}
    unit = f"<br>IU {_e(iu['bytes'])} B ({_e(iu['source'])})" if iu.get("bytes") else ""
    return _e(found["text"]) + unit


def environment(runs: list[RunInfo]) -> Section:
    """Host, tool versions and METHOD §9's settings of each run in the report (this run first).

    A setting off the method's recommendation is marked, and listed under Warnings.
    """
    header = ["", *(_e(run.id) for run in runs)]
    rows = []
    for key, name in ENVIRONMENT:
        values = [run.environment.get(key) for run in runs]
        if key == "argv":
            # as a shell would take it back: -k 'qd1 and r70', not -k qd1 and r70
            values = [shlex.join(map(str, v)) if isinstance(v, list) else v for v in values]
        rows.append([name, *(_e(v) for v in values)])
    envs = [run.environment for run in runs]
    for name, cells in side_by_side(envs):
        rows.append(
            [
                _e(name),
                *(f'<b class="ssd-warn">{_e(c.text)}</b>' if c.warn else _e(c.text) for c in cells),
            ]
        )
    warnings = [env.get("host_warnings") for env in envs]
    rows.append(
        ["Warnings", *(_e(("; ".join(w) or "none") if w is not None else None) for w in warnings)]
    )
    rows.append(["--ssd-tune", *(_e(tune_summary(env)) for env in envs)])
    rows.append(["Start", *(_e(run.start) for run in runs)])
    rows.append(["End", *(_e(run.end or "never: the run was cut short") for run in runs)])
    rows.append(["Complete", *("yes" if run.complete else "<b>no</b>" for run in runs)])
    outcome = [", ".join(f"{n} {k}" for k, n in sorted(run.outcome.items())) for run in runs]
    rows.append(["Tests", *(_e(o or "—") for o in outcome)])
    return Section("ssd-environment", "Host and environment", table(header, rows))


def transitions(ctx: Context) -> Section | None:
    """The state-transition log of this run's drives, with the bytes each step wrote."""
    rows = [t for d in ctx.drives[: ctx.current] for t in d.transitions]
    if not rows:
        return None
    return Section("ssd-transitions", "Device state transitions", transitions_html(rows))


def conformance(ctx: Context) -> Section | None:
    """Datasheet verdicts of this run's drives, the lines not met first."""
    rows = [v for d in ctx.drives[: ctx.current] for v in d.verdicts]
    if not rows:
        return None
    rows.sort(key=lambda r: verdict_order(r["verdict"]))
    return Section("ssd-conformance", "Datasheet conformance", conformance_html(rows))
