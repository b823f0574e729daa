"""The bytes a patched .xlsx is given: value and formula cells, the rows rebuilt around them, a
date format in the styles, the uncomputed-formulas property and `fullCalcOnLoad` (the package is
written by `backends/file_guard.py`)."""

from __future__ import annotations

import copy
import datetime as dt
import html
import json
import re
import shutil
import struct
import zipfile
from bisect import bisect_left
from typing import Any

from deskmcp.sheets.a1 import MAX_COLUMNS, cell_name
from deskmcp.sheets.formulas.dependencies import Key
from deskmcp.sheets.formulas.values import CellError
from deskmcp.sheets.xlsx.cellxml import (
    ATTR,
    date_cell,
    number_text,
    xml_text,
)
from deskmcp.sheets.xlsx.parts import UNCOMPUTED_PROPERTY, read_part
from deskmcp.sheets.xlsx.patch_sheets import (
    ROW,
    Fallback,
    Sheet,
)
from deskmcp.sheets.xlsx.sheetdata import Styles

DIMENSION = re.compile(rb'<dimension ref="[^"]*"\s*/>')
CUSTOM_NS = "http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"
VT_NS = "http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"
FMTID = "{D5CDD505-2E9C-101B-9397-08002B2CF9AE}"


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def value_cell(key: Key, value: Any, style: bytes, literal: bool, date_xf: Any, look: Styles) -> bytes | None:
    ref = cell_name(key[1], key[2]).encode()
    s = b"" if style == b"0" else b' s="' + style + b'"'
    if value is None or value == "":
        return b'<c r="' + ref + b'"' + s + b"/>" if s else None
    if isinstance(value, bool):
        return b'<c r="' + ref + b'"' + s + b' t="b"><v>' + (b"1" if value else b"0") + b"</v></c>"
    if isinstance(value, dt.date):
        serial, fmt = date_cell(value)
        if int(style) not in look.dates:
            s = b' s="' + str(date_xf(fmt)).encode() + b'"'
        return b'<c r="' + ref + b'"' + s + b"><v>" + number_text(serial).encode() + b"</v></c>"
    if isinstance(value, int | float):
        return b'<c r="' + ref + b'"' + s + b"><v>" + number_text(value).encode() + b"</v></c>"
    text = xml_text(str(value)).encode("utf-8")
    space = b' xml:space="preserve"' if str(value) != str(value).strip() else b""
    return b'<c r="' + ref + b'"' + s + b' t="inlineStr"><is><t' + space + b">" + text + b"</t></is></c>"


def formula_cell(key: Key, fxml: bytes, value: Any, style: bytes, cm: int | None = None) -> bytes:
    """A cell holding the formula `fxml` (b"": a value a spill put there) and its value; `cm`: the
    cell metadata marking a dynamic array formula."""
    ref = cell_name(key[1], key[2]).encode()
    s = b"" if style == b"0" else b' s="' + style + b'"'
    if cm is not None:
        ref += b'" cm="' + str(cm).encode()
    if value is None:
        return b'<c r="' + ref + b'"' + s + b">" + fxml + b"</c>"
    if isinstance(value, CellError):
        t, v = b' t="e"', _esc(value.code).encode()
    elif isinstance(value, bool):
        t, v = b' t="b"', b"1" if value else b"0"
    elif isinstance(value, int | float):
        t, v = b"", number_text(value).encode()
    else:
        t, v = b' t="str"', xml_text(str(value)).encode("utf-8")
    return b'<c r="' + ref + b'"' + s + t + b">" + fxml + b"<v>" + v + b"</v></c>"


def patched_rows(sheet: Sheet, rows: dict[int, dict[int, bytes | None]]) -> list[tuple[int, int, bytes]]:
    """The edits of the sheet part, in order, as (start, end, replacement): the given cells replaced
    (None: removed), rows added where needed, the dimension widened."""
    data = sheet.data
    existing = sorted(sheet.rows)
    edits: list[tuple[int, int, int, bytes]] = []  # (start, end, order, replacement)
    max_col = 0
    for order, row in enumerate(sorted(rows)):
        new_cells = rows[row]
        span = sheet.span(row)
        if span is not None:
            start, end = span
            head = ROW.match(data, start)
            assert head is not None
            attrs = re.sub(rb'\s+spans="[^"]*"', b"", head.group(1))
            cells = {c: cell.raw for c, cell in sheet.cells(row).items()}
            for c, element in new_cells.items():
                if element is None:
                    cells.pop(c, None)
                else:
                    cells[c] = element
        else:
            cells = {c: e for c, e in new_cells.items() if e is not None}
            if not cells:
                continue
            i = bisect_left(existing, row)
            start = end = sheet.rows[existing[i]] if i < len(existing) else sheet.end
            attrs = b' r="' + str(row).encode() + b'"'
        max_col = max(max_col, *cells) if cells else max_col
        body = b"".join(cells[c] for c in sorted(cells))
        edits.append((start, end, order, b"<row" + attrs + b">" + body + b"</row>"))
    last_row = max([sheet.max_row, *(r for r, cells in rows.items() if any(v is not None for v in cells.values()))])
    last_col = max(sheet.max_column if sheet.max_column != MAX_COLUMNS else 0, max_col)
    dim = DIMENSION.search(data, 0, sheet.start)
    if last_row and last_col and dim is not None:
        ref = b"A1:" + cell_name(last_row, last_col).encode()
        edits.append((dim.start(), dim.end(), -1, b'<dimension ref="' + ref + b'"/>'))
    edits.sort(key=lambda e: (e[0], e[1], e[2]))
    return [(start, end, new) for start, end, _order, new in edits]


def add_date_style(styles: bytes, fmt: str = "yyyy-mm-dd") -> tuple[int, bytes]:
    """The index of a cell format showing the date format `fmt`, added to the styles part if needed."""
    code = fmt.encode()
    fmt_id: int | None = None
    for m in re.finditer(rb"<numFmt\b([^>]*?)/?>", styles):
        a = dict(ATTR.findall(m.group(1)))
        if html.unescape(a.get(b"formatCode", b"").decode("utf-8")).encode() == code:
            fmt_id = int(a.get(b"numFmtId", b"0"))
    xfs = re.search(rb"<cellXfs\b([^>]*)>(.*?)</cellXfs>", styles, re.S)
    if xfs is None:
        raise Fallback("no cell formats in the styles part")
    entries = re.findall(rb"<xf\b[^>]*?(?:/>|>.*?</xf>)", xfs.group(2), re.S)
    if fmt_id is not None:
        for i, entry in enumerate(entries):
            if re.search(rb'numFmtId="%d"' % fmt_id, entry):
                return i, styles
    if fmt_id is None:
        ids = [int(x) for x in re.findall(rb'<numFmt\b[^>]*numFmtId="([0-9]+)"', styles)]
        fmt_id = max([163, *ids]) + 1
        numfmt = b'<numFmt numFmtId="%d" formatCode="%s"/>' % (fmt_id, code)
        # an empty list is often written `<numFmts count="0"/>`: it is opened to hold the format
        styles = re.sub(rb"<numFmts\b([^>]*?)\s*/>", rb"<numFmts\1></numFmts>", styles, count=1)
        if b"<numFmts" in styles:
            styles = re.sub(rb"</numFmts>", numfmt + b"</numFmts>", styles, count=1)
            styles = re.sub(
                rb'(<numFmts\b[^>]*count=")([0-9]+)"', lambda m: m.group(1) + b'%d"' % (len(ids) + 1), styles, count=1
            )
        else:
            styles = re.sub(
                rb"(<styleSheet\b[^>]*>)",
                lambda m: m.group(1) + b'<numFmts count="1">' + numfmt + b"</numFmts>",
                styles,
                count=1,
            )
    xf = b'<xf numFmtId="%d" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' % fmt_id
    index = len(entries)
    styles = re.sub(rb"</cellXfs>", xf + b"</cellXfs>", styles, count=1)
    styles = re.sub(rb'(<cellXfs\b[^>]*count=")([0-9]+)"', lambda m: m.group(1) + b'%d"' % (index + 1), styles, count=1)
    return index, styles


def record_uncomputed(
    zf: zipfile.ZipFile, parts: dict[str, bytes], uncomputed: dict[str, list[str]]
) -> dict[str, bytes]:
    """Record the uncomputed cells (custom property) and ask apps to compute on open; the parts
    changed go into `parts`, new parts are returned."""
    names = zf.namelist()
    new: dict[str, bytes] = {}
    custom = read_part(zf, "docProps/custom.xml") if "docProps/custom.xml" in names else None
    if custom is None and not uncomputed:
        return new
    text = (custom or b"").decode("utf-8")
    text = re.sub(r'<property\b[^>]*name="' + re.escape(UNCOMPUTED_PROPERTY) + r'".*?</property>', "", text, flags=re.S)
    if uncomputed:
        if not text:
            text = (
                '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                f'<Properties xmlns="{CUSTOM_NS}" xmlns:vt="{VT_NS}"></Properties>'
            )
        pids = [int(p) for p in re.findall(r'\bpid="([0-9]+)"', text)]
        prop = (
            f'<property fmtid="{FMTID}" pid="{max([1, *pids]) + 1}" name="{UNCOMPUTED_PROPERTY}">'
            # (vt declared here too: a part another program wrote may give that namespace another prefix)
            f'<vt:lpwstr xmlns:vt="{VT_NS}">{_esc(json.dumps(uncomputed))}</vt:lpwstr></property>'
        )
        if "</Properties>" not in text:
            raise Fallback("custom properties in an unexpected form")
        text = text.replace("</Properties>", prop + "</Properties>", 1)
        workbook = read_part(zf, "xl/workbook.xml")
        parts["xl/workbook.xml"] = _full_calc(workbook)
    if custom is not None:
        parts["docProps/custom.xml"] = text.encode("utf-8")
        return new
    new["docProps/custom.xml"] = text.encode("utf-8")
    types = read_part(zf, "[Content_Types].xml")
    override = (
        b'<Override PartName="/docProps/custom.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.custom-properties+xml"/>'
    )
    parts["[Content_Types].xml"] = types.replace(b"</Types>", override + b"</Types>", 1)
    rels = read_part(zf, "_rels/.rels")
    ids = [int(x) for x in re.findall(rb'Id="rId([0-9]+)"', rels)]
    rel = (
        b'<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        b'custom-properties" Target="docProps/custom.xml"/>' % (max([0, *ids]) + 1)
    )
    parts["_rels/.rels"] = rels.replace(b"</Relationships>", rel + b"</Relationships>", 1)
    return new


def _full_calc(workbook: bytes) -> bytes:
    m = re.search(rb"<calcPr\b([^>]*?)(/?)>", workbook)
    if m is not None:
        attrs = re.sub(rb'\s+fullCalcOnLoad="[^"]*"', b"", m.group(1))
        return (
            workbook[: m.start()]
            + b"<calcPr"
            + attrs
            + b' fullCalcOnLoad="1"'
            + m.group(2)
            + b">"
            + workbook[m.end() :]
        )
    for anchor in (b"</definedNames>", b"</sheets>"):
        if anchor in workbook:
            return workbook.replace(anchor, anchor + b'<calcPr fullCalcOnLoad="1"/>', 1)
    raise Fallback("workbook.xml without sheets")


def zip_entry(info: zipfile.ZipInfo, size: int) -> zipfile.ZipInfo:
    """A copy of `info` to write a part of `size` bytes, deflated (big parts fast: level 6 of
    100 MB of XML costs seconds for 10% of size)."""
    entry = copy.copy(info)
    entry.compress_type = zipfile.ZIP_DEFLATED
    level = 1 if size > 8 << 20 else 6
    # ZipFile.open(entry, "w") reads the level from the entry (named compress_level from Python 3.13)
    setattr(entry, "compress_level" if hasattr(entry, "compress_level") else "_compresslevel", level)
    return entry


_LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip entry's local header: signature, ..., name and extra lengths
_RAW_LIMIT = 1 << 30  # parts bigger than this are inflated and deflated again (their headers change size)


def _stored_at(src: zipfile.ZipFile, info: zipfile.ZipInfo) -> int | None:
    """Where the compressed bytes of `info` start in the file of `src`; None when they are not
    copied as they are (encrypted, compressed otherwise than by deflate or not at all, or a local
    header not naming the part)."""
    fp = src.fp
    if (
        fp is None
        or info.flag_bits & 0x1
        or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
        or max(info.file_size, info.compress_size) > _RAW_LIMIT
    ):
        return None
    fp.seek(info.header_offset)
    header = fp.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        return None
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        return None
    name = fp.read(name_length)
    if name not in (info.orig_filename.encode("utf-8"), info.orig_filename.encode("cp437", "replace")):
        return None
    return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length


def copy_part(src: zipfile.ZipFile, info: zipfile.ZipInfo, dst: zipfile.ZipFile) -> None:
    """The part `info` of `src` into `dst` (written in order, to a file that can seek) as it is
    stored: its compressed bytes copied, with its CRC, sizes and compression, so the part is the
    same in the zip too and costs no inflating and deflating. A part that cannot be copied so
    (`_stored_at`) is inflated and deflated again."""
    # (zipfile wraps a file it cannot seek in one without `seekable`, and ends its entries with
    # a data descriptor instead of going back to their header)
    seekable = getattr(dst.fp, "seekable", None)
    start = _stored_at(src, info) if seekable is not None and seekable() else None
    if start is None:
        with src.open(info) as data, dst.open(zip_entry(info, info.file_size), "w") as out:
            shutil.copyfileobj(data, out, 1 << 20)
        return
    assert src.fp is not None and dst.fp is not None
    # written through zipfile as a stored entry of the compressed bytes (so it lands in the
    # central directory), then its header told the part's real compression, CRC and sizes
    entry = copy.copy(info)
    entry.compress_type = zipfile.ZIP_STORED
    entry.file_size = info.compress_size
    left = info.compress_size
    with dst.open(entry, "w") as out:
        while left > 0:
            src.fp.seek(start + info.compress_size - left)
            chunk = src.fp.read(min(left, 1 << 20))
            if not chunk:
                raise zipfile.BadZipFile(f"{info.filename} is cut short")
            out.write(chunk)
            left -= len(chunk)
    entry.compress_type = info.compress_type
    entry.CRC = info.CRC
    entry.file_size = info.file_size
    entry.compress_size = info.compress_size
    end = dst.fp.tell()
    dst.fp.seek(entry.header_offset)
    dst.fp.write(entry.FileHeader(False))
    dst.fp.seek(end)
