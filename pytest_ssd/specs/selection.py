"""Which datasheet applies to which device under test.

``--datasheet=FILE`` (one for every device, or one per device in ``--dut``
order) must describe its device unless ``--datasheet-force``; without it each
device gets the first datasheet in the datasheet folders that describes it.
Bad files are refused before any device is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ConfigError
from pytest_ssd.specs.flags import DatasheetOptions
from pytest_ssd.specs.load import datasheet_files, load_datasheet, load_datasheets
from pytest_ssd.specs.match import require_match, select
from pytest_ssd.specs.model import Datasheet

#: the datasheets shipped beside the package (a source checkout or an editable install)
SHIPPED = Path(__file__).resolve().parents[2] / "datasheets"


def load_given(options: DatasheetOptions, devices: int) -> tuple[Datasheet, ...]:
    """The ``--datasheet`` files, loaded and checked (DatasheetError on the first bad one)."""
    if options.files and len(options.files) not in (1, devices):
        raise ConfigError(
            f"--datasheet was given {len(options.files)} times for {devices} devices: "
            "give one for all devices or one per --dut, in the same order"
        )
    return tuple(load_datasheet(path) for path in options.files)


def load_candidates(options: DatasheetOptions) -> tuple[Datasheet, ...]:
    """Every datasheet in the folders (shipped ones last); a bad file is an error."""
    for folder in options.dirs:
        if not folder.is_dir():
            raise ConfigError(f"--datasheet-dir {folder}: not a folder")
    folders = [*options.dirs, *([SHIPPED] if SHIPPED.is_dir() else [])]
    loaded = load_datasheets(f for folder in folders for f in datasheet_files(folder))
    if loaded.errors:
        raise loaded.errors[0]
    return loaded.datasheets


def assign(
    identities: Mapping[str, DeviceIdentity],
    given: Sequence[Datasheet],
    candidates: Sequence[Datasheet],
    force: bool,
) -> dict[str, Datasheet]:
    """Device id -> its datasheet: the given ones (checked to match) or the first that matches."""
    chosen: dict[str, Datasheet] = {}
    for index, (dut_id, identity) in enumerate(identities.items()):
        if given:
            datasheet = given[index if len(given) > 1 else 0]
            require_match(datasheet, identity, force=force)
            chosen[dut_id] = datasheet
        else:
            found = select(candidates, identity)
            if found is not None:
                chosen[dut_id] = found
    return chosen
