"""The drive's declared features against its datasheet: one check per feature, no I/O.

Each check takes what the sheet states (:class:`~pytest_ssd.specs.features.Features`) and
what the drive declares (``nvme id-ctrl`` and ``id-ns``, parsed in
:mod:`pytest_ssd.device.nvme`) and gives a :class:`FeatureVerdict`: met, not met, or not
judged (the sheet states nothing of it; the drive does not report it).  The verdicts are
the datasheet speed lines' (:class:`pytest_ssd.specs.Verdict`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pytest_ssd.device.nvme import DATA_UNIT_BYTES, NvmeInfo, SmartCounters
from pytest_ssd.specs.features import SANITIZE, Features, format_text
from pytest_ssd.specs.match import CAPACITY_SLACK
from pytest_ssd.specs.model import Datasheet

MET, NOT_MET, NOT_JUDGED = "met", "not met", "not judged"
#: the qualification record's verdict of each (the shared contract's words)
CONTRACT = {MET: "pass", NOT_MET: "fail", NOT_JUDGED: "not judged"}
KELVIN = 273.15
#: WCTEMP and CCTEMP are whole kelvins: a stated °C within half a kelvin is the same
TEMPERATURE_SLACK_K = 0.5
#: percent_used is a whole percent, rounded: the drive's wear estimate may lead by this
PERCENT_USED_SLACK = 1.0


@dataclass(frozen=True)
class FeatureVerdict:
    """One feature: stated against declared."""

    check: str
    status: str
    message: str

    @property
    def contract(self) -> str:
        """pass, fail or not judged (the qualification record's verdict)."""
        return CONTRACT[self.status]


def _verdict(check: str, stated: object, declared: object, detail: str) -> FeatureVerdict:
    met = stated == declared
    said = "as stated" if met else "the datasheet states"
    return FeatureVerdict(check, MET if met else NOT_MET, f"{check}: {detail} ({said} {stated})")


def _not_stated(check: str, keys: str) -> FeatureVerdict:
    return FeatureVerdict(check, NOT_JUDGED, f"{check}: not judged: the datasheet states no {keys}")


def capacity(sheet: Datasheet, info: NvmeInfo) -> FeatureVerdict:
    """The namespace's size (NSZE x its LBA size) and, when reported, the controller's total
    NVM capacity (TNVMCAP) against the sold capacity, within the slack a match allows."""
    ns = info.namespace
    sizes = {"namespace": ns.nsze * ns.lba_size}
    if info.controller.tnvmcap:
        sizes["TNVMCAP"] = info.controller.tnvmcap
    sold = sheet.drive.capacities_gb
    shown = ", ".join(f"{name} {size / 1e9:,.3f} GB" for name, size in sizes.items())
    stated = " or ".join(f"{gb:g} GB" for gb in sold)
    held = [
        any(abs(size - gb * 1e9) <= CAPACITY_SLACK * gb * 1e9 for gb in sold)
        for size in sizes.values()
    ]
    if all(held):
        return FeatureVerdict("capacity", MET, f"capacity: {shown} (as stated {stated})")
    slack = f"{CAPACITY_SLACK:.0%}".replace("%", " %")
    return FeatureVerdict(
        "capacity", NOT_MET, f"capacity: {shown}: not within {slack} of the stated {stated}"
    )


def lba_formats(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    """Every stated LBA format is one the namespace lists (it may list more)."""
    if sheet.lba_formats is None:
        return _not_stated("LBA formats", "lba_formats")
    offered = [(f.data_size, f.metadata_size) for f in info.namespace.lba_formats if f.data_size]
    missing = [f for f in sheet.lba_formats if f not in offered]
    listed = ", ".join(format_text(*f) for f in offered) or "none"
    if missing:
        lacking = ", ".join(format_text(*f) for f in missing)
        return FeatureVerdict(
            "LBA formats", NOT_MET, f"LBA formats: {lacking} stated but not offered ({listed})"
        )
    return FeatureVerdict("LBA formats", MET, f"LBA formats: {listed} offered (as stated)")


def namespaces(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    if sheet.namespaces is None:
        return _not_stated("namespaces", "namespaces")
    nn = info.controller.nn
    return _verdict("namespaces", sheet.namespaces, nn, f"NN {nn}")


def volatile_write_cache(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    if sheet.volatile_write_cache is None:
        return _not_stated("volatile write cache", "volatile_write_cache")
    c = info.controller
    present = "present" if c.volatile_write_cache else "absent"
    return _verdict(
        "volatile write cache",
        sheet.volatile_write_cache,
        c.volatile_write_cache,
        f"{present} (VWC {c.vwc:#x})",
    )


def _flags(
    check: str, stated: Mapping[str, object], declared: Mapping[str, object], code: str
) -> FeatureVerdict:
    """Several capabilities of one check: each stated one must be as declared."""
    asked = {k: v for k, v in stated.items() if v is not None}
    if not asked:
        return _not_stated(check, " or ".join(stated))
    wrong = [f"{k} {declared[k]} (stated {v})" for k, v in asked.items() if declared[k] != v]
    if wrong:
        return FeatureVerdict(check, NOT_MET, f"{check}: {'; '.join(wrong)} ({code})")
    shown = ", ".join(f"{k} {declared[k]}" for k in asked)
    return FeatureVerdict(check, MET, f"{check}: {shown} ({code}, as stated)")


def format_capabilities(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    c = info.controller
    stated = {
        "format": sheet.format,
        "format_crypto_erase": sheet.format_crypto_erase,
        "format_all_namespaces": sheet.format_all_namespaces,
    }
    declared = {
        "format": c.format_supported,
        "format_crypto_erase": c.format_crypto_supported,
        "format_all_namespaces": c.format_all_namespaces,
    }
    return _flags("format", stated, declared, f"OACS {c.oacs:#x}, FNA {c.fna:#x}")


def sanitize(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    if sheet.sanitize is None:
        return _not_stated("sanitize", "sanitize")
    c = info.controller
    has = (c.sanitize_crypto, c.sanitize_block, c.sanitize_overwrite)
    declared = tuple(name for name, on in zip(SANITIZE, has, strict=True) if on)
    shown = ", ".join(declared) or "none"
    stated = ", ".join(sheet.sanitize) or "none"
    return _verdict("sanitize", stated, shown, f"{shown} (SANICAP {c.sanicap:#x})")


def firmware(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    c = info.controller
    stated = {
        "firmware_slots": sheet.firmware_slots,
        "firmware_slot1_read_only": sheet.firmware_slot1_read_only,
    }
    declared = {"firmware_slots": c.firmware_slots, "firmware_slot1_read_only": c.slot1_read_only}
    return _flags("firmware slots", stated, declared, f"FRMW {c.frmw:#x}")


def power_states(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    """Each power state's maximum power (PSD MP, in its own scale) as stated, state by state."""
    if sheet.power_states_w is None:
        return _not_stated("power states", "power_states_w")
    states = info.controller.power_states
    shown = ", ".join(f"PS{s.index} {s.max_power_w:g} W" for s in states) or "none"
    if len(states) != len(sheet.power_states_w):
        return FeatureVerdict(
            "power states",
            NOT_MET,
            f"power states: {len(states)} declared ({shown}), {len(sheet.power_states_w)} stated",
        )
    wrong = [
        f"PS{s.index} {s.max_power_w:g} W (stated {w:g} W)"
        for s, w in zip(states, sheet.power_states_w, strict=True)
        if abs(s.max_power_w - w) > s.max_power_scale_w / 2
    ]
    if wrong:
        return FeatureVerdict("power states", NOT_MET, f"power states: {'; '.join(wrong)}")
    return FeatureVerdict("power states", MET, f"power states: {shown} (as stated)")


def temperatures(sheet: Features, info: NvmeInfo) -> FeatureVerdict:
    """WCTEMP and CCTEMP (whole kelvins) against the stated °C, within half a kelvin."""
    c = info.controller
    pairs = {
        "warning": (sheet.warning_temperature_c, c.wctemp_k, "WCTEMP"),
        "critical": (sheet.critical_temperature_c, c.cctemp_k, "CCTEMP"),
    }
    asked = {k: v for k, v in pairs.items() if v[0] is not None}
    if not asked:
        return _not_stated(
            "temperature thresholds", "warning_temperature_c or critical_temperature_c"
        )
    parts, met = [], True
    for name, (stated, kelvin, field) in asked.items():
        if not kelvin:
            parts.append(f"{name}: {field} not reported")
            met = False
            continue
        within = abs(kelvin - (stated or 0) - KELVIN) <= TEMPERATURE_SLACK_K
        met = met and within
        said = "as stated" if within else "stated"
        parts.append(f"{name} {kelvin - KELVIN:.2f} °C ({field} {kelvin} K; {said} {stated:g} °C)")
    return FeatureVerdict(
        "temperature thresholds",
        MET if met else NOT_MET,
        "temperature thresholds: " + "; ".join(parts),
    )


#: test id -> its check (the suite's parametrization), capacity first
CHECKS: dict[str, Callable[[Datasheet, NvmeInfo], FeatureVerdict]] = {
    "capacity": capacity,
    "lba-formats": lambda s, i: lba_formats(_features(s), i),
    "namespaces": lambda s, i: namespaces(_features(s), i),
    "volatile-write-cache": lambda s, i: volatile_write_cache(_features(s), i),
    "format": lambda s, i: format_capabilities(_features(s), i),
    "sanitize": lambda s, i: sanitize(_features(s), i),
    "firmware-slots": lambda s, i: firmware(_features(s), i),
    "power-states": lambda s, i: power_states(_features(s), i),
    "temperature-thresholds": lambda s, i: temperatures(_features(s), i),
}


#: test id -> the check's name in its records (what a verdict of it says first)
TITLES = {name: name.replace("-", " ") for name in CHECKS} | {"lba-formats": "LBA formats"}


def _features(sheet: Datasheet) -> Features:
    return sheet.features or Features()


@dataclass(frozen=True)
class Written:
    """What one test wrote and what the drive's SMART log counted meanwhile."""

    host_bytes: int
    before: SmartCounters
    after: SmartCounters

    @property
    def units(self) -> int:
        return self.after.data_units_written - self.before.data_units_written

    @property
    def expected(self) -> tuple[int, int]:
        """The fewest and most data units the host's bytes make (each rounded up, and a
        unit begun before the test finished by it)."""
        low = self.host_bytes // DATA_UNIT_BYTES
        return low, -(-self.host_bytes // DATA_UNIT_BYTES) + 1


def data_units(written: Written) -> FeatureVerdict:
    """The drive's data units written rose by what the host wrote: the counter endurance
    is measured in counts the writes."""
    low, high = written.expected
    counted = (
        f"the drive counted {written.units:,} data units ({written.units * DATA_UNIT_BYTES:,} B)"
        f" for {written.host_bytes:,} B written (expected {low:,}..{high:,})"
    )
    ok = low <= written.units <= high
    return FeatureVerdict(
        "data units written", MET if ok else NOT_MET, f"data units written: {counted}"
    )


def endurance(sheet: Datasheet, after: SmartCounters, run_bytes: int) -> FeatureVerdict:
    """The drive's own wear estimate (percent_used) against its lifetime writes as a share of
    the rated endurance: not met when the estimate runs ahead by more than its rounding;
    not judged while the drive has written too little of its rating to tell."""
    features = _features(sheet)
    rated = features.endurance_bytes(sheet.drive.capacity_gb * 1e9)
    if rated is None:
        return _not_stated("endurance", "endurance_tbw or endurance_dwpd")
    lifetime = after.written_bytes
    share = 100 * lifetime / rated
    head = (
        f"endurance: {features.endurance_text()} = {rated / 1e12:,.4g} TB; the drive has written"
        f" {lifetime / 1e12:,.4g} TB ({share:.4g} % of it; this test {run_bytes / 1e9:,.3g} GB ="
        f" {100 * run_bytes / rated:.2g} %) and says {after.percent_used} % used"
    )
    if after.percent_used > share + PERCENT_USED_SLACK:
        return FeatureVerdict("endurance", NOT_MET, f"{head}: wearing faster than rated")
    if share < PERCENT_USED_SLACK:
        why = f"percent_used counts whole percent, the writes are under {PERCENT_USED_SLACK:g} %"
        return FeatureVerdict("endurance", NOT_JUDGED, f"{head}: not judged: {why}")
    return FeatureVerdict("endurance", MET, f"{head}: within the rating")
