"""A blob of a git repository as a stream: inflated while it is read, never held whole.

A read of a 300 MB file answers from its first kilobytes (binary or not, the first lines), so
the blob is inflated from the object store as it is read: from its loose object file, or from
its place in a pack when it is stored there whole. A blob stored as a delta has to be rebuilt in
memory; that is done only up to `DIAGRAMS_GIT_MAX_BLOB_MB` and refused beyond.
"""

from __future__ import annotations

import io
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from deskmcp.core.errors import BadRequest

if TYPE_CHECKING:
    from dulwich.repo import Repo

CHUNK = 1 << 16
_BLOB = 3
_DELTAS = (6, 7)  # OFS_DELTA, REF_DELTA


class _Inflating(io.RawIOBase):
    """The inflated bytes of a zlib stream starting at `offset` of `file`, at most `size` of them."""

    def __init__(self, file: BinaryIO, offset: int, size: int | None = None) -> None:
        self._file = file
        self._file.seek(offset)
        self._inflate = zlib.decompressobj()
        self._left = size
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = len(buffer)
        if self._left is not None:
            want = min(want, self._left)
        while not self._pending and want and not self._inflate.eof:
            data = self._inflate.unconsumed_tail or self._file.read(CHUNK)
            if not data:
                break
            self._pending = self._inflate.decompress(data, max(want, CHUNK))
        out = self._pending[:want]
        self._pending = self._pending[len(out) :]
        if self._left is not None:
            self._left -= len(out)
        buffer[: len(out)] = out
        return len(out)

    def skip_header(self) -> int:
        """Read past a loose object's `blob <size>\\0` header; the size it gives."""
        head = self.read(64) or b""
        kind, _, rest = head.partition(b"\x00")
        self._pending = rest + self._pending  # what followed the header is the blob's first bytes
        self._left = int(kind.split(b" ", 1)[1])
        return self._left

    def close(self) -> None:
        self._file.close()
        super().close()


def _varint_header(data: bytes) -> tuple[int, int, int]:
    """A pack entry's type, size and header length."""
    byte = data[0]
    kind = (byte >> 4) & 7
    size = byte & 15
    shift = 4
    i = 1
    while byte & 0x80:
        byte = data[i]
        size |= (byte & 0x7F) << shift
        shift += 7
        i += 1
    return kind, size, i


def _delta_target_size(file: BinaryIO, offset: int, kind: int, header_len: int, head: bytes) -> int:
    """The size of the blob a delta entry rebuilds (its header holds it)."""
    start = header_len
    if kind == 6:  # the base offset, a varint
        while head[start] & 0x80:
            start += 1
        start += 1
    else:
        start += 20  # the base's id
    inflated = _Inflating(file, offset + start).read(32)
    i = value = 0
    for _ in range(2):  # source size, then target size
        value = shift = 0
        while True:
            byte = inflated[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
    return value


def open_blob(repo: Repo, sha: bytes, path: str, max_bytes: int) -> tuple[BinaryIO, int]:
    """The blob's bytes as a stream and its size."""
    store = repo.object_store
    hexsha = sha.decode()
    base = Path(getattr(store, "path", ""))
    loose = base / hexsha[:2] / hexsha[2:]
    if loose.is_file():
        raw = _Inflating(loose.open("rb"), 0)
        size = raw.skip_header()
        return io.BufferedReader(raw, CHUNK), size
    for pack in getattr(store, "packs", ()):
        try:
            offset = pack.index.object_offset(sha)
        except KeyError:
            continue
        file = (Path(store.pack_dir) / Path(pack.data.filename).name).open("rb")  # the stream closes it
        file.seek(offset)
        head = file.read(64)
        kind, size, header_len = _varint_header(head)
        if kind == _BLOB:
            return io.BufferedReader(_Inflating(file, offset + header_len, size), CHUNK), size
        if kind in _DELTAS:
            try:
                size = _delta_target_size(file, offset, kind, header_len, head)
            finally:
                file.close()
            if size > max_bytes:
                raise BadRequest(
                    f"{path!r} is {size / 2**20:.0f} MiB stored as a delta, which must be rebuilt in memory to "
                    f"be read; that is refused past DIAGRAMS_GIT_MAX_BLOB_MB ({max_bytes // 2**20}).",
                    {"path": path, "size": size, "limit_bytes": max_bytes},
                )
            break
        file.close()
        break
    data = repo[sha].as_raw_string()
    return io.BytesIO(data), len(data)
