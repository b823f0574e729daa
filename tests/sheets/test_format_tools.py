"""The format tools on local workbooks, through the in-memory MCP client: formats, layout, notes and
charts patched into the .xlsx in place, read back with openpyxl, every other part unchanged."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import Connect, call, fail
from tests.helpers.workbooks import LIBREOFFICE_XLSX, assert_well_formed, libreoffice_convert, make_xlsx

pytestmark = pytest.mark.anyio

BUDGET = {
    "Costs": [
        ["item", "amount", "date"],
        ["rent", 1000, "2026-01-31"],
        ["food", 300.5, None],
        ["total", "=SUM(B2:B3)"],
    ],
    "My Sheet": [["note"], ["it's here"]],
}


@pytest.fixture
def budget(root: Path) -> Path:
    return make_xlsx(root / "budget.xlsx", BUDGET)


def parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def assert_untouched(before: dict[str, bytes], after: dict[str, bytes], changed: set[str]) -> None:
    """Every part of `before` but `changed` is in `after` byte for byte."""
    for name, body in before.items():
        if name not in changed:
            assert after.get(name) == body, f"{name} changed"


def section(styles: bytes, name: str) -> bytes:
    m = re.search(rb"<" + name.encode() + rb"\b[^>]*>(.*?)</" + name.encode() + rb">", styles, re.S)
    assert m is not None, name
    return m.group(1)


def load(path: Path) -> Any:
    from openpyxl import load_workbook

    return load_workbook(path)


async def test_format_range_sets_font_fill_number_format_alignment_and_borders(budget: Path, client: Any) -> None:
    before = parts(budget)
    out = await call(
        client,
        "format_range",
        {
            "spreadsheet_id": "budget.xlsx",
            "range": "Costs!A1:C1",
            "bold": True,
            "italic": True,
            "underline": True,
            "font_size": 14,
            "font_color": "#1F4E79",
            "fill_color": "light_gray",
            "horizontal": "center",
            "vertical": "middle",
            "wrap": True,
            "borders": {"sides": ["outer"], "style": "medium", "color": "red"},
        },
    )
    assert out["range"] == "Costs!A1:C1"
    assert out["cells"] == 3
    await call(
        client, "format_range", {"spreadsheet_id": "budget.xlsx", "range": "Costs!B2:B4", "number_format": "$#,##0.00"}
    )
    ws = load(budget)["Costs"]
    for ref in ("A1", "B1", "C1"):
        cell = ws[ref]
        assert (cell.font.b, cell.font.i, cell.font.u, cell.font.sz) == (True, True, "single", 14)
        assert cell.font.color.rgb == "FF1F4E79"
        assert cell.fill.fill_type == "solid" and cell.fill.fgColor.rgb == "FFD9D9D9"
        assert (cell.alignment.horizontal, cell.alignment.vertical, cell.alignment.wrap_text) == (
            "center",
            "center",
            True,
        )
        assert cell.border.top.style == "medium" and cell.border.bottom.style == "medium"
        assert cell.border.top.color.rgb == "FFFF0000"
    # outer: the left line on the first cell only, the right line on the last only
    assert (ws["A1"].border.left.style, ws["A1"].border.right.style) == ("medium", None)
    assert (ws["B1"].border.left.style, ws["B1"].border.right.style) == (None, None)
    assert (ws["C1"].border.left.style, ws["C1"].border.right.style) == (None, "medium")
    assert [ws[f"B{r}"].number_format for r in (2, 3, 4)] == ["$#,##0.00"] * 3
    assert ws["A2"].font.b is not True and ws["A2"].fill.fill_type is None  # outside the range: as it was
    # values and formulas kept
    assert [ws["A1"].value, ws["B2"].value, ws["B3"].value, ws["B4"].value] == ["item", 1000, 300.5, "=SUM(B2:B3)"]
    after = parts(budget)
    assert_untouched(before, after, {"xl/styles.xml", "xl/worksheets/sheet1.xml"})
    assert_well_formed(budget)


async def test_styles_are_appended_never_rewritten_and_equal_ones_reused(budget: Path, client: Any) -> None:
    old = parts(budget)["xl/styles.xml"]
    args = {"spreadsheet_id": "budget.xlsx", "range": "Costs!A1:B1", "bold": True, "fill_color": "#FFFF00"}
    first = await call(client, "format_range", args)
    assert first["styles_added"] == 1
    new = parts(budget)["xl/styles.xml"]
    for name in ("fonts", "fills", "borders", "cellXfs"):
        assert section(new, name).startswith(section(old, name)), name  # every old entry kept at its index
    # the same format again: nothing added, the style sheet byte for byte as it was
    again = await call(client, "format_range", {**args, "range": "Costs!A2"})
    assert again["styles_added"] == 0
    assert parts(budget)["xl/styles.xml"] == new
    ws = load(budget)["Costs"]
    assert ws["A1"].style_id == ws["B1"].style_id == ws["A2"].style_id


async def test_format_range_keeps_what_each_cell_had(budget: Path, client: Any) -> None:
    await call(client, "format_range", {"spreadsheet_id": "budget.xlsx", "range": "Costs!B2", "number_format": "0.0%"})
    await call(client, "format_range", {"spreadsheet_id": "budget.xlsx", "range": "Costs!A2:B2", "bold": True})
    ws = load(budget)["Costs"]
    assert ws["B2"].number_format == "0.0%" and ws["B2"].font.b is True
    assert ws["A2"].number_format == "General" and ws["A2"].font.b is True
    await call(client, "format_range", {"spreadsheet_id": "budget.xlsx", "range": "Costs!B2", "bold": False})
    ws = load(budget)["Costs"]
    assert ws["B2"].font.b is False and ws["B2"].number_format == "0.0%"


async def test_format_range_gives_empty_cells_a_format(budget: Path, client: Any) -> None:
    await call(client, "format_range", {"spreadsheet_id": "budget.xlsx", "range": "Costs!E7:F8", "fill_color": "green"})
    ws = load(budget)["Costs"]
    assert ws["F8"].fill.fgColor.rgb == "FF00B050"
    assert ws["F8"].value is None
    assert ws.max_row == 8 and ws.max_column == 6  # the dimension covers them
    read = await call(client, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:C2"]})
    assert read["ranges"][0]["values"] == [["item", "amount", "date"], ["rent", 1000, "2026-01-31"]]


async def test_format_range_keeps_charts_images_and_other_parts_byte_for_byte(root: Path, client: Any) -> None:
    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    for row in [["month", "sales"], ["jan", 10], ["feb", 20], ["mar", 15]]:
        ws.append(row)
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
    ws.add_chart(chart, "D2")
    ws["A1"].comment = Comment("the months", "me")
    wb.save(root / "chart.xlsx")
    before = parts(root / "chart.xlsx")
    assert any(n.startswith("xl/charts/") for n in before)
    await call(client, "format_range", {"spreadsheet_id": "chart.xlsx", "range": "Data!A1:B1", "bold": True})
    after = parts(root / "chart.xlsx")
    assert set(after) == set(before)
    assert_untouched(before, after, {"xl/styles.xml", "xl/worksheets/sheet1.xml"})
    assert load(root / "chart.xlsx")["Data"]["B1"].font.b is True


async def test_format_range_refuses_bad_input_and_writes_nothing(budget: Path, root: Path, client: Any) -> None:
    before = await anyio.Path(budget).read_bytes()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"range": "Costs!A1", "fill_color": "ultraviolet"}, "not a colour"),
        ({"range": "Costs!A1", "font_color": "#12345"}, "not a colour"),
        ({"range": "Costs!A1", "borders": {"sides": ["all"], "color": "nope"}}, "borders.color"),
        ({"range": "Costs!A1:XFE2", "bold": True}, "XFD"),
        ({"range": "Costs!A1"}, "at least one"),
        ({"range": "Nowhere!A1", "bold": True}, "Nowhere"),
        ({"range": "Costs!A1:Z100000", "bold": True}, "at most"),
    ]
    for args, words in cases:
        error = await fail(client, "format_range", {"spreadsheet_id": "budget.xlsx", **args})
        assert error["error"] in ("bad_request", "not_found"), error
        assert words in error["message"], error
    assert await anyio.Path(budget).read_bytes() == before
    (root / "plain.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    csv_error = await fail(client, "format_range", {"spreadsheet_id": "plain.csv", "range": "A1", "bold": True})
    assert csv_error["error"] == "bad_request" and "cannot hold formatting" in csv_error["message"]
    assert await anyio.Path(root / "plain.csv").read_text(encoding="utf-8") == "a,b\n1,2\n"


async def test_format_range_refuses_an_ods_workbook(root: Path, client: Any) -> None:
    ods = shared_corpus("spreadsheets") / "calamine" / "issues.ods"
    target = root / "book.ods"
    target.write_bytes(await anyio.Path(ods).read_bytes())
    error = await fail(client, "format_range", {"spreadsheet_id": "book.ods", "range": "A1", "bold": True})
    assert error["error"] == "bad_request" and ".ods" in error["message"]
    assert await anyio.Path(target).read_bytes() == await anyio.Path(ods).read_bytes()


async def test_format_tools_are_off_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deskmcp.gateway import compose
    from deskmcp.servers import get_spec

    (tmp_path / "sheets").mkdir()
    monkeypatch.setenv("SHEETS_PATH", str(tmp_path / "sheets"))
    default = {t.name for t in await compose([get_spec("sheets")], workspace=tmp_path).server.list_tools()}
    assert "read_values" in default and "format_range" not in default
    chosen = compose([get_spec("sheets")], workspace=tmp_path, toolsets="default,sheets.format")
    assert "format_range" in {t.name for t in await chosen.server.list_tools()}


async def test_format_range_over_a_sheet_read_only_setting_is_refused(budget: Path, connect: Connect) -> None:
    before = await anyio.Path(budget).read_bytes()
    async with connect(read_only=True) as c:
        error = await fail(c, "format_range", {"spreadsheet_id": "budget.xlsx", "range": "Costs!A1", "bold": True})
    assert error["error"] == "permission_denied"
    assert await anyio.Path(budget).read_bytes() == before


async def test_libreoffice_renders_a_formatted_workbook(budget: Path, client: Any, tmp_path: Path) -> None:
    await call(
        client,
        "format_range",
        {
            "spreadsheet_id": "budget.xlsx",
            "range": "Costs!A1:C4",
            "bold": True,
            "fill_color": "yellow",
            "number_format": "#,##0.00",
            "borders": {"sides": ["all"]},
        },
    )
    pdf = (await libreoffice_convert(budget, tmp_path, "pdf")).read_bytes()
    assert pdf.startswith(b"%PDF")
    assert b"/Type /Page" in pdf or b"/Type/Page" in pdf


async def test_set_layout_sets_widths_heights_freezes_and_merges(budget: Path, client: Any) -> None:
    before = parts(budget)
    out = await call(
        client,
        "set_layout",
        {
            "spreadsheet_id": "budget.xlsx",
            "sheet": "Costs",
            "column_widths": {"A": 24, "B:C": 12.5},
            "row_heights": {"1": 30, "6:7": 20},
            "freeze_rows": 1,
            "freeze_columns": 1,
            "merge": ["A6:C6"],
        },
    )
    assert out["changed"] == [
        "column A width 24",
        "columns B:C width 12.5",
        "row 1 height 30",
        "rows 6:7 height 20",
        "froze 1 row and 1 column",
        "merged A6:C6",
    ]
    ws = load(budget)["Costs"]
    assert ws.column_dimensions["A"].width == 24
    b = ws.column_dimensions["B"]  # openpyxl keeps a span under its first column
    assert (b.min, b.max, b.width) == (2, 3, 12.5)
    assert ws.row_dimensions[1].height == 30 and ws.row_dimensions[7].height == 20
    assert ws.freeze_panes == "B2"
    assert [str(r) for r in ws.merged_cells.ranges] == ["A6:C6"]
    assert ws["A1"].value == "item" and ws["B4"].value == "=SUM(B2:B3)"
    assert_untouched(before, parts(budget), {"xl/worksheets/sheet1.xml"})
    info = await call(client, "get_spreadsheet", {"spreadsheet_id": "budget.xlsx"})
    costs = next(s for s in info["sheets"] if s["title"] == "Costs")
    assert (costs["frozen_rows"], costs["frozen_columns"]) == (1, 1)
    # a second call changes only what it names: rows stay frozen, the merge goes
    await call(
        client,
        "set_layout",
        {
            "spreadsheet_id": "budget.xlsx",
            "sheet": "Costs",
            "freeze_columns": 0,
            "unmerge": ["B6"],
            "column_widths": {"B": 30},
        },
    )
    ws = load(budget)["Costs"]
    assert ws.freeze_panes == "A2"
    assert list(ws.merged_cells.ranges) == []
    b, c = ws.column_dimensions["B"], ws.column_dimensions["C"]
    assert (b.min, b.max, b.width) == (2, 2, 30) and (c.min, c.max, c.width) == (3, 3, 12.5)
    await call(client, "set_layout", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "freeze_rows": 0})
    assert load(budget)["Costs"].freeze_panes is None
    assert_well_formed(budget)


async def test_set_layout_refuses_overlapping_merges_and_hidden_values(budget: Path, client: Any) -> None:
    await call(client, "set_layout", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "merge": ["D1:E2"]})
    before = await anyio.Path(budget).read_bytes()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"merge": ["E2:F3"]}, "overlaps the merged cells D1:E2"),
        ({"merge": ["G1:H1", "H1:I1"]}, "overlap"),
        ({"merge": ["A1:B1"]}, "would hide the values of B1"),
        ({"merge": ["G1"]}, "one cell"),
        ({"unmerge": ["K1:K9"]}, "nothing to unmerge"),
        ({"column_widths": {"A1": 10}}, "not a span of columns"),
        ({"column_widths": {"A": 300}}, "0 to 255"),
        ({"row_heights": {"B": 10}}, "not a span of rows"),
        ({"row_heights": {"1:1048576": 10}}, "more than 100,000 rows"),
        ({"merge": ["'My Sheet'!A1:B1"]}, "another sheet"),
        ({}, "at least one"),
    ]
    for args, words in cases:
        error = await fail(client, "set_layout", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", **args})
        assert error["error"] == "bad_request", error
        assert words in error["message"], error
    error = await fail(client, "set_layout", {"spreadsheet_id": "budget.xlsx", "sheet": "Nope", "freeze_rows": 1})
    assert error["error"] == "not_found"
    assert await anyio.Path(budget).read_bytes() == before


async def test_set_layout_keeps_the_styles_of_columns_it_resizes(root: Path, client: Any) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws.append(["a", "b", "c", "d"])
    ws.column_dimensions.group("A", "D", hidden=False)
    ws.column_dimensions["A"].font = Font(bold=True)
    ws.column_dimensions["A"].width = 9
    wb.save(root / "cols.xlsx")
    styled = load(root / "cols.xlsx")["S"].column_dimensions["A"].font.b
    await call(client, "set_layout", {"spreadsheet_id": "cols.xlsx", "sheet": "S", "column_widths": {"B": 15}})
    ws = load(root / "cols.xlsx")["S"]
    assert ws.column_dimensions["B"].width == 15
    assert ws.column_dimensions["A"].font.b == styled


async def test_set_notes_adds_comments_and_vml_and_read_values_shows_them(budget: Path, client: Any) -> None:
    before = parts(budget)
    out = await call(
        client,
        "set_notes",
        {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "notes": {"B2": "Paid on the 1st", "A4": "Sum <of> B & C"}},
    )
    assert (out["written"], out["removed"]) == (["B2", "A4"], [])
    after = parts(budget)
    new = set(after) - set(before)
    assert new == {"xl/comments1.xml", "xl/drawings/vmlDrawing1.vml", "xl/worksheets/_rels/sheet1.xml.rels"}
    assert_untouched(
        before, after, {"xl/worksheets/sheet1.xml", "[Content_Types].xml", "xl/worksheets/_rels/sheet1.xml.rels"}
    )
    assert b"<legacyDrawing " in after["xl/worksheets/sheet1.xml"]
    assert b'Extension="vml"' in after["[Content_Types].xml"] and b"/xl/comments1.xml" in after["[Content_Types].xml"]
    ws = load(budget)["Costs"]
    assert ws["B2"].comment.text == "Paid on the 1st"
    assert ws["A4"].comment.text == "Sum <of> B & C"
    assert ws["A1"].comment is None
    read = await call(
        client,
        "read_values",
        {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:C4", "Costs!B1:B2"], "notes": True},
    )
    assert read["ranges"][0]["notes"] == {"B2": "Paid on the 1st", "A4": "Sum <of> B & C"}
    assert read["ranges"][1]["notes"] == {"B2": "Paid on the 1st"}
    plain = await call(client, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:C4"]})
    assert "notes" not in plain["ranges"][0] or plain["ranges"][0]["notes"] is None
    # a page of rows shows the notes of its rows only
    page = await call(
        client, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:C4"], "notes": True, "limit": 1}
    )
    assert page["ranges"][0]["notes"] == {}
    # changed and removed in the parts made before; the values stay
    again = await call(
        client, "set_notes", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "notes": {"B2": "Paid", "A4": ""}}
    )
    assert (again["written"], again["removed"]) == (["B2"], ["A4"])
    ws = load(budget)["Costs"]
    assert ws["B2"].comment.text == "Paid" and ws["A4"].comment is None and ws["B2"].value == 1000
    vml = parts(budget)["xl/drawings/vmlDrawing1.vml"]
    assert vml.count(b"<v:shape ") == 1
    assert_well_formed(budget)


async def test_set_notes_adds_to_the_comments_a_workbook_already_has(root: Path, client: Any, tmp_path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.comments import Comment

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws.append(["a", "b"])
    ws["A1"].comment = Comment("from openpyxl", "someone")
    wb.save(root / "noted.xlsx")
    before = parts(root / "noted.xlsx")
    await call(client, "set_notes", {"spreadsheet_id": "noted.xlsx", "sheet": "S", "notes": {"B1": "added"}})
    after = parts(root / "noted.xlsx")
    assert set(after) == set(before)  # the sheet's own comments and drawing parts were used
    ws = load(root / "noted.xlsx")["S"]
    assert (ws["A1"].comment.text, ws["B1"].comment.text) == ("from openpyxl", "added")
    read = await call(client, "read_values", {"spreadsheet_id": "noted.xlsx", "ranges": ["S"], "notes": True})
    assert read["ranges"][0]["notes"] == {"A1": "from openpyxl", "B1": "added"}
    pdf = (await libreoffice_convert(root / "noted.xlsx", tmp_path, "pdf")).read_bytes()
    assert pdf.startswith(b"%PDF")


async def test_set_notes_refuses_bad_cells_and_formats(budget: Path, root: Path, client: Any) -> None:
    before = await anyio.Path(budget).read_bytes()
    for notes, words in (
        ({"A1:B2": "x"}, "not one cell"),
        ({"'My Sheet'!A1": "x"}, "not one cell"),
        ({"A1": "bell\x07"}, "cannot store"),
        ({"A1": "x" * 40_000}, "32,767"),
        ({}, "Give notes"),
    ):
        error = await fail(client, "set_notes", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "notes": notes})
        assert error["error"] == "bad_request" and words in error["message"], error
    assert await anyio.Path(budget).read_bytes() == before
    await anyio.Path(root / "plain.csv").write_text("a,b\n", encoding="utf-8")
    error = await fail(client, "set_notes", {"spreadsheet_id": "plain.csv", "sheet": "plain", "notes": {"A1": "x"}})
    assert error["error"] == "bad_request" and "cannot hold notes" in error["message"]
    read = await call(client, "read_values", {"spreadsheet_id": "plain.csv", "ranges": ["A1:B1"], "notes": True})
    assert read["ranges"][0]["notes"] == {}


SALES = {
    "Sales": [["month", "north", "south"], ["jan", 10, 7], ["feb", 20, 9], ["mar", 15, 12]],
    "Charts": [["charts here"]],
}


@pytest.fixture
def sales(root: Path) -> Path:
    return make_xlsx(root / "sales.xlsx", SALES)


async def test_add_chart_of_each_kind_reads_back_with_openpyxl(sales: Path, client: Any) -> None:
    from openpyxl.chart.reader import read_chart  # noqa: F401 - the loader used by load_workbook

    before = parts(sales)
    kinds = ["column", "bar", "line", "area", "pie", "scatter"]
    for i, kind in enumerate(kinds):
        out = await call(
            client,
            "add_chart",
            {
                "spreadsheet_id": "sales.xlsx",
                "range": "Sales!A1:C4",
                "kind": kind,
                "anchor": f"E{1 + 16 * i}",
                "title": f"Sales by month ({kind})",
            },
        )
        assert out["chart"] == f"xl/charts/chart{i + 1}.xml"
        assert out["series"] == (["north"] if kind == "pie" else ["north", "south"])
    after = parts(sales)
    assert_untouched(before, after, {"xl/worksheets/sheet1.xml", "[Content_Types].xml"})
    assert set(after) - set(before) == {
        *(f"xl/charts/chart{n}.xml" for n in range(1, 7)),
        "xl/drawings/drawing1.xml",
        "xl/drawings/_rels/drawing1.xml.rels",
        "xl/worksheets/_rels/sheet1.xml.rels",
    }
    assert_well_formed(sales)
    charts = load(sales)["Sales"]._charts
    assert [type(c).__name__ for c in charts] == [
        "BarChart",
        "BarChart",
        "LineChart",
        "AreaChart",
        "PieChart",
        "ScatterChart",
    ]
    column, bar = charts[0], charts[1]
    assert (column.type, bar.type) == ("col", "bar")
    first = column.series[0]
    assert first.tx.strRef.f == "Sales!$B$1"
    assert first.cat.strRef.f == "Sales!$A$2:$A$4"
    assert first.val.numRef.f == "Sales!$B$2:$B$4"
    assert [p.v for p in first.val.numRef.numCache.pt] == [10, 20, 15]
    assert column.series[1].val.numRef.f == "Sales!$C$2:$C$4"
    scatter = charts[5]
    assert scatter.series[0].xVal.numRef.f == "Sales!$A$2:$A$4"
    assert column.title.tx.rich.p[0].r[0].t == "Sales by month (column)"
    anchor = column.anchor._from
    assert (anchor.col, anchor.row) == (4, 0)


async def test_add_chart_on_another_sheet_and_beside_an_existing_drawing(
    sales: Path, client: Any, tmp_path: Path
) -> None:
    await call(
        client,
        "add_chart",
        {"spreadsheet_id": "sales.xlsx", "range": "Sales!A1:B4", "kind": "line", "anchor": "Charts!B2"},
    )
    await call(
        client,
        "add_chart",
        {"spreadsheet_id": "sales.xlsx", "range": "Sales!A1:C4", "kind": "column", "anchor": "Charts!B20"},
    )
    wb = load(sales)
    assert len(wb["Charts"]._charts) == 2 and len(wb["Sales"]._charts) == 0
    drawing = parts(sales)["xl/drawings/drawing1.xml"]
    assert drawing.count(b"twoCellAnchor>") == 2
    pdf = (await libreoffice_convert(sales, tmp_path, "pdf")).read_bytes()
    assert pdf.startswith(b"%PDF")


async def test_add_chart_refuses_empty_ranges_and_bad_anchors(sales: Path, client: Any) -> None:
    before = await anyio.Path(sales).read_bytes()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"range": "Sales!F1:H9"}, "no numbers"),
        ({"range": "Sales!A1:A4"}, "no numbers"),
        ({"range": "Sales!A1:C1"}, "no numbers"),
        ({"range": "Sales!A:C"}, "corner cells"),
        ({"anchor": "E1:F2"}, "not one cell"),
        ({"anchor": "Nowhere!E1"}, "Nowhere"),
        ({"kind": "radar"}, "kind"),
    ]
    for args, words in cases:
        error = await fail(
            client,
            "add_chart",
            {"spreadsheet_id": "sales.xlsx", "range": "Sales!A1:C4", "kind": "line", "anchor": "E2", **args},
        )
        assert error["error"] in ("bad_request", "not_found"), error
        assert words in error["message"], error
    assert await anyio.Path(sales).read_bytes() == before


async def test_a_workbook_takes_formats_layout_notes_and_a_chart_and_libreoffice_opens_it(
    sales: Path, client: Any, tmp_path: Path
) -> None:
    """Every format tool on one workbook, then LibreOffice converts it back to .xlsx and keeps them."""
    sid = "sales.xlsx"
    await call(
        client,
        "format_range",
        {"spreadsheet_id": sid, "range": "Sales!A1:C1", "bold": True, "fill_color": "light_blue"},
    )
    await call(client, "format_range", {"spreadsheet_id": sid, "range": "Sales!B2:C4", "number_format": "#,##0.00 €"})
    await call(
        client, "set_layout", {"spreadsheet_id": sid, "sheet": "Sales", "freeze_rows": 1, "column_widths": {"A": 18}}
    )
    await call(client, "set_notes", {"spreadsheet_id": sid, "sheet": "Sales", "notes": {"B1": "North region"}})
    await call(
        client,
        "add_chart",
        {"spreadsheet_id": sid, "range": "Sales!A1:C4", "kind": "column", "anchor": "E2", "title": "Q1"},
    )
    again = load(await libreoffice_convert(sales, tmp_path, LIBREOFFICE_XLSX))["Sales"]
    assert again["A1"].font.b is True
    assert again["B2"].number_format.replace('"', "") == "#,##0.00 €"  # LibreOffice quotes the text part
    assert again["B1"].comment is not None and again["B1"].comment.text.strip() == "North region"
    # (frozen panes are view settings, which a headless conversion does not write out, whoever froze
    # them: they are read back with openpyxl in test_set_layout_sets_widths_heights_freezes_and_merges)
    assert again.column_dimensions["A"].width > 17
    assert len(again._charts) == 1
    assert [again[f"B{r}"].value for r in (2, 3, 4)] == [10, 20, 15]


def _without_styles(path: Path) -> None:
    """`path` rewritten without its styles part (as some generators write packages)."""
    data = parts(path)
    del data["xl/styles.xml"]
    data["[Content_Types].xml"] = re.sub(
        rb'<Override PartName="/xl/styles.xml"[^>]*/>', b"", data["[Content_Types].xml"]
    )
    data["xl/_rels/workbook.xml.rels"] = re.sub(
        rb'<Relationship\b[^>]*Target="[^"]*styles.xml"[^>]*/>', b"", data["xl/_rels/workbook.xml.rels"]
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in data.items():
            zf.writestr(name, body)


async def test_format_range_gives_a_package_without_styles_a_style_sheet(root: Path, client: Any) -> None:
    path = make_xlsx(root / "bare.xlsx", {"S": [["a", 1]]})
    _without_styles(path)
    assert "xl/styles.xml" not in parts(path)
    await call(client, "format_range", {"spreadsheet_id": "bare.xlsx", "range": "S!A1:B1", "italic": True})
    after = parts(path)
    assert b"/xl/styles.xml" in after["[Content_Types].xml"]
    assert b"styles.xml" in after["xl/_rels/workbook.xml.rels"]
    ws = load(path)["S"]
    assert ws["A1"].font.i is True and ws["B1"].value == 1


async def test_format_tools_refuse_xlsm_workbooks_as_read_only(root: Path, client: Any) -> None:
    path = make_xlsx(root / "macro.xlsm", {"S": [["a"]]})
    before = await anyio.Path(path).read_bytes()
    error = await fail(client, "format_range", {"spreadsheet_id": "macro.xlsm", "range": "S!A1", "bold": True})
    assert error["error"] == "permission_denied" and "read-only" in error["message"]
    assert await anyio.Path(path).read_bytes() == before


async def test_format_range_refuses_a_sheet_part_it_cannot_patch_and_writes_nothing(root: Path, client: Any) -> None:
    path = make_xlsx(root / "prefixed.xlsx", {"S": [["a", 1]]})
    data = parts(path)
    sheet = data["xl/worksheets/sheet1.xml"]
    sheet = sheet.replace(
        b"<worksheet ", b'<worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ', 1
    )
    data["xl/worksheets/sheet1.xml"] = sheet.replace(b"<c r=", b"<x:c r=").replace(b"</c>", b"</x:c>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in data.items():
            zf.writestr(name, body)
    before = await anyio.Path(path).read_bytes()
    error = await fail(client, "format_range", {"spreadsheet_id": "prefixed.xlsx", "range": "S!A1", "bold": True})
    assert error["error"] == "bad_request" and "cannot be changed in place" in error["message"]
    assert error["details"]["part"] == "xl/worksheets/sheet1.xml"
    assert await anyio.Path(path).read_bytes() == before
