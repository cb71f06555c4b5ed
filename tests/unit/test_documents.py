"""JSON and TOML from outside: nesting and size bounded, errors of the module's own kind."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from pytest_ssd.documents import (
    MAX_DEPTH,
    NotAFile,
    TooLarge,
    loads_json,
    loads_toml,
    read_text_bounded,
    too_deep,
)
from pytest_ssd.errors import ParseError
from pytest_ssd.fio.results import parse_output


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 900, 5000])
def test_json_nested_too_deep_is_a_decode_error(levels: int) -> None:
    with pytest.raises(json.JSONDecodeError, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads_json("[" * levels + "]" * levels)


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5000])
def test_toml_nested_too_deep_is_a_decode_error(levels: int) -> None:
    with pytest.raises(tomllib.TOMLDecodeError, match="nested deeper than"):
        loads_toml("a = " + "[" * levels + "]" * levels)


def test_documents_within_the_limit_load_as_before() -> None:
    text = "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1)
    assert loads_json(text) == json.loads(text)
    assert loads_json(b'{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    assert loads_toml("[x]\ny = [1, 2]\n") == {"x": {"y": [1, 2]}}
    assert not too_deep({"a": [{"b": []}]}, limit=4) and too_deep({"a": [{"b": []}]}, limit=3)


def test_reading_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    with pytest.raises(TooLarge, match="larger than 100 bytes"):
        read_text_bounded(path, 100)
    assert read_text_bounded(path, 101) == "x" * 101
    # what is not a regular file is never read: a device without an end, a FIFO (whose open
    # would wait for a writer), a folder
    os.mkfifo(tmp_path / "fifo")
    for other, kind in (
        (Path("/dev/zero"), "a character device"),
        (tmp_path / "fifo", "a FIFO"),
        (tmp_path, "a folder"),
    ):
        with pytest.raises(NotAFile, match=f"^\\[Errno 22\\] {kind}.*, not a regular file"):
            read_text_bounded(other, 1 << 20)


def test_fio_output_nested_5000_deep_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match=r"fio output is not valid JSON \(nested deeper than 64"):
        parse_output('{"jobs": ' + "[" * 5000 + "]" * 5000 + "}")
