"""Which encoding a file's text is in, and decoding it chunk by chunk with every replacement marked.

The head of a file (its first bytes) chooses once for the whole file: a byte-order mark names
UTF-8, UTF-16 or UTF-32; a NUL byte, or control bytes throughout, mean binary; valid UTF-8 is
UTF-8; other text is read as cp1252 (Windows Latin-1, which also reads ISO-8859-1 text), the usual
encoding of older Western files. A file read as UTF-8 whose first byte that is not UTF-8 comes after
the head, with only ASCII before it, is read as cp1252 from there on: cp1252 reads ASCII the same,
so the answer is the one the head would have given had the byte been in it. What fits no choice
(a NUL byte past the head, a Latin-1 byte after UTF-8 characters) is marked, to become U+FFFD once
the reader has counted it, so that the answer can say how many it holds.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE, whose mark it starts with
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_DECODERS: dict[str, Callable[[bytes, str, bool], tuple[str, int]]] = {
    "utf-8": codecs.utf_8_decode,
    "utf-8-sig": codecs.utf_8_decode,
    "utf-16-le": codecs.utf_16_le_decode,
    "utf-16-be": codecs.utf_16_be_decode,
    "utf-32-le": codecs.utf_32_le_decode,
    "utf-32-be": codecs.utf_32_be_decode,
}

_BINARY_CONTROLS = bytes(c for c in range(32) if c not in b"\t\n\v\f\r\x08\x1a\x1b") + b"\x7f"
"""Control bytes text rarely holds (tabs, line ends, backspace, DOS end-of-file and the escape of
terminal colours are left out). Compressed or packed data has them in about one byte in eleven."""

REPLACEMENT = "\ufffd"
MARK = "\udc00"
"""Stands in decoded text for a byte that could not be decoded (or a NUL) until the reader counts
it and puts U+FFFD: strict decoding never yields a lone surrogate, so it marks only these."""


def _mark(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return MARK, exc.end


codecs.register_error("deskmcp.diagrams.mark", _mark)


def _cp1252_table() -> dict[int, str]:
    """Latin-1 code points to the cp1252 characters of the same byte (NUL to MARK); the five bytes
    cp1252 leaves undefined keep their Latin-1 meaning, as browsers read them."""
    table: dict[int, str] = {0: MARK}
    for byte in range(0x80, 0xA0):
        try:
            table[byte] = bytes([byte]).decode("cp1252")
        except UnicodeDecodeError:
            continue
    return table


_CP1252 = _cp1252_table()


def sniff(head: bytes) -> tuple[str | None, int]:
    """The encoding of a file whose first bytes are `head`, and the length of its byte-order mark;
    None when the file is binary."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    controls = len(head) - len(head.translate(None, _BINARY_CONTROLS))
    if b"\x00" in head or controls * 32 > len(head):
        return None, 0
    try:
        codecs.utf_8_decode(head, "strict", False)  # a multi-byte character cut at the end is fine
    except UnicodeDecodeError:
        return "cp1252", 0
    return "utf-8", 0


class TextDecoder:
    """Decodes one file's bytes chunk by chunk in the encoding its head chose (see the module)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._pending = b""
        self._ascii = encoding == "utf-8"
        """All decoded so far is ASCII, so switching to cp1252 would not change it."""

    def decode(self, data: bytes, final: bool = False) -> str:
        """The text of the next bytes, with MARK for each byte that could not be decoded (or NUL)."""
        if self.encoding == "cp1252":
            return data.decode("latin-1").translate(_CP1252)
        data = self._pending + data
        text, used = _DECODERS[self.encoding](data, "deskmcp.diagrams.mark", final)
        self._pending = data[used:]
        if self._ascii:
            first = text.find(MARK)
            if first >= 0 and text[:first].isascii():
                self.encoding = "cp1252"
                self._pending = b""
                return self.decode(data, final)
            self._ascii = text.isascii()
        return text.replace("\x00", MARK)
