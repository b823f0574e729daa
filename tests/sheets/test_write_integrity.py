"""What a write may leave in a file: a package every reader can open (any character a cell holds,
nothing past the grid), no change at all to a sheet the reader refuses, and formula work bounded."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tool_calls import Connect, call, fail
from tests.helpers.workbooks import assert_well_formed, libreoffice_csv, make_xlsx

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[True, False], ids=["patched", "openpyxl"])
def connect(request: pytest.FixtureRequest, root: Path, settings_for: Any) -> Connect:
    """Every test here runs on both write paths: the package patched in place, and openpyxl."""
    from mcp import Client

    from deskmcp.sheets.server import create_server

    def build(folder: Path | None = None, **overrides: Any) -> Client:
        return Client(create_server(settings_for(folder or root, fast_writes=request.param, **overrides)))

    return build


CONTROL = ["a\x0bb", "\x00nul", "esc\x1b[0m", "form\x0cfeed", "_x000B_ typed as text", "both\x01_x0041_"]


async def test_control_characters_are_stored_escaped_and_read_back_as_written(root: Path, connect: Connect) -> None:
    from openpyxl import load_workbook

    path = make_xlsx(root / "t.xlsx", {"S": [["head"], ["keep"]]})
    sid = {"spreadsheet_id": "t.xlsx"}
    async with connect() as c:
        await call(c, "update_values", {**sid, "range": "S!A3", "values": [CONTROL], "input": "RAW"})
        await call(c, "update_values", {**sid, "range": "S!A4", "values": [['="p\x0bq"&"r"', "=A3&B3"]]})
        await call(c, "append_rows", {**sid, "range": "S", "values": [["tail\x1f", "ok"]]})
        shown = await call(c, "read_values", {**sid, "ranges": ["S!A1:F5"]})
        formulas = await call(c, "read_values", {**sid, "ranges": ["S!A4:B4"], "render": "formula"})
    assert_well_formed(path)
    assert shown["ranges"][0]["values"] == [
        ["head"],
        ["keep"],
        CONTROL,
        ["p\x0bqr", "a\x0bb\x00nul"],
        ["tail\x1f", "ok"],
    ]
    assert formulas["ranges"][0]["values"] == [['="p\x0bq"&"r"', "=A3&B3"]]
    wb = load_workbook(path)  # another program opens it too, every row kept
    assert wb["S"].max_row == 5


async def test_characters_no_workbook_can_hold_are_refused_and_the_file_is_unchanged(
    root: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "t.xlsx", {"S": [["head"]]})
    before = path.read_bytes()
    async with connect() as c:
        for text in ("x\ufffe", "x\uffff"):
            err = await fail(
                c, "update_values", {"spreadsheet_id": "t.xlsx", "range": "S!A2", "values": [[text]], "input": "RAW"}
            )
            assert err["error"] == "bad_request", err
            assert "U+FFF" in err["message"]
        for title in ("tab\x0b", "tab\x01"):
            err = await fail(c, "add_sheet", {"spreadsheet_id": "t.xlsx", "title": title})
            assert err["error"] == "bad_request", err
    assert path.read_bytes() == before


def test_a_lone_surrogate_is_refused_before_anything_is_written(root: Path, settings_for: Any) -> None:
    from deskmcp.core.errors import BadRequest
    from deskmcp.sheets.service import SheetsService

    path = make_xlsx(root / "t.xlsx", {"S": [["head"]]})
    before = path.read_bytes()
    for fast in (True, False):
        service = SheetsService(settings_for(root, fast_writes=fast))
        with pytest.raises(BadRequest, match="U\\+D800"):
            service.update_values("t.xlsx", "S!A2", [["x\ud800y"]], "RAW")
        with pytest.raises(BadRequest, match="U\\+DC00"):
            service.append_rows("t.xlsx", "S", [["\udc00"]], "RAW")
        service.close()
    assert path.read_bytes() == before


async def test_control_characters_written_to_a_csv_are_kept_as_they_are(root: Path, connect: Connect) -> None:
    path = root / "log.csv"
    path.write_text("name\nAnn_x0041_\n", encoding="utf-8")
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "log.csv", "range": "A3", "values": [["a\x0bb"]]})
        shown = await call(c, "read_values", {"spreadsheet_id": "log.csv", "ranges": ["A1:A3"]})
    assert shown["ranges"][0]["values"] == [["name"], ["Ann_x0041_"], ["a\x0bb"]]
    assert path.read_text(encoding="utf-8") == "name\nAnn_x0041_\na\x0bb\n"


def _sheet_xml(path: Path) -> str:
    with zipfile.ZipFile(path) as zf:
        return zf.read("xl/worksheets/sheet1.xml").decode("utf-8")


async def test_writes_past_the_last_row_or_column_are_refused_before_anything_is_written(
    root: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "t.xlsx", {"S": [["head"]]})
    edge = root / "edge.csv"
    edge.write_text("a\n", encoding="utf-8")
    before, csv_before = path.read_bytes(), edge.read_bytes()
    sid = {"spreadsheet_id": "t.xlsx"}
    async with connect() as c:
        wide = await fail(c, "update_values", {**sid, "range": "S!XFD1048576", "values": [[1, 2, 3]]})
        deep = await fail(c, "update_values", {**sid, "range": "S!A1048576", "values": [[1], [2]]})
        csv_wide = await fail(
            c, "update_values", {"spreadsheet_id": "edge.csv", "range": "XFC1", "values": [[1, 2, 3]]}
        )
        last = await call(c, "update_values", {**sid, "range": "S!XFD1048576", "values": [["corner"]]})
        after_last = await fail(c, "append_rows", {**sid, "range": "S!XFD:XFD", "values": [["below"]]})
        shown = await call(c, "read_values", {**sid, "ranges": ["S!XFD1048576"]})
    assert wide["error"] == deep["error"] == csv_wide["error"] == after_last["error"] == "bad_request"
    assert "XFD" in wide["message"] and "16,384" in wide["message"]
    assert "1,048,576" in deep["message"] and "1,048,576" in after_last["message"]
    assert edge.read_bytes() == csv_before
    assert last["updated"][0]["range"] == "S!XFD1048576"
    assert shown["ranges"][0]["values"] == [["corner"]]
    assert_well_formed(path)
    assert path.read_bytes() != before


async def test_formulas_past_the_cell_budget_of_a_call_are_left_uncomputed_with_the_reason(
    root: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "t.xlsx", {"S": [[n] for n in range(1, 101)]})
    sid = {"spreadsheet_id": "t.xlsx"}
    # each SUM reads its own cell and the 100 of A1:A100: the first fits in 150 cell reads, not the second
    sums = [["=SUM(A1:A100)", "=SUM(A1:A100)*2", "=SUM(A1:A100)*3"]]
    async with connect(formula_budget_cells=150) as c:
        answer = await call(c, "update_values", {**sid, "range": "S!B1", "values": sums})
        shown = await call(c, "read_values", {**sid, "ranges": ["S!B1:D1"]})
        # the next call has a budget of its own: C1, still without a value, is computed; D1 and E1 are past it
        again = await call(c, "update_values", {**sid, "range": "S!E1", "values": [["=A1+A2"]]})
        after = await call(c, "read_values", {**sid, "ranges": ["S!B1:E1"]})
    assert answer["uncomputed"] == ["S!C1", "S!D1"]
    assert "SHEETS_FORMULA_BUDGET_CELLS" in answer["uncomputed_reason"] and "150" in answer["uncomputed_reason"]
    assert shown["ranges"][0]["values"] == [[5050]]  # C1 and D1 stored without a value, not guessed
    assert shown["ranges"][0]["uncomputed"] == ["S!C1", "S!D1"]
    assert again["uncomputed"] == ["S!D1", "S!E1"] and again["uncomputed_reason"]
    assert after["ranges"][0]["values"] == [[5050, 10100]]
    assert_well_formed(path)


def test_the_formula_budget_has_a_default_and_reads_its_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from deskmcp.sheets.settings import SheetsSettings

    assert SheetsSettings(workspace=tmp_path).formula_budget_cells == 2_000_000
    monkeypatch.setenv("SHEETS_FORMULA_BUDGET_CELLS", "5000")
    assert SheetsSettings(workspace=tmp_path).formula_budget_cells == 5000


def _damaged(path: Path, body: str, strings: int = 0) -> Path:
    """An xlsx of one sheet "S" (A1 1, B1 =A1*2) whose sheetData is `body`, with `strings` shared strings."""
    make_xlsx(path, {"S": [[1, "=A1*2"]]})
    with zipfile.ZipFile(path) as src:
        parts = [(info, src.read(info)) for info in src.infolist()]
    sst = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in parts:
            text = data.decode("utf-8")
            if info.filename == "xl/worksheets/sheet1.xml":
                start, end = text.index("<sheetData>"), text.index("</sheetData>")
                text = text[:start] + "<sheetData>" + body + text[end:]
            elif info.filename == "[Content_Types].xml" and strings:
                text = text.replace(
                    "</Types>", f'<Override PartName="/xl/sharedStrings.xml" ContentType="{sst}"/></Types>'
                )
            elif info.filename == "xl/_rels/workbook.xml.rels" and strings:
                text = text.replace(
                    "</Relationships>",
                    f'<Relationship Id="rId90" Type="{rel}" Target="sharedStrings.xml"/></Relationships>',
                )
            zf.writestr(info, text.encode("utf-8"))
        if strings:
            items = "".join(f"<si><t>s{i}</t></si>" for i in range(strings))
            zf.writestr(
                "xl/sharedStrings.xml",
                '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">' + items + "</sst>",
            )
    return path


FIRST = '<row r="1"><c r="A1"><v>1</v></c><c r="B1"><f>A1*2</f><v>2</v></c></row>'
DAMAGE = {
    "shared string index past the table": (FIRST + '<row r="2"><c r="A2" t="s"><v>99</v></c></row>', 1),
    "row 0": ('<row r="0"><c r="A0"><v>7</v></c></row>' + FIRST, 0),
    "undefined entity": (FIRST + '<row r="2"><c r="A2" t="inlineStr"><is><t>a&bogus;b</t></is></c></row>', 0),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_a_write_to_a_sheet_the_reader_refuses_is_refused_and_leaves_the_file_unchanged(
    root: Path, connect: Connect, damage: str
) -> None:
    body, strings = DAMAGE[damage]
    path = _damaged(root / "t.xlsx", body, strings)
    before = path.read_bytes()
    sid = {"spreadsheet_id": "t.xlsx"}
    async with connect() as c:
        read = await fail(c, "read_values", {**sid, "ranges": ["S!A1:B2"]})
        errors = [
            await fail(c, "update_values", {**sid, "range": "S!C1", "values": [[5]]}),
            await fail(c, "append_rows", {**sid, "range": "S", "values": [[5]]}),
            await fail(c, "clear_values", {**sid, "ranges": ["S!A1"]}),
        ]
    assert read["error"] == "parse_error"
    for error in errors:
        assert error["error"] == "parse_error", error
        assert error["details"]["part"] == "xl/worksheets/sheet1.xml"
        assert "xl/worksheets/sheet1.xml" in error["message"]
    assert path.read_bytes() == before


DISORDER = {
    "row element twice": FIRST + '<row r="1"><c r="C1"><v>3</v></c></row>',
    "rows out of order": FIRST + '<row r="3"><c r="A3"><v>5</v></c></row><row r="2"><c r="A2"><v>4</v></c></row>',
}


@pytest.mark.parametrize("damage", list(DISORDER))
@pytest.mark.parametrize("cell", ["A1", "C1", "D2"])
async def test_a_write_to_a_sheet_numbering_a_row_twice_is_refused_and_leaves_the_file_unchanged(
    root: Path, connect: Connect, damage: str, cell: str
) -> None:
    path = _damaged(root / "t.xlsx", DISORDER[damage])
    before = path.read_bytes()
    sid = {"spreadsheet_id": "t.xlsx"}
    async with connect() as c:
        errors = [
            await fail(c, "update_values", {**sid, "range": f"S!{cell}", "values": [[5]]}),
            await fail(c, "append_rows", {**sid, "range": "S", "values": [[5]]}),
            await fail(c, "clear_values", {**sid, "ranges": [f"S!{cell}"]}),
        ]
    for error in errors:
        assert error["error"] == "parse_error", error
        assert error["details"]["part"] == "xl/worksheets/sheet1.xml"
        assert "twice or out of order" in error["message"]
    assert path.read_bytes() == before


HOSTILE_STRINGS = {
    "entity expansion": (
        '<!DOCTYPE sst [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>',
        "<si><t>&b;</t></si>",
    ),
    "external entity": ('<!DOCTYPE sst [<!ENTITY e SYSTEM "file:///etc/passwd">]>', "<si><t>&e;</t></si>"),
}


@pytest.mark.parametrize("hostile", list(HOSTILE_STRINGS))
async def test_security_a_write_to_a_workbook_whose_shared_strings_the_reader_refuses_is_refused(
    root: Path, connect: Connect, hostile: str
) -> None:
    path = _damaged(root / "t.xlsx", FIRST + '<row r="2"><c r="A2" t="s"><v>0</v></c></row>', 1)
    doctype, items = HOSTILE_STRINGS[hostile]
    with zipfile.ZipFile(path) as src:
        parts = [(info, src.read(info)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in parts:
            if info.filename == "xl/sharedStrings.xml":
                data = (
                    '<?xml version="1.0" encoding="UTF-8"?>'
                    + doctype
                    + '<sst xmlns="http://schemas.openxmlformats.org/'
                    'spreadsheetml/2006/main">' + items + "</sst>"
                ).encode("utf-8")
            zf.writestr(info, data)
    before = path.read_bytes()
    sid = {"spreadsheet_id": "t.xlsx"}
    async with connect() as c:
        read = await fail(c, "read_values", {**sid, "ranges": ["S!A1:B2"]})
        errors = [
            await fail(c, "update_values", {**sid, "range": "S!C1", "values": [[5]]}),
            await fail(c, "append_rows", {**sid, "range": "S", "values": [[5]]}),
            await fail(c, "clear_values", {**sid, "ranges": ["S!A1"]}),
        ]
    assert read["error"] == "parse_error"
    for error in errors:
        assert error["error"] == "parse_error", error
        assert "passwd" not in error["message"] and "aaaa" not in error["message"]
    # (append_rows may be refused by the read of the sheet it appends to, which comes first)
    assert errors[0]["details"]["part"] == errors[2]["details"]["part"] == "xl/sharedStrings.xml"
    assert path.read_bytes() == before


@pytest.mark.slow
@pytest.mark.e2e
async def test_libreoffice_keeps_every_row_after_a_cell_holding_a_control_character(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    path = make_xlsx(root / "t.xlsx", {"S": [["head"]]})
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "t.xlsx", "range": "S!A2", "values": [["a\x0bb"], ["after"]]})
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[0] == "head" and lines[-1] == "after"
