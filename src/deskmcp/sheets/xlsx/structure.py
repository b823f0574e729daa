"""Structure edits of an .xlsx made on its package in place: a sheet added, rows inserted or
deleted, with everything that points into the moved rows moved along.

A whole-workbook save (openpyxl) drops charts, pivot tables, sparklines and the other parts it
does not know, and moves neither defined names nor conditional formats. Here only the parts that
hold a reference into the moved rows are rewritten, as text: the sheet's rows and cells, every
sheet's formulas naming it, defined names (print areas and the filter's `_xlnm._FilterDatabase`
among them), merged cells, conditional formats and data validations (also those kept in the
sheet's extensions, with sparklines), the autofilter, hyperlinks, tables, pivot table locations and
pivot cache sources, chart series, comments and notes (and the drawing shapes showing them), and
the anchors of pictures and charts. Every other part is copied unchanged. Shared formulas of a
sheet being changed are written out cell by cell (each cell's own text), so no cell is left reading
through an anchor that moved differently. What cannot be moved safely (a deletion taking a table's
header or a pivot table's cells) raises `BadRequest` naming it; notes and threaded comments in
deleted rows are deleted with them. Anything this code cannot read exactly raises `Fallback`.
"""

from __future__ import annotations

import html
import posixpath
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.a1 import GRID_ROWS, quote_sheet
from deskmcp.sheets.formulas.engine import shift_rows
from deskmcp.sheets.xlsx.cellxml import plain, unescape, xml_text
from deskmcp.sheets.xlsx.parts import MAX_CELLS_PART_BYTES, PackageMap, read_part
from deskmcp.sheets.xlsx.patch_sheets import Fallback, translate

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
WORKSHEET_TYPE = REL_NS + "/worksheet"
WORKSHEET_CONTENT = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"


@dataclass
class StructureEdit:
    """A change of a workbook's structure: `kind` is `add_sheet` (a new empty sheet titled
    `sheet`), `insert_rows` (`count` empty rows before row `at` of `sheet`), `delete_rows`,
    `rename_sheet` (to `title`), `duplicate_sheet` (a copy titled `title`) or `delete_sheet` (those
    three made by `sheet_edit`)."""

    kind: str
    sheet: str
    at: int = 0
    count: int = 0
    title: str = ""
    """`rename_sheet`: the sheet's new title; `duplicate_sheet`: the copy's (`delete_sheet` takes none)."""
    report: list[str] = field(default_factory=list)
    """Filled with the formulas the save left without a value."""


Parts = dict[str, bytes | None]
"""The parts a structure edit replaces or adds (None: removed)."""


def restructure(zf: zipfile.ZipFile, where: PackageMap, edit: StructureEdit) -> Parts:
    """The parts of the package `edit` changes, adds or removes."""
    if edit.kind == "add_sheet":
        return _add_sheet(zf, edit.sheet)
    if edit.kind in ("insert_rows", "delete_rows"):
        delta = edit.count if edit.kind == "insert_rows" else -edit.count
        return RowMove(zf, where, edit.sheet, edit.at, delta).parts()
    raise ValueError(edit.kind)


def _text(zf: zipfile.ZipFile, name: str, limit: int | None = None) -> str:
    data = read_part(zf, name, limit) if limit is not None else read_part(zf, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Fallback(f"{name} is not UTF-8") from exc


def rels_of(part: str) -> str:
    folder, name = posixpath.split(part)
    return posixpath.join(folder, "_rels", name + ".rels")


def related(zf: zipfile.ZipFile, part: str) -> list[tuple[str, str, str]]:
    """(id, type's last word, part path) of each relationship of `part` to another part."""
    rels = rels_of(part)
    if rels not in zf.namelist():
        return []
    found = []
    for m in re.finditer(r"<(?:\w+:)?Relationship\b([^>]*)/?>", _text(zf, rels)):
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if attrs.get("TargetMode") == "External":
            continue
        target = html.unescape(attrs.get("Target", ""))
        path = (
            target.lstrip("/")
            if target.startswith("/")
            else posixpath.normpath(posixpath.join(posixpath.dirname(part), target))
        )
        found.append((attrs.get("Id", ""), attrs.get("Type", "").rsplit("/", 1)[-1], path))
    return found


def titles_in_app(zf: zipfile.ZipFile, out: Parts, change: Callable[[list[str]], list[str]]) -> None:
    """`docProps/app.xml`'s list of worksheet titles (`TitlesOfParts`, counted in `HeadingPairs`)
    replaced by `change(titles)`, when the part lists them the way Excel writes it."""
    name = "docProps/app.xml"
    if name not in zf.namelist():
        return
    existing = out.get(name)
    text = existing.decode("utf-8") if existing is not None else _text(zf, name)
    pairs = re.search(r"<HeadingPairs>\s*<vt:vector\b[^>]*>(.*?)</vt:vector>\s*</HeadingPairs>", text, re.S)
    titles = re.search(
        r"(<TitlesOfParts>\s*<vt:vector\b[^>]*?size=\")([0-9]+)(\"[^>]*>)(.*?)(</vt:vector>)", text, re.S
    )
    if pairs is None or titles is None:
        return
    variants = re.findall(r"<vt:variant>(.*?)</vt:variant>", pairs.group(1), re.S)
    labels = [re.search(r"<vt:lpstr>(.*?)</vt:lpstr>", v, re.S) for v in variants[0::2]]
    counts = [re.search(r"<vt:i4>([0-9]+)</vt:i4>", v) for v in variants[1::2]]
    if any(x is None for x in labels) or any(x is None for x in counts) or len(labels) != len(counts):
        return
    entries = re.findall(r"<vt:lpstr>(.*?)</vt:lpstr>", titles.group(4), re.S)
    start = 0
    for label, count in zip(labels, counts, strict=True):
        assert label is not None and count is not None
        n = int(count.group(1))
        if label.group(1) in ("Worksheets", "Arbeitsblätter", "Feuilles de calcul"):
            sheets = [html.unescape(e) for e in entries[start : start + n]]
            new = change(sheets)
            entries[start : start + n] = [_escape(t) for t in new]
            count_new = len(new)
            pairs_text = pairs.group(0)
            i4 = list(re.finditer(r"<vt:i4>([0-9]+)</vt:i4>", pairs_text))[counts.index(count)]
            pairs_text = pairs_text[: i4.start(1)] + str(count_new) + pairs_text[i4.end(1) :]
            body = "".join(f"<vt:lpstr>{e}</vt:lpstr>" for e in entries)
            text = (
                text[: titles.start()]
                + titles.group(1)
                + str(len(entries))
                + titles.group(3)
                + body
                + titles.group(5)
                + text[titles.end() :]
            )
            text = text.replace(pairs.group(0), pairs_text, 1)
            out[name] = text.encode("utf-8")
            return
        start += n


# -- adding a sheet ---------------------------------------------------------------------------------

_EMPTY_SHEET = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f'<worksheet xmlns="{MAIN_NS}" xmlns:r="{REL_NS}"><dimension ref="A1"/>'
    '<sheetViews><sheetView workbookViewId="0"/></sheetViews><sheetFormatPr defaultRowHeight="15"/>'
    '<sheetData/><pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>'
    "</worksheet>"
)


def _add_sheet(zf: zipfile.ZipFile, title: str) -> Parts:
    names = set(zf.namelist())
    n = 1
    while f"xl/worksheets/sheet{n}.xml" in names:
        n += 1
    part = f"xl/worksheets/sheet{n}.xml"
    workbook = _text(zf, "xl/workbook.xml")
    sheets = re.search(r"<((?:\w+:)?)sheets\b[^>]*>(.*?)</\1sheets>", workbook, re.S)
    if sheets is None:
        raise Fallback("workbook.xml without a list of sheets")
    prefix = sheets.group(1)
    rel_attr = re.search(r'<(?:\w+:)?sheet\b[^>]*?\s(\w+):id="', sheets.group(2))
    if rel_attr is None:
        raise Fallback("the sheets of workbook.xml name no relationship")
    ids = [int(x) for x in re.findall(r'\ssheetId="([0-9]+)"', sheets.group(2))]
    rels_part = "xl/_rels/workbook.xml.rels"
    rels = _text(zf, rels_part)
    taken = set(re.findall(r'\sId="([^"]*)"', rels))
    k = len(taken) + 1
    while f"rId{k}" in taken:
        k += 1
    rid = f"rId{k}"
    element = (
        f'<{prefix}sheet xmlns:{rel_attr.group(1)}="{REL_NS}" name="{html.escape(title)}" '
        f'sheetId="{max([0, *ids]) + 1}" {rel_attr.group(1)}:id="{rid}"/>'
    )
    workbook = workbook[: sheets.end(2)] + element + workbook[sheets.end(2) :]
    if "</Relationships>" not in rels:
        raise Fallback("workbook relationships in an unexpected form")
    rels = rels.replace(
        "</Relationships>",
        f'<Relationship Id="{rid}" Type="{WORKSHEET_TYPE}" Target="worksheets/sheet{n}.xml"/></Relationships>',
        1,
    )
    types = _text(zf, "[Content_Types].xml")
    if "</Types>" not in types:
        raise Fallback("[Content_Types].xml in an unexpected form")
    types = types.replace("</Types>", f'<Override PartName="/{part}" ContentType="{WORKSHEET_CONTENT}"/></Types>', 1)
    out: Parts = {
        "xl/workbook.xml": workbook.encode("utf-8"),
        rels_part: rels.encode("utf-8"),
        "[Content_Types].xml": types.encode("utf-8"),
        part: _EMPTY_SHEET.encode("utf-8"),
    }
    titles_in_app(zf, out, lambda titles: [*titles, title])
    return out


# -- moving rows ------------------------------------------------------------------------------------

_ROW_RANGE = re.compile(
    r"""(?P<string>"(?:[^"]|"")*")
  | (?<![\w$.:!])(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?(?P<r0>\$?\d+):(?P<r1>\$?\d+)(?![\w(.:])""",
    re.VERBOSE,
)
_EXTERNAL_REF = re.compile(
    r"""(?:'\[[^\]]*\](?:[^']|'')*'|\[[^\]]*\][A-Za-z_][\w.]*)!\$?[A-Za-z]{0,3}\$?[0-9]*(?::\$?[A-Za-z]{0,3}\$?[0-9]*)?"""
)
_AREA = re.compile(r"^(\$?[A-Za-z]{1,3})?(\$?)(\d+)?(?::(\$?[A-Za-z]{1,3})?(\$?)(\d+)?)?$")
_FORMULA_ELEMENT = re.compile(r"<((?:\w+:)?(?:formula[12]?|f))>([^<]*)</\1>")
_ROW_ELEMENT = re.compile(r"<row\b([^>]*?)(?:/>|>(.*?)</row>)", re.S)
_CELL_ELEMENT = re.compile(r"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.S)
_CELL_FORMULA = re.compile(r"<f\b([^>]*?)(?:/>|>([^<]*)</f>)")
_R_ATTR = re.compile(r'(\sr=")([A-Z]{0,3})([0-9]+)(")')
_ATTRS = re.compile(r'([\w:]+)="([^"]*)"')


class RowShift:
    """Rows `at`.. of sheet `title` moved by `delta` (negative: rows `at`..`at-delta-1` deleted):
    where a row, a block of rows, an area list or a formula's references end up."""

    def __init__(self, title: str, at: int, delta: int) -> None:
        self.title = title
        self.at = at
        self.delta = delta
        self.last_gone = at - delta - 1 if delta < 0 else at - 1

    # the arithmetic of rows

    def move(self, row: int) -> int | None:
        if row < self.at:
            return row
        if self.delta < 0 and row <= self.last_gone:
            return None
        return row + self.delta

    def move_span(self, r0: int, r1: int) -> tuple[int, int] | None:
        """A block of rows moved: grown by an insertion inside it, shrunk by a deletion of part of it,
        None when a deletion takes all of it."""
        n0, n1 = self.move(r0), self.move(r1)
        if n0 is None:
            n0 = self.at if n1 is not None else None
        if n1 is None:
            n1 = self.at - 1 if r0 < self.at else None
        if n0 is None or n1 is None or n1 < n0:
            return None
        return n0, n1

    def formula(self, text: str, here: str) -> str:
        """A formula's text (unescaped) with its references into the moved rows moved; `here` is the
        sheet its unqualified references name ("" for none)."""
        # a reference into another workbook (`[1]Data!B2`, `'[1]My data'!B2:B9`) names its sheet,
        # not this one, even when the names are alike: kept out of reach while the rest is moved
        outside: list[str] = []

        def hide(m: re.Match[str]) -> str:
            outside.append(m.group(0))
            return "\x01" + "\x02" * len(outside) + "\x01"

        hidden = _EXTERNAL_REF.sub(hide, text) if "[" in text else text
        moved = shift_rows("=" + hidden, here, self.title, self.at, self.delta)[1:]
        moved = _ROW_RANGE.sub(lambda m: self._row_range(m, here), moved)
        if outside:
            moved = re.sub("\x01(\x02+)\x01", lambda m: outside[len(m.group(1)) - 1], moved)
        return moved

    def cell_formula(self, formula: str, here: str) -> str:
        """`formula` as a cell holds it (`=...`; other text is left as it is), moved."""
        return "=" + self.formula(formula[1:], here) if formula.startswith("=") else formula

    def _row_range(self, m: re.Match[str], here: str) -> str:
        if m.group("string"):
            return m.group(0)
        sheet = m.group("sheet")
        name = (sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet) if sheet else here
        if name != self.title:
            return m.group(0)
        r0, r1 = m.group("r0"), m.group("r1")
        span = self.move_span(int(r0.lstrip("$")), int(r1.lstrip("$")))
        if span is None:
            return "#REF!"
        prefix = f"{sheet}!" if sheet else ""
        return f"{prefix}{'$' if r0.startswith('$') else ''}{span[0]}:{'$' if r1.startswith('$') else ''}{span[1]}"

    def areas(self, text: str) -> str:
        """A space-separated list of areas (`sqref`, `ref`) on the moved sheet, moved; "" when the
        deletion takes all of them."""
        out = []
        for token in text.split():
            m = _AREA.match(token)
            if m is None:
                raise Fallback(f"the cells {token!r} are not an area")
            c0, d0, r0, c1, d1, r1 = m.groups()
            if r0 is None and (m.group(0).find(":") < 0 or r1 is None):
                out.append(token)  # whole columns
                continue
            first = int(r0) if r0 is not None else 1
            last = int(r1) if r1 is not None else first
            span = self.move_span(first, last)
            if span is None:
                continue
            if span[1] > GRID_ROWS:
                span = (min(span[0], GRID_ROWS), GRID_ROWS)
            head = f"{c0 or ''}{d0}{span[0]}"
            out.append(head if ":" not in token else f"{head}:{c1 or ''}{d1}{span[1]}")
        return " ".join(out)


class RowMove(RowShift):
    """A `RowShift` made on a package: every part holding a reference into the moved rows rewritten."""

    def __init__(self, zf: zipfile.ZipFile, where: PackageMap, title: str, at: int, delta: int) -> None:
        super().__init__(title, at, delta)
        self.zf = zf
        self.where = where
        self.out: Parts = {}
        self.names = set(zf.namelist())

    def parts(self) -> Parts:
        part = self.where.sheets.get(self.title)
        if part is None:
            raise KeyError(self.title)
        mentions = {self.title, quote_sheet(self.title), "'" + self.title.replace("'", "''") + "'"}
        escaped = {html.escape(m, quote=False) for m in mentions} | {html.escape(m) for m in mentions}
        # what a deletion could not move is refused first, naming it (a table before its formats)
        for _rid, kind, target in related(self.zf, part):
            if target not in self.names:
                continue
            if kind == "table":
                self._table(target)
            elif kind == "pivotTable":
                self._pivot_table(target)
            elif kind == "comments":
                self._comments(target, "comment")
            elif kind == "threadedComment":
                self._comments(target, "threadedComment")
            elif kind == "vmlDrawing":
                self._vml(target)
            elif kind == "drawing":
                self._drawing(target)
        for title, sheet_part in self.where.sheets.items():
            if sheet_part not in self.names:
                continue
            if title == self.title:
                self.out[sheet_part] = self._moved_sheet(sheet_part)
                continue
            data = read_part(self.zf, sheet_part, MAX_CELLS_PART_BYTES)
            if any(m.encode("utf-8") + b"!" in data for m in escaped):
                self.out[sheet_part] = self._other_sheet(title, sheet_part, data)
        self._workbook()
        for name in self.names:
            if name.startswith("xl/charts/") and name.endswith(".xml") and "/_rels/" not in name:
                self._formulas_in(name, "")
            elif name.startswith("xl/pivotCache/pivotCacheDefinition") and name.endswith(".xml"):
                self._pivot_cache(name)
        self._drop_calc_chain()
        return self.out

    def _moved_sheet(self, part: str) -> bytes:
        data = read_part(self.zf, part, MAX_CELLS_PART_BYTES)
        if not plain(data):
            raise Fallback(f"{part} is not in the plain form")
        text = _decode(data, part)
        start = text.find("<sheetData")
        if start < 0:
            raise Fallback(f"{part} has no sheetData")
        if re.match(r"<sheetData\s*/>", text[start:]):
            body_start = body_end = end = text.index(">", start) + 1
        else:
            body_start = text.index(">", start) + 1
            body_end = text.find("</sheetData>", body_start)
            if body_end < 0:
                raise Fallback(f"{part} has no end of sheetData")
            end = body_end
        head, body, tail = text[:start], text[start:body_end], text[end:]
        head = re.sub(
            r'(<dimension ref=")([^"]*)(")', lambda m: m.group(1) + self._dimension(m.group(2)) + m.group(3), head
        )
        sheet_data = body[: body_start - start] + self._rows(text[body_start:body_end], part, move=True)
        tail = self._sheet_tail(tail, own=True)
        return (head + sheet_data + tail).encode("utf-8")

    def _dimension(self, ref: str) -> str:
        moved = self.areas(ref)
        if moved:
            return moved
        first = ref.split(":")[0]
        return re.sub(r"[0-9]+", str(max(1, self.at - 1)), first)

    def _other_sheet(self, title: str, part: str, data: bytes) -> bytes:
        if not plain(data):
            raise Fallback(f"{part} is not in the plain form")
        text = _decode(data, part)
        start = text.find("<sheetData")
        end = text.find("</sheetData>", start)
        if start < 0 or end < 0:
            return self._sheet_tail(text, own=False, here=title).encode("utf-8")
        body_start = text.index(">", start) + 1
        body = self._rows(text[body_start:end], part, move=False, here=title)
        return (text[:body_start] + body + self._sheet_tail(text[end:], own=False, here=title)).encode("utf-8")

    def _rows(self, body: str, part: str, *, move: bool, here: str | None = None) -> str:
        """The rows of a sheetData: renumbered (`move`), every formula moved, shared ones written out."""
        here = self.title if here is None else here
        masters: dict[str, tuple[str, str, int, int]] = {}
        out: list[str] = []
        pos = 0
        for m in _ROW_ELEMENT.finditer(body):
            out.append(body[pos : m.start()])
            pos = m.end()
            attrs, cells = m.group(1), m.group(2)
            r = re.search(r'\sr="([0-9]+)"', attrs)
            if r is None:
                raise Fallback(f"a row of {part} without its number")
            number = int(r.group(1))
            new = self.move(number) if move else number
            if new is None:
                continue
            if new > GRID_ROWS:
                if cells and re.search(r"<c\b", cells):
                    raise BadRequest(
                        f"Row {number} of {self.title!r} holds cells and would move past the last row a sheet can "
                        f"have ({GRID_ROWS:,}). Nothing was written. Clear or delete rows at the end first.",
                        {"sheet": self.title, "row": number},
                    )
                continue
            if new != number:
                attrs = attrs[: r.start(1)] + str(new) + attrs[r.end(1) :]
            if cells is None:
                out.append(f"<row{attrs}/>")
                continue
            out.append(f"<row{attrs}>{self._cells(cells, number, new, part, here, masters)}</row>")
        out.append(body[pos:])
        return "".join(out)

    def _cells(
        self, cells: str, row: int, new_row: int, part: str, here: str, masters: dict[str, tuple[str, str, int, int]]
    ) -> str:
        out: list[str] = []
        pos = 0
        for m in _CELL_ELEMENT.finditer(cells):
            out.append(cells[pos : m.start()])
            pos = m.end()
            attrs, inner = m.group(1), m.group(2)
            ref = _R_ATTR.search(attrs)
            if ref is None:
                raise Fallback(f"a cell of {part} without its reference")
            letters = ref.group(2)
            if new_row != row:
                attrs = attrs[: ref.start(3)] + str(new_row) + attrs[ref.end(3) :]
            if inner is None or "<f" not in inner:
                out.append(f"<c{attrs}/>" if inner is None else f"<c{attrs}>{inner}</c>")
                continue
            f = _CELL_FORMULA.search(inner)
            if f is None:
                raise Fallback(f"a formula of {part} in an unexpected form")
            fattrs = dict(_ATTRS.findall(f.group(1)))
            kind = fattrs.get("t", "")
            text = unescape(f.group(2).encode("utf-8")) if f.group(2) else ""
            if kind == "dataTable":
                raise Fallback("a data table formula")
            if kind == "shared":
                si = fattrs.get("si", "")
                here_name = f"{letters}{row}"
                if text:
                    masters[si] = (here_name, text, row, 0)
                elif si in masters:
                    text = translate(masters[si], here_name)
                else:
                    raise Fallback("a shared formula before its anchor")
            moved = self.formula(text, here) if text else text
            keep = {k: v for k, v in fattrs.items() if k not in ("t", "si", "ref")}
            if kind == "array":
                keep["t"] = "array"
                if "ref" in fattrs:
                    keep["ref"] = self.areas(fattrs["ref"]) if new_row != row or here == self.title else fattrs["ref"]
            if kind in ("", "array") and moved == text:
                out.append(f"<c{attrs}>{inner}</c>")
                continue
            fattr = "".join(f' {k}="{v}"' for k, v in keep.items())
            element = f"<f{fattr}>{xml_text(moved)}</f>" if moved else f"<f{fattr}/>"
            out.append(f"<c{attrs}>{inner[: f.start()]}{element}{inner[f.end() :]}</c>")
        out.append(cells[pos:])
        return "".join(out)

    def _sheet_tail(self, tail: str, *, own: bool, here: str | None = None) -> str:
        """What follows the sheet data: areas moved (own sheet) and formulas naming the sheet moved."""
        here = self.title if here is None else here
        tail = _FORMULA_ELEMENT.sub(
            lambda m: f"<{m.group(1)}>{_escape(self.formula(html.unescape(m.group(2)), here))}</{m.group(1)}>", tail
        )
        if not own:
            return tail
        removed = {"mergeCell": 0}

        def merge(m: re.Match[str]) -> str:
            moved = self.areas(m.group(2))
            if not moved or ":" not in moved or _single(moved):
                removed["mergeCell"] += 1
                return ""
            return m.group(1) + moved + m.group(3)

        tail = re.sub(r'(<mergeCell\b[^>]*?\sref=")([^"]*)("[^>]*?/>)', merge, tail)
        if removed["mergeCell"]:
            tail = re.sub(
                r'(<mergeCells\b[^>]*?\scount=")([0-9]+)(")',
                lambda m: m.group(1) + str(len(re.findall(r"<mergeCell\b", tail))) + m.group(3),
                tail,
            )
            tail = re.sub(r"<mergeCells\b[^>]*>\s*</mergeCells>", "", tail)

        def hyperlink(m: re.Match[str]) -> str:
            moved = self.areas(m.group(2))
            return m.group(1) + moved + m.group(3) if moved else ""

        tail = re.sub(r'(<hyperlink\b[^>]*?\sref=")([^"]*)("[^>]*?/>)', hyperlink, tail)
        tail = re.sub(r"<hyperlinks\b[^>]*>\s*</hyperlinks>", "", tail)
        tail = self._row_breaks(tail)

        def area_attr(m: re.Match[str]) -> str:
            moved = self.areas(html.unescape(m.group(3)))
            if not moved:
                raise BadRequest(
                    f"Deleting these rows would remove all the cells of a {m.group(1)} of {self.title!r} "
                    f"({m.group(3)}). Nothing was written. Remove it in Excel or LibreOffice first, or delete "
                    "fewer rows.",
                    {"sheet": self.title, "element": m.group(1), "cells": m.group(3)},
                )
            return f'<{m.group(1)}{m.group(2)}{moved}"'

        # (merged cells and hyperlinks moved above, or removed with the rows they were in)
        tail = re.sub(r'<(?!mergeCell\b|hyperlink\b)((?:\w+:)?\w+)(\b[^>]*?\s(?:sqref|ref)=")([^"]*)"', area_attr, tail)
        return re.sub(
            r"<((?:\w+:)?sqref)>([^<]*)</\1>",
            lambda m: f"<{m.group(1)}>{self._kept_areas(m.group(2), m.group(1))}</{m.group(1)}>",
            tail,
        )

    def _row_breaks(self, tail: str) -> str:
        """Manual page breaks between rows (`<rowBreaks>`) moved with the rows: a break's `id` is the
        last row above it (ECMA-376 18.3.1.14); one above deleted rows stays above what follows them."""
        found = re.search(r"<rowBreaks\b[^>]*>(.*?)</rowBreaks>", tail, re.S)
        if found is None:
            return tail
        kept: dict[int, str] = {}
        for m in re.finditer(r"<brk\b[^>]*?/>", found.group(1)):
            at = re.search(r'\sid="([0-9]+)"', m.group(0))
            if at is None:
                return tail
            below = self.move(int(at.group(1)) + 1)  # the row the break stands above
            if below is None:
                below = self.at
            if below > 1 and below - 1 not in kept:
                kept[below - 1] = re.sub(
                    r'(\sid=")[0-9]+(")', lambda a, r=below - 1: f"{a.group(1)}{r}{a.group(2)}", m.group(0)
                )
        if not kept:
            return tail[: found.start()] + tail[found.end() :]
        body = "".join(kept[r] for r in sorted(kept))
        manual = sum(1 for b in kept.values() if re.search(r'\sman="(?:1|true)"', b))
        head = re.match(r"<rowBreaks\b[^>]*>", found.group(0))
        assert head is not None
        start = re.sub(r'(\scount=")[0-9]+(")', lambda a: f"{a.group(1)}{len(kept)}{a.group(2)}", head.group(0))
        start = re.sub(r'(\smanualBreakCount=")[0-9]+(")', lambda a: f"{a.group(1)}{manual}{a.group(2)}", start)
        return tail[: found.start()] + start + body + "</rowBreaks>" + tail[found.end() :]

    def _kept_areas(self, text: str, what: str) -> str:
        moved = self.areas(text)
        if not moved:
            raise BadRequest(
                f"Deleting these rows would remove all the cells of a {what} of {self.title!r} ({text}). "
                "Nothing was written. Remove it in Excel or LibreOffice first, or delete fewer rows.",
                {"sheet": self.title, "element": what, "cells": text},
            )
        return moved

    def _workbook(self) -> None:
        workbook = _text(self.zf, "xl/workbook.xml")
        sheets = [html.unescape(n) for n in re.findall(r'<(?:\w+:)?sheet\b[^>]*?\sname="([^"]*)"', workbook)]

        def name(m: re.Match[str]) -> str:
            prefix, attrs, raw = m.group(1), m.group(2), m.group(3)
            local = re.search(r'\slocalSheetId="([0-9]+)"', attrs)
            scope = sheets[int(local.group(1))] if local is not None and int(local.group(1)) < len(sheets) else ""
            text = html.unescape(raw)
            moved = self.formula(text, scope)
            if moved == text:
                return m.group(0)
            return f"<{prefix}definedName{attrs}>{_escape(moved)}</{prefix}definedName>"

        new = re.sub(r"<((?:\w+:)?)definedName\b([^>]*)>([^<]*)</\1definedName>", name, workbook)
        if new != workbook:
            self.out["xl/workbook.xml"] = new.encode("utf-8")

    def _formulas_in(self, part: str, here: str) -> None:
        text = _text(self.zf, part)
        new = _FORMULA_ELEMENT.sub(
            lambda m: f"<{m.group(1)}>{_escape(self.formula(html.unescape(m.group(2)), here))}</{m.group(1)}>", text
        )
        if new != text:
            self.out[part] = new.encode("utf-8")

    def _pivot_cache(self, part: str) -> None:
        text = _text(self.zf, part)

        def source(m: re.Match[str]) -> str:
            attrs = m.group(0)
            sheet = re.search(r'\ssheet="([^"]*)"', attrs)
            ref = re.search(r'\sref="([^"]*)"', attrs)
            if sheet is None or ref is None or html.unescape(sheet.group(1)) != self.title:
                return attrs
            moved = self.areas(ref.group(1))
            if not moved:
                raise BadRequest(
                    f"Deleting these rows would remove all the source data ({ref.group(1)}) of a pivot table. "
                    "Nothing was written.",
                    {"sheet": self.title, "pivot_cache": part},
                )
            return attrs[: ref.start(1)] + moved + attrs[ref.end(1) :]

        new = re.sub(r"<(?:\w+:)?worksheetSource\b[^>]*>", source, text)
        if new != text:
            self.out[part] = new.encode("utf-8")

    def _table(self, part: str) -> None:
        text = _text(self.zf, part)
        table = re.search(r'<(?:\w+:)?table\b[^>]*?\sref="([^"]*)"', text)
        if table is None:
            return
        name = re.search(r'\sdisplayName="([^"]*)"', table.group(0))
        label = html.unescape(name.group(1)) if name else part
        header = re.search(r'\sheaderRowCount="0"', table.group(0)) is None
        first = _AREA.match(table.group(1))
        if self.delta < 0 and first is not None and first.group(3) is not None:
            top = int(first.group(3))
            bottom = int(first.group(6) or top)
            span = self.move_span(top, bottom)
            if (header and self.at <= top <= self.last_gone) or span is None or (header and span[1] <= span[0]):
                raise BadRequest(
                    f"Deleting these rows would remove the header or every row of the table {label!r} on "
                    f"{self.title!r} ({table.group(1)}). Nothing was written. Delete fewer rows, or the table first.",
                    {"sheet": self.title, "table": label},
                )
        new = re.sub(
            r'(<(?:\w+:)?(?:table|autoFilter|sortState|sortCondition)\b[^>]*?\sref=")([^"]*)(")',
            lambda m: m.group(1) + self.areas(m.group(2)) + m.group(3),
            text,
        )
        if new != text:
            self.out[part] = new.encode("utf-8")

    def _pivot_table(self, part: str) -> None:
        text = _text(self.zf, part)
        location = re.search(r'(<(?:\w+:)?location\b[^>]*?\sref=")([^"]*)(")', text)
        if location is None:
            return
        m = _AREA.match(location.group(2))
        if m is None or m.group(3) is None:
            raise Fallback("a pivot table's location in an unexpected form")
        top, bottom = int(m.group(3)), int(m.group(6) or m.group(3))
        inside = top < self.at <= bottom if self.delta > 0 else not (self.last_gone < top or self.at > bottom)
        if inside:
            raise BadRequest(
                f"These rows cross the pivot table at {location.group(2)} of {self.title!r}: a pivot table's "
                "cells are laid out by the pivot table itself. Nothing was written. Insert or delete rows above "
                "or below it.",
                {"sheet": self.title, "pivot_table": location.group(2)},
            )
        moved = self.areas(location.group(2))
        new = text[: location.start(2)] + moved + text[location.end(2) :]
        if new != text:
            self.out[part] = new.encode("utf-8")

    def _comments(self, part: str, element: str) -> None:
        original = text = _text(self.zf, part)

        # a note or a threaded comment (every reply of its thread) in a deleted row goes with the
        # row, as in Excel; so do a threaded comment's placeholder note and their boxes in the VML
        # (`_vml`); the people who wrote them stay listed in the workbook's persons part
        def gone(m: re.Match[str]) -> str:
            cell = re.search(r'\sref="([^"]*)"', m.group(0))
            return "" if cell is not None and not self.areas(cell.group(1)) else m.group(0)

        text = re.sub(r"<((?:\w+:)?" + element + r")\b[^>]*?(?:/>|>.*?</\1>)", gone, text, flags=re.S)
        if element == "comment":
            text = re.sub(r"<((?:\w+:)?commentList)\b([^>]*)>\s*</\1>", r"<\1\2/>", text)

        def ref(m: re.Match[str]) -> str:
            moved = self.areas(m.group(2))
            if not moved:
                raise BadRequest(
                    f"Deleting these rows would delete the note in {m.group(2)} of {self.title!r}. Nothing was "
                    "written. Delete the note first (or keep the row).",
                    {"sheet": self.title, "cell": m.group(2)},
                )
            return m.group(1) + moved + m.group(3)

        new = re.sub(r"(<(?:\w+:)?" + element + r'\b[^>]*?\sref=")([^"]*)(")', ref, text)
        if new != original:
            self.out[part] = new.encode("utf-8")

    def _anchor_row(self, zero_based: int) -> int:
        moved = self.move(zero_based + 1)
        return (moved if moved is not None else self.at) - 1

    def _vml(self, part: str) -> None:
        original = _text(self.zf, part)

        def gone(m: re.Match[str]) -> str:
            shape = m.group(0)
            row = re.search(r"<(?:\w+:)?Row>\s*([0-9]+)\s*</(?:\w+:)?Row>", shape)
            note = re.search(r'ObjectType="Note"', shape)
            return "" if note and row is not None and self.move(int(row.group(1)) + 1) is None else shape

        text = re.sub(r"<((?:\w+:)?shape)\b[^>]*>.*?</\1>", gone, original, flags=re.S)
        new = re.sub(
            r"<((?:\w+:)?Row)>\s*([0-9]+)\s*</\1>",
            lambda m: f"<{m.group(1)}>{self._anchor_row(int(m.group(2)))}</{m.group(1)}>",
            text,
        )

        def anchor(m: re.Match[str]) -> str:
            values = [v.strip() for v in m.group(2).split(",")]
            if len(values) != 8 or not all(v.lstrip("-").isdigit() for v in values):
                return m.group(0)
            values[2] = str(self._anchor_row(int(values[2])))
            values[6] = str(self._anchor_row(int(values[6])))
            return f"<{m.group(1)}>{', '.join(values)}</{m.group(1)}>"

        new = re.sub(r"<((?:\w+:)?Anchor)>([^<]*)</\1>", anchor, new)
        if new != original:
            self.out[part] = new.encode("utf-8")

    def _drawing(self, part: str) -> None:
        text = _text(self.zf, part)
        new = re.sub(
            r"<((?:\w+:)?row)>\s*([0-9]+)\s*</\1>",
            lambda m: f"<{m.group(1)}>{self._anchor_row(int(m.group(2)))}</{m.group(1)}>",
            text,
        )
        if new != text:
            self.out[part] = new.encode("utf-8")

    def _drop_calc_chain(self) -> None:
        """The calculation chain lists formula cells by address: after a move it is dropped (Excel
        builds it again), with its relationship and content type."""
        chain = next((n for n in self.names if n.lower() == "xl/calcchain.xml"), None)
        if chain is None:
            return
        self.out[chain] = None
        rels = _text(self.zf, "xl/_rels/workbook.xml.rels")
        self.out["xl/_rels/workbook.xml.rels"] = re.sub(
            r"<(?:\w+:)?Relationship\b[^>]*?Target=\"[^\"]*calcChain\.xml\"[^>]*/>", "", rels
        ).encode("utf-8")
        types = _text(self.zf, "[Content_Types].xml")
        self.out["[Content_Types].xml"] = re.sub(
            r"<Override\b[^>]*?PartName=\"/xl/calcChain\.xml\"[^>]*/>", "", types
        ).encode("utf-8")


def _single(area: str) -> bool:
    a, _, b = area.partition(":")
    return a.replace("$", "") == b.replace("$", "")


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _decode(data: bytes | bytearray, part: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Fallback(f"{part} is not UTF-8") from exc
