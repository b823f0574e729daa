"""Workbooks holding charts, pictures, notes, tables, pivot tables and sparklines take every write:
each part a write does not need to change stays byte for byte as it was, and the structure tools
move what points into the rows they move (names, chart series, tables, formats, validations,
merged cells, notes, anchors, pivot sources), or refuse naming what they cannot move."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from deskmcp.sheets.xlsx.parts import write_cached_values
from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import Connect, call, fail
from tests.helpers.workbooks import LIBREOFFICE_XLSX, assert_well_formed, libreoffice_convert, libreoffice_csv

pytestmark = pytest.mark.anyio

SID = {"spreadsheet_id": "rich.xlsx"}
# one pixel, transparent: a picture for the drawing (openpyxl needs Pillow to add one)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@pytest.fixture(params=[True, False], ids=["fast", "fast-writes-off"])
def connect(request: pytest.FixtureRequest, root: Path, settings_for: Any) -> Connect:
    """Each test on both settings of SHEETS_FAST_WRITES: a workbook holding parts a whole save would
    drop is patched in place either way."""
    from mcp import Client

    from deskmcp.sheets.server import create_server

    def build(folder: Path | None = None, **overrides: Any) -> Client:
        return Client(create_server(settings_for(folder or root, fast_writes=request.param, **overrides)))

    return build


def rich_workbook(path: Path) -> Path:
    """Sheet Data: a table "Sales" (A1:D7, D a formula), a bar chart of B1:B7 at H2, a note on B3,
    a picture, a conditional format on B2:B7, a validation on C2:C7, merged A10:B10, a print area,
    names Amounts (B2:B7) and TaxRate (F1, 7); sheet Summary: B1 =SUM(Amounts)*TaxRate, B2 =Data!B7."""
    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.workbook.defined_name import DefinedName
    from openpyxl.worksheet.datavalidation import DataValidation
    from openpyxl.worksheet.table import Table

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    ws.append(["Item", "Amount", "Price", "Total"])
    for i, (amount, price) in enumerate([(10, 5), (20, 5), (30, 2), (40, 1), (50, 3), (60, 2)], start=2):
        ws.append([f"item{i}", amount, price, f"=B{i}*C{i}"])
    ws["F1"] = 7
    ws["A10"] = "merged"
    ws.merge_cells("A10:B10")
    ws.add_table(Table(displayName="Sales", ref="A1:D7"))
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=7), titles_from_data=True)
    ws.add_chart(chart, "H2")
    ws["B3"].comment = Comment("check this", "me")
    ws.conditional_formatting.add("B2:B7", CellIsRule(operator="greaterThan", formula=["25"]))
    validation = DataValidation(type="whole", operator="greaterThan", formula1="0")
    validation.add("C2:C7")
    ws.add_data_validation(validation)
    ws.print_area = "A1:D7"
    wb.defined_names["Amounts"] = DefinedName("Amounts", attr_text="Data!$B$2:$B$7")
    wb.defined_names["TaxRate"] = DefinedName("TaxRate", attr_text="Data!$F$1")
    summary: Any = wb.create_sheet("Summary")
    summary["A1"] = "total"
    summary["B1"] = "=SUM(Amounts)*TaxRate"
    summary["B2"] = "=Data!B7"
    wb.save(path)
    _add_picture(path)
    return path


def _add_picture(path: Path) -> None:
    """A picture anchored at H20 in the drawing that holds the chart, as Excel writes one."""
    picture = (
        '<xdr:twoCellAnchor xmlns:xdr="http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        "<xdr:from><xdr:col>7</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>19</xdr:row><xdr:rowOff>0</xdr:rowOff>"
        "</xdr:from><xdr:to><xdr:col>8</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>21</xdr:row>"
        '<xdr:rowOff>0</xdr:rowOff></xdr:to><xdr:pic><xdr:nvPicPr><xdr:cNvPr id="3" name="Picture 1"/>'
        '<xdr:cNvPicPr/></xdr:nvPicPr><xdr:blipFill><a:blip r:embed="rIdPicture"/><a:stretch><a:fillRect/>'
        '</a:stretch></xdr:blipFill><xdr:spPr><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></xdr:spPr>'
        "</xdr:pic><xdr:clientData/></xdr:twoCellAnchor>"
    )
    rel = (
        '<Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" '
        'Target="../media/image1.png" Id="rIdPicture"/>'
    )
    _rewrite(
        path,
        {
            "xl/drawings/drawing1.xml": lambda t: t.replace("</wsDr>", picture + "</wsDr>"),
            "xl/drawings/_rels/drawing1.xml.rels": lambda t: t.replace("</Relationships>", rel + "</Relationships>"),
            "[Content_Types].xml": lambda t: t.replace(
                "<Default ", '<Default Extension="png" ContentType="image/png"/><Default ', 1
            ),
        },
        {"xl/media/image1.png": PNG},
    )


def _rewrite(path: Path, edits: dict[str, Any], added: dict[str, bytes] | None = None) -> None:
    with zipfile.ZipFile(path) as src:
        parts = [(info, src.read(info)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in parts:
            edit = edits.get(info.filename)
            zf.writestr(info, edit(data.decode("utf-8")).encode("utf-8") if edit else data)
        for name, data in (added or {}).items():
            zf.writestr(name, data)


SPARKLINES = (
    '<extLst><ext uri="{05C60535-1F16-4fd2-B633-F4F36F0B64E0}" '
    'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
    '<x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main">'
    '<x14:sparklineGroup displayEmptyCellsAs="gap"><x14:colorSeries rgb="FF376092"/>'
    "<x14:sparklines><x14:sparkline><xm:f>Data!A2:C2</xm:f><xm:sqref>D2</xm:sqref></x14:sparkline>"
    "<x14:sparkline><xm:f>Data!A3:C3</xm:f><xm:sqref>D3</xm:sqref></x14:sparkline></x14:sparklines>"
    "</x14:sparklineGroup></x14:sparklineGroups></ext></extLst>"
)


def sparkline_workbook(path: Path) -> Path:
    """Sheet Data: two rows of three numbers, each with an Excel sparkline in D (kept in the sheet's
    extLst, written here as Excel 2010 and later write it: MS-XLSX 2.6.85 sparklineGroups)."""
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    ws.append(["x", "y", "z"])
    ws.append([1, 3, 2])
    ws.append([4, 2, 5])
    ws["E2"] = "=SUM(A2:C2)"
    wb.save(path)
    path.write_bytes(write_cached_values(path.read_bytes(), {"Data": {"E2": 6}}))  # as Excel saves it
    _rewrite(path, {"xl/worksheets/sheet1.xml": lambda t: t.replace("</worksheet>", SPARKLINES + "</worksheet>")})
    return path


def parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    """The parts added, removed or whose bytes differ."""
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}


def part_text(path: Path, name: str) -> str:
    with zipfile.ZipFile(path) as zf:
        return zf.read(name).decode("utf-8")


VALUE_WRITES = {
    "update_values": {"range": "Data!B3", "values": [[25]]},
    "batch_update": {"data": [{"range": "Data!B3", "values": [[25]]}, {"range": "Data!E2", "values": [["x"]]}]},
    "append_rows": {"range": "Data!A1:D1", "values": [["item9", 70, 1]]},
    "clear_values": {"ranges": ["Data!E1:E3", "Data!B3"]},
}


async def test_get_spreadsheet_says_a_workbook_with_charts_is_writable_and_names_what_it_keeps(
    root: Path, connect: Connect
) -> None:
    rich_workbook(root / "rich.xlsx")
    async with connect() as c:
        info = await call(c, "get_spreadsheet", SID)
    assert info["writable"] is True
    assert "charts" in info["note"] and "images" in info["note"]


@pytest.mark.parametrize("tool", list(VALUE_WRITES))
async def test_every_value_write_keeps_every_other_part_byte_for_byte(root: Path, connect: Connect, tool: str) -> None:
    path = rich_workbook(root / "rich.xlsx")
    before = parts(path)
    async with connect() as c:
        await call(c, tool, {**SID, **VALUE_WRITES[tool]})
        shown = await call(c, "read_values", {**SID, "ranges": ["Data!A1:D11", "Summary!B1"]})
    after = parts(path)
    # the sheet written, and Summary, whose formulas openpyxl saved without a value and are computed
    assert changed(before, after) == {"xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml"}
    assert_well_formed(path)
    data, total = shown["ranges"][0]["values"], shown["ranges"][1]["values"]
    if tool == "clear_values":
        assert data[2][1] == "" and total == [[(210 - 20) * 7]]
    elif tool == "append_rows":
        assert data[10] == ["item9", 70, 1] and total == [[210 * 7]]  # after A10, the last in A:D
    else:
        assert data[2][1] == 25 and data[2][3] == 125 and total == [[215 * 7]]


async def test_insert_rows_moves_names_chart_table_note_formats_and_anchors_and_computes_again(
    root: Path, connect: Connect
) -> None:
    from openpyxl import load_workbook

    path = rich_workbook(root / "rich.xlsx")
    before = parts(path)
    async with connect() as c:
        await call(c, "insert_rows", {**SID, "sheet": "Data", "at": 1, "count": 2})
        await call(c, "update_values", {**SID, "range": "Data!B4", "values": [[100]]})
        info = await call(c, "get_spreadsheet", SID)
        shown = await call(c, "read_values", {**SID, "ranges": ["Summary!B1:B2", "Data!D3:D5"]})
    after = parts(path)
    # the total reads the moved names (was 0 when they stayed behind); B2 follows the moved B7
    assert shown["ranges"][0]["values"] == [[(210 - 10 + 100) * 7], [60]]
    assert shown["ranges"][1]["values"] == [["Total"], [500], [100]]
    names = {n["name"]: n["range"] for n in info["named_ranges"]}
    assert names == {"Amounts": "Data!$B$4:$B$9", "TaxRate": "Data!$F$3"}
    wb: Any = load_workbook(path)
    ws = wb["Data"]
    assert ws.tables["Sales"].ref == "A3:D9"
    assert [str(r.sqref) for r in ws.conditional_formatting] == ["B4:B9"]
    assert [str(v.sqref) for v in ws.data_validations.dataValidation] == ["C4:C9"]
    assert [str(m) for m in ws.merged_cells.ranges] == ["A12:B12"]
    assert ws["B5"].comment is not None and ws["B5"].comment.text == "check this"
    assert ws.print_area == "'Data'!$A$3:$D$9"
    chart = part_text(path, "xl/charts/chart1.xml")
    assert "<f>'Data'!B3</f>" in chart and "<f>'Data'!$B$4:$B$9</f>" in chart
    drawing = part_text(path, "xl/drawings/drawing1.xml")
    assert re.findall(r"<(?:xdr:)?row>([0-9]+)</(?:xdr:)?row>", drawing) == ["3", "21", "23"]
    assert re.findall(r"<(?:\w+:)?Row>([0-9]+)</", part_text(path, "xl/drawings/commentsDrawing1.vml")) == ["4"]
    kept = {"xl/styles.xml", "xl/theme/theme1.xml", "xl/media/image1.png", "xl/drawings/_rels/drawing1.xml.rels"}
    assert kept <= before.keys() and not (changed(before, after) & kept)
    assert changed(before, after) <= {
        "xl/worksheets/sheet1.xml",
        "xl/worksheets/sheet2.xml",
        "xl/workbook.xml",
        "xl/charts/chart1.xml",
        "xl/tables/table1.xml",
        "xl/comments/comment1.xml",
        "xl/drawings/commentsDrawing1.vml",
        "xl/drawings/drawing1.xml",
    }
    assert_well_formed(path)


async def test_delete_rows_shrinks_what_it_cuts_and_moves_what_follows(root: Path, connect: Connect) -> None:
    from openpyxl import load_workbook

    path = rich_workbook(root / "rich.xlsx")
    async with connect() as c:
        await call(c, "delete_rows", {**SID, "sheet": "Data", "at": 4, "count": 2})
        shown = await call(c, "read_values", {**SID, "ranges": ["Summary!B1:B2"]})
        info = await call(c, "get_spreadsheet", SID)
    assert shown["ranges"][0]["values"] == [[(210 - 30 - 40) * 7], [60]]
    assert {n["name"]: n["range"] for n in info["named_ranges"]}["Amounts"] == "Data!$B$2:$B$5"
    wb: Any = load_workbook(path)
    ws = wb["Data"]
    assert ws.tables["Sales"].ref == "A1:D5"
    assert [str(r.sqref) for r in ws.conditional_formatting] == ["B2:B5"]
    assert [str(m) for m in ws.merged_cells.ranges] == ["A8:B8"]
    assert ws["B3"].comment is not None
    assert "<f>'Data'!$B$2:$B$5</f>" in part_text(path, "xl/charts/chart1.xml")


@pytest.mark.parametrize(
    ("at", "count", "named"),
    [(1, 1, "Sales"), (1, 7, "Sales")],
    ids=["table header", "whole table"],
)
async def test_delete_rows_refuses_to_take_what_it_cannot_move_and_leaves_the_file(
    root: Path, connect: Connect, at: int, count: int, named: str
) -> None:
    path = rich_workbook(root / "rich.xlsx")
    before = path.read_bytes()
    async with connect() as c:
        err = await fail(c, "delete_rows", {**SID, "sheet": "Data", "at": at, "count": count})
    assert err["error"] == "bad_request"
    assert named in err["message"] and "Nothing was written" in err["message"]
    assert path.read_bytes() == before


async def test_add_sheet_keeps_sparklines_and_every_part_byte_for_byte(root: Path, connect: Connect) -> None:
    path = sparkline_workbook(root / "spark.xlsx")
    before = parts(path)
    async with connect() as c:
        added = await call(c, "add_sheet", {"spreadsheet_id": "spark.xlsx", "title": "Notes"})
        await call(c, "update_values", {"spreadsheet_id": "spark.xlsx", "range": "Notes!A1", "values": [["hi"]]})
        shown = await call(c, "read_values", {"spreadsheet_id": "spark.xlsx", "ranges": ["Notes!A1", "Data!E2"]})
    after = parts(path)
    assert added["sheet"]["title"] == "Notes"
    assert [r["values"] for r in shown["ranges"]] == [[["hi"]], [[6]]]
    new = changed(before, after)
    assert "xl/worksheets/sheet1.xml" not in new  # the sparklines' sheet, byte for byte
    assert new == {"xl/workbook.xml", "xl/_rels/workbook.xml.rels", "[Content_Types].xml", "xl/worksheets/sheet2.xml"}
    assert_well_formed(path)


async def test_insert_rows_moves_sparkline_ranges_and_cells(root: Path, connect: Connect) -> None:
    path = sparkline_workbook(root / "spark.xlsx")
    async with connect() as c:
        await call(c, "insert_rows", {"spreadsheet_id": "spark.xlsx", "sheet": "Data", "at": 2, "count": 1})
    sheet = part_text(path, "xl/worksheets/sheet1.xml")
    assert "<xm:f>Data!A3:C3</xm:f><xm:sqref>D3</xm:sqref>" in sheet
    assert "<xm:f>Data!A4:C4</xm:f><xm:sqref>D4</xm:sqref>" in sheet


async def test_a_write_the_patch_cannot_make_is_refused_rather_than_dropping_the_chart(
    root: Path, connect: Connect
) -> None:
    path = rich_workbook(root / "rich.xlsx")
    _rewrite(
        path,
        {
            "xl/worksheets/sheet1.xml": lambda t: t.replace(
                '<c r="D2"><f>B2*C2</f><v></v></c>', '<c r="D2"><f t="shared" ref="D2:D3" si="0">B2*C2</f><v>50</v></c>'
            ).replace('<c r="D3"><f>B3*C3</f><v></v></c>', '<c r="D3"><f t="shared" si="0"/><v>100</v></c>')
        },
    )
    assert 'si="0"' in part_text(path, "xl/worksheets/sheet1.xml")
    before = path.read_bytes()
    async with connect() as c:
        err = await fail(c, "update_values", {**SID, "range": "Data!D2", "values": [[1]]})
    assert err["error"] == "bad_request"
    assert "charts" in err["message"] and "Nothing was written" in err["message"]
    assert path.read_bytes() == before


async def test_the_excel_pivot_workbook_takes_a_write_and_a_row_insert_keeping_its_pivot_tables(
    root: Path, connect: Connect
) -> None:
    shutil.copy(shared_corpus("spreadsheets") / "calamine" / "pivots.xlsx", root / "pivots.xlsx")
    path = root / "pivots.xlsx"
    sid = {"spreadsheet_id": "pivots.xlsx"}
    before = parts(path)
    async with connect() as c:
        await call(c, "update_values", {**sid, "range": "DataSheet!K1", "values": [["note"]]})
        written = parts(path)
        await call(c, "insert_rows", {**sid, "sheet": "DataSheet", "at": 5, "count": 2})
        inside = await fail(c, "insert_rows", {**sid, "sheet": "PivotSheet2", "at": 5, "count": 1})
        shown = await call(c, "read_values", {**sid, "ranges": ["DataSheet!K1"]})
    after = parts(path)
    assert changed(before, written) == {"xl/worksheets/sheet5.xml"}
    assert shown["ranges"][0]["values"] == [["note"]]
    assert 'ref="A1:J13" sheet="DataSheet"' in after["xl/pivotCache/pivotCacheDefinition1.xml"].decode("utf-8")
    pivots = {n for n in before if n.startswith(("xl/pivotTables/", "xl/pivotCache/pivotCacheRecords"))}
    assert pivots and not (changed(written, after) & pivots)
    assert inside["error"] == "bad_request" and "pivot table" in inside["message"]
    assert_well_formed(path)


@pytest.mark.slow
@pytest.mark.e2e
async def test_a_libreoffice_workbook_with_a_chart_takes_writes_and_opens_with_the_values(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    made = await libreoffice_convert(rich_workbook(tmp_path / "rich.xlsx"), tmp_path, LIBREOFFICE_XLSX)
    path = root / "rich.xlsx"
    shutil.copy(made, path)
    before = parts(path)
    assert any(n.startswith("xl/charts/") for n in before)
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "Data!B3", "values": [[25]]})
        written = parts(path)
        await call(c, "insert_rows", {**SID, "sheet": "Data", "at": 1, "count": 1})
        await call(c, "update_values", {**SID, "range": "Data!A1", "values": [["inserted"]]})
    charts = {n for n in before if n.startswith(("xl/charts/", "xl/media/"))}
    assert not (changed(before, written) & charts)
    assert_well_formed(path)
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[0].startswith("inserted")
    assert lines[3].startswith("item3,25,5,125")


@pytest.mark.slow
@pytest.mark.e2e
async def test_libreoffice_opens_the_rich_workbook_after_a_row_insert_with_the_right_values(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    path = rich_workbook(root / "rich.xlsx")
    async with connect() as c:
        await call(c, "insert_rows", {**SID, "sheet": "Data", "at": 1, "count": 2})
        await call(c, "update_values", {**SID, "range": "Data!A1", "values": [["top"]]})
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[0].startswith("top")
    assert lines[2].startswith("Item,Amount,Price,Total")
    assert lines[4].startswith("item3,20,5,100")


def names_workbook(path: Path) -> Path:
    """Sheet Data: amounts in B2:B6 named Amounts, the rate in E1 named TaxRate, and in E3
    `=SUM(Amounts)*TaxRate` (1445), with its value as Excel saves it; an autofilter over A1:B6."""
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    ws.append(["Item", "Amount", None, "rate", 0.5])
    for i, amount in enumerate([500, 600, 700, 590, 500], start=2):
        ws.append([f"item{i}", amount])
    ws["D3"] = "total"
    ws["E3"] = "=SUM(Amounts)*TaxRate"
    ws.auto_filter.ref = "A1:B6"
    wb.defined_names["Amounts"] = DefinedName("Amounts", attr_text="Data!$B$2:$B$6")
    wb.defined_names["TaxRate"] = DefinedName("TaxRate", attr_text="Data!$E$1")
    wb.save(path)
    path.write_bytes(write_cached_values(path.read_bytes(), {"Data": {"E3": 1445}}))
    return path


async def test_insert_rows_above_the_data_keeps_defined_names_on_it_and_the_total_right(
    root: Path, connect: Connect
) -> None:
    path = names_workbook(root / "names.xlsx")
    sid = {"spreadsheet_id": "names.xlsx"}
    async with connect() as c:
        await call(c, "insert_rows", {**sid, "sheet": "Data", "at": 1, "count": 2})
        shown = await call(c, "read_values", {**sid, "ranges": ["Data!E5"]})
        info = await call(c, "get_spreadsheet", sid)
    assert shown["ranges"][0]["values"] == [[1445]]  # was 0: the names stayed on rows 2-6
    assert {n["name"]: n["range"] for n in info["named_ranges"]} == {
        "Amounts": "Data!$B$4:$B$8",
        "TaxRate": "Data!$E$3",
    }
    workbook = part_text(path, "xl/workbook.xml")
    assert "_xlnm._FilterDatabase" in workbook and "$A$3:$B$8" in workbook
    assert '<autoFilter ref="A3:B8"/>' in part_text(path, "xl/worksheets/sheet1.xml")


@pytest.mark.slow
@pytest.mark.e2e
async def test_libreoffice_shows_the_total_of_the_moved_names_after_a_row_insert(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    path = names_workbook(root / "names.xlsx")
    async with connect() as c:
        await call(c, "insert_rows", {"spreadsheet_id": "names.xlsx", "sheet": "Data", "at": 1, "count": 2})
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[4] == "item3,600,,total,1445"


async def test_insert_rows_through_openpyxl_moves_names_formats_validations_filter_and_merges_too(
    root: Path, connect: Connect
) -> None:
    """A sheet part not in the plain form (single-quoted attributes) is moved by openpyxl instead of
    in place: what points into the rows moves all the same."""
    from openpyxl import load_workbook
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.worksheet.datavalidation import DataValidation

    path = names_workbook(root / "names.xlsx")
    wb: Any = load_workbook(path)
    ws = wb["Data"]
    ws.conditional_formatting.add("B2:B6", CellIsRule(operator="greaterThan", formula=["$E$1*1000"]))
    validation = DataValidation(type="whole", operator="greaterThan", formula1="0")
    validation.add("B2:B6")
    ws.add_data_validation(validation)
    ws.merge_cells("A8:B8")
    ws.print_area = "A1:B6"
    wb.save(path)
    path.write_bytes(write_cached_values(path.read_bytes(), {"Data": {"E3": 1445}}))
    _rewrite(path, {"xl/worksheets/sheet1.xml": lambda t: re.sub(r'<c r="([A-Z]+[0-9]+)"', r"<c r='\1'", t)})
    sid = {"spreadsheet_id": "names.xlsx"}
    async with connect() as c:
        await call(c, "insert_rows", {**sid, "sheet": "Data", "at": 1, "count": 2})
        shown = await call(c, "read_values", {**sid, "ranges": ["Data!E5"]})
    assert shown["ranges"][0]["values"] == [[1445]]
    assert "<c r='" not in part_text(path, "xl/worksheets/sheet1.xml")  # saved by openpyxl, as said
    moved: Any = load_workbook(path)
    ws = moved["Data"]
    assert moved.defined_names["Amounts"].value == "Data!$B$4:$B$8"
    assert [(str(cf.sqref), cf.rules[0].formula) for cf in ws.conditional_formatting] == [("B4:B8", ["$E$3*1000"])]
    assert [str(v.sqref) for v in ws.data_validations.dataValidation] == ["B4:B8"]
    assert ws.auto_filter.ref == "A3:B8"
    assert [str(m) for m in ws.merged_cells.ranges] == ["A10:B10"]
    assert ws.print_area == "'Data'!$A$3:$B$8"


async def test_insert_rows_pushing_a_cell_past_the_last_row_is_refused_and_leaves_the_file(
    root: Path, connect: Connect
) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws["A1"] = 1
    ws["A1048575"] = "near the end"
    wb.save(root / "end.xlsx")
    before = (root / "end.xlsx").read_bytes()
    async with connect() as c:
        err = await fail(c, "insert_rows", {"spreadsheet_id": "end.xlsx", "sheet": "S", "at": 2, "count": 2})
    assert err["error"] == "bad_request" and "1048575" in err["message"].replace(",", "")
    assert (root / "end.xlsx").read_bytes() == before


PIVOT_MACRO = """Sub MakePivot
  Dim hidden(0) As New com.sun.star.beans.PropertyValue
  hidden(0).Name = "Hidden"
  hidden(0).Value = True
  doc = StarDesktop.loadComponentFromURL("{source}", "_blank", 0, hidden())
  tables = doc.Sheets.getByName("Pivot").getDataPilotTables()
  desc = tables.createDataPilotDescriptor()
  Dim cells As New com.sun.star.table.CellRangeAddress
  cells.Sheet = 0
  cells.StartColumn = 0
  cells.StartRow = 0
  cells.EndColumn = 1
  cells.EndRow = 4
  desc.setSourceRange(cells)
  region = desc.getDataPilotFields().getByIndex(0)
  region.Orientation = com.sun.star.sheet.DataPilotFieldOrientation.ROW
  amount = desc.getDataPilotFields().getByIndex(1)
  amount.Orientation = com.sun.star.sheet.DataPilotFieldOrientation.DATA
  amount.Function = com.sun.star.sheet.GeneralFunction.SUM
  Dim at As New com.sun.star.table.CellAddress
  at.Sheet = 1
  at.Column = 0
  at.Row = 2
  tables.insertNewByName("Pivot1", at, desc)
  Dim save(0) As New com.sun.star.beans.PropertyValue
  save(0).Name = "FilterName"
  save(0).Value = "Calc MS Excel 2007 XML"
  doc.storeToURL("{target}", save())
  doc.close(True)
  StarDesktop.terminate()
End Sub
"""


async def _libreoffice_pivot(workdir: Path) -> Path:
    """A workbook whose pivot table LibreOffice made: a Basic macro (put in a fresh profile's Standard
    library) builds a DataPilot of Data!A1:B5 (sum of Amount by Region) on sheet Pivot and saves it as
    .xlsx; the test is skipped where LibreOffice is not installed."""
    import html

    from tests.helpers.workbooks import make_xlsx

    soffice = shutil.which("soffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not on PATH")
    source = make_xlsx(
        workdir / "source.xlsx",
        {
            "Data": [["Region", "Amount"], ["North", 10], ["South", 20], ["North", 30], ["East", 5]],
            "Pivot": [["by region"]],
        },
    )
    target = workdir / "pivot.xlsx"
    profile = workdir / "profile-macro"
    with anyio.fail_after(120):
        await anyio.run_process(
            [soffice, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--terminate_after_init"], check=True
        )
    macro = PIVOT_MACRO.format(source=source.as_uri(), target=target.as_uri())
    (profile / "user" / "basic" / "Standard" / "Module1.xba").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument '
        '1.0//EN" "module.dtd">\n<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" '
        f'script:language="StarBasic">{html.escape(macro, quote=False)}</script:module>',
        encoding="utf-8",
    )
    with anyio.fail_after(120):
        await anyio.run_process(
            [
                soffice,
                f"-env:UserInstallation={profile.as_uri()}",
                "--headless",
                "--norestore",
                "macro:///Standard.Module1.MakePivot",
            ],
            check=True,
        )
    assert any(n.startswith("xl/pivotTables/") for n in parts(target)), "LibreOffice made no pivot table"
    return target


@pytest.mark.slow
@pytest.mark.e2e
async def test_a_libreoffice_pivot_table_workbook_takes_a_write_and_a_row_insert(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    path = root / "pivot.xlsx"
    shutil.copy(await _libreoffice_pivot(tmp_path), path)
    sid = {"spreadsheet_id": "pivot.xlsx"}
    before = parts(path)
    async with connect() as c:
        await call(c, "update_values", {**sid, "range": "Data!B3", "values": [[25]]})
        written = parts(path)
        await call(c, "insert_rows", {**sid, "sheet": "Data", "at": 3, "count": 1})
        await call(c, "update_values", {**sid, "range": "Data!A3:B3", "values": [["West", 7]]})
    after = parts(path)
    pivots = {n for n in before if "pivot" in n.lower()}
    assert pivots and not (changed(before, written) & pivots)
    cache = next(n for n in pivots if "pivotCacheDefinition" in n and "_rels" not in n)
    assert 'ref="A1:B6"' in after[cache].decode("utf-8")  # the source grew with the inserted row
    assert_well_formed(path)
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[:6] == ["Region,Amount", "North,10", "West,7", "South,25", "North,30", "East,5"]
