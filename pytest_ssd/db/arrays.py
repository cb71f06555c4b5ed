"""Compact arrays for the database: a measurement's time series and histograms.

Named numpy arrays are kept as one compressed ``.npz`` blob (numpy's own
format: names, dtypes and shapes travel with the data, and numpy reads it back
without pickling).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

Arrays = dict[str, npt.NDArray[np.generic]]


def pack(arrays: Mapping[str, npt.ArrayLike]) -> bytes:
    """One compressed blob of the named *arrays*."""
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(a) for name, a in arrays.items()}
    np.savez_compressed(buffer, **named)
    return buffer.getvalue()


def unpack(blob: bytes) -> Arrays:
    """The named arrays of a blob written by :func:`pack`."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return {name: data[name] for name in data.files}
