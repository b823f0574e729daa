"""How the index stores record texts: zstd, with a dictionary trained on the index's own records."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

import msgspec
import orjson
import zstandard

from deskmcp.core.search.records import IndexRecord

log = logging.getLogger(__name__)

TRAIN_AT = 64
"""A batch this large trains the compression dictionary (once per index)."""
_LEVEL = 3
"""zstd level: level 3 with a dictionary compresses notes about 4.5x at some 150 MB/s; the
higher levels gain little more on short records and cost several times the time."""
_TEXTS = msgspec.json.Decoder(list[str])
"""Reads a record's texts: typed, it builds the strings about twice as fast as `orjson.loads`
(a search reads the whole texts of every hit it shows a snippet of)."""


class TextCodec:
    """Texts compressed with zstd and, once the index has seen a large enough batch, a
    dictionary trained on it: short records share most of their words and layout, which a
    compressor cannot exploit one record at a time. Compressing happens under the write lock;
    each reading thread has its own decompressor."""

    def __init__(self) -> None:
        self.zdict: bytes | None = None
        self._plain = zstandard.ZstdCompressor(level=_LEVEL)
        self._packer: zstandard.ZstdCompressor | None = None
        self._local = threading.local()

    def load(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT dict FROM zdicts WHERE id = 1").fetchone()
        if row is None:
            return
        self.zdict = bytes(row[0])
        self._packer = zstandard.ZstdCompressor(level=_LEVEL, dict_data=zstandard.ZstdCompressionDict(self.zdict))

    def train(self, conn: sqlite3.Connection, records: Sequence[IndexRecord], fields: Sequence[str]) -> None:
        samples: list[Any] = [orjson.dumps([r.texts.get(f, "") or "" for f in fields]) for r in records[:2000]]
        size = min(65536, max(1024, sum(map(len, samples)) // 50))
        try:
            trained = zstandard.train_dictionary(size, samples, k=1024, d=8).as_bytes()
        except zstandard.ZstdError as exc:
            log.info("no compression dictionary from this batch (%s)", exc)
            return
        conn.execute("INSERT OR IGNORE INTO zdicts(id, dict) VALUES(1, ?)", (trained,))
        self.load(conn)  # another process may have trained one first: use that one

    def pack(self, texts: Sequence[str]) -> bytes:
        raw = orjson.dumps(list(texts))
        if self._packer is None:
            return b"\0" + self._plain.compress(raw)
        return b"\1" + self._packer.compress(raw)

    def unpack(self, body: bytes, conn: sqlite3.Connection) -> list[str]:
        local = self._local
        if body[:1] == b"\0":
            plain = getattr(local, "plain", None)
            if plain is None:
                plain = local.plain = zstandard.ZstdDecompressor()
            return _TEXTS.decode(plain.decompress(body[1:]))
        if self.zdict is None:
            self.load(conn)
        unpacker = getattr(local, "unpacker", None)
        if unpacker is None or getattr(local, "zdict", None) is not self.zdict:
            unpacker = local.unpacker = zstandard.ZstdDecompressor(
                dict_data=zstandard.ZstdCompressionDict(self.zdict or b"")
            )
            local.zdict = self.zdict
        return _TEXTS.decode(unpacker.decompress(body[1:]))
