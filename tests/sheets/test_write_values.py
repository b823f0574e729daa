"""What a write stores: every formula value right or flagged, never stale; errors, dates and
Excel's function prefixes kept as Excel keeps them."""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deskmcp.sheets.xlsx.parts import write_cached_values
from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import Connect, call
from tests.helpers.workbooks import assert_well_formed

pytestmark = pytest.mark.anyio


NOW = dt.datetime(2026, 1, 15, 9, 30, tzinfo=dt.UTC)

# The tests whose workbook the patch cannot write (it then hands the write to openpyxl, which
# is what they check); every other test's writes must patch the package when asked to.
FALLS_BACK_TO_OPENPYXL = {"test_a_write_recomputes_a_formula_stored_after_its_value"}


@pytest.fixture(params=[True, False], ids=["patched", "openpyxl"])
def connect(
    request: pytest.FixtureRequest, root: Path, settings_for: Any, caplog: pytest.LogCaptureFixture
) -> Iterator[Connect]:
    """Every test here runs on both write paths: the package patched in place, and openpyxl; the
    patched run fails if its writes went through openpyxl instead, unless the test expects it."""
    from mcp import Client

    from deskmcp.sheets.server import create_server
    from deskmcp.sheets.service import SheetsService, create_backend

    caplog.set_level(logging.INFO, logger="deskmcp.sheets")

    def build(folder: Path | None = None, **overrides: Any) -> Client:
        settings = settings_for(folder or root, fast_writes=request.param, **overrides)
        backend: Any = create_backend(settings)
        backend.writer.clock, backend.writer.zone = lambda: NOW, dt.UTC  # TODAY() is 15 January 2026
        return Client(create_server(settings, SheetsService(settings, backend)))

    yield build
    if request.param:
        said = [r.getMessage() for r in caplog.get_records("call")]
        fell_back = any("edited through openpyxl" in m for m in said)
        assert fell_back == (request.node.originalname in FALLS_BACK_TO_OPENPYXL), said


def invoice(path: Path) -> Path:
    """An invoice as Excel would save it: formulas with their cached results. B2, D2 and F2 use
    CONVERT, which deskmcp does not compute; E2 holds a date, F2 an error, G2 TODAY()."""
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Invoice"
    prices = wb.create_sheet("Prices")
    for row in (["P-100", 4.75], ["P-200", 89], ["S-010", 80]):
        prices.append(row)
    ws.append(["sku", "price", "double", "fixed", "due", "missing", "today", "count"])
    ws.append(
        [
            "P-100",
            '=CONVERT(VLOOKUP(A2,Prices!A1:B3,2,FALSE),"m","m")',
            "=B2*2",
            '=CONVERT(VLOOKUP("S-010",Prices!A1:B3,2,FALSE),"m","m")',
            "=EOMONTH(DATE(2024,1,15),0)",
            '=CONVERT(VLOOKUP("none",Prices!A1:B3,2,FALSE),"m","m")',
            "=TODAY()",
            "=COUNTA(A2:A5)",
        ]
    )
    for ref in ("E2", "G2"):
        ws[ref].number_format = "yyyy-mm-dd"
    wb.save(path)
    cached = {"B2": 4.75, "C2": 9.5, "D2": 80, "E2": 45322, "F2": _error("#N/A"), "G2": 45000, "H2": 1}
    path.write_bytes(write_cached_values(path.read_bytes(), {"Invoice": cached}))
    return path


def _error(code: str) -> Any:
    from deskmcp.sheets.formulas.engine import CellError

    return CellError(code)


def workbook_xml(path: Path) -> str:
    with zipfile.ZipFile(path) as zf:
        return zf.read("xl/workbook.xml").decode("utf-8")


def sheet_xml(path: Path, part: str = "xl/worksheets/sheet1.xml") -> str:
    with zipfile.ZipFile(path) as zf:
        return zf.read(part).decode("utf-8")


async def test_update_values_removes_and_flags_the_stale_value_of_a_formula_it_cannot_compute(
    root: Path, connect: Connect
) -> None:
    path = invoice(root / "invoice.xlsx")
    async with connect() as c:
        answer = await call(
            c, "update_values", {"spreadsheet_id": "invoice.xlsx", "range": "Invoice!A2", "values": [["P-200"]]}
        )
        out = await call(c, "read_values", {"spreadsheet_id": "invoice.xlsx", "ranges": ["Invoice!A2:H2"]})
    assert answer["uncomputed"] == ["Invoice!B2", "Invoice!C2"]
    grid = out["ranges"][0]
    # Not 4.75 and 9.5 any more: emptied and flagged, for Excel or LibreOffice to compute on open.
    # G2, TODAY(), is computed again at every write: the day of the write, not that of the last save
    assert grid["values"] == [["P-200", "", "", 80, "2024-01-31", "#N/A", "2026-01-15", 1]]
    assert grid["uncomputed"] == ["Invoice!B2", "Invoice!C2"]
    assert 'fullCalcOnLoad="1"' in workbook_xml(path)
    assert_well_formed(path)


async def test_unchanged_formulas_keep_their_cached_dates_and_errors_after_a_write(
    root: Path, connect: Connect
) -> None:
    path = invoice(root / "invoice.xlsx")
    async with connect() as c:
        answer = await call(
            c, "update_values", {"spreadsheet_id": "invoice.xlsx", "range": "Invoice!J1", "values": [["note"]]}
        )
        out = await call(c, "read_values", {"spreadsheet_id": "invoice.xlsx", "ranges": ["Invoice!A2:H2"]})
    assert "uncomputed" not in answer or not answer["uncomputed"]
    assert out["ranges"][0]["values"] == [["P-100", 4.75, 9.5, 80, "2024-01-31", "#N/A", "2026-01-15", 1]]
    assert out["ranges"][0]["errors"] == ["Invoice!F2"]
    assert_well_formed(path)


async def test_clear_values_flags_an_uncomputable_formula_that_read_the_cleared_cell(
    root: Path, connect: Connect
) -> None:
    path = invoice(root / "invoice.xlsx")
    async with connect() as c:
        answer = await call(c, "clear_values", {"spreadsheet_id": "invoice.xlsx", "ranges": ["Invoice!A2"]})
        out = await call(c, "read_values", {"spreadsheet_id": "invoice.xlsx", "ranges": ["Invoice!A2:H2"]})
    assert answer["uncomputed"] == ["Invoice!B2", "Invoice!C2"]
    assert out["ranges"][0]["values"][0][7] == 0  # COUNTA recomputed
    assert_well_formed(path)


async def test_read_values_shows_stored_errors_as_their_text_and_lists_their_cells(
    root: Path, connect: Connect
) -> None:
    shutil.copy(shared_corpus("spreadsheets") / "calamine" / "errors.xlsx", root / "errors.xlsx")
    codes = ["#DIV/0!", "#NAME?", "#VALUE!", "#NULL!", "#REF!", "#NUM!", "#N/A"]
    async with connect() as c:
        whole = await call(c, "read_values", {"spreadsheet_id": "errors.xlsx", "ranges": ["Feuil1!A1:A7"]})
        again = await call(c, "read_values", {"spreadsheet_id": "errors.xlsx", "ranges": ["Feuil1!A1:A7"]})
    for out in (whole, again):  # the streamed first read and the loaded sheet
        assert out["ranges"][0]["values"] == [[code] for code in codes]
        assert out["ranges"][0]["errors"] == [f"Feuil1!A{r}" for r in range(1, 8)]


async def test_read_values_keeps_the_uncomputed_flag_of_a_trailing_cell_trimmed_from_the_answer(
    root: Path, connect: Connect
) -> None:
    from tests.helpers.workbooks import make_xlsx

    make_xlsx(root / "t.xlsx", {"S": [[1, 2]]})
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "t.xlsx", "range": "S!C1", "values": [["=A1+B1"]]})
        await call(
            c, "update_values", {"spreadsheet_id": "t.xlsx", "range": "S!D2", "values": [['=CONVERT(1,"m","cm")']]}
        )
        out = await call(c, "read_values", {"spreadsheet_id": "t.xlsx", "ranges": ["S!A1:D2"]})
        row = await call(c, "read_values", {"spreadsheet_id": "t.xlsx", "ranges": ["S!A2:D2"]})
        outside = await call(c, "read_values", {"spreadsheet_id": "t.xlsx", "ranges": ["S!A1:C2"]})
    assert out["ranges"][0]["values"] == [[1, 2, 3]]
    assert out["ranges"][0]["uncomputed"] == ["S!D2"]
    assert row["ranges"][0]["uncomputed"] == ["S!D2"]
    assert not outside["ranges"][0].get("uncomputed")


NEW_FUNCTIONS = [
    '=CONCAT(A1,"-",B1)',
    '=TEXTJOIN("/",TRUE,A1:B1)',
    '=IFS(B1>5,"big",TRUE,"small")',
    '=SWITCH(A1,"x","ex","other")',
    "=XOR(TRUE,FALSE)",
    "=DAYS(DATE(2024,3,1),DATE(2024,1,1))",
    "=IFNA(NA(),7)",
    '=MAXIFS(B1:B1,A1:A1,"x")',
]


async def test_functions_newer_than_excel_2007_are_saved_with_their_xlfn_prefix_and_read_back_without(
    root: Path, connect: Connect
) -> None:
    from tests.helpers.workbooks import make_xlsx

    path = make_xlsx(root / "new.xlsx", {"S": [["x", 9]]})
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "new.xlsx", "range": "S!A2", "values": [NEW_FUNCTIONS]})
        formulas = await call(
            c, "read_values", {"spreadsheet_id": "new.xlsx", "ranges": ["S!A2:H2"], "render": "formula"}
        )
        values = await call(c, "read_values", {"spreadsheet_id": "new.xlsx", "ranges": ["S!A2:H2"]})
    xml = sheet_xml(path)
    assert "_xlfn.CONCAT(" in xml and "_xlfn.TEXTJOIN(" in xml and "_xlfn.MAXIFS(" in xml
    assert '"-"' in xml.replace("&quot;", '"')  # text in quotes is left alone
    assert formulas["ranges"][0]["values"] == [NEW_FUNCTIONS]
    assert values["ranges"][0]["values"] == [["x-9", "x/9", "big", "ex", True, 60, 7, 9]]


@pytest.mark.slow
@pytest.mark.e2e
async def test_libreoffice_computes_the_new_functions_deskmcp_saved_instead_of_showing_name_errors(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    from tests.helpers.workbooks import libreoffice_csv, make_xlsx

    path = make_xlsx(root / "new.xlsx", {"S": [["x", 9]]})
    async with connect() as c:
        # CONVERT is not computed here: the file then asks the app to compute everything on open.
        row = [*NEW_FUNCTIONS[:5], '=CONVERT(B1,"m","m")']
        await call(c, "update_values", {"spreadsheet_id": "new.xlsx", "range": "S!A2", "values": [row]})
    assert 'fullCalcOnLoad="1"' in workbook_xml(path)
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[1].split(",") == ["x-9", "x/9", "big", "ex", "TRUE", "9"]


async def test_computed_dates_are_stored_as_numbers_with_a_date_format(root: Path, connect: Connect) -> None:
    from openpyxl import load_workbook

    from tests.helpers.workbooks import make_xlsx

    path = make_xlsx(root / "d.xlsx", {"S": [[dt.date(2024, 1, 15)]]})
    formulas = ["=DATE(2024,3,15)", "=EOMONTH(A1,0)", "=EDATE(A1,1)", "=WORKDAY(A1,1)", "=A1+30"]
    async with connect() as c:
        answer = await call(c, "update_values", {"spreadsheet_id": "d.xlsx", "range": "S!B1", "values": [formulas]})
        out = await call(c, "read_values", {"spreadsheet_id": "d.xlsx", "ranges": ["S!B1:F1"]})
        raw = await call(c, "read_values", {"spreadsheet_id": "d.xlsx", "ranges": ["S!B1:F1"], "render": "raw"})
    assert not answer.get("uncomputed")
    assert out["ranges"][0]["values"] == [["2024-03-15", "2024-01-31", "2024-02-15", "2024-01-16", "2024-02-14"]]
    assert raw["ranges"][0]["values"] == [[45366, 45322, 45337, 45307, 45336]]
    ws: Any = load_workbook(path)["S"]
    assert ws["B1"].number_format == "yyyy-mm-dd"
    assert_well_formed(path)


async def test_formulas_reading_defined_names_and_times_of_day_are_computed(root: Path, connect: Connect) -> None:
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws.append([dt.time(9, 30), dt.time(17, 15), 20])
    wb.defined_names["Rate"] = DefinedName("Rate", attr_text="S!$C$1")
    wb.save(root / "t.xlsx")
    async with connect() as c:
        answer = await call(
            c, "update_values", {"spreadsheet_id": "t.xlsx", "range": "S!A2", "values": [["=(B1-A1)*24*Rate"]]}
        )
        out = await call(c, "read_values", {"spreadsheet_id": "t.xlsx", "ranges": ["S!A2"]})
    assert not answer.get("uncomputed")
    assert out["ranges"][0]["values"] == [[155]]


async def test_a_cell_write_patches_the_package_in_place_keeping_every_other_part_byte_for_byte(
    root: Path, settings_for: Any
) -> None:
    from mcp import Client

    from deskmcp.sheets.server import create_server
    from tests.helpers.workbooks import make_xlsx

    path = make_xlsx(root / "p.xlsx", {"S": [[1, "=A1*2"]], "T": [["other"]]})
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("customXml/item1.xml", "<kept/>")  # a part openpyxl does not carry through a save
    with zipfile.ZipFile(path) as zf:
        before = {n: zf.read(n) for n in zf.namelist()}
    async with Client(create_server(settings_for(root))) as c:
        await call(c, "update_values", {"spreadsheet_id": "p.xlsx", "range": "S!A1", "values": [[5]]})
        out = await call(c, "read_values", {"spreadsheet_id": "p.xlsx", "ranges": ["S!A1:B1"]})
    assert out["ranges"][0]["values"] == [[5, 10]]
    with zipfile.ZipFile(path) as zf:
        after = {n: zf.read(n) for n in zf.namelist()}
    assert set(after) == set(before)
    assert [n for n in before if before[n] != after[n]] == ["xl/worksheets/sheet1.xml"]
    assert_well_formed(path)


async def test_writing_an_ods_workbook_is_refused_saying_why_and_how_to_edit_it(root: Path, connect: Connect) -> None:
    from tests.helpers.corpora import shared_corpus
    from tests.helpers.tool_calls import fail

    shutil.copy(shared_corpus("spreadsheets") / "calamine" / "date.ods", root / "date.ods")
    async with connect() as c:
        error = await fail(c, "update_values", {"spreadsheet_id": "date.ods", "range": "A1", "values": [[1]]})
    assert error["error"] == "permission_denied"
    assert "no OpenDocument writer" in error["message"] and ".xlsx" in error["message"]


async def test_structure_changes_list_the_formulas_they_left_without_a_value(root: Path, connect: Connect) -> None:
    path = invoice(root / "inv.xlsx")
    sid = {"spreadsheet_id": "inv.xlsx"}
    async with connect() as c:
        inserted = await call(c, "insert_rows", {**sid, "sheet": "Invoice", "at": 1, "count": 1})
        deleted = await call(c, "delete_rows", {**sid, "sheet": "Invoice", "at": 1, "count": 1})
        renamed = await call(c, "rename_sheet", {**sid, "sheet": "Prices", "title": "Costs"})
        copied = await call(c, "duplicate_sheet", {**sid, "sheet": "Invoice", "title": "Copy"})
        added = await call(c, "add_sheet", {**sid, "title": "Empty"})
        removed = await call(c, "delete_sheet", {**sid, "sheet": "Costs"})
        shown = await call(c, "read_values", {**sid, "ranges": ["Invoice!A2:H2"]})
    lookups = ["B2", "C2", "D2", "F2"]  # LOOKUP is not computed here, and C2 doubles B2
    assert inserted["uncomputed"] == ["Invoice!B3", "Invoice!C3", "Invoice!D3", "Invoice!F3"]
    assert deleted["uncomputed"] == [f"Invoice!{c}" for c in lookups]
    assert renamed["uncomputed"] == [f"Invoice!{c}" for c in lookups]
    everywhere = [f"Copy!{c}" for c in lookups] + [f"Invoice!{c}" for c in lookups]
    assert copied["uncomputed"] == added["uncomputed"] == removed["uncomputed"] == everywhere
    assert shown["ranges"][0]["uncomputed"] == [f"Invoice!{c}" for c in lookups]
    assert 'fullCalcOnLoad="1"' in workbook_xml(path)
    assert_well_formed(path)


def _package(path: Path, sheet_data: str, after: str = "") -> Path:
    """A one-sheet xlsx ("S") whose sheetData is written by hand, as other programs write it."""
    ns = "http://schemas.openxmlformats.org"
    rel = f"{ns}/officeDocument/2006/relationships"
    office = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "[Content_Types].xml",
            f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{ns}/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{office}.sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{office}.worksheet+xml"/></Types>',
        )
        zf.writestr(
            "_rels/.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{ns}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        zf.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{ns}/spreadsheetml/2006/main" '
            f'xmlns:r="{rel}"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        zf.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{ns}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        )
        zf.writestr(
            "xl/worksheets/sheet1.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{ns}/spreadsheetml/2006/main">'
            f"<sheetData>{sheet_data}</sheetData>{after}</worksheet>",
        )
    return path


async def test_a_write_recomputes_the_shared_formulas_that_read_the_changed_cell(root: Path, connect: Connect) -> None:
    # B1:B3 share =A1*2 filled down; D1:E3 share =$A1+B$1 filled down and right
    def shared(ref: str, value: int, si: int, text: str = "", span: str = "") -> str:
        f = f'<f t="shared" ref="{span}" si="{si}">{text}</f>' if text else f'<f t="shared" si="{si}"/>'
        return f'<c r="{ref}">{f}<v>{value}</v></c>'

    _package(
        root / "shared.xlsx",
        '<row r="1"><c r="A1"><v>1</v></c>'
        + shared("B1", 2, 0, "A1*2", "B1:B3")
        + '<c r="C1"><f>SUM(B1:B3)</f><v>12</v></c>'
        + shared("D1", 3, 1, "$A1+B$1", "D1:E3")
        + shared("E1", 13, 1)
        + '</row><row r="2"><c r="A2"><v>2</v></c>'
        + shared("B2", 4, 0)
        + shared("D2", 4, 1)
        + shared("E2", 14, 1)
        + '</row><row r="3"><c r="A3"><v>3</v></c>'
        + shared("B3", 6, 0)
        + shared("D3", 5, 1)
        + shared("E3", 15, 1)
        + "</row>",
    )
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "shared.xlsx", "range": "S!A2", "values": [[10]]})
        out = await call(c, "read_values", {"spreadsheet_id": "shared.xlsx", "ranges": ["S!A1:E3"]})
        assert out["ranges"][0]["values"] == [[1, 2, 28, 3, 29], [10, 20, "", 12, 38], [3, 6, "", 5, 31]]
        await call(c, "update_values", {"spreadsheet_id": "shared.xlsx", "range": "S!A1", "values": [[0]]})
        out = await call(c, "read_values", {"spreadsheet_id": "shared.xlsx", "ranges": ["S!A1:E3"]})
    assert out["ranges"][0]["values"] == [[0, 0, 26, 0, 26], [10, 20, "", 10, 36], [3, 6, "", 3, 29]]


async def test_a_formula_whose_text_holds_character_references_is_recomputed_when_its_input_changes(
    root: Path, connect: Connect
) -> None:
    _package(
        root / "entity.xlsx",
        '<row r="1"><c r="A1" t="str"><f>"&#51;"&amp;A2&amp;"&#x34;"</f><v>314</v></c></row>'
        '<row r="2"><c r="A2"><v>1</v></c></row>',
    )
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "entity.xlsx", "range": "S!A2", "values": [[7]]})
        out = await call(c, "read_values", {"spreadsheet_id": "entity.xlsx", "ranges": ["S!A1"]})
    assert out["ranges"][0]["values"] == [["374"]]


async def test_a_cell_write_patches_in_place_a_sheet_with_conditional_formats_and_validations(
    root: Path, settings_for: Any
) -> None:
    from mcp import Client

    from deskmcp.sheets.server import create_server

    rules = (
        '<conditionalFormatting sqref="A1:A3"><cfRule type="expression" priority="1">'
        "<formula>A1&gt;2</formula></cfRule></conditionalFormatting>"
        '<dataValidations count="1"><dataValidation type="whole" sqref="A1:A3">'
        "<formula1>0</formula1><formula2>99</formula2></dataValidation></dataValidations>"
    )
    path = _package(
        root / "rules.xlsx",
        '<row r="1"><c r="A1"><v>1</v></c><c r="B1"><f>A1*2</f><v>2</v></c></row>',
        after=rules,
    )
    with zipfile.ZipFile(path) as zf:
        before = {n: zf.read(n) for n in zf.namelist()}
    async with Client(create_server(settings_for(root))) as c:
        await call(c, "update_values", {"spreadsheet_id": "rules.xlsx", "range": "S!A1", "values": [[5]]})
        out = await call(c, "read_values", {"spreadsheet_id": "rules.xlsx", "ranges": ["S!A1:B1"]})
    assert out["ranges"][0]["values"] == [[5, 10]]
    with zipfile.ZipFile(path) as zf:
        after = {n: zf.read(n) for n in zf.namelist()}
    assert [n for n in before if before[n] != after[n]] == ["xl/worksheets/sheet1.xml"]
    assert rules in after["xl/worksheets/sheet1.xml"].decode("utf-8")
    assert_well_formed(path)


async def test_consecutive_writes_in_one_server_recompute_what_each_write_makes_stale(
    root: Path, connect: Connect
) -> None:
    from tests.helpers.workbooks import make_xlsx

    path = make_xlsx(root / "steps.xlsx", {"S": [[1, "=A1*2", "=B1+1", "=A1+1"]], "T": [["=SUM(S!B1:C1)"]]})
    sid = {"spreadsheet_id": "steps.xlsx"}

    async def put(ref: str, value: Any) -> None:
        await call(c, "update_values", {**sid, "range": ref, "values": [[value]]})

    async def shown() -> list[Any]:
        out = await call(c, "read_values", {**sid, "ranges": ["S!A1:E1", "T!A1"]})
        return [out["ranges"][0]["values"][0], out["ranges"][1]["values"][0][0]]

    async with connect() as c:
        await put("S!A1", 5)
        assert await shown() == [[5, 10, 11, 6], 21]
        await put("S!B1", "=E1*3")  # a formula replaced by one reading another cell
        assert await shown() == [[5, 0, 1, 6], 1]
        await put("S!E1", 2)
        assert await shown() == [[5, 6, 7, 6, 2], 13]
        await put("S!D1", 100)  # a formula replaced by a value
        await put("S!A1", 7)
        assert await shown() == [[7, 6, 7, 100, 2], 13]
        await call(c, "append_rows", {**sid, "range": "S", "values": [[1, "=A2+E1"]]})
        await put("S!E1", 4)
        out = await call(c, "read_values", {**sid, "ranges": ["S!A2:B2", "T!A1"]})
        assert out["ranges"][0]["values"] == [[1, 5]] and out["ranges"][1]["values"] == [[25]]
        # another program saves the file meanwhile: what the server knew of the old one is not used
        make_xlsx(path, {"S": [[1, "=A1*10", "=B1+1", "=A1+1"]], "T": [["=SUM(S!B1:C1)"]]})
        await put("S!A1", 3)
        assert await shown() == [[3, 30, 31, 4], 61]
    assert_well_formed(path)


async def test_a_write_recomputes_formulas_of_cells_in_unusual_forms(root: Path, connect: Connect) -> None:
    # rows without their number, spaces before <f>, a rich-text cell
    _package(
        root / "odd.xlsx",
        '<row><c r="A1"><v>1</v></c><c r="B1"><f>A1*2</f><v>2</v></c></row>'
        '<row><c r="A2"><v>3</v></c><c r="B2">\n  <f>A2+B1</f><v>5</v></c>'
        '<c r="C2" t="inlineStr"><is><r><rPr><family val="2"/></rPr><t>rich</t></r></is></c></row>',
    )
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "odd.xlsx", "range": "S!A1", "values": [[5]]})
        out = await call(c, "read_values", {"spreadsheet_id": "odd.xlsx", "ranges": ["S!A1:C2"]})
    assert out["ranges"][0]["values"] == [[5, 10], [3, 13, "rich"]]


async def test_a_write_recomputes_a_formula_stored_after_its_value(root: Path, connect: Connect) -> None:
    # a value before the formula: a form the patch does not read, so openpyxl writes it
    _package(
        root / "odd.xlsx",
        '<row><c r="A1"><v>1</v></c><c r="B1"><v>2</v><f>A1*2</f></c></row>'
        '<row><c r="A2"><v>3</v></c><c r="B2"><f>A2+B1</f><v>5</v></c>'
        '<c r="C2" t="inlineStr"><is><t>rich</t></is></c></row>',
    )
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "odd.xlsx", "range": "S!A1", "values": [[5]]})
        out = await call(c, "read_values", {"spreadsheet_id": "odd.xlsx", "ranges": ["S!A1:C2"]})
    assert out["ranges"][0]["values"] == [[5, 10], [3, 13, "rich"]]


async def test_text_typed_after_an_apostrophe_is_stored_as_text_never_as_a_formula(
    root: Path, connect: Connect
) -> None:
    from tests.helpers.workbooks import make_xlsx

    path = make_xlsx(root / "t.xlsx", {"S": [[5]]})
    (root / "c.csv").write_text("a\n", encoding="utf-8")
    (root / "plain.csv").write_text("a\n", encoding="utf-8")
    typed = ["'=A1*2", '\'=HYPERLINK("http://x","y")', "'=", "'0042"]
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "t.xlsx", "range": "S!B1", "values": [typed]})
        shown = await call(c, "read_values", {"spreadsheet_id": "t.xlsx", "ranges": ["S!A1:E1"]})
        await call(c, "update_values", {"spreadsheet_id": "c.csv", "range": "A2", "values": [["'=1+1"]]})
    async with connect(csv_escape_formulas=False) as c:
        await call(c, "update_values", {"spreadsheet_id": "plain.csv", "range": "A2", "values": [["'=1+1"]]})
        from_csv = await call(c, "read_values", {"spreadsheet_id": "plain.csv", "ranges": ["A2"]})
    assert shown["ranges"][0]["values"] == [[5, "=A1*2", '=HYPERLINK("http://x","y")', "=", "0042"]]
    assert "<f>" not in sheet_xml(path)  # text cells, not formulas
    # a .csv holds the text, with the `'` that keeps spreadsheet apps from running it unless that
    # escaping is switched off; never the formula's result
    assert (root / "c.csv").read_text(encoding="utf-8") == "a\n'=1+1\n"
    assert (root / "plain.csv").read_text(encoding="utf-8") == "a\n=1+1\n"
    assert from_csv["ranges"][0]["values"] == [["=1+1"]]
