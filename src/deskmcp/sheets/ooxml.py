"""What the xlsx package itself says: sheet sizes, frozen panes, defined names, parts openpyxl drops.

Read straight from the zip (only the head of each sheet part), so describing a workbook of a
million rows costs milliseconds. Also writes computed values into formula cells after openpyxl
saves (openpyxl leaves them empty).
"""

from __future__ import annotations

import html
import io
import posixpath
import re
import zipfile
from dataclasses import dataclass
from typing import Any

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.a1 import parse_cells
from deskmcp.sheets.formulas import CellError

# Parts openpyxl does not carry through a load/save: saving would silently delete them.
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
    ("xl/timelines/", "timelines"),
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


_ATTR = re.compile(r'([\w:]+)="([^"]*)"')


def _attrs(tag: str) -> dict[str, str]:
    return {k.split(":")[-1] if k.startswith("r:") else k: html.unescape(v) for k, v in _ATTR.findall(tag)}


def _targets(zf: zipfile.ZipFile) -> dict[str, tuple[str, str]]:
    """Relationship id -> (part path, relationship type's last word) of the workbook part."""
    rels_text = zf.read("xl/_rels/workbook.xml.rels").decode("utf-8", "replace")
    targets: dict[str, tuple[str, str]] = {}
    for tag in re.findall(r"<(?:\w+:)?Relationship\b[^>]*>", rels_text):
        a = _attrs(tag)
        target = a.get("Target", "")
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
        targets[a.get("Id", "")] = (path, a.get("Type", "").rsplit("/", 1)[-1])
    return targets


def sheet_parts(zf: zipfile.ZipFile) -> list[SheetPart]:
    workbook = zf.read("xl/workbook.xml").decode("utf-8", "replace")
    targets = _targets(zf)
    out: list[SheetPart] = []
    for tag in re.findall(r"<(?:\w+:)?sheet\b[^>]*>", workbook):
        a = {k: html.unescape(v) for k, v in _ATTR.findall(tag)}
        rid = next((v for k, v in a.items() if k.endswith(":id")), "")
        path, kind = targets.get(rid, ("", ""))
        out.append(SheetPart(a.get("name", ""), path, a.get("state", "visible") != "visible", kind))
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
    workbook = zf.read("xl/workbook.xml").decode("utf-8", "replace")
    pr = re.search(r"<(?:\w+:)?workbookPr\b[^>]*>", workbook)
    date1904 = bool(pr) and _attrs(pr.group(0) if pr else "").get("date1904", "0").lower() in ("1", "true")
    sheets = {p.name: p.part for p in sheet_parts(zf) if p.kind == "worksheet" and p.part}
    return PackageMap(sheets, by_type.get("sharedStrings"), by_type.get("styles"), date1904)


def defined_names(zf: zipfile.ZipFile) -> list[tuple[str, str]]:
    workbook = zf.read("xl/workbook.xml").decode("utf-8", "replace")
    out = []
    for attrs, body in re.findall(r"<(?:\w+:)?definedName\b([^>]*)>(.*?)</(?:\w+:)?definedName>", workbook, re.S):
        name = _attrs(attrs).get("name", "")
        if name.startswith("_xlnm."):
            continue  # print areas and filters Excel manages itself
        out.append((name, html.unescape(body)))
    return out


@dataclass
class SheetHead:
    rows: int | None
    columns: int | None
    frozen_rows: int
    frozen_columns: int


def sheet_head(zf: zipfile.ZipFile, part: str) -> SheetHead:
    """Size (from `<dimension>`) and frozen panes, reading only what precedes the cell data."""
    with zf.open(part) as handle:
        head = handle.read(16_384).decode("utf-8", "replace")
    head = head.split("<sheetData", 1)[0]
    rows = columns = None
    m = re.search(r'<(?:\w+:)?dimension\b[^>]*ref="([^"]+)"', head)
    if m:
        ref = m.group(1).replace("$", "")
        try:
            _r0, _c0, r1, c1 = parse_cells(ref, ref)
            rows, columns = r1, c1
        except BadRequest:  # a malformed dimension is only a hint: the caller reads the sheet
            rows = columns = None
    frozen_rows = frozen_columns = 0
    pane = re.search(r"<(?:\w+:)?pane\b[^>]*>", head)
    if pane:
        a = _attrs(pane.group(0))
        if a.get("state") in ("frozen", "frozenSplit"):
            frozen_rows = int(float(a.get("ySplit", "0") or 0))
            frozen_columns = int(float(a.get("xSplit", "0") or 0))
    return SheetHead(rows, columns, frozen_rows, frozen_columns)


def _cached(value: Any) -> tuple[str, str] | None:
    """(type attribute, <v> text) for a computed value; None leaves the cell empty."""
    if isinstance(value, CellError):
        return ' t="e"', html.escape(value.code)
    if isinstance(value, bool):
        return ' t="b"', "1" if value else "0"
    if isinstance(value, int | float):
        return "", repr(float(value)) if not float(value).is_integer() else str(int(value))
    if isinstance(value, str):
        return ' t="str"', html.escape(value, quote=False)
    return None


def write_cached_values(data: bytes, values: dict[str, dict[str, Any]]) -> bytes:
    """`data` (an xlsx openpyxl saved) with `values[sheet][cell]` as the cached result of each formula."""
    if not values:
        return data
    src = zipfile.ZipFile(io.BytesIO(data))
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
