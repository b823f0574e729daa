"""The parts of an .xlsx a write leaves alone are copied into the new package as they are stored:
the same compressed bytes, CRC, sizes and compression (not inflated and deflated again, which
would change their bytes in the zip and cost the time of both), and the package still opens in
openpyxl and LibreOffice with the values written."""

from __future__ import annotations

import io
import random
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from deskmcp.sheets.xlsx.patch_xml import copy_part
from tests.helpers.tool_calls import Connect, call
from tests.helpers.workbooks import assert_well_formed, libreoffice_csv

pytestmark = pytest.mark.anyio

SID = {"spreadsheet_id": "book.xlsx"}
STORED = "xl/theme/theme1.xml"  # kept without compression in the package made below
DEFLATED_9 = "xl/worksheets/sheet2.xml"  # the Notes sheet, deflated at level 9


def stored_entry(path: Path, info: zipfile.ZipInfo) -> tuple[int, int, int, int, bytes]:
    """A part as the zip stores it: compression, CRC, sizes and the compressed bytes."""
    with path.open("rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        f.seek(info.header_offset + 30 + name_length + extra_length)
        return info.compress_type, info.CRC, info.file_size, info.compress_size, f.read(info.compress_size)


def assert_headers_agree(path: Path) -> None:
    """Each part's local header gives the compression, CRC and sizes the central directory gives
    (readers that stream a zip go by the local headers)."""
    with zipfile.ZipFile(path) as zf, path.open("rb") as f:
        for info in zf.infolist():
            f.seek(info.header_offset)
            method, _time, _date, crc, compressed, size = struct.unpack("<HHHLLL", f.read(30)[8:26])
            assert (method, crc, compressed, size) == (
                info.compress_type,
                info.CRC,
                info.compress_size,
                info.file_size,
            ), info.filename


def stored_parts(path: Path) -> dict[str, tuple[int, int, int, int, bytes]]:
    with zipfile.ZipFile(path) as zf:
        return {info.filename: stored_entry(path, info) for info in zf.infolist()}


def contents(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def workbook(path: Path) -> Path:
    """Data: A1:C6 with C = A*B (formulas); Notes: 3,000 lines of text. The package rewritten as
    other programs write theirs: the theme stored, the Notes sheet deflated at level 9 (deskmcp
    deflates at 6, or 1 for big parts)."""
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    ws.append(["a", "b", "product"])
    for i in range(1, 6):
        ws.append([i, 10 * i, f"=A{i + 1}*B{i + 1}"])
    notes = wb.create_sheet("Notes")
    rng = random.Random(5)
    for i in range(3000):
        notes.append([f"note {i} " + " ".join(rng.choice(["red", "green", "blue", "amber"]) for _ in range(6))])
    buffer = io.BytesIO()
    wb.save(buffer)
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == STORED:
                dst.writestr(info.filename, body, zipfile.ZIP_STORED)
            elif info.filename == DEFLATED_9:
                dst.writestr(info.filename, body, zipfile.ZIP_DEFLATED, 9)
            else:
                dst.writestr(info.filename, body, zipfile.ZIP_DEFLATED)
    return path


WRITES = {
    "update_values": ("update_values", {"range": "Data!B2", "values": [[7]]}),
    "insert_rows": ("insert_rows", {"sheet": "Data", "at": 1, "count": 1}),
    "format_range": ("format_range", {"range": "Data!A1:C1", "bold": True}),
}


@pytest.mark.parametrize("write", list(WRITES))
async def test_every_part_a_write_leaves_keeps_its_compressed_bytes_crc_and_compression(
    root: Path, connect: Connect, write: str
) -> None:
    path = workbook(root / "book.xlsx")
    before, before_text = stored_parts(path), contents(path)
    assert before[STORED][0] == zipfile.ZIP_STORED and before[DEFLATED_9][0] == zipfile.ZIP_DEFLATED
    tool, args = WRITES[write]
    async with connect() as c:
        await call(c, tool, {**SID, **args})
    after, after_text = stored_parts(path), contents(path)
    same = {name for name in before_text if after_text.get(name) == before_text[name]}
    assert {STORED, DEFLATED_9} <= same
    assert "xl/worksheets/sheet1.xml" not in same
    for name in same:  # the part's bytes in the zip, not only its content, are what they were
        assert after[name] == before[name], name
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    assert_headers_agree(path)
    assert_well_formed(path)


async def test_a_part_copied_as_stored_reads_back_and_the_workbook_opens_in_openpyxl(
    root: Path, connect: Connect
) -> None:
    from openpyxl import load_workbook

    path = workbook(root / "book.xlsx")
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "Data!B2", "values": [[7]]})
    wb = load_workbook(path)
    data, notes = wb["Data"], wb["Notes"]
    assert data["B2"].value == 7 and data["C2"].value == "=A2*B2"
    assert notes["A3000"].value.startswith("note 2999 ")
    values = load_workbook(path, data_only=True)["Data"]
    assert values["C2"].value == 7


@pytest.mark.slow
@pytest.mark.e2e
async def test_libreoffice_opens_a_package_with_copied_parts_and_shows_the_values_written(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    path = workbook(root / "book.xlsx")
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "Data!B2", "values": [[7]]})
        await call(c, "format_range", {**SID, "range": "Data!A1:C1", "bold": True})
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[0] == "a,b,product"
    assert lines[1] == "1,7,7"
    assert lines[5] == "5,50,250"


def test_a_part_compressed_otherwise_than_by_deflate_is_inflated_and_deflated_again(tmp_path: Path) -> None:
    source = tmp_path / "source.zip"
    text = b"<x>" + b"bzip2 " * 2000 + b"</x>"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("a.xml", text, zipfile.ZIP_BZIP2)
        zf.writestr("b.xml", b"<y/>", zipfile.ZIP_DEFLATED, 9)
    out = tmp_path / "out.zip"
    with zipfile.ZipFile(source) as src, out.open("wb") as handle, zipfile.ZipFile(handle, "w") as dst:
        for info in src.infolist():
            copy_part(src, info, dst)
    with zipfile.ZipFile(out) as zf:
        assert zf.getinfo("a.xml").compress_type == zipfile.ZIP_DEFLATED
        assert zf.read("a.xml") == text and zf.read("b.xml") == b"<y/>"
        assert zf.testzip() is None
    with zipfile.ZipFile(source) as zf:
        assert stored_entry(out, zipfile.ZipFile(out).getinfo("b.xml")) == stored_entry(source, zf.getinfo("b.xml"))


class Unseekable(io.RawIOBase):
    """A sink that takes bytes but cannot seek, as a pipe or a socket."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.data += bytes(b)
        return len(b)


def test_a_package_written_where_it_cannot_seek_gets_its_parts_deflated_again(tmp_path: Path) -> None:
    source = tmp_path / "source.zip"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("a.xml", b"<a>" + b"text " * 500 + b"</a>", zipfile.ZIP_DEFLATED, 9)

    sink = Unseekable()
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(sink, "w") as dst:
        for info in src.infolist():
            copy_part(src, info, dst)
    with zipfile.ZipFile(io.BytesIO(bytes(sink.data))) as zf:
        assert zf.read("a.xml") == b"<a>" + b"text " * 500 + b"</a>"
        assert zf.testzip() is None


def test_a_part_whose_sizes_follow_its_bytes_is_copied_as_stored_with_them_in_its_header(tmp_path: Path) -> None:
    """A zip written where it could not seek gives each part's CRC and sizes after its bytes (a data
    descriptor): the copy keeps the compressed bytes and puts the CRC and sizes in the header."""

    text = b"<a>" + b"described " * 800 + b"</a>"
    sink = Unseekable()
    with zipfile.ZipFile(sink, "w") as zf:
        zf.writestr("a.xml", text, zipfile.ZIP_DEFLATED, 9)
        zf.writestr("b.xml", b"<b/>", zipfile.ZIP_DEFLATED)
    source = tmp_path / "source.zip"
    source.write_bytes(bytes(sink.data))
    out = tmp_path / "out.zip"
    with zipfile.ZipFile(source) as src, out.open("wb") as handle, zipfile.ZipFile(handle, "w") as dst:
        assert src.getinfo("a.xml").flag_bits & 0x08
        for info in src.infolist():
            copy_part(src, info, dst)
    with zipfile.ZipFile(out) as zf, zipfile.ZipFile(source) as was:
        assert not zf.getinfo("a.xml").flag_bits & 0x08
        assert zf.read("a.xml") == text and zf.read("b.xml") == b"<b/>"
        assert zf.testzip() is None
        for name in ("a.xml", "b.xml"):
            assert stored_entry(out, zf.getinfo(name)) == stored_entry(source, was.getinfo(name))
    assert_headers_agree(out)
