"""What fio's verification said: the first block that did not read back as written.

fio 3.33 (``verify.c``) reports a mismatch on stderr (through ``fio --client``: its
output) and ends the job with error 84 (EILSEQ); a bad header is one line, a bad
checksum three, and each dump it kept (``verify_dump=1``) a line of its own::

    verify: bad magic header 9666, wanted acca at file /dev/loop0 offset 409600, length 4096 (requested block: offset=409600, length=4096)
           hdr_fail data dumped as loop0.409600.hdr_fail
    crc32c: verify failed at file /dev/loop0 offset 409600, length 4096 (requested block: ...)
           Expected CRC: 1a6fce04
           Received CRC: af6c7590

The block named is the header's (``verify_interval``), inside the I/O requested.
``fio --client`` (a test host) prints the server's lines after its name: ``<host> verify: ...``.
"""  # noqa: E501

from __future__ import annotations

import re
from dataclasses import dataclass

#: fio's job error for a verification failure: EILSEQ
VERIFY_ERROR = 84

_AT = r" at file (?P<file>.+?) offset (?P<offset>\d+), length (?P<length>\d+)"
_HEADER = re.compile(
    r"^verify: bad (?:header )?(?P<field>magic header|header length|length|rand_seed|offset|"
    r"numberio|crc) (?P<found>\S+), wanted (?P<expected>\S+)" + _AT
)
_CHECKSUM = re.compile(r"^(?P<field>\w+): verify failed" + _AT)
_EXPECTED = re.compile(r"^\s*Expected CRC: (?P<value>\S+)")
_RECEIVED = re.compile(r"^\s*Received CRC: (?P<value>\S+)")
_DUMPED = re.compile(r"^\s*\w+ data dumped as (?P<name>\S+)")
#: what ``fio --client`` puts before each line of its server's output
_SERVER = re.compile(r"^<[^<>\s]*> ")


@dataclass(frozen=True)
class Mismatch:
    """The first block fio found not as written: where, what was expected and what was read."""

    file: str
    offset: int
    length: int
    #: what differs: ``magic header``, ``offset`` (a misdirected or lost write), ``crc32c`` ...
    what: str
    expected: str
    found: str
    #: the files fio wrote the block to (``verify_dump``), in its working folder
    dumps: tuple[str, ...] = ()

    def lba(self, logical_block: int) -> int:
        return self.offset // logical_block

    def line(self, logical_block: int, when: str) -> str:
        """The one line a failed check says."""
        kept = f"; fio's dump: {', '.join(self.dumps)}" if self.dumps else ""
        return (
            f"{when}: LBA {self.lba(logical_block)} (offset {self.offset}, {self.length} B of"
            f" {self.file}) does not read back as written: {self.what} expected {self.expected},"
            f" found {self.found}{kept}"
        )

    def as_dict(self, logical_block: int) -> dict[str, object]:
        return {
            "lba": self.lba(logical_block),
            "offset": self.offset,
            "length": self.length,
            "file": self.file,
            "what": self.what,
            "expected": self.expected,
            "found": self.found,
            "dumps": list(self.dumps),
        }


def _header_field(name: str) -> str:
    return {"header length": "header length", "length": "header length"}.get(name, name)


def first_mismatch(output: str) -> Mismatch | None:
    """The first verification failure in fio's *output* (stderr, or a client's stdout)."""
    lines = [_SERVER.sub("", text, count=1) for text in output.splitlines()]
    for index, text in enumerate(lines):
        header = _HEADER.match(text.strip())
        checksum = None if header else _CHECKSUM.match(text.strip())
        found = header or checksum
        if found is None:
            continue
        rest = _following(lines[index + 1 :])
        if header is not None:
            what = _header_field(header["field"])
            expected, got = header["expected"], header["found"]
        else:
            what = f"{found['field']} checksum"
            expected, got = rest.expected or "?", rest.received or "?"
        return Mismatch(
            file=found["file"],
            offset=int(found["offset"]),
            length=int(found["length"]),
            what=what,
            expected=expected,
            found=got,
            dumps=rest.dumps,
        )
    return None


@dataclass(frozen=True)
class _Rest:
    expected: str | None
    received: str | None
    dumps: tuple[str, ...]


def _following(lines: list[str]) -> _Rest:
    """The indented lines after a failure: the checksums and the dumps' names."""
    expected = received = None
    dumps: list[str] = []
    for text in lines:
        if not text.startswith((" ", "\t")):
            break
        if match := _EXPECTED.match(text):
            expected = match["value"]
        elif match := _RECEIVED.match(text):
            received = match["value"]
        elif match := _DUMPED.match(text):
            dumps.append(match["name"])
    return _Rest(expected, received, tuple(dumps))
