"""rename_sheet and delete_sheet made in place on workbooks holding charts, pictures, notes,
tables and pivot tables: every reference naming the sheet follows a rename, a deletion removes the
sheet's own parts or refuses naming what points into the sheet, and every other part stays byte
for byte as it was."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from deskmcp.sheets.xlsx.sheet_edit import renamed
from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import Connect, call, fail
from tests.helpers.workbooks import assert_well_formed, libreoffice_csv
from tests.sheets.test_kept_parts import SID, changed, part_text, parts, rich_workbook

pytestmark = pytest.mark.anyio


def excel_app_properties(path: Path, titles: list[str]) -> None:
    """docProps/app.xml as Excel writes it: the worksheets counted and named."""
    from tests.sheets.test_kept_parts import _rewrite

    listed = "".join(f"<vt:lpstr>{t}</vt:lpstr>" for t in titles)
    app = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Properties '
        'xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" '
        'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        '<Application>Microsoft Excel</Application><HeadingPairs><vt:vector size="4" baseType="variant">'
        "<vt:variant><vt:lpstr>Worksheets</vt:lpstr></vt:variant><vt:variant><vt:i4>"
        f"{len(titles)}</vt:i4></vt:variant><vt:variant><vt:lpstr>Named Ranges</vt:lpstr></vt:variant>"
        "<vt:variant><vt:i4>1</vt:i4></vt:variant></vt:vector></HeadingPairs>"
        f'<TitlesOfParts><vt:vector size="{len(titles) + 1}" baseType="lpstr">{listed}'
        "<vt:lpstr>Data!Print_Area</vt:lpstr></vt:vector></TitlesOfParts></Properties>"
    )
    _rewrite(path, {"docProps/app.xml": lambda _t: app})


def test_a_rename_follows_every_way_a_formula_names_the_sheet_and_nothing_else() -> None:
    assert renamed("=Data!B2+'Data'!C3+data!D4", "Data", "Sales Data") == (
        "='Sales Data'!B2+'Sales Data'!C3+'Sales Data'!D4"
    )
    assert renamed('=MyData!B2&"Data!B2"&[1]Data!A1', "Data", "X") == '=MyData!B2&"Data!B2"&[1]Data!A1'
    assert renamed("=SUM('Bob''s'!A1:A3)", "Bob's", "Totals") == "=SUM(Totals!A1:A3)"
    assert renamed("=Data!A1", "Data", "Q1") == "='Q1'!A1"  # a title that reads as a cell is quoted


async def test_rename_sheet_moves_formulas_names_chart_series_and_app_titles_keeping_the_rest(
    root: Path, connect: Connect, tmp_path: Path
) -> None:
    path = rich_workbook(root / "rich.xlsx")
    excel_app_properties(path, ["Data", "Summary"])
    before = parts(path)
    async with connect() as c:
        answer = await call(c, "rename_sheet", {**SID, "sheet": "Data", "title": "Sales Data"})
        shown = await call(c, "read_values", {**SID, "ranges": ["Summary!B1:B2"], "render": "formula"})
        values = await call(c, "read_values", {**SID, "ranges": ["Summary!B1:B2", "'Sales Data'!D7"]})
        info = await call(c, "get_spreadsheet", SID)
    assert answer["sheet"]["title"] == "Sales Data"
    assert [s["title"] for s in info["sheets"]] == ["Sales Data", "Summary"]
    assert shown["ranges"][0]["values"] == [["=SUM(Amounts)*TaxRate"], ["='Sales Data'!B7"]]
    assert values["ranges"][0]["values"] == [[210 * 7], [60]]
    after = parts(path)
    workbook = after["xl/workbook.xml"].decode("utf-8")
    assert "'Sales Data'!$B$2:$B$7" in workbook and 'name="Sales Data"' in workbook
    assert "&apos;Sales Data&apos;!" in part_text(path, "xl/charts/chart1.xml") or "'Sales Data'!" in part_text(
        path, "xl/charts/chart1.xml"
    )
    app = after["docProps/app.xml"].decode("utf-8")
    assert "<vt:lpstr>Sales Data</vt:lpstr><vt:lpstr>Summary</vt:lpstr>" in app
    kept = {n for n in before if n.startswith(("xl/media/", "xl/drawings/", "xl/tables/", "xl/comments"))}
    assert kept and not (changed(before, after) & kept)
    assert_well_formed(path)
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[6].startswith("item7,60,2,120")


async def test_rename_sheet_moves_the_source_of_excels_pivot_caches(root: Path, connect: Connect) -> None:
    shutil.copy(shared_corpus("spreadsheets") / "calamine" / "pivots.xlsx", root / "pivots.xlsx")
    path = root / "pivots.xlsx"
    before = parts(path)
    async with connect() as c:
        await call(c, "rename_sheet", {"spreadsheet_id": "pivots.xlsx", "sheet": "DataSheet", "title": "Raw"})
    after = parts(path)
    cache = after["xl/pivotCache/pivotCacheDefinition1.xml"].decode("utf-8")
    assert 'sheet="Raw"' in cache and 'sheet="DataSheet"' not in cache
    pivots = {n for n in before if n.startswith(("xl/pivotTables/", "xl/pivotCache/pivotCacheRecords"))}
    assert pivots and not (changed(before, after) & pivots)
    assert "<vt:lpstr>Raw</vt:lpstr>" in after["docProps/app.xml"].decode("utf-8")
    assert_well_formed(path)


async def test_delete_sheet_takes_a_pivot_table_sheet_and_keeps_the_others(
    root: Path, connect: Connect, tmp_path: Path
) -> None:
    shutil.copy(shared_corpus("spreadsheets") / "calamine" / "pivots.xlsx", root / "pivots.xlsx")
    path = root / "pivots.xlsx"
    sid = {"spreadsheet_id": "pivots.xlsx"}
    before = parts(path)
    async with connect() as c:
        used = await fail(c, "delete_sheet", {**sid, "sheet": "DataSheet"})
        await call(c, "delete_sheet", {**sid, "sheet": "PivotSheet1"})
        info = await call(c, "get_spreadsheet", sid)
    assert used["error"] == "bad_request" and "pivot" in used["message"]
    assert "PivotSheet1" not in [s["title"] for s in info["sheets"]]
    after = parts(path)
    assert "xl/calcChain.xml" not in after
    assert {n for n in set(before) - set(after) if n.startswith("xl/pivotTables/pivotTable")}
    assert all(after[n] == before[n] for n in after if n.startswith("xl/pivotCache/pivotCacheRecords"))
    assert_well_formed(path)
    lines = await libreoffice_csv(path, tmp_path)
    assert lines


async def test_delete_sheet_refuses_naming_what_points_into_the_sheet(root: Path, connect: Connect) -> None:
    path = rich_workbook(root / "rich.xlsx")
    before = path.read_bytes()
    async with connect() as c:
        err = await fail(c, "delete_sheet", {**SID, "sheet": "Data"})
    assert err["error"] == "bad_request"
    assert "Summary!B2" in err["details"]["used_by"]
    assert "the defined name Amounts" in err["details"]["used_by"]
    assert "Nothing was written" in err["message"]
    assert path.read_bytes() == before


async def test_delete_sheet_removes_its_chart_picture_notes_and_table_parts_cleanly(
    root: Path, connect: Connect, tmp_path: Path
) -> None:
    path = rich_workbook(root / "rich.xlsx")
    from tests.sheets.test_kept_parts import _rewrite

    # nothing outside Data reads it any more: Summary's formulas and the names go
    _rewrite(
        path,
        {
            "xl/worksheets/sheet2.xml": lambda t: t.replace("<f>SUM(Amounts)*TaxRate</f>", "").replace(
                "<f>Data!B7</f>", ""
            ),
            "xl/workbook.xml": lambda t: t.replace(
                '<definedName name="Amounts">Data!$B$2:$B$7</definedName>', ""
            ).replace('<definedName name="TaxRate">Data!$F$1</definedName>', ""),
        },
    )
    excel_app_properties(path, ["Data", "Summary"])
    before = parts(path)
    async with connect() as c:
        await call(c, "delete_sheet", {**SID, "sheet": "Data"})
        info = await call(c, "get_spreadsheet", SID)
        shown = await call(c, "read_values", {**SID, "ranges": ["Summary!A1"]})
    assert [s["title"] for s in info["sheets"]] == ["Summary"]
    assert shown["ranges"][0]["values"] == [["total"]]
    after = parts(path)
    gone = set(before) - set(after)
    assert "xl/worksheets/sheet1.xml" in gone and "xl/charts/chart1.xml" in gone and "xl/media/image1.png" in gone
    assert any(n.startswith("xl/tables/") for n in gone) and any(n.startswith("xl/comments") for n in gone)
    types = after["[Content_Types].xml"].decode("utf-8")
    assert all(f'PartName="/{n}"' not in types for n in gone)
    workbook = after["xl/workbook.xml"].decode("utf-8")
    assert 'name="Data"' not in workbook and "_xlnm.Print_Area" not in workbook
    app = after["docProps/app.xml"].decode("utf-8")
    assert "<vt:i4>1</vt:i4></vt:variant><vt:variant><vt:lpstr>Named Ranges" in app
    assert '<vt:vector size="2" baseType="lpstr"><vt:lpstr>Summary</vt:lpstr><vt:lpstr>Data!Print_Area' in app
    assert after["xl/worksheets/sheet2.xml"] == before["xl/worksheets/sheet2.xml"]
    assert_well_formed(path)
    from openpyxl import load_workbook

    assert load_workbook(path).sheetnames == ["Summary"]
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[0].startswith("total")


async def test_add_sheet_lists_the_new_sheet_in_app_properties(root: Path, connect: Connect) -> None:
    path = rich_workbook(root / "rich.xlsx")
    excel_app_properties(path, ["Data", "Summary"])
    async with connect() as c:
        await call(c, "add_sheet", {**SID, "title": "Notes"})
    app = part_text(path, "docProps/app.xml")
    assert "<vt:i4>3</vt:i4>" in app
    assert '<vt:vector size="4" baseType="lpstr"><vt:lpstr>Data</vt:lpstr><vt:lpstr>Summary</vt:lpstr>' in app
    assert "<vt:lpstr>Notes</vt:lpstr><vt:lpstr>Data!Print_Area" in app
    with zipfile.ZipFile(path) as zf:
        assert len([n for n in zf.namelist() if n.startswith("xl/worksheets/sheet")]) == 3


async def test_duplicate_sheet_copies_the_chart_and_notes_under_fresh_names_and_refuses_a_table(
    root: Path, connect: Connect, tmp_path: Path
) -> None:
    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    for row in [["Item", "Amount"], ["a", 10], ["b", 20], ["c", 30], ["total", "=SUM(B2:B4)"]]:
        ws.append(row)
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
    ws.add_chart(chart, "D2")
    ws["B3"].comment = Comment("check", "me")
    ws.print_area = "A1:B5"
    wb.save(root / "c.xlsx")
    path = root / "c.xlsx"
    sid = {"spreadsheet_id": "c.xlsx"}
    before = parts(path)
    async with connect() as c:
        await call(c, "duplicate_sheet", {**sid, "sheet": "Data", "title": "Copy"})
        shown = await call(c, "read_values", {**sid, "ranges": ["Copy!A1:B5"], "notes": True})
    assert shown["ranges"][0]["values"][4] == ["total", 60]
    assert shown["ranges"][0]["notes"] == {"B3": "check"} or shown["ranges"][0]["notes"]["B3"].endswith("check")
    after = parts(path)
    assert all(after[n] == before[n] for n in before if n.startswith(("xl/charts/", "xl/drawings/", "xl/comments")))
    added = set(after) - set(before)
    assert {"xl/charts/chart2.xml", "xl/drawings/drawing2.xml", "xl/worksheets/sheet2.xml"} <= added
    assert "<f>Copy!$B$2:$B$4</f>" in after["xl/charts/chart2.xml"].decode("utf-8")  # the copy charts the copy
    assert "<f>Copy!" not in after["xl/charts/chart1.xml"].decode("utf-8")
    types = after["[Content_Types].xml"].decode("utf-8")
    assert 'PartName="/xl/charts/chart2.xml"' in types and 'PartName="/xl/drawings/drawing2.xml"' in types
    assert_well_formed(path)
    from openpyxl import load_workbook

    assert load_workbook(path).sheetnames == ["Data", "Copy"]
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[4].startswith("total,60")

    rich = rich_workbook(root / "rich.xlsx")
    kept = rich.read_bytes()
    async with connect() as c:
        err = await fail(c, "duplicate_sheet", {**SID, "sheet": "Data", "title": "Copy"})
    assert err["error"] == "bad_request" and "table" in err["message"] and "Nothing was written" in err["message"]
    assert rich.read_bytes() == kept


async def test_row_inserts_and_deletes_move_manual_page_breaks(root: Path, connect: Connect) -> None:
    from openpyxl import Workbook, load_workbook
    from openpyxl.worksheet.pagebreak import Break

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    for i in range(1, 21):
        ws.append([i])
    ws.row_breaks.append(Break(id=5))  # between rows 5 and 6
    ws.row_breaks.append(Break(id=12))
    wb.save(root / "b.xlsx")
    path = root / "b.xlsx"
    sid = {"spreadsheet_id": "b.xlsx"}
    async with connect() as c:
        await call(c, "insert_rows", {**sid, "sheet": "S", "at": 3, "count": 2})
        inserted = [b.id for b in load_workbook(path)["S"].row_breaks.brk]
        await call(c, "delete_rows", {**sid, "sheet": "S", "at": 13, "count": 3})  # rows 13-15 held 11-13
        deleted = [b.id for b in load_workbook(path)["S"].row_breaks.brk]
    assert inserted == [7, 14]
    assert deleted == [7, 12]  # the break above row 15 (gone) now stands above what follows, row 13
    assert 'count="2" manualBreakCount="2"' in part_text(path, "xl/worksheets/sheet1.xml")
    assert_well_formed(path)


async def test_delete_rows_deletes_the_notes_in_them_with_their_boxes(
    root: Path, connect: Connect, tmp_path: Path
) -> None:
    path = rich_workbook(root / "rich.xlsx")
    before = parts(path)
    async with connect() as c:
        await call(c, "delete_rows", {**SID, "sheet": "Data", "at": 3, "count": 1})  # B3 held the note
        shown = await call(c, "read_values", {**SID, "ranges": ["Data!A1:D6"], "notes": True})
        await call(c, "set_notes", {**SID, "sheet": "Data", "notes": {"C4": "again"}})
        again = await call(c, "read_values", {**SID, "ranges": ["Data!A1:D6"], "notes": True})
    assert shown["ranges"][0]["notes"] == {}
    assert shown["ranges"][0]["values"][2][:2] == ["item4", 30]
    assert again["ranges"][0]["notes"] == {"C4": "again"}
    after = parts(path)
    comments = next(n for n in before if n.startswith("xl/comments"))
    vml = next(n for n in before if n.endswith(".vml"))
    assert "check this" in before[comments].decode("utf-8") and "check this" not in parts_text(after, comments)
    assert parts_text(after, vml).count('ObjectType="Note"') == 1  # the new note's box only
    assert_well_formed(path)
    from openpyxl import load_workbook

    assert load_workbook(path)["Data"]["C4"].comment is not None
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[2].startswith("item4,30")


def parts_text(found: dict[str, bytes], name: str) -> str:
    return found[name].decode("utf-8")


def app_properties_in_utf16(path: Path) -> None:
    """docProps/app.xml saved in UTF-16, as some tools write XML: the in-place sheet edits, which
    read every XML part as UTF-8, leave such a workbook to openpyxl."""
    with zipfile.ZipFile(path) as src:
        kept = [(info, src.read(info)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in kept:
            if info.filename == "docProps/app.xml":
                text = data.decode("utf-8").replace('encoding="UTF-8"', 'encoding="UTF-16"', 1)
                data = text.encode("utf-16")
            zf.writestr(info, data)


@pytest.mark.parametrize("path_taken", ["in place", "openpyxl"])
async def test_a_copy_s_formulas_naming_their_own_sheet_point_at_the_copy_and_a_rename_touches_only_the_sheet(
    root: Path, connect: Connect, path_taken: str
) -> None:
    from openpyxl import Workbook, load_workbook

    wb = Workbook()
    data: Any = wb.active
    data.title = "Data"
    data.append(["Item", 5, "=Data!B1*2", "='Data'!B1+Other!A1", '=MyData!A1&"Data!B1"'])
    wb.create_sheet("Other").append([100])
    wb.create_sheet("MyData").append(["mine"])
    path = root / "d.xlsx"
    wb.save(path)
    if path_taken == "openpyxl":
        app_properties_in_utf16(path)
    with zipfile.ZipFile(path) as zf:
        app_before = zf.read("docProps/app.xml")
    sid = {"spreadsheet_id": "d.xlsx"}
    async with connect() as c:
        await call(c, "duplicate_sheet", {**sid, "sheet": "Data", "title": "Copy"})
        await call(c, "update_values", {**sid, "range": "Copy!B1", "values": [[7]]})
        copy = await call(c, "read_values", {**sid, "ranges": ["Copy!A1:E1"], "render": "formula"})
        shown = await call(c, "read_values", {**sid, "ranges": ["Copy!C1:D1", "Data!C1:D1"]})
        await call(c, "rename_sheet", {**sid, "sheet": "Data", "title": "Sales"})
        sales = await call(c, "read_values", {**sid, "ranges": ["Sales!C1:E1"], "render": "formula"})
    with zipfile.ZipFile(path) as zf:
        app = zf.read("docProps/app.xml")
    # openpyxl writes app.xml anew, in UTF-8; in place it is kept as it was
    assert app == app_before if path_taken == "in place" else app.startswith(b"<Properties")
    assert copy["ranges"][0]["values"] == [["Item", 7, "=Copy!B1*2", "=Copy!B1+Other!A1", '=MyData!A1&"Data!B1"']]
    assert [r["values"] for r in shown["ranges"]] == [[[14, 107]], [[10, 105]]]
    # MyData! and the text in quotes are not references to Data
    assert sales["ranges"][0]["values"] == [["=Sales!B1*2", "=Sales!B1+Other!A1", '=MyData!A1&"Data!B1"']]
    assert load_workbook(path)["Copy"]["C1"].value == "=Copy!B1*2"
    assert_well_formed(path)


THREADS = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
TC_REL = "http://schemas.microsoft.com/office/2017/10/relationships/threadedComment"
PERSON_REL = "http://schemas.microsoft.com/office/2017/10/relationships/person"
PERSON = "{5D7C2C4A-1B9E-4F33-9C1A-3E2B7A6D0F11}"
FIRST, REPLY, OTHER = (
    "{A1000000-0000-4000-8000-000000000001}",
    "{A1000000-0000-4000-8000-000000000002}",
    "{A1000000-0000-4000-8000-000000000003}",
)


def threaded_workbook(path: Path) -> Path:
    """A sheet with threaded comments as Excel 365 writes them: the thread (a comment and a reply on
    B3, a comment on B6) in xl/threadedComments/, its author in xl/persons/person.xml, and for
    older readers a placeholder note per thread in the legacy comments part and its VML box."""
    from openpyxl import Workbook
    from openpyxl.comments import Comment

    from tests.sheets.test_kept_parts import _rewrite

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    for row in [["Item", "Amount"], ["a", 10], ["b", 20], ["c", 30], ["d", 40], ["e", 50], ["total", "=SUM(B2:B6)"]]:
        ws.append(row)
    ws["B3"].comment = Comment("[Threaded comment]\n\nComment:\n    Is 20 right?", "tc=" + FIRST)
    ws["B6"].comment = Comment("[Threaded comment]\n\nComment:\n    Fine", "tc=" + OTHER)
    wb.save(path)
    threads = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<ThreadedComments xmlns="{THREADS}" '
        'xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<threadedComment ref="B3" dT="2024-03-01T09:00:00.00" personId="{PERSON}" id="{FIRST}">'
        "<text>Is 20 right?</text></threadedComment>"
        f'<threadedComment ref="B3" dT="2024-03-01T10:00:00.00" personId="{PERSON}" id="{REPLY}" '
        f'parentId="{FIRST}"><text>Yes, checked</text></threadedComment>'
        f'<threadedComment ref="B6" dT="2024-03-02T09:00:00.00" personId="{PERSON}" id="{OTHER}">'
        "<text>Fine</text></threadedComment></ThreadedComments>"
    ).encode()
    persons = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<personList xmlns="{THREADS}" '
        'xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<person displayName="Ann Lee" id="{PERSON}" userId="ann@example.com" providerId="None"/></personList>'
    ).encode()

    def types(text: str) -> str:
        return text.replace(
            "</Types>",
            '<Override PartName="/xl/threadedComments/threadedComment1.xml" '
            'ContentType="application/vnd.ms-excel.threadedcomments+xml"/>'
            '<Override PartName="/xl/persons/person.xml" ContentType="application/vnd.ms-excel.person+xml"/></Types>',
        )

    def sheet_rels(text: str) -> str:
        return text.replace(
            "</Relationships>",
            f'<Relationship Id="rIdTc1" Type="{TC_REL}" Target="../threadedComments/threadedComment1.xml"/>'
            "</Relationships>",
        )

    def book_rels(text: str) -> str:
        return text.replace(
            "</Relationships>",
            f'<Relationship Id="rIdP1" Type="{PERSON_REL}" Target="persons/person.xml"/></Relationships>',
        )

    _rewrite(
        path,
        {
            "[Content_Types].xml": types,
            "xl/worksheets/_rels/sheet1.xml.rels": sheet_rels,
            "xl/_rels/workbook.xml.rels": book_rels,
        },
        {"xl/threadedComments/threadedComment1.xml": threads, "xl/persons/person.xml": persons},
    )
    return path


async def test_delete_rows_deletes_threaded_comments_in_them_with_their_notes_and_keeps_the_people(
    root: Path, connect: Connect, tmp_path: Path
) -> None:
    path = threaded_workbook(root / "t.xlsx")
    before = parts(path)
    sid = {"spreadsheet_id": "t.xlsx"}
    async with connect() as c:
        await call(c, "delete_rows", {**sid, "sheet": "Data", "at": 3, "count": 1})  # B3 held a thread
        shown = await call(c, "read_values", {**sid, "ranges": ["Data!A1:B6"], "notes": True})
    assert shown["ranges"][0]["values"] == [
        ["Item", "Amount"],
        ["a", 10],
        ["c", 30],
        ["d", 40],
        ["e", 50],
        ["total", 130],
    ]
    assert list(shown["ranges"][0]["notes"]) == ["B5"]  # B6's thread moved up with its row
    after = parts(path)
    threads = after["xl/threadedComments/threadedComment1.xml"].decode("utf-8")
    assert FIRST not in threads and REPLY not in threads and "Yes, checked" not in threads
    assert f'<threadedComment ref="B5" dT="2024-03-02T09:00:00.00" personId="{PERSON}" id="{OTHER}">' in threads
    assert after["xl/persons/person.xml"] == before["xl/persons/person.xml"]
    comments = next(n for n in before if n.startswith("xl/comments"))
    vml = next(n for n in before if n.endswith(".vml"))
    assert "Is 20 right?" not in parts_text(after, comments) and "Fine" in parts_text(after, comments)
    assert parts_text(after, vml).count('ObjectType="Note"') == 1
    assert_well_formed(path)
    lines = await libreoffice_csv(path, tmp_path)
    assert lines[:6] == ["Item,Amount", "a,10", "c,30", "d,40", "e,50", "total,130"]
