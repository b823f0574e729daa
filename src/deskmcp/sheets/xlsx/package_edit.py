"""A change to an .xlsx's formatting, layout, charts or notes, written into its package in place.

`PackageEdit` holds what one call changes: whole small parts (the style sheet, relationships,
content types, a new chart or comments part) and, for each worksheet touched, a `WorksheetEdit`:
the rows it restyles or resizes and the elements around the cell data it sets (`<cols>`,
`<sheetViews>`, `<mergeCells>`, `<drawing>`, `<legacyDrawing>`). `write` streams the package
out with every other part copied as it was, byte for byte, and each changed sheet part written
as its original bytes with those spans replaced.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import zipfile
from bisect import bisect_left
from typing import BinaryIO

from deskmcp.core.errors import BadRequest, NotFound
from deskmcp.sheets.a1 import cell_name
from deskmcp.sheets.xlsx.parts import PackageMap, package_map, read_part
from deskmcp.sheets.xlsx.patch_sheets import CHUNK, ROW, Fallback, Sheet, read_cells
from deskmcp.sheets.xlsx.patch_xml import copy_part, zip_entry
from deskmcp.sheets.xlsx.styles import MINIMAL_STYLES, StyleSheet

REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
STYLES_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"
# The children of <worksheet>, in the order the schema requires them.
WORKSHEET_ORDER = (
    "sheetPr",
    "dimension",
    "sheetViews",
    "sheetFormatPr",
    "cols",
    "sheetData",
    "sheetCalcPr",
    "sheetProtection",
    "protectedRanges",
    "scenarios",
    "autoFilter",
    "sortState",
    "dataConsolidate",
    "customSheetViews",
    "mergeCells",
    "phoneticPr",
    "conditionalFormatting",
    "dataValidations",
    "hyperlinks",
    "printOptions",
    "pageMargins",
    "pageSetup",
    "headerFooter",
    "rowBreaks",
    "colBreaks",
    "customProperties",
    "cellWatches",
    "ignoredErrors",
    "smartTags",
    "drawing",
    "legacyDrawing",
    "legacyDrawingHF",
    "drawingHF",
    "picture",
    "oleObjects",
    "controls",
    "webPublishItems",
    "tableParts",
    "extLst",
)
_CELL_OPEN = re.compile(rb"^<c\b([^>]*?)(/?)>")
_DIMENSION = re.compile(rb'<dimension\b[^>]*?\bref="([^"]*)"[^>]*/>')
_CELL_REF = re.compile(r"\$?([A-Z]{1,3})\$?([0-9]+)")


def not_patchable(part: str, why: str) -> BadRequest:
    return BadRequest(
        f"The sheet part {part} cannot be changed in place ({why}). Re-save the file from Excel or LibreOffice "
        "and try again.",
        {"part": part},
    )


def element_pattern(tag: str) -> re.Pattern[bytes]:
    """One `<tag>` element, empty or with content (not the longer names starting the same)."""
    t = tag.encode()
    return re.compile(rb"<" + t + rb"\b[^>]*?(?:/>|>.*?</" + t + rb">)", re.S)


def with_attribute(element: bytes, name: bytes, value: bytes | None) -> bytes:
    """A start tag (or empty element) `element` with attribute `name` set to `value` (None removes it)."""
    m = re.match(rb"<([\w:]+)((?:\s+[\w:]+=\"[^\"]*\")*)\s*(/?)>", element)
    if m is None:
        raise ValueError(element[:80])
    attrs = re.sub(rb"\s+" + re.escape(name) + rb'="[^"]*"', b"", m.group(2))
    if value is not None:
        attrs += b" " + name + b'="' + value + b'"'
    return b"<" + m.group(1) + attrs + m.group(3) + b">" + element[m.end() :]


def relationships_of(data: bytes, part: str) -> list[tuple[str, str, str]]:
    """(id, type, target part) of each relationship in the relationships part `data` of `part`
    (external targets left as written)."""
    found = []
    for m in re.finditer(rb"<Relationship\b[^>]*>", data):
        attrs = dict(re.findall(rb'(\w+)="([^"]*)"', m.group(0)))
        target = attrs.get(b"Target", b"").decode("utf-8")
        if attrs.get(b"TargetMode") != b"External":
            target = (
                target.lstrip("/")
                if target.startswith("/")
                else posixpath.normpath(posixpath.join(posixpath.dirname(part), target))
            )
        found.append((attrs.get(b"Id", b"").decode(), attrs.get(b"Type", b"").decode(), target))
    return found


class WorksheetEdit:
    """The changes of one worksheet part: rows (cells and row attributes) and the elements before
    and after the cell data."""

    def __init__(self, title: str, part: str, data: bytearray) -> None:
        try:
            self.sheet = Sheet.load(title, part, data)
        except Fallback as exc:
            raise not_patchable(part, str(exc)) from exc
        self.title = title
        self.part = part
        self.head = bytes(data[: self.sheet.start])
        self._tail_start = self.sheet.end + len(b"</sheetData>")
        self.tail = bytes(data[self._tail_start :])
        self._original = (self.head, self.tail)
        self.cells: dict[int, dict[int, bytes]] = {}
        self.row_attrs: dict[int, dict[bytes, bytes | None]] = {}

    @property
    def changed(self) -> bool:
        return bool(self.cells or self.row_attrs) or (self.head, self.tail) != self._original

    # -- cells and rows ----------------------------------------------------------------------------

    def cell(self, row: int, col: int) -> bytes | None:
        """The cell's element as it stands after the changes so far (None: no element)."""
        changed = self.cells.get(row, {}).get(col)
        if changed is not None:
            return changed
        found = self.sheet.cells(row).get(col)
        return found.raw if found is not None else None

    def set_cell(self, row: int, col: int, element: bytes) -> None:
        self.cells.setdefault(row, {})[col] = element

    def row_attribute(self, row: int, name: bytes) -> bytes | None:
        if name in self.row_attrs.get(row, {}):
            return self.row_attrs[row][name]
        span = self.sheet.span(row)
        if span is None:
            return None
        m = re.search(
            rb"\s" + re.escape(name) + rb'="([^"]*)"', self.sheet.data[span[0] : span[0] + 4096].split(b">")[0]
        )
        return m.group(1) if m else None

    def set_row_attribute(self, row: int, name: bytes, value: bytes | None) -> None:
        self.row_attrs.setdefault(row, {})[name] = value

    def restyle(self, row: int, col: int, xf: int) -> None:
        """Give the cell the cell format `xf`, keeping its value (an empty cell is added if needed)."""
        raw = self.cell(row, col)
        s = None if xf == 0 else str(xf).encode()
        if raw is None:
            if s is not None:
                self.set_cell(row, col, b'<c r="' + cell_name(row, col).encode() + b'" s="' + s + b'"/>')
            return
        m = _CELL_OPEN.match(raw)
        if m is None:
            raise not_patchable(self.part, f"cell {cell_name(row, col)} is not in the plain form")
        attrs = re.sub(rb'\s+s="[^"]*"', b"", m.group(1))
        if s is not None:
            attrs = re.sub(rb'(\sr="[^"]*")', lambda r: r.group(1) + b' s="' + s + b'"', attrs, count=1)
            if b' s="' not in attrs:
                attrs += b' s="' + s + b'"'
        self.set_cell(row, col, b"<c" + attrs + m.group(2) + b">" + raw[m.end() :])

    def cell_style(self, row: int, col: int, column_styles: dict[int, int]) -> int:
        """The cell format a cell shows: its own, else its row's (customFormat), else its column's."""
        raw = self.cell(row, col)
        if raw is not None:
            m = re.search(rb'\ss="([0-9]+)"', raw.split(b">", 1)[0])
            return int(m.group(1)) if m else 0
        if self.row_attribute(row, b"customFormat") in (b"1", b"true"):
            s = self.row_attribute(row, b"s")
            if s is not None and s.isdigit():
                return int(s)
        return column_styles.get(col, 0)

    # -- elements around the cell data ------------------------------------------------------------

    def find(self, tag: str) -> bytes | None:
        region = self.head if WORKSHEET_ORDER.index(tag) < WORKSHEET_ORDER.index("sheetData") else self.tail
        m = element_pattern(tag).search(region)
        return m.group(0) if m else None

    def put(self, tag: str, element: bytes | None) -> None:
        """Set the worksheet's `<tag>` element (None removes it), in its place in the schema's order."""
        before = WORKSHEET_ORDER.index(tag) < WORKSHEET_ORDER.index("sheetData")
        region = self.head if before else self.tail
        pattern = element_pattern(tag)
        m = pattern.search(region)
        if m is not None:
            region = region[: m.start()] + (element or b"") + region[m.end() :]
        elif element is not None:
            at = self._place(region, tag, before)
            region = region[:at] + element + region[at:]
        if before:
            self.head = region
        else:
            self.tail = region

    def _place(self, region: bytes, tag: str, before: bool) -> int:
        """Where a new `<tag>` goes in `region`: before the first element the schema puts after it."""
        later = WORKSHEET_ORDER[WORKSHEET_ORDER.index(tag) + 1 :]
        positions = [m.start() for name in later if (m := re.search(rb"<" + name.encode() + rb"[\s/>]", region))]
        if positions:
            return min(positions)
        if before:
            return len(region)  # just before <sheetData>
        end = region.rfind(b"</worksheet>")
        if end < 0:
            raise not_patchable(self.part, "no end of the worksheet")
        return end

    def namespace_prefix(self, uri: str) -> bytes:
        """The prefix the worksheet gives the namespace `uri`, declared on `<worksheet>` if needed."""
        root = re.search(rb"<worksheet\b[^>]*>", self.head)
        if root is None:
            raise not_patchable(self.part, "no <worksheet> element without a prefix")
        m = re.search(rb'\sxmlns:([\w.-]+)="' + re.escape(uri.encode()) + rb'"', root.group(0))
        if m is not None:
            return m.group(1)
        used = set(re.findall(rb"\sxmlns:([\w.-]+)=", root.group(0)))
        prefix = b"r" if b"r" not in used else b"rel"
        tag = root.group(0)
        new = tag[:-1] + b" xmlns:" + prefix + b'="' + uri.encode() + b'">'
        if tag.endswith(b"/>"):
            raise not_patchable(self.part, "an empty worksheet element")
        self.head = self.head[: root.start()] + new + self.head[root.end() :]
        return prefix

    # -- the bytes --------------------------------------------------------------------------------

    def _dimension(self) -> None:
        """Widen `<dimension>` to the rows and columns given cells."""
        m = _DIMENSION.search(self.head)
        cells = [(r, c) for r, cols in self.cells.items() for c in cols]
        if m is None or not cells:
            return
        refs = [(int(x.group(2)), x.group(1)) for x in _CELL_REF.finditer(m.group(1).decode("ascii"))]
        if not refs:
            return
        from deskmcp.sheets.a1 import column_index

        rows = [r for r, _ in refs] + [r for r, _ in cells]
        cols = [column_index(c) for _, c in refs] + [c for _, c in cells]
        ref = cell_name(min(rows), min(cols)) + ":" + cell_name(max(rows), max(cols))
        if ref.split(":")[0] == ref.split(":")[1]:
            ref = ref.split(":")[0]
        element = m.group(0)[: m.start(1) - m.start()] + ref.encode() + m.group(0)[m.end(1) - m.start() :]
        self.head = self.head[: m.start()] + element + self.head[m.end() :]

    def edits(self) -> list[tuple[int, int, bytes]]:
        """The spans of the original part replaced, in order: (start, end, new bytes)."""
        self._dimension()
        sheet = self.sheet
        data = sheet.data
        existing = sorted(sheet.rows)
        out: list[tuple[int, int, int, bytes]] = []
        for order, row in enumerate(sorted({*self.cells, *self.row_attrs})):
            span = sheet.span(row)
            if span is not None:
                start, end = span
                head = ROW.match(data, start)
                assert head is not None
                attrs = re.sub(rb'\s+spans="[^"]*"', b"", head.group(1))
                cells = {c: cell.raw for c, cell in sheet.cells(row).items()}
            else:
                i = bisect_left(existing, row)
                start = end = sheet.rows[existing[i]] if i < len(existing) else sheet.end
                attrs = b' r="' + str(row).encode() + b'"'
                cells = {}
            cells.update(self.cells.get(row, {}))
            for name, value in self.row_attrs.get(row, {}).items():
                attrs = with_attribute(b"<row" + attrs + b">", name, value)[4:-1]
            body = b"".join(cells[c] for c in sorted(cells))
            element = b"<row" + attrs + (b">" + body + b"</row>" if body else b"/>")
            out.append((start, end, order, element))
        if self.head != self._original[0]:
            out.append((0, sheet.start, -2, self.head))
        if self.tail != self._original[1]:
            out.append((self._tail_start, len(data), len(out) + 1, self.tail))
        out.sort(key=lambda e: (e[0], e[1], e[2]))
        return [(start, end, new) for start, end, _order, new in out]


class PackageEdit:
    """The parts one change of an .xlsx replaces or adds, written out in place of the file."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self.zf = zf
        self.names = set(zf.namelist())
        self.where: PackageMap = package_map(zf)
        self.parts: dict[str, bytes] = {}  # replaced or added, by part name
        self.worksheets: dict[str, WorksheetEdit] = {}
        self._styles: StyleSheet | None = None

    def exists(self, name: str) -> bool:
        return name in self.parts or name in self.names

    def read(self, name: str) -> bytes:
        if name in self.parts:
            return self.parts[name]
        return read_part(self.zf, name)

    def set(self, name: str, data: bytes) -> None:
        self.parts[name] = data

    def worksheet(self, title: str | None) -> WorksheetEdit:
        sheets = list(self.where.sheets)
        if title is None:
            if not sheets:
                raise NotFound("The workbook has no worksheet.", {})
            title = sheets[0]
        part = self.where.sheets.get(title)
        if part is None:
            raise NotFound(f"No sheet {title!r}. Sheets: {', '.join(sheets)}.", {"sheet": title, "sheets": sheets})
        if part not in self.worksheets:
            self.worksheets[part] = WorksheetEdit(title, part, read_cells(self.zf, part))
        return self.worksheets[part]

    # -- styles ------------------------------------------------------------------------------------

    @property
    def styles(self) -> StyleSheet:
        if self._styles is None:
            part = self.where.styles
            if part and self.exists(part):
                self._styles = StyleSheet(self.read(part))
            else:
                self._styles = StyleSheet(MINIMAL_STYLES)
        return self._styles

    def _save_styles(self) -> None:
        if self._styles is None or self._styles.data == self._styles.to_bytes():
            return
        part = self.where.styles
        if part and self.exists(part):
            self.set(part, self._styles.to_bytes())
            return
        self.set("xl/styles.xml", self._styles.to_bytes())
        self.content_override("xl/styles.xml", STYLES_TYPE)
        self.relate("xl/workbook.xml", f"{REL_NS}/styles", "xl/styles.xml")

    # -- relationships and content types ------------------------------------------------------------

    @staticmethod
    def rels_name(part: str) -> str:
        folder, name = posixpath.split(part)
        return posixpath.join(folder, "_rels", name + ".rels")

    def relationships(self, part: str) -> list[tuple[str, str, str]]:
        """(id, type, target part) of each relationship of `part` (external targets left as written)."""
        name = self.rels_name(part)
        return relationships_of(self.read(name), part) if self.exists(name) else []

    def relate(self, source: str, kind: str, target: str) -> str:
        """Add a relationship from part `source` to part `target`; its new id."""
        name = self.rels_name(source)
        data = (
            self.read(name)
            if self.exists(name)
            else b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>'
        )
        data = re.sub(rb"<Relationships\b([^>]*?)\s*/>", rb"<Relationships\1></Relationships>", data, count=1)
        taken = {i for i, _t, _p in self.relationships(source)} if self.exists(name) else set()
        n = 1
        while f"rId{n}" in taken:
            n += 1
        rel_id = f"rId{n}"
        relative = posixpath.relpath(target, posixpath.dirname(source))
        element = f'<Relationship Id="{rel_id}" Type="{kind}" Target="{relative}"/>'.encode()
        if b"</Relationships>" not in data:
            raise BadRequest(f"The relationships part {name} is not in the usual form.", {"part": name})
        self.set(name, data.replace(b"</Relationships>", element + b"</Relationships>", 1))
        return rel_id

    def content_override(self, part: str, content_type: str) -> None:
        types = self.read("[Content_Types].xml")
        if f'PartName="/{part}"'.encode() in types:
            return
        element = f'<Override PartName="/{part}" ContentType="{content_type}"/>'.encode()
        self.set("[Content_Types].xml", types.replace(b"</Types>", element + b"</Types>", 1))

    def content_default(self, extension: str, content_type: str) -> None:
        types = self.read("[Content_Types].xml")
        if re.search(rb'<Default\b[^>]*Extension="' + extension.encode() + rb'"', types, re.I):
            return
        element = f'<Default Extension="{extension}" ContentType="{content_type}"/>'.encode()
        self.set("[Content_Types].xml", types.replace(b"</Types>", element + b"</Types>", 1))

    def free_name(self, pattern: str) -> str:
        """The first `pattern.format(n)` (n from 1) that names no part."""
        n = 1
        while self.exists(pattern.format(n)):
            n += 1
        return pattern.format(n)

    # -- writing -----------------------------------------------------------------------------------

    def write(self, handle: BinaryIO) -> None:
        """The package into `handle`: parts changed or added as set, sheet parts patched, every other
        part copied unchanged."""
        self._save_styles()
        edited = {part: ws for part, ws in self.worksheets.items() if ws.changed}
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in self.zf.infolist():
                body = self.parts.get(info.filename)
                if body is not None:
                    dst.writestr(zip_entry(info, len(body)), body)
                    continue
                ws = edited.get(info.filename)
                if ws is not None:
                    edits = ws.edits()
                    data = ws.sheet.data
                    size = len(data) + sum(len(new) - (end - start) for start, end, new in edits)
                    view = memoryview(data)
                    with dst.open(zip_entry(info, size), "w", force_zip64=size > 1 << 30) as out:
                        pos = 0
                        for start, end, new in [*edits, (len(view), len(view), b"")]:
                            for at in range(pos, start, CHUNK):
                                out.write(view[at : min(at + CHUNK, start)])
                            out.write(new)
                            pos = end
                    continue
                copy_part(self.zf, info, dst)
            now = dt.datetime.now().timetuple()[:6]
            for name, body in self.parts.items():
                if name not in self.names:
                    entry = zipfile.ZipInfo(name, date_time=now)
                    entry.compress_type = zipfile.ZIP_DEFLATED
                    dst.writestr(entry, body)
