"""Compact arrays for the database: a measurement's time series and histograms.

Named numpy arrays are kept as one compressed ``.npz`` blob (numpy's own
format: names, dtypes and shapes travel with the data, and numpy reads it back
without pickling).
"""

from __future__ import annotations

import array
import io
import sys
import zipfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Arrays = dict[str, npt.NDArray[np.generic]]
else:
    Arrays = dict

#: the .npy format's magic and version 1.0 (numpy.lib.format)
NPY_MAGIC = b"\x93NUMPY\x01\x00"
#: numpy aligns an array's data to 64 bytes from the start of its .npy entry
NPY_ALIGN = 64


def pack(arrays: Mapping[str, npt.ArrayLike]) -> bytes:
    """One compressed blob of the named *arrays*.

    Flat sequences of Python ints (a fio latency histogram) are written without numpy,
    as int64 in numpy's own format, so an xdist worker that records measurements
    never loads numpy (~7 MiB a worker); anything else goes through numpy.
    """
    ints = {name: a for name, a in arrays.items() if plain_ints(a)}
    if len(ints) == len(arrays):
        return pack_ints(ints)
    import numpy as np  # noqa: PLC0415  # see plain_ints

    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(a) for name, a in arrays.items()}
    np.savez_compressed(buffer, **named)
    return buffer.getvalue()


def plain_ints(values: object) -> TypeGuard[Sequence[int]]:
    """A non-empty list or tuple of Python ints that fit int64 (not bools, not numpy's).

    numpy makes an empty sequence float64: that one goes through numpy too.
    """
    return (
        isinstance(values, list | tuple)
        and bool(values)
        and all(type(v) is int and -(1 << 63) <= v < (1 << 63) for v in values)
    )


def pack_ints(arrays: Mapping[str, Sequence[int]]) -> bytes:
    """:func:`pack` of flat int sequences: ``numpy.savez_compressed``'s layout, int64."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as npz:
        for name, values in arrays.items():
            header = f"{{'descr': '<i8', 'fortran_order': False, 'shape': ({len(values)},), }}"
            pad = -(len(NPY_MAGIC) + 2 + len(header) + 1) % NPY_ALIGN
            text = (header + " " * pad + "\n").encode("latin1")
            data = array.array("q", values)
            if sys.byteorder != "little":
                data.byteswap()
            entry = NPY_MAGIC + len(text).to_bytes(2, "little") + text + data.tobytes()
            npz.writestr(f"{name}.npy", entry)
    return buffer.getvalue()


def unpack(blob: bytes) -> Arrays:
    """The named arrays of a blob written by :func:`pack`."""
    import numpy as np  # noqa: PLC0415  # the reader's: a worker only writes

    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return {name: data[name] for name in data.files}
