"""The metrics judged against a baseline: their names, labels and which way is better."""

from __future__ import annotations

#: the percentiles judged when every sample on both sides resolves them
PERCENTILES = (50.0, 99.0, 99.9, 99.99)
#: metric -> (its label in a line, higher is better)
THROUGHPUT = {"iops": ("IOPS", True), "bw_mib_s": ("MiB/s", True)}
LATENCY = {"lat_mean_us": ("mean latency", False)}


def percentile_metric(p: float) -> str:
    return f"p{p:g}_us"


METRICS: dict[str, tuple[str, bool]] = {
    **THROUGHPUT,
    **LATENCY,
    **{percentile_metric(p): (f"p{p:g}", False) for p in PERCENTILES},
}
