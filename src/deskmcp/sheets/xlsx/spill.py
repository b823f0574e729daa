"""Dynamic array formulas as Excel 365 stores them.

A formula whose result spills over several cells is stored in its top-left cell (the anchor) as
an array formula over the cells it covers, `<c r="D2" cm="1"><f t="array" ref="D2:D5">...</f>`,
each covered cell holding its value without a formula. `cm` is a 1-based index into the cell
metadata of the workbook's metadata part (`xl/metadata.xml`, related to the workbook by a
`sheetMetadata` relationship), whose record points at the `XLDAPR` metadata type and at a
future-metadata block holding `<xda:dynamicArrayProperties fDynamic="1"/>` (MS-XLSX 2.6.2).
Without that metadata Excel reads the cell as a legacy (Ctrl+Shift+Enter) array formula. A spill
blocked by cells in its way is stored as `ref` over the anchor alone with the value `#SPILL!`.
"""

from __future__ import annotations

import posixpath
import re
import zipfile

from deskmcp.sheets.a1 import cell_name, column_index
from deskmcp.sheets.xlsx.cellxml import ATTR, CELL, REF
from deskmcp.sheets.xlsx.parts import read_part
from deskmcp.sheets.xlsx.patch_sheets import Fallback, Sheet

METADATA_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/sheetMetadata"
METADATA_CONTENT = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheetMetadata+xml"
DYNAMIC_ARRAY_NS = "http://schemas.microsoft.com/office/spreadsheetml/2017/dynamicarray"
DYNAMIC_ARRAY_EXT = "{bdbb8cdc-fa1e-496e-a857-3c3f30c029c3}"
MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"

XLDAPR_TYPE = (
    b'<metadataType name="XLDAPR" minSupportedVersion="120000" copy="1" pasteAll="1" pasteValues="1" '
    b'merge="1" splitFirst="1" rowColShift="1" clearFormats="1" clearComments="1" assign="1" coerce="1" '
    b'cellMeta="1"/>'
)
XLDAPR_BLOCK = (
    b'<bk><extLst><ext uri="'
    + DYNAMIC_ARRAY_EXT.encode()
    + b'"><xda:dynamicArrayProperties xmlns:xda="'
    + DYNAMIC_ARRAY_NS.encode()
    + b'" fDynamic="1" fCollapsed="0"/></ext></extLst></bk>'
)
NEW_METADATA = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<metadata xmlns="' + MAIN_NS.encode() + b'"><metadataTypes count="1">' + XLDAPR_TYPE + b"</metadataTypes>"
    b'<futureMetadata name="XLDAPR" count="1">' + XLDAPR_BLOCK + b"</futureMetadata>"
    b'<cellMetadata count="1"><bk><rc t="1" v="0"/></bk></cellMetadata></metadata>'
)

_ARRAY_FORMULA = re.compile(rb'<f\b[^>]*?\bt="array"[^>]*?\bref="([A-Z]{1,3})([0-9]+)(?::([A-Z]{1,3})([0-9]+))?"')
_BLOCK = re.compile(rb"<bk\b[^>]*?(?:/>|>(.*?)</bk>)", re.S)

Rect = tuple[int, int, int, int]  # first row, first column, last row, last column


def metadata_part(zf: zipfile.ZipFile, rels: bytes | None = None) -> str | None:
    """The workbook's metadata part, as its relationships name it (None: it has none)."""
    data = rels if rels is not None else read_part(zf, "xl/_rels/workbook.xml.rels")
    for m in re.finditer(rb"<Relationship\b[^>]*>", data):
        attrs = dict(ATTR.findall(m.group(0)))
        if attrs.get(b"Type", b"").decode() == METADATA_REL:
            target = attrs.get(b"Target", b"").decode("utf-8")
            return target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
    return None


def _blocks(data: bytes, tag: bytes) -> tuple[re.Match[bytes] | None, list[bytes]]:
    m = re.search(rb"<" + tag + rb"\b[^>]*?(?:/>|>(.*?)</" + tag + rb">)", data, re.S)
    if m is None:
        return None, []
    return m, [b.group(0) for b in _BLOCK.finditer(m.group(1) or b"")]


def _type_index(data: bytes) -> int | None:
    """The 1-based index of the XLDAPR metadata type."""
    m = re.search(rb"<metadataTypes\b[^>]*?(?:/>|>(.*?)</metadataTypes>)", data, re.S)
    if m is None:
        return None
    for i, t in enumerate(re.findall(rb"<metadataType\b[^>]*>", m.group(1) or b""), 1):
        if dict(ATTR.findall(t)).get(b"name") == b"XLDAPR":
            return i
    return None


def _future_index(data: bytes) -> int | None:
    """The 0-based index of the XLDAPR future-metadata block saying `fDynamic="1"`."""
    for m in re.finditer(rb'<futureMetadata\b[^>]*\bname="XLDAPR"[^>]*?(?:/>|>(.*?)</futureMetadata>)', data, re.S):
        for i, block in enumerate(_BLOCK.finditer(m.group(1) or b"")):
            if re.search(rb':?dynamicArrayProperties\b[^>]*\bfDynamic="(?:1|true)"', block.group(0)):
                return i
    return None


def dynamic_cm(data: bytes) -> int | None:
    """The `cm` value meaning "dynamic array formula" in the metadata part `data` (None: none does)."""
    t, v = _type_index(data), _future_index(data)
    if t is None or v is None:
        return None
    _m, blocks = _blocks(data, b"cellMetadata")
    for i, block in enumerate(blocks, 1):
        rc = re.search(rb"<rc\b([^>]*)/?>", block)
        if rc is not None:
            attrs = dict(ATTR.findall(rc.group(1)))
            if attrs.get(b"t") == str(t).encode() and attrs.get(b"v") == str(v).encode():
                return i
    return None


def existing_dynamic_cm(zf: zipfile.ZipFile) -> int | None:
    """The `cm` value of dynamic array formulas in this package, when its metadata part has one."""
    part = metadata_part(zf)
    if part is None or part not in zf.namelist():
        return None
    return dynamic_cm(read_part(zf, part))


def _counted(data: bytes, tag: bytes, count: int) -> bytes:
    return re.sub(rb"(<" + tag + rb'\b[^>]*?\bcount=")[0-9]+"', lambda m: m.group(1) + b'%d"' % count, data, count=1)


def _insert_before(data: bytes, element: bytes, followers: tuple[bytes, ...]) -> bytes:
    """`element` placed in `<metadata>` before the first of `followers` present (else at its end)."""
    for tag in followers:
        m = re.search(rb"<" + tag + rb"\b", data)
        if m is not None:
            return data[: m.start()] + element + data[m.start() :]
    end = data.rfind(b"</metadata>")
    if end < 0:
        raise Fallback("the metadata part is not in the usual form")
    return data[:end] + element + data[end:]


def with_dynamic_cm(data: bytes) -> tuple[int, bytes]:
    """The metadata part `data` given what dynamic array formulas need, and their `cm` value."""
    found = dynamic_cm(data)
    if found is not None:
        return found, data
    data = re.sub(rb"<metadata\b([^>]*?)\s*/>", rb"<metadata\1></metadata>", data, count=1)
    t = _type_index(data)
    if t is None:
        m = re.search(rb"<metadataTypes\b[^>]*?(?:/>|>(.*?)</metadataTypes>)", data, re.S)
        if m is None:
            data = _insert_before(
                data,
                b'<metadataTypes count="1">' + XLDAPR_TYPE + b"</metadataTypes>",
                (b"metadataStrings", b"mdxMetadata", b"futureMetadata", b"cellMetadata", b"valueMetadata", b"extLst"),
            )
            t = 1
        else:
            t = len(re.findall(rb"<metadataType\b", m.group(1) or b"")) + 1
            body = (m.group(1) or b"") + XLDAPR_TYPE
            data = data[: m.start()] + b'<metadataTypes count="%d">' % t + body + b"</metadataTypes>" + data[m.end() :]
    v = _future_index(data)
    if v is None:
        m = re.search(rb'<futureMetadata\b[^>]*\bname="XLDAPR"[^>]*?(?:/>|>(.*?)</futureMetadata>)', data, re.S)
        if m is None:
            data = _insert_before(
                data,
                b'<futureMetadata name="XLDAPR" count="1">' + XLDAPR_BLOCK + b"</futureMetadata>",
                (b"cellMetadata", b"valueMetadata", b"extLst"),
            )
            v = 0
        else:
            v = len(_BLOCK.findall(m.group(1) or b""))
            body = (m.group(1) or b"") + XLDAPR_BLOCK
            element = b'<futureMetadata name="XLDAPR" count="%d">' % (v + 1) + body + b"</futureMetadata>"
            data = data[: m.start()] + element + data[m.end() :]
    record = b'<bk><rc t="%d" v="%d"/></bk>' % (t, v)
    m, blocks = _blocks(data, b"cellMetadata")
    if m is None:
        data = _insert_before(
            data, b'<cellMetadata count="1">' + record + b"</cellMetadata>", (b"valueMetadata", b"extLst")
        )
        return 1, data
    body = (m.group(1) or b"") + record
    element = b'<cellMetadata count="%d">' % (len(blocks) + 1) + body + b"</cellMetadata>"
    return len(blocks) + 1, data[: m.start()] + element + data[m.end() :]


def add_dynamic_metadata(zf: zipfile.ZipFile, parts: dict[str, bytes], new: dict[str, bytes]) -> int:
    """Make the package say what dynamic array formulas are: the metadata part (added, with its
    content type and workbook relationship, when the workbook has none) into `parts` (changed) or
    `new` (added); returns their `cm` value."""
    names = set(zf.namelist())

    def current(name: str) -> bytes:
        return parts[name] if name in parts else read_part(zf, name)

    rels = current("xl/_rels/workbook.xml.rels")
    part = metadata_part(zf, rels)
    if part is not None and part in names:
        cm, data = with_dynamic_cm(current(part))
        parts[part] = data
        return cm
    part = "xl/metadata.xml"
    n = 1
    while part in names or part in new:
        n += 1
        part = f"xl/metadata{n}.xml"
    new[part] = NEW_METADATA
    types = current("[Content_Types].xml")
    if f'PartName="/{part}"'.encode() not in types:
        override = f'<Override PartName="/{part}" ContentType="{METADATA_CONTENT}"/>'.encode()
        if b"</Types>" not in types:
            raise Fallback("[Content_Types].xml is not in the usual form")
        parts["[Content_Types].xml"] = types.replace(b"</Types>", override + b"</Types>", 1)
    rels = re.sub(rb"<Relationships\b([^>]*?)\s*/>", rb"<Relationships\1></Relationships>", rels, count=1)
    if b"</Relationships>" not in rels:
        raise Fallback("the workbook's relationships are not in the usual form")
    taken = {int(x) for x in re.findall(rb'\bId="rId([0-9]+)"', rels)}
    rid = max(taken, default=0) + 1
    target = posixpath.relpath(part, "xl")
    element = f'<Relationship Id="rId{rid}" Type="{METADATA_REL}" Target="{target}"/>'.encode()
    parts["xl/_rels/workbook.xml.rels"] = rels.replace(b"</Relationships>", element + b"</Relationships>", 1)
    return 1


def dynamic_anchors(sheet: Sheet, cm: int | None) -> dict[tuple[int, int], Rect]:
    """The dynamic array formulas of `sheet` (cells whose `cm` is `cm`): anchor -> the cells its
    `ref` covers."""
    found: dict[tuple[int, int], Rect] = {}
    if cm is None:
        return found
    data = sheet.data
    at = data.find(b't="array"', sheet.start, sheet.end)
    while at >= 0:
        start = data.rfind(b"<c ", sheet.start, at)
        cell = CELL.match(data, start) if start >= 0 else None
        if cell is not None and cell.end() > at:
            attrs = dict(ATTR.findall(cell.group(1)))
            ref = REF.search(cell.group(1))
            f = _ARRAY_FORMULA.search(cell.group(2) or b"")
            if ref is not None and f is not None and attrs.get(b"cm") == str(cm).encode():
                r0, c0 = int(f.group(2)), column_index(f.group(1).decode())
                r1, c1 = (int(f.group(4)), column_index(f.group(3).decode())) if f.group(3) else (r0, c0)
                found[(int(ref.group(2)), column_index(ref.group(1).decode()))] = (r0, c0, r1, c1)
        at = data.find(b't="array"', at + 9, sheet.end)
    return found


def ref_text(rect: Rect) -> bytes:
    r0, c0, r1, c1 = rect
    first = cell_name(r0, c0)
    return (first if (r0, c0) == (r1, c1) else first + ":" + cell_name(r1, c1)).encode()
