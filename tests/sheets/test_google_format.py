"""The format tools on Google Sheets, at the HTTP layer: the `spreadsheets.batchUpdate` requests
they send (Sheets API v4), with the discovery documents the client ships."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tool_calls import call, fail
from tests.sheets.test_google_backend import META, SID, Harness, ok

pytestmark = pytest.mark.anyio


def batch_bodies(h: Harness) -> list[dict[str, Any]]:
    return [r["body"] for r in h.http.requests if r["path"].endswith(":batchUpdate")]


async def test_format_range_sends_repeat_cell_with_only_the_fields_asked_and_update_borders(tmp_path: Path) -> None:
    h = Harness(tmp_path, [ok(META), ok({"replies": [{}, {}]})])
    async with h.client as c:
        out = await call(
            c,
            "format_range",
            {
                "spreadsheet_id": SID,
                "range": "'My Sheet'!A1:C2",
                "bold": True,
                "font_size": 12,
                "font_color": "#FF0000",
                "fill_color": "light_gray",
                "number_format": "$#,##0.00",
                "horizontal": "center",
                "vertical": "middle",
                "wrap": True,
                "borders": {"sides": ["outer", "inner_horizontal"], "style": "thick", "color": "black"},
            },
        )
    assert out["range"] == "'My Sheet'!A1:C2" and out["cells"] == 6
    (body,) = batch_bodies(h)
    repeat, borders = body["requests"]
    grid = {"sheetId": 77, "startRowIndex": 0, "endRowIndex": 2, "startColumnIndex": 0, "endColumnIndex": 3}
    assert repeat["repeatCell"]["range"] == grid
    fmt = repeat["repeatCell"]["cell"]["userEnteredFormat"]
    assert fmt["textFormat"] == {
        "bold": True,
        "fontSize": 12,
        "foregroundColor": {"red": 1.0, "green": 0.0, "blue": 0.0},
    }
    assert fmt["backgroundColor"] == {"red": 217 / 255, "green": 217 / 255, "blue": 217 / 255}
    assert fmt["numberFormat"] == {"type": "CURRENCY", "pattern": "$#,##0.00"}
    assert (fmt["horizontalAlignment"], fmt["verticalAlignment"], fmt["wrapStrategy"]) == ("CENTER", "MIDDLE", "WRAP")
    assert set(repeat["repeatCell"]["fields"].split(",")) == {
        "userEnteredFormat.textFormat.bold",
        "userEnteredFormat.textFormat.fontSize",
        "userEnteredFormat.textFormat.foregroundColor",
        "userEnteredFormat.backgroundColor",
        "userEnteredFormat.numberFormat",
        "userEnteredFormat.horizontalAlignment",
        "userEnteredFormat.verticalAlignment",
        "userEnteredFormat.wrapStrategy",
    }
    line = {"style": "SOLID_THICK", "color": {"red": 0.0, "green": 0.0, "blue": 0.0}}
    assert borders["updateBorders"] == {
        "range": grid,
        "top": line,
        "bottom": line,
        "left": line,
        "right": line,
        "innerHorizontal": line,
    }


async def test_format_range_with_one_field_leaves_the_others_alone(tmp_path: Path) -> None:
    h = Harness(tmp_path, [ok(META), ok({"replies": [{}]})])
    async with h.client as c:
        out = await call(c, "format_range", {"spreadsheet_id": SID, "range": "Costs!B2:B", "number_format": "0.00%"})
    assert out["cells"] == 999  # rows 2 to 1,000 of the sheet's grid
    (body,) = batch_bodies(h)
    (request,) = body["requests"]
    assert request == {
        "repeatCell": {
            "range": {"sheetId": 0, "startRowIndex": 1, "startColumnIndex": 1, "endColumnIndex": 2},
            "cell": {"userEnteredFormat": {"numberFormat": {"type": "PERCENT", "pattern": "0.00%"}}},
            "fields": "userEnteredFormat.numberFormat",
        }
    }


async def test_format_range_refuses_an_unknown_colour_before_any_request(tmp_path: Path) -> None:
    h = Harness(tmp_path, [])
    async with h.client as c:
        error = await fail(c, "format_range", {"spreadsheet_id": SID, "range": "Costs!A1", "fill_color": "sky"})
    assert error["error"] == "bad_request" and "not a colour" in error["message"]
    assert h.http.requests == []


async def test_set_layout_sends_dimension_freeze_and_merge_requests(tmp_path: Path) -> None:
    values = {"valueRanges": [{"range": "Costs!A1:C1", "values": [["Title"]]}]}
    h = Harness(tmp_path, [ok(values), ok(META), ok({"replies": [{}] * 6})])
    async with h.client as c:
        out = await call(
            c,
            "set_layout",
            {
                "spreadsheet_id": SID,
                "sheet": "Costs",
                "column_widths": {"A:B": 20},
                "row_heights": {"1": 30},
                "freeze_rows": 1,
                "merge": ["A1:C1"],
                "unmerge": ["E1:F2"],
            },
        )
    assert out["changed"][-1] == "merged A1:C1"
    (body,) = batch_bodies(h)
    assert body["requests"] == [
        {
            "updateDimensionProperties": {
                "range": {"sheetId": 0, "dimension": "COLUMNS", "startIndex": 0, "endIndex": 2},
                "properties": {"pixelSize": 145},
                "fields": "pixelSize",
            }
        },
        {
            "updateDimensionProperties": {
                "range": {"sheetId": 0, "dimension": "ROWS", "startIndex": 0, "endIndex": 1},
                "properties": {"pixelSize": 40},
                "fields": "pixelSize",
            }
        },
        {
            "updateSheetProperties": {
                "properties": {"sheetId": 0, "gridProperties": {"frozenRowCount": 1}},
                "fields": "gridProperties.frozenRowCount",
            }
        },
        {
            "unmergeCells": {
                "range": {
                    "sheetId": 0,
                    "startRowIndex": 0,
                    "endRowIndex": 2,
                    "startColumnIndex": 4,
                    "endColumnIndex": 6,
                }
            }
        },
        {
            "mergeCells": {
                "range": {
                    "sheetId": 0,
                    "startRowIndex": 0,
                    "endRowIndex": 1,
                    "startColumnIndex": 0,
                    "endColumnIndex": 3,
                },
                "mergeType": "MERGE_ALL",
            }
        },
    ]


async def test_set_layout_refuses_a_merge_hiding_values_read_first(tmp_path: Path) -> None:
    values = {"valueRanges": [{"range": "Costs!A1:C1", "values": [["Title", "", "kept"]]}]}
    h = Harness(tmp_path, [ok(values)])
    async with h.client as c:
        error = await fail(c, "set_layout", {"spreadsheet_id": SID, "sheet": "Costs", "merge": ["A1:C1"]})
    assert error["error"] == "bad_request" and "C1" in error["message"]
    assert not batch_bodies(h)


async def test_set_notes_sends_a_repeat_cell_of_note_per_cell(tmp_path: Path) -> None:
    h = Harness(tmp_path, [ok(META), ok({"replies": [{}, {}]})])
    async with h.client as c:
        out = await call(
            c, "set_notes", {"spreadsheet_id": SID, "sheet": "My Sheet", "notes": {"C3": "", "B2": "Checked"}}
        )
    assert (out["written"], out["removed"]) == (["B2"], ["C3"])
    (body,) = batch_bodies(h)
    assert body["requests"] == [
        {
            "repeatCell": {
                "range": {
                    "sheetId": 77,
                    "startRowIndex": 1,
                    "endRowIndex": 2,
                    "startColumnIndex": 1,
                    "endColumnIndex": 2,
                },
                "cell": {"note": "Checked"},
                "fields": "note",
            }
        },
        {
            "repeatCell": {
                "range": {
                    "sheetId": 77,
                    "startRowIndex": 2,
                    "endRowIndex": 3,
                    "startColumnIndex": 2,
                    "endColumnIndex": 3,
                },
                "cell": {"note": ""},
                "fields": "note",
            }
        },
    ]


async def test_read_values_with_notes_asks_for_the_notes_of_the_same_ranges(tmp_path: Path) -> None:
    values = {"valueRanges": [{"range": "Costs!A1:B3", "values": [["item", "amount"], ["rent", "1,000"]]}]}
    notes = {
        "sheets": [
            {
                "properties": {"title": "Costs"},
                "data": [{"rowData": [{"values": [{}, {"note": "EUR"}]}, {}, {"values": [{"note": "last"}]}]}],
            }
        ]
    }
    h = Harness(tmp_path, [ok(values), ok(notes)])
    async with h.client as c:
        out = await call(c, "read_values", {"spreadsheet_id": SID, "ranges": ["Costs!A1:B3"], "notes": True})
    assert out["ranges"][0]["notes"] == {"B1": "EUR", "A3": "last"}
    get = h.http.requests[1]
    assert get["method"] == "GET" and get["path"].endswith(f"/spreadsheets/{SID}")
    assert get["query"]["ranges"] == ["Costs!A1:B3"]
    assert get["query"]["fields"] == ["sheets(properties(title),data(startRow,startColumn,rowData(values(note))))"]


async def test_add_chart_sends_add_chart_with_domain_series_and_anchor(tmp_path: Path) -> None:
    values = {
        "valueRanges": [{"range": "Costs!A1:C3", "values": [["month", "north", "south"], ["jan", 10, 7], ["feb", 20]]}]
    }
    added = {"replies": [{"addChart": {"chart": {"chartId": 1234}}}]}
    h = Harness(tmp_path, [ok(values), ok(META), ok(added)])
    async with h.client as c:
        out = await call(
            c,
            "add_chart",
            {"spreadsheet_id": SID, "range": "Costs!A1:C3", "kind": "column", "anchor": "'My Sheet'!E2", "title": "Q1"},
        )
    assert (out["chart_id"], out["sheet"], out["anchor"], out["series"]) == (1234, "My Sheet", "E2", ["north", "south"])
    (body,) = batch_bodies(h)

    def column(c: int) -> dict[str, Any]:
        grid = {"sheetId": 0, "startRowIndex": 0, "endRowIndex": 3, "startColumnIndex": c, "endColumnIndex": c + 1}
        return {"sourceRange": {"sources": [grid]}}

    assert body["requests"] == [
        {
            "addChart": {
                "chart": {
                    "spec": {
                        "title": "Q1",
                        "basicChart": {
                            "chartType": "COLUMN",
                            "legendPosition": "RIGHT_LEGEND",
                            "headerCount": 1,
                            "domains": [{"domain": column(0)}],
                            "series": [
                                {"series": column(1), "targetAxis": "LEFT_AXIS"},
                                {"series": column(2), "targetAxis": "LEFT_AXIS"},
                            ],
                        },
                    },
                    "position": {
                        "overlayPosition": {
                            "anchorCell": {"sheetId": 77, "rowIndex": 1, "columnIndex": 4},
                            "widthPixels": 512,
                            "heightPixels": 300,
                        }
                    },
                }
            }
        }
    ]


async def test_add_chart_of_a_pie_and_of_an_empty_range(tmp_path: Path) -> None:
    values = {"valueRanges": [{"range": "Costs!A1:B3", "values": [["item", "amount"], ["rent", 1000], ["food", 300]]}]}
    empty = {"valueRanges": [{"range": "Costs!H1:I3", "values": [["a", "b"]]}]}
    h = Harness(tmp_path, [ok(values), ok(META), ok({"replies": [{"addChart": {"chart": {"chartId": 9}}}]}), ok(empty)])
    async with h.client as c:
        await call(c, "add_chart", {"spreadsheet_id": SID, "range": "Costs!A1:B3", "kind": "pie", "anchor": "D1"})
        error = await fail(
            c, "add_chart", {"spreadsheet_id": SID, "range": "Costs!H1:I3", "kind": "line", "anchor": "D1"}
        )
    assert error["error"] == "bad_request" and "no numbers" in error["message"]
    (body,) = batch_bodies(h)
    pie = body["requests"][0]["addChart"]["chart"]["spec"]["pieChart"]
    assert pie["domain"]["sourceRange"]["sources"][0]["startColumnIndex"] == 0
    assert pie["series"]["sourceRange"]["sources"][0]["startColumnIndex"] == 1
