"""What the xlsx package itself says: sheet sizes, frozen panes, defined names, parts openpyxl drops.

Read straight from the zip (only the head of each sheet part), so describing a workbook of a
million rows costs milliseconds. Every part read is capped (a 1 MB zip can inflate to gigabytes)
and parsed with ElementTree, whatever quotes or prefixes the writer used. Also writes computed
values into formula cells after openpyxl saves (openpyxl leaves them empty).
"""

from __future__ import annotations

import html
import io
import posixpath
import re
import zipfile
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

from deskmcp.core.errors import BadRequest, ParseError
from deskmcp.sheets.a1 import parse_cells
from deskmcp.sheets.formulas.engine import CellError, Names, names_resolver
from deskmcp.sheets.xlsx.cellxml import number_text, xml_text

# Parts openpyxl does not carry through a load/save: a workbook holding one is only patched in place.
DROPPED_PARTS: tuple[tuple[str, str], ...] = (
    ("xl/charts/", "charts"),
    ("xl/chartsheets/", "chart sheets"),
    ("xl/media/", "images"),
    ("xl/drawings/", "drawings or shapes"),
    ("xl/pivotTables/", "pivot tables"),
    ("xl/pivotCache/", "pivot caches"),
    ("xl/vbaProject.bin", "macros"),
    ("xl/externalLinks/", "external links"),
    ("xl/slicers/", "slicers"),
    ("xl/slicerCaches/", "slicers"),
    ("xl/timelines/", "timelines"),
    ("xl/timelineCaches/", "timelines"),
    ("xl/threadedComments/", "threaded comments"),
    ("xl/activeX/", "ActiveX controls"),
    ("xl/embeddings/", "embedded objects"),
)


def dropped_content(names: list[str]) -> list[str]:
    """What of this package openpyxl would lose on save (e.g. ['charts', 'macros'])."""
    found: list[str] = []
    for prefix, label in DROPPED_PARTS:
        if any(n.startswith(prefix) for n in names) and label not in found:
            found.append(label)
    return found


@dataclass
class SheetPart:
    name: str
    part: str
    hidden: bool
    kind: str  # "worksheet" or "chartsheet"


MAX_PART_BYTES = 64 << 20
"""Most bytes a package part other than cell data (workbook.xml, relationships, styles,
properties) may inflate to. Real ones are kilobytes; a 1 MB zip can inflate to gigabytes."""
MAX_CELLS_PART_BYTES = 1 << 30
"""Most bytes a worksheet or the shared strings may inflate to (about ten million cells)."""
CELL_PARTS = ("xl/worksheets/", "xl/sharedStrings", "xl/chartsheets/")


def part_limit(name: str) -> int:
    return MAX_CELLS_PART_BYTES if name.startswith(CELL_PARTS) else MAX_PART_BYTES


def too_big(name: str, size: int, limit: int) -> ParseError:
    return ParseError(
        f"The workbook's part {name} inflates to {size:,} bytes or more, over the {limit:,}-byte limit for "
        "such parts: it is refused unread (a zip bomb or a damaged file). Re-save it from Excel or LibreOffice.",
        {"part": name, "size": size, "limit": limit},
    )


def check_sizes(zf: zipfile.ZipFile) -> None:
    """Refuse a package whose parts say they inflate past their limits, before any reader opens them."""
    for info in zf.infolist():
        limit = part_limit(info.filename)
        if info.file_size > limit:
            raise too_big(info.filename, info.file_size, limit)


def verify_parts(zf: zipfile.ZipFile) -> None:
    """Inflate every part but the worksheets (measured when read) in bounded chunks: a part that
    inflates past what it declares fails its CRC here, before a reader that trusts it opens it."""
    check_sizes(zf)
    for info in zf.infolist():
        if info.filename.startswith("xl/worksheets/") or not info.filename.endswith((".xml", ".rels")):
            continue
        with zf.open(info) as handle:
            while handle.read(1 << 20):
                pass


def read_part(zf: zipfile.ZipFile, name: str, limit: int = MAX_PART_BYTES) -> bytes:
    """A part's bytes, refused when it inflates past `limit` (its declared size is not trusted)."""
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise too_big(name, info.file_size, limit)
    with zf.open(info) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise too_big(name, len(data), limit)
    return data


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _attr(element: ElementTree.Element, name: str) -> str | None:
    """An attribute by its local name, whatever namespace (r:id in transitional or strict packages)."""
    for key, value in element.attrib.items():
        if _local(key) == name:
            return value
    return None


def _parse(zf: zipfile.ZipFile, name: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(read_part(zf, name))
    except ElementTree.ParseError as exc:
        raise ParseError(f"The workbook's part {name} is not well-formed XML: {exc}.", {"part": name}) from exc


def _targets(zf: zipfile.ZipFile) -> dict[str, tuple[str, str]]:
    """Relationship id -> (part path, relationship type's last word) of the workbook part."""
    targets: dict[str, tuple[str, str]] = {}
    for rel in _parse(zf, "xl/_rels/workbook.xml.rels").iter():
        if _local(rel.tag) != "Relationship":
            continue
        target = rel.get("Target", "")
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
        targets[rel.get("Id", "")] = (path, rel.get("Type", "").rsplit("/", 1)[-1])
    return targets


def sheet_parts(zf: zipfile.ZipFile) -> list[SheetPart]:
    workbook = _parse(zf, "xl/workbook.xml")
    targets = _targets(zf)
    out: list[SheetPart] = []
    for sheet in workbook.iter():
        if _local(sheet.tag) != "sheet":
            continue
        path, kind = targets.get(_attr(sheet, "id") or "", ("", ""))
        out.append(SheetPart(sheet.get("name", ""), path, sheet.get("state", "visible") != "visible", kind))
    return out


@dataclass(frozen=True)
class PackageMap:
    """Where a workbook's cells live: each worksheet's part, the shared strings, the styles."""

    sheets: dict[str, str]
    shared_strings: str | None
    styles: str | None
    date1904: bool


def package_map(zf: zipfile.ZipFile) -> PackageMap:
    targets = _targets(zf)
    by_type = {kind: path for path, kind in targets.values()}
    workbook = _parse(zf, "xl/workbook.xml")
    pr = next((e for e in workbook.iter() if _local(e.tag) == "workbookPr"), None)
    date1904 = pr is not None and (pr.get("date1904") or "0").lower() in ("1", "true")
    sheets = {p.name: p.part for p in sheet_parts(zf) if p.kind == "worksheet" and p.part}
    return PackageMap(sheets, by_type.get("sharedStrings"), by_type.get("styles"), date1904)


def defined_names(zf: zipfile.ZipFile) -> list[tuple[str, str]]:
    out = []
    for element in _parse(zf, "xl/workbook.xml").iter():
        if _local(element.tag) != "definedName":
            continue
        name = element.get("name", "")
        if name.startswith("_xlnm."):
            continue  # print areas and filters Excel manages itself
        out.append((name, element.text or ""))
    return out


def package_names(zf: zipfile.ZipFile) -> Names:
    """The defined names of a package as `WorkbookCalculator` takes them (per-sheet ones first)."""
    root = ElementTree.fromstring(read_part(zf, "xl/workbook.xml"))
    sheets = [e.get("name", "") for e in root.iter() if _local(e.tag) == "sheet"]
    found: dict[tuple[str, str], str] = {}
    for e in root.iter():
        if _local(e.tag) != "definedName" or not e.text:
            continue
        local = e.get("localSheetId")
        scope = sheets[int(local)] if local is not None and local.isdigit() and int(local) < len(sheets) else ""
        found[(scope, e.get("name", "").upper())] = e.text
    return names_resolver(found)


UNCOMPUTED_PROPERTY = "deskmcp.uncomputed"
"""The custom document property listing the formulas a save left without a value (JSON)."""


def custom_property(zf: zipfile.ZipFile, name: str) -> str | None:
    """The text of one custom document property (docProps/custom.xml), or None."""
    if "docProps/custom.xml" not in zf.namelist():
        return None
    for prop in _parse(zf, "docProps/custom.xml").iter():
        if _local(prop.tag) == "property" and prop.get("name") == name:
            return "".join(child.text or "" for child in prop)
    return None


@dataclass
class SheetHead:
    rows: int | None
    columns: int | None
    frozen_rows: int
    frozen_columns: int


def sheet_head(zf: zipfile.ZipFile, part: str) -> SheetHead:
    """Size (from `<dimension>`) and frozen panes, parsing only what precedes the cell data."""
    rows = columns = None
    frozen_rows = frozen_columns = 0
    parser = ElementTree.XMLPullParser(events=("start",))
    with zf.open(part) as handle:
        read = 0
        done = False
        while not done and read < 1 << 20:
            chunk = handle.read(16_384)
            if not chunk:
                break
            read += len(chunk)
            try:
                parser.feed(chunk)
                events = list(parser.read_events())
            except ElementTree.ParseError:
                break  # the head is only a hint: the caller measures the sheet instead
            for event in events:
                element = event[1] if len(event) == 2 else None
                if not isinstance(element, ElementTree.Element):
                    continue
                name = _local(element.tag)
                if name == "sheetData":
                    done = True
                    break
                if name == "dimension" and (ref := element.get("ref")):
                    ref = ref.replace("$", "")
                    try:
                        _r0, _c0, rows, columns = parse_cells(ref, ref)
                    except BadRequest:  # a malformed dimension is only a hint: the caller reads the sheet
                        rows = columns = None
                elif name == "pane" and element.get("state") in ("frozen", "frozenSplit"):
                    try:
                        frozen_rows = int(float(element.get("ySplit", "0") or 0))
                        frozen_columns = int(float(element.get("xSplit", "0") or 0))
                    except ValueError:
                        frozen_rows = frozen_columns = 0
    return SheetHead(rows, columns, frozen_rows, frozen_columns)


def _cached(value: Any) -> tuple[str, str] | None:
    """(type attribute, <v> text) for a computed value; None leaves the cell empty."""
    if isinstance(value, CellError):
        return ' t="e"', html.escape(value.code)
    if isinstance(value, bool):
        return ' t="b"', "1" if value else "0"
    if isinstance(value, int | float):
        return "", number_text(value)
    if isinstance(value, str):
        return ' t="str"', xml_text(value)
    return None


def write_cached_values(data: bytes, values: dict[str, dict[str, Any]]) -> bytes:
    """`data` (an xlsx openpyxl saved) with `values[sheet][cell]` as the cached result of each formula."""
    if not values:
        return data
    src = zipfile.ZipFile(io.BytesIO(data))  # openpyxl's own output, not the user's file
    parts = {p.part: p.name for p in sheet_parts(src)}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            sheet_values = values.get(parts.get(info.filename, ""), {})
            if sheet_values:
                body = _patch_sheet(body.decode("utf-8"), sheet_values).encode("utf-8")
            dst.writestr(info, body)
    return out.getvalue()


_FORMULA_CELL = re.compile(r'<c r="([A-Z]+[0-9]+)"([^>]*)><f>(.*?)</f><v\s*(?:/>|></v>)</c>')


def _patch_sheet(xml: str, values: dict[str, Any]) -> str:
    def repl(m: re.Match[str]) -> str:
        ref, attrs, formula = m.group(1), m.group(2), m.group(3)
        cached = _cached(values.get(ref))
        if cached is None:
            return m.group(0)
        t, v = cached
        attrs = re.sub(r'\s+t="[^"]*"', "", attrs)
        return f'<c r="{ref}"{attrs}{t}><f>{formula}</f><v>{v}</v></c>'

    return _FORMULA_CELL.sub(repl, xml)
