"""The state-transition log as an HTML table: what the device went through, and its cost."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_ssd.device.identity import binary_size


def _bytes(value: int | None) -> str:
    return "n/a" if value is None else binary_size(value)


def _step_line(step: dict[str, Any]) -> str:
    kernel = step.get("kernel")
    moved = (
        f"wrote {_bytes(kernel['written'])}, discarded {_bytes(kernel['discarded'])}"
        if kernel
        else f"fio wrote {_bytes(step['fio_written'])}"
    )
    detail = f" — {step['detail']}" if step.get("detail") else ""
    return f"{step['text']}: {step['seconds']:.1f} s, {moved}{detail}{_health(step.get('health'))}"


def _health(health: dict[str, Any] | None) -> str:
    """' — 41.0–45.5 °C; throttling: ...' when the step was sampled."""
    if not health or health.get("temp_min_c") is None:
        return ""
    text = f" — {health['temp_min_c']:.1f}–{health['temp_max_c']:.1f} °C"
    flags = health.get("throttling") or []
    return text + (f"; throttling: {'; '.join(flags)}" if flags else "")


def _figures(transitions: Sequence[dict[str, Any]]) -> str:
    """The steady-state graphs of the transitions, embedded (they were saved as PNG)."""
    images = []
    for t in transitions:
        for step in t["steps"]:
            for name in step.get("figures") or ():
                png = Path(name)
                if png.is_file():
                    data = base64.b64encode(png.read_bytes()).decode("ascii")
                    images.append(
                        f'<img alt="{html.escape(png.stem)}" src="data:image/png;base64,{data}"/>'
                    )
    return "<h3>Steady state</h3>" + "".join(images) if images else ""


def transitions_html(transitions: Sequence[dict[str, Any]]) -> str:
    """One row per transition, its steps listed; bytes from the kernel's counters (else fio)."""
    if not transitions:
        return ""
    rows = []
    for t in transitions:
        totals = t["totals"]
        steps = "<br>".join(html.escape(_step_line(s)) for s in t["steps"])
        rows.append(
            "<tr>"
            f"<td>{html.escape(t['device'])}</td>"
            f"<td>{html.escape(t['source'] or 'unknown')} → <b>{html.escape(t['target'])}</b>"
            f"<br><small>{html.escape(t['reason'])}</small></td>"
            f"<td><small>{steps}</small></td>"
            f"<td>{t['seconds']:.1f} s</td>"
            f"<td>{_bytes(totals['written'])}</td><td>{_bytes(totals['discarded'])}</td>"
            f"<td>{_bytes(totals['read'])}</td><td>{_bytes(totals['fio_written'])}</td>"
            f"<td><small>{html.escape(t['test'])}</small></td>"
            "</tr>"
        )
    return (
        "<p>Bytes as the kernel counted them (/sys/block/&lt;dev&gt;/stat; n/a for files) and"
        " as fio reported writing them.</p>"
        "<table><tr><th>device</th><th>transition</th><th>steps</th><th>time</th>"
        "<th>written</th><th>discarded</th><th>read</th><th>fio wrote</th>"
        "<th>needed by</th></tr>" + "".join(rows) + "</table>" + _figures(transitions)
    )
