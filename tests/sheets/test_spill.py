"""Dynamic array formulas written into a local .xlsx as Excel 365 writes them: the formula in its
top-left cell as an array formula over the cells it covers, marked dynamic by the workbook's
cell metadata, the values cached in the covered cells, `#SPILL!` when cells are in the way."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from deskmcp.sheets.formulas.engine import Spill, Uncomputable, evaluate
from deskmcp.sheets.xlsx.spill import (
    DYNAMIC_ARRAY_EXT,
    METADATA_CONTENT,
    METADATA_REL,
    dynamic_cm,
    with_dynamic_cm,
)
from tests.helpers.tool_calls import Connect, call
from tests.helpers.workbooks import (
    LIBREOFFICE_XLSX,
    assert_well_formed,
    libreoffice_convert,
    libreoffice_csv,
    make_xlsx,
)

pytestmark = pytest.mark.anyio

SID = {"spreadsheet_id": "s.xlsx"}
ROWS: list[list[Any]] = [["Region", "Amount"], ["North", 10], ["South", 20], ["North", 30], ["East", 5]]


def parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def cell_xml(path: Path, ref: str, part: str = "xl/worksheets/sheet1.xml") -> str:
    text = parts(path)[part].decode("utf-8")
    m = re.search(r'<c r="' + ref + r'"[^>]*?(?:/>|>.*?</c>)', text)
    return m.group(0) if m else ""


async def values(c: Any, rng: str) -> list[list[Any]]:
    shown = await call(c, "read_values", {**SID, "ranges": [rng]})
    return shown["ranges"][0]["values"]


def test_a_formula_allowed_to_spill_gives_its_array() -> None:
    cells = {(1, 1): 3.0, (2, 1): 1.0, (3, 1): 2.0}

    def lookup(_s: str, r: int, c: int) -> Any:
        return cells.get((r, c))

    def extent(_s: str) -> tuple[int, int]:
        return (3, 1)

    assert evaluate("=SORT(A1:A3)", "S", lookup, extent, spill=True) == Spill(((1.0,), (2.0,), (3.0,)))
    assert evaluate("=A1:A3*2", "S", lookup, extent, spill=True) == Spill(((6.0,), (2.0,), (4.0,)))
    # arrays inside, one value out: a one-cell array formula, as Excel 365 saves it
    assert evaluate("=SUM(A1:A3*2)", "S", lookup, extent, spill=True) == Spill(((12.0,),))
    assert evaluate("=SUM(A1:A3)", "S", lookup, extent, spill=True) == 6.0
    assert evaluate("=A1", "S", lookup, extent, spill=True) == 3.0


async def test_filter_unique_sort_and_sequence_are_written_as_excel_writes_dynamic_arrays(
    root: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": ROWS})
    before = parts(path)
    async with connect() as c:
        answer = await call(
            c,
            "update_values",
            {
                **SID,
                "range": "S!D1",
                "values": [
                    ["=UNIQUE(A2:A5)", "=FILTER(A2:B5,B2:B5>8)", "", None, "=SORT(B2:B5,1,-1)", "=SEQUENCE(2,3)"]
                ],
            },
        )
        shown = await values(c, "S!D1:K4")
    assert answer["uncomputed"] is None
    assert shown == [
        ["North", "North", 10, "", 30, 1, 2, 3],
        ["South", "South", 20, "", 20, 4, 5, 6],
        ["East", "North", 30, "", 10],
        ["", "", "", "", 5],
    ]
    after = parts(path)
    assert {n for n in before if before[n] != after.get(n)} == {
        "xl/worksheets/sheet1.xml",
        "[Content_Types].xml",
        "xl/_rels/workbook.xml.rels",
    }
    assert set(after) - set(before) == {"xl/metadata.xml"}
    assert_well_formed(path)
    assert re.fullmatch(
        r'<c r="D1" cm="1" t="str"><f t="array" ref="D1:D3">_xlfn\.UNIQUE\(A2:A5\)</f><v>North</v></c>',
        cell_xml(path, "D1"),
    )
    assert 'ref="E1:F3">_xlfn._xlws.FILTER(' in cell_xml(path, "E1")
    assert 'cm="1"' in cell_xml(path, "H1") and 'ref="H1:H4"' in cell_xml(path, "H1")
    assert 'ref="I1:K2"' in cell_xml(path, "I1")
    assert cell_xml(path, "F1") == '<c r="F1"><v>10</v></c>'  # "" written into a spill: the spill stays
    assert cell_xml(path, "D2") == '<c r="D2" t="str"><v>South</v></c>'  # a value, no formula
    assert cell_xml(path, "K2") == '<c r="K2"><v>6</v></c>'
    metadata = after["xl/metadata.xml"]
    assert dynamic_cm(metadata) == 1
    assert DYNAMIC_ARRAY_EXT.encode() in metadata and b'fDynamic="1"' in metadata
    assert f'PartName="/xl/metadata.xml" ContentType="{METADATA_CONTENT}"'.encode() in after["[Content_Types].xml"]
    assert f'Type="{METADATA_REL}" Target="metadata.xml"'.encode() in after["xl/_rels/workbook.xml.rels"]

    from openpyxl import load_workbook
    from openpyxl.worksheet.formula import ArrayFormula

    ws: Any = load_workbook(path)["S"]
    assert isinstance(ws["D1"].value, ArrayFormula) and ws["D1"].value.ref == "D1:D3"
    cached: Any = load_workbook(path, data_only=True)["S"]
    assert [cached.cell(r, 4).value for r in range(1, 4)] == ["North", "South", "East"]


async def test_a_spill_blocked_by_a_cell_shows_spill_and_covers_nothing(root: Path, connect: Connect) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": [*ROWS[:3], ["North", 30, "", "in the way"], ROWS[4]]})
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=UNIQUE(A2:A5)"], ["blocked"]]})
        await call(c, "update_values", {**SID, "range": "S!F1", "values": [["=SEQUENCE(3)"], [None], ["x"]]})
        shown = await call(c, "read_values", {**SID, "ranges": ["S!D1:F4"]})
    grid = shown["ranges"][0]
    assert grid["values"] == [["#SPILL!", "", "#SPILL!"], ["blocked"], ["", "", "x"], ["in the way"]]
    assert grid["errors"] == ["S!D1", "S!F1"]
    assert re.fullmatch(
        r'<c r="D1" cm="1" t="e"><f t="array" ref="D1">_xlfn\.UNIQUE\(A2:A5\)</f><v>#SPILL!</v></c>',
        cell_xml(path, "D1"),
    )
    assert_well_formed(path)


async def test_formulas_reading_spilled_cells_see_the_spilled_values(root: Path, connect: Connect) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": [*ROWS, ["total", "=SUM(D1:D9)"]]})
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=SEQUENCE(4)", "=SUM(D1:D4)*10"]]})
        shown = await values(c, "S!B6:E6")
        written = await values(c, "S!D1:E1")
    assert written == [[1, 100]]  # written in the same call, computed after the spill
    assert shown[0][0] == 10  # =SUM(D1:D9) in the file: the cells it reads were spilled into
    assert_well_formed(path)


async def test_an_anchor_written_again_empties_what_it_no_longer_covers(root: Path, connect: Connect) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": ROWS})
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=SEQUENCE(4)"]]})
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=SEQUENCE(2)"]]})
        smaller = await values(c, "S!D1:D4")
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [[7]]})
        plain = await values(c, "S!D1:D4")
    assert smaller == [[1], [2]]
    assert plain == [[7]]
    assert cell_xml(path, "D1") == '<c r="D1"><v>7</v></c>'
    assert_well_formed(path)


async def test_a_spill_follows_its_inputs_and_a_value_in_its_way_blocks_it(root: Path, connect: Connect) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": ROWS})
    async with connect() as c:
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=FILTER(A2:A5,B2:B5>8)"]]})
        first = await values(c, "S!D1:D4")
        await call(c, "update_values", {**SID, "range": "S!B5", "values": [[50]]})
        grown = await values(c, "S!D1:D4")
        await call(c, "update_values", {**SID, "range": "S!B2", "values": [[1]]})
        shrunk = await values(c, "S!D1:D4")
        await call(c, "update_values", {**SID, "range": "S!D2", "values": [["mine"]]})
        blocked = await values(c, "S!D1:D4")
        await call(c, "clear_values", {**SID, "ranges": ["S!D2"]})
        freed = await values(c, "S!D1:D4")
    assert first == [["North"], ["South"], ["North"]]
    assert grown == [["North"], ["South"], ["North"], ["East"]]
    assert shrunk == [["South"], ["North"], ["East"]]
    assert blocked == [["#SPILL!"], ["mine"]]
    assert freed == [["South"], ["North"], ["East"]]
    assert_well_formed(path)


async def test_append_rows_spills_too(root: Path, connect: Connect) -> None:
    make_xlsx(root / "s.xlsx", {"S": ROWS})
    async with connect() as c:
        await call(c, "append_rows", {**SID, "range": "S!A1:B1", "values": [["Top", "=MAX(B2:B5)"]]})
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=TRANSPOSE(A2:A3)"]]})
        shown = await values(c, "S!A6:E6")
        row = await values(c, "S!D1:E1")
    assert shown == [["Top", 30]]
    assert row == [["North", "South"]]


def test_a_metadata_part_already_there_gets_the_dynamic_array_record_appended() -> None:
    rich = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<metadata xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        b'xmlns:xlrd="http://schemas.microsoft.com/office/spreadsheetml/2017/richdata">'
        b'<metadataTypes count="1"><metadataType name="XLRICHVALUE" minSupportedVersion="120000"/></metadataTypes>'
        b'<futureMetadata name="XLRICHVALUE" count="1"><bk><extLst><ext uri="{3e2802c4-a4d2-4d8b-9148-e3be6c30e623}">'
        b'<xlrd:rvb i="0"/></ext></extLst></bk></futureMetadata>'
        b'<valueMetadata count="1"><bk><rc t="1" v="0"/></bk></valueMetadata></metadata>'
    )
    assert dynamic_cm(rich) is None
    cm, data = with_dynamic_cm(rich)
    assert cm == 1 and dynamic_cm(data) == 1
    assert b'<metadataTypes count="2">' in data and b'<rc t="2" v="0"/>' in data
    assert data.index(b"<cellMetadata") < data.index(b"<valueMetadata")  # the schema's order
    assert with_dynamic_cm(data) == (1, data)  # found, not added twice
    from xml.etree import ElementTree

    ElementTree.fromstring(data)


@pytest.mark.slow
@pytest.mark.e2e
async def test_libreoffice_opens_the_spills_and_its_own_save_reads_back_spilled(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": ROWS})
    async with connect() as c:
        # LibreOffice 7 computes array formulas again on open and lacks FILTER, SORT, UNIQUE and
        # SEQUENCE; TRANSPOSE and arithmetic over ranges it knows
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=B2:B5*2", "=TRANSPOSE(A2:B3)"]]})
        ours = await values(c, "S!D1:F4")
    assert ours == [[20, "North", "South"], [40, 10, 20], [60], [10]]
    lines = await libreoffice_csv(path, tmp_path)
    assert [line.split(",")[3:6] for line in lines[:4]] == [
        ["20", "North", "South"],
        ["40", "10", "20"],
        ["60", "", ""],
        ["10", "", ""],
    ]
    saved = await libreoffice_convert(path, tmp_path, LIBREOFFICE_XLSX)
    assert 't="array"' in cell_xml(saved, "D1")  # LibreOffice's own array formula
    shutil.copy(saved, root / "lo.xlsx")
    async with connect() as c:
        shown = await call(c, "read_values", {"spreadsheet_id": "lo.xlsx", "ranges": ["S!D1:F4"]})
    assert shown["ranges"][0]["values"] == ours


def test_a_spill_reference_reads_the_cells_its_anchor_spills_over() -> None:
    from deskmcp.sheets.formulas.engine import CellError, WorkbookCalculator

    cells: dict[tuple[int, int], Any] = {(1, 1): 3.0, (2, 1): 1.0, (3, 1): 2.0, (1, 4): "=SORT(A1:A3)", (1, 6): 7.0}

    def raw(_s: str, r: int, c: int) -> Any:
        return cells.get((r, c))

    calc = WorkbookCalculator(raw, lambda _s: (3, 6), spills={("S", 1, 4)})
    assert evaluate("=SUM(D1#)", "S", calc.value, calc.extent, spilled=calc.spilled) == 6.0
    assert evaluate("=ROWS(D1#)", "S", calc.value, calc.extent, spilled=calc.spilled) == 3.0
    assert evaluate("=SUM(_xlfn.ANCHORARRAY(D1))", "S", calc.value, calc.extent, spilled=calc.spilled) == 6.0
    doubled = evaluate("=D1#*2", "S", calc.value, calc.extent, spill=True, spilled=calc.spilled)
    assert doubled == Spill(((2.0,), (4.0,), (6.0,)))
    # a cell holding no spilling formula: #REF!, as in Excel
    assert evaluate("=SUM(F1#)", "S", calc.value, calc.extent, spilled=calc.spilled) == CellError("#REF!")
    blocked = WorkbookCalculator(raw, lambda _s: (3, 6), spills={("S", 1, 4)}, blocked={("S", 1, 4)})
    assert evaluate("=ROWS(D1#)", "S", blocked.value, blocked.extent, spilled=blocked.spilled) == CellError("#REF!")
    # without a way to know what a cell spills over, the formula is not guessed
    with pytest.raises(Uncomputable):
        evaluate("=SUM(D1#)", "S", calc.value, calc.extent)


async def test_spill_references_are_stored_as_excel_stores_them_and_follow_their_spill(
    root: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": ROWS})
    async with connect() as c:
        await call(
            c,
            "update_values",
            {**SID, "range": "S!D1", "values": [["=SEQUENCE(3)", "=SUM(D1#)", "=ROWS(D1#)", "=D1#*2", "=SUM(A1#)"]]},
        )
        first = await values(c, "S!D1:H3")
        await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=SEQUENCE(5)"]]})
        grown = await values(c, "S!D1:G5")
        await call(c, "update_values", {**SID, "range": "S!D4", "values": [["in the way"]]})
        blocked = await values(c, "S!D1:G1")
        blocked_xml = cell_xml(path, "G1"), cell_xml(path, "G2")
        await call(c, "clear_values", {**SID, "ranges": ["S!D4"]})
        freed = await values(c, "S!D1:G1")
        # a formula written later reads the spill the file holds
        await call(c, "update_values", {**SID, "range": "S!I1", "values": [["=COUNT(S!D1#)+SUM(D1#)"]]})
        later = await values(c, "S!I1")
    assert first == [[1, 6, 3, 2, "#REF!"], [2, "", "", 4], [3, "", "", 6]]
    assert grown == [[1, 15, 5, 2], [2, "", "", 4], [3, "", "", 6], [4, "", "", 8], [5, "", "", 10]]
    assert blocked == [["#SPILL!", "#REF!", "#REF!", "#REF!"]]
    # a dynamic array formula giving one value keeps its form, over its own cell
    assert blocked_xml == (
        '<c r="G1" cm="1" t="e"><f t="array" ref="G1">_xlfn.ANCHORARRAY(D1)*2</f><v>#REF!</v></c>',
        "",
    )
    assert freed == [[1, 15, 5, 2]]
    assert later == [[20]]
    assert re.fullmatch(r'<c r="E1"><f>SUM\(_xlfn\.ANCHORARRAY\(D1\)\)</f><v>15</v></c>', cell_xml(path, "E1"))
    assert '<f t="array" ref="G1:G5">_xlfn.ANCHORARRAY(D1)*2</f>' in cell_xml(path, "G1")
    assert_well_formed(path)


async def test_a_whole_workbook_save_refuses_a_formula_that_would_spill_and_writes_nothing(
    root: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "s.xlsx", {"S": ROWS})
    kept = path.read_bytes()
    async with connect(fast_writes=False) as c:
        from tests.helpers.tool_calls import fail

        err = await fail(c, "update_values", {**SID, "range": "S!D1", "values": [["=UNIQUE(A2:A5)", "=SUM(B2:B5)"]]})
        assert path.read_bytes() == kept
        # one value out: written, computed or listed as before
        answer = await call(c, "update_values", {**SID, "range": "S!D1", "values": [["=SUM(B2:B5)", "=SUM(B2:B5*2)"]]})
        shown = await values(c, "S!D1")
    assert err["error"] == "bad_request" and err["details"]["cells"] == ["S!D1"]
    assert "Nothing was written" in err["message"] and "SHEETS_FAST_WRITES" in err["message"]
    assert shown == [[65]]
    assert answer["uncomputed"] == ["S!E1"]
