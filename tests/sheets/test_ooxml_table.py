"""sheets/xlsx/parts.py on its own, on small packages written here: what the package says (sheets, their
parts, sizes, frozen panes, defined names, properties, parts openpyxl drops), the size caps, and the
cached values written into formula cells, as tables."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from deskmcp.core.errors import ParseError
from deskmcp.sheets.formulas.engine import CellError
from deskmcp.sheets.xlsx import parts as ooxml

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"


def package(tmp_path: Path, parts: dict[str, str | bytes], name: str = "book.xlsx") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for part, data in parts.items():
            zf.writestr(part, data)
    return path


def workbook_parts(sheets: str, rels: str, workbook_pr: str = "", names: str = "") -> dict[str, str | bytes]:
    return {
        "xl/workbook.xml": f'<workbook xmlns="{MAIN}" xmlns:r="{REL}">{workbook_pr}<sheets>{sheets}</sheets>'
        f"{names}</workbook>",
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{PKG_REL}">{rels}</Relationships>',
    }


def rel(rid: str, kind: str, target: str) -> str:
    return f'<Relationship Id="{rid}" Type="{REL}/{kind}" Target="{target}"/>'


DROPPED = [
    (["xl/workbook.xml", "xl/worksheets/sheet1.xml"], []),
    (["xl/charts/chart1.xml", "xl/charts/chart2.xml"], ["charts"]),
    (["xl/vbaProject.bin", "xl/media/image1.png"], ["images", "macros"]),
    (
        ["xl/drawings/drawing1.xml", "xl/pivotTables/p.xml", "xl/pivotCache/c.xml"],
        ["drawings or shapes", "pivot tables", "pivot caches"],
    ),
    (
        ["xl/externalLinks/externalLink1.xml", "xl/slicers/s.xml", "xl/timelines/t.xml"],
        ["external links", "slicers", "timelines"],
    ),
    (
        ["xl/activeX/activeX1.xml", "xl/embeddings/oleObject1.bin", "xl/chartsheets/sheet1.xml"],
        ["chart sheets", "ActiveX controls", "embedded objects"],
    ),
]


@pytest.mark.parametrize(("names", "labels"), DROPPED)
def test_dropped_content_names_each_kind_of_part_openpyxl_would_lose_once(names: list[str], labels: list[str]) -> None:
    assert ooxml.dropped_content(names) == labels


@pytest.mark.parametrize(
    ("part", "limit"),
    [
        ("xl/worksheets/sheet1.xml", ooxml.MAX_CELLS_PART_BYTES),
        ("xl/sharedStrings.xml", ooxml.MAX_CELLS_PART_BYTES),
        ("xl/chartsheets/sheet1.xml", ooxml.MAX_CELLS_PART_BYTES),
        ("xl/styles.xml", ooxml.MAX_PART_BYTES),
        ("xl/workbook.xml", ooxml.MAX_PART_BYTES),
        ("docProps/core.xml", ooxml.MAX_PART_BYTES),
    ],
)
def test_cell_parts_may_inflate_further_than_other_parts(part: str, limit: int) -> None:
    assert ooxml.part_limit(part) == limit


def test_security_read_part_refuses_a_part_inflating_past_its_limit_unread(tmp_path: Path) -> None:
    path = package(tmp_path, {"xl/styles.xml": b"x" * 5000})
    with zipfile.ZipFile(path) as zf:
        assert ooxml.read_part(zf, "xl/styles.xml", limit=5000) == b"x" * 5000
        with pytest.raises(ParseError) as info:
            ooxml.read_part(zf, "xl/styles.xml", limit=4999)
    assert info.value.details == {"part": "xl/styles.xml", "size": 5000, "limit": 4999}
    assert "Re-save it from Excel or LibreOffice" in info.value.message


def test_security_check_sizes_refuses_a_part_declaring_more_than_its_limit(tmp_path: Path) -> None:
    path = package(tmp_path, {"xl/styles.xml": b"<styleSheet/>"})
    with zipfile.ZipFile(path) as zf:
        zf.getinfo("xl/styles.xml").file_size = ooxml.MAX_PART_BYTES + 1
        with pytest.raises(ParseError) as info:
            ooxml.check_sizes(zf)
    assert info.value.details["part"] == "xl/styles.xml"


def test_sheet_parts_resolve_relative_and_absolute_targets_hidden_state_and_kind(tmp_path: Path) -> None:
    sheets = (
        '<sheet name="Data" sheetId="1" r:id="rId1"/>'
        '<sheet name="Hidden" sheetId="2" state="hidden" r:id="rId2"/>'
        '<sheet name="Very" sheetId="3" state="veryHidden" r:id="rId3"/>'
        '<sheet name="Chart" sheetId="4" r:id="rId4"/>'
        '<sheet name="Dangling" sheetId="5" r:id="rId9"/>'
    )
    rels = (
        rel("rId1", "worksheet", "worksheets/sheet1.xml")
        + rel("rId2", "worksheet", "/xl/worksheets/sheet2.xml")
        + rel("rId3", "worksheet", "./worksheets/../worksheets/sheet3.xml")
        + rel("rId4", "chartsheet", "chartsheets/sheet1.xml")
    )
    with zipfile.ZipFile(package(tmp_path, workbook_parts(sheets, rels))) as zf:
        found = [(p.name, p.part, p.hidden, p.kind) for p in ooxml.sheet_parts(zf)]
    assert found == [
        ("Data", "xl/worksheets/sheet1.xml", False, "worksheet"),
        ("Hidden", "xl/worksheets/sheet2.xml", True, "worksheet"),
        ("Very", "xl/worksheets/sheet3.xml", True, "worksheet"),
        ("Chart", "xl/chartsheets/sheet1.xml", False, "chartsheet"),
        ("Dangling", "", False, ""),
    ]


def test_sheet_parts_read_a_strict_package_with_prefixed_elements(tmp_path: Path) -> None:
    strict = "http://purl.oclc.org/ooxml/spreadsheetml/main"
    strict_rel = "http://purl.oclc.org/ooxml/officeDocument/relationships"
    parts: dict[str, str | bytes] = {
        "xl/workbook.xml": f'<x:workbook xmlns:x="{strict}" xmlns:rel="{strict_rel}"><x:sheets>'
        '<x:sheet name="S" sheetId="1" rel:id="rId1"/></x:sheets></x:workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{PKG_REL}">'
        f'<Relationship Id="rId1" Type="{strict_rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
    }
    with zipfile.ZipFile(package(tmp_path, parts)) as zf:
        assert [(p.name, p.part) for p in ooxml.sheet_parts(zf)] == [("S", "xl/worksheets/sheet1.xml")]


def test_a_workbook_part_that_is_not_xml_is_a_parse_error_naming_the_part(tmp_path: Path) -> None:
    parts = workbook_parts("", "")
    parts["xl/workbook.xml"] = "<workbook><sheets>"
    with zipfile.ZipFile(package(tmp_path, parts)) as zf, pytest.raises(ParseError) as info:
        ooxml.sheet_parts(zf)
    assert info.value.details == {"part": "xl/workbook.xml"}


@pytest.mark.parametrize(
    ("workbook_pr", "date1904"),
    [
        ("", False),
        ("<workbookPr/>", False),
        ('<workbookPr date1904="0"/>', False),
        ('<workbookPr date1904="1"/>', True),
        ('<workbookPr date1904="true"/>', True),
    ],
)
def test_package_map_finds_worksheets_shared_strings_styles_and_the_1904_date_system(
    tmp_path: Path, workbook_pr: str, date1904: bool
) -> None:
    sheets = '<sheet name="A" sheetId="1" r:id="rId1"/><sheet name="C" sheetId="2" r:id="rId2"/>'
    rels = (
        rel("rId1", "worksheet", "worksheets/sheet1.xml")
        + rel("rId2", "chartsheet", "chartsheets/sheet1.xml")
        + rel("rId3", "sharedStrings", "sharedStrings.xml")
        + rel("rId4", "styles", "styles.xml")
    )
    with zipfile.ZipFile(package(tmp_path, workbook_parts(sheets, rels, workbook_pr))) as zf:
        found = ooxml.package_map(zf)
    assert found == ooxml.PackageMap(
        {"A": "xl/worksheets/sheet1.xml"}, "xl/sharedStrings.xml", "xl/styles.xml", date1904
    )


def test_defined_names_leave_out_the_ones_excel_manages_itself(tmp_path: Path) -> None:
    names = (
        '<definedNames><definedName name="Rate">Sheet1!$B$1</definedName>'
        '<definedName name="_xlnm.Print_Area" localSheetId="0">Sheet1!$A$1:$C$9</definedName>'
        '<definedName name="Empty"/></definedNames>'
    )
    with zipfile.ZipFile(package(tmp_path, workbook_parts("", "", names=names))) as zf:
        assert ooxml.defined_names(zf) == [("Rate", "Sheet1!$B$1"), ("Empty", "")]


def test_custom_property_reads_one_property_or_none(tmp_path: Path) -> None:
    custom = (
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties" '
        'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        '<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="2" name="Owner">'
        "<vt:lpwstr>Ada</vt:lpwstr></property>"
        "</Properties>"
    )
    with zipfile.ZipFile(package(tmp_path, {"docProps/custom.xml": custom})) as zf:
        assert ooxml.custom_property(zf, "Owner") == "Ada"
        assert ooxml.custom_property(zf, "Missing") is None
    with zipfile.ZipFile(package(tmp_path, {"xl/workbook.xml": "<workbook/>"}, "bare.xlsx")) as zf:
        assert ooxml.custom_property(zf, "Owner") is None


def pane(x: str, y: str, state: str) -> str:
    return f'<sheetViews><sheetView><pane xSplit="{x}" ySplit="{y}" state="{state}"/></sheetView></sheetViews>'


HEADS: list[tuple[str, str, ooxml.SheetHead]] = [
    ("range", '<dimension ref="A1:C10"/>', ooxml.SheetHead(10, 3, 0, 0)),
    ("absolute-range", '<dimension ref="$A$1:$B$2"/>', ooxml.SheetHead(2, 2, 0, 0)),
    ("offset-range-counts-to-its-end", '<dimension ref="B3:D10"/>', ooxml.SheetHead(10, 4, 0, 0)),
    ("one-cell", '<dimension ref="A1"/>', ooxml.SheetHead(1, 1, 0, 0)),
    ("malformed-dimension", '<dimension ref="oops"/>', ooxml.SheetHead(None, None, 0, 0)),
    ("no-dimension", "", ooxml.SheetHead(None, None, 0, 0)),
    ("frozen", pane("2", "1", "frozen"), ooxml.SheetHead(None, None, 1, 2)),
    ("frozen-split-decimal", pane("0", "3.0", "frozenSplit"), ooxml.SheetHead(None, None, 3, 0)),
    ("split-is-not-frozen", pane("2000", "1000", "split"), ooxml.SheetHead(None, None, 0, 0)),
    ("garbled-pane", pane("a", "b", "frozen"), ooxml.SheetHead(None, None, 0, 0)),
]


@pytest.mark.parametrize(("head", "expected"), [(h, e) for _, h, e in HEADS], ids=[i for i, _, _ in HEADS])
def test_sheet_head_reads_size_and_frozen_panes_before_the_cell_data(
    tmp_path: Path, head: str, expected: ooxml.SheetHead
) -> None:
    sheet = f'<worksheet xmlns="{MAIN}">{head}<sheetData><row r="1"/></sheetData></worksheet>'
    with zipfile.ZipFile(package(tmp_path, {"s.xml": sheet})) as zf:
        assert ooxml.sheet_head(zf, "s.xml") == expected


def test_sheet_head_stops_at_broken_xml_with_what_it_read_so_far(tmp_path: Path) -> None:
    parts: dict[str, str | bytes] = {"cut.xml": '<worksheet><dimension ref="A1:B2"/><unclosed', "junk.xml": "<<<"}
    with zipfile.ZipFile(package(tmp_path, parts)) as zf:
        assert ooxml.sheet_head(zf, "cut.xml") == ooxml.SheetHead(2, 2, 0, 0)
        assert ooxml.sheet_head(zf, "junk.xml") == ooxml.SheetHead(None, None, 0, 0)


CACHED: list[tuple[str, Any, str]] = [
    ("integer", 1, '<c r="A1" s="1"><f>X</f><v>1</v></c>'),
    ("whole-float", 3.0, '<c r="A1" s="1"><f>X</f><v>3</v></c>'),
    ("float", 2.5, '<c r="A1" s="1"><f>X</f><v>2.5</v></c>'),
    ("true", True, '<c r="A1" s="1" t="b"><f>X</f><v>1</v></c>'),
    ("false", False, '<c r="A1" s="1" t="b"><f>X</f><v>0</v></c>'),
    ("text-escaped", "a<b&c", '<c r="A1" s="1" t="str"><f>X</f><v>a&lt;b&amp;c</v></c>'),
    ("error", CellError("#N/A"), '<c r="A1" s="1" t="e"><f>X</f><v>#N/A</v></c>'),
    ("nothing-leaves-the-cell", None, '<c r="A1" s="1" t="n"><f>X</f><v></v></c>'),
]


@pytest.mark.parametrize(("value", "cell"), [(v, c) for _, v, c in CACHED], ids=[i for i, _, _ in CACHED])
def test_write_cached_values_fills_formula_cells_with_the_type_of_their_value(
    tmp_path: Path, value: Any, cell: str
) -> None:
    parts = workbook_parts(
        '<sheet name="S" sheetId="1" r:id="rId1"/>', rel("rId1", "worksheet", "worksheets/sheet1.xml")
    )
    row = '<row r="1"><c r="A1" s="1" t="n"><f>X</f><v></v></c></row>'
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData>{row}</sheetData></worksheet>'
    parts["xl/worksheets/sheet1.xml"] = sheet
    data = package(tmp_path, parts).read_bytes()
    written = ooxml.write_cached_values(data, {"S": {"A1": value}})
    with zipfile.ZipFile(io.BytesIO(written)) as zf:
        assert cell in zf.read("xl/worksheets/sheet1.xml").decode("utf-8")
        assert zf.read("xl/workbook.xml") == str(parts["xl/workbook.xml"]).encode("utf-8")


def test_write_cached_values_with_nothing_to_write_returns_the_same_bytes() -> None:
    assert ooxml.write_cached_values(b"not even a zip", {}) == b"not even a zip"
