"""Every sheets tool through the in-memory MCP client, on local workbooks."""

from __future__ import annotations

import csv
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from deskmcp.core.errors import PermissionDenied
from deskmcp.sheets.server import Settings
from deskmcp.sheets.service import SheetsService
from tests.helpers.tool_calls import Connect, call, fail
from tests.helpers.workbooks import assert_well_formed, make_xlsx

pytestmark = pytest.mark.anyio

BUDGET = {
    "Costs": [["item", "amount"], ["rent", 1000], ["food", 300]],
    "My Sheet": [["note"], ["it's here"]],
}


@pytest.fixture
def budget(root: Path) -> Path:
    return make_xlsx(root / "budget.xlsx", BUDGET)


async def test_list_spreadsheets_finds_workbooks_in_sub_folders_and_extra_folders(
    root: Path, tmp_path: Path, connect: Connect
) -> None:
    make_xlsx(root / "team" / "plan.xlsx", {"S": [[1]]})
    (root / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (root / "notes.txt").write_text("not a workbook", encoding="utf-8")
    (root / "~$plan.xlsx").write_bytes(b"lock file")
    extra = tmp_path / "shared"
    make_xlsx(extra / "q3.xlsx", {"S": [[1]]})
    async with connect(folders=[extra]) as c:
        ids = [s["id"] for s in (await call(c, "list_spreadsheets"))["spreadsheets"]]
        assert ids == ["data.csv", "shared:q3.xlsx", "team/plan.xlsx"]
        filtered = await call(c, "list_spreadsheets", {"query": "PLAN"})
        assert [s["id"] for s in filtered["spreadsheets"]] == ["team/plan.xlsx"]
        first = await call(c, "list_spreadsheets", {"limit": 2})
        rest = await call(c, "list_spreadsheets", {"limit": 2, "cursor": first["next_cursor"]})
        assert [s["id"] for s in rest["spreadsheets"]] == ["team/plan.xlsx"]
        assert (await call(c, "read_values", {"spreadsheet_id": "shared:q3.xlsx", "ranges": ["S!A1"]}))["ranges"][0][
            "values"
        ] == [[1]]


async def test_get_spreadsheet_reports_sheets_sizes_frozen_rows_and_named_ranges(root: Path, connect: Connect) -> None:
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Data"
    for i in range(10):
        ws.append([i, i * 2, i * 3])
    ws.freeze_panes = "B3"
    wb.defined_names["Totals"] = DefinedName("Totals", attr_text="Data!$C$1:$C$10")
    wb.save(root / "frozen.xlsx")
    async with connect() as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": "frozen.xlsx"})
    sheet = info["sheets"][0]
    assert (sheet["title"], sheet["rows"], sheet["columns"]) == ("Data", 10, 3)
    assert (sheet["frozen_rows"], sheet["frozen_columns"]) == (2, 1)
    assert info["named_ranges"] == [{"name": "Totals", "range": "Data!$C$1:$C$10"}]
    assert info["writable"] is True


async def test_read_values_reads_several_ranges_at_once_with_quoted_sheet_names(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        out = await call(
            c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A2:B3", "'My Sheet'!A:A"]}
        )
    assert out["ranges"][0] == {"range": "Costs!A2:B3", "values": [["rent", 1000], ["food", 300]]} | {
        k: out["ranges"][0][k] for k in out["ranges"][0] if k not in ("range", "values")
    }
    assert out["ranges"][1]["values"] == [["note"], ["it's here"]]
    assert out["ranges"][1]["range"] == "'My Sheet'!A1:A2"


async def test_read_values_header_row_gives_objects_and_pages_by_rows(root: Path, connect: Connect) -> None:
    make_xlsx(root / "big.xlsx", {"Data": [["n", "square"]] + [[i, i * i] for i in range(1, 26)]})
    async with connect() as c:
        args = {"spreadsheet_id": "big.xlsx", "ranges": ["Data"], "header": True, "limit": 10}
        first = await call(c, "read_values", args)
        page = first["ranges"][0]
        assert page["rows"][0] == {"n": 1, "square": 1}
        assert len(page["rows"]) == 10
        seen = page["rows"]
        cursor = page["next_cursor"]
        while cursor:
            nxt = (await call(c, "read_values", args | {"cursor": cursor}))["ranges"][0]
            seen += nxt["rows"]
            cursor = nxt["next_cursor"]
        assert [r["n"] for r in seen] == list(range(1, 26))
        other = await fail(c, "read_values", args | {"cursor": first["ranges"][0]["next_cursor"], "limit": 5})
        assert other["error"] == "bad_request"


async def test_open_range_reads_to_the_last_row(root: Path, connect: Connect) -> None:
    make_xlsx(root / "open.xlsx", {"S": [["h1", "h2", "h3"], [1, 2, 3], [4, 5, 6]]})
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "open.xlsx", "ranges": ["S!B2:C"]})
    assert out["ranges"][0]["values"] == [[2, 3], [5, 6]]


async def test_bad_range_answers_bad_request_with_the_valid_forms(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        err = await fail(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:"]})
        assert err["error"] == "bad_request"
        assert "'Sheet name'!A1:C10" in err["message"]
        missing = await fail(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Nope!A1"]})
        assert missing["error"] == "not_found"
        assert "Costs" in missing["message"]


async def test_user_entered_formula_reads_back_computed_and_recomputes_after_update(
    budget: Path, connect: Connect
) -> None:
    async with connect() as c:
        await call(
            c,
            "update_values",
            {"spreadsheet_id": "budget.xlsx", "range": "Costs!A4", "values": [["total", "=SUM(B2:B3)"]]},
        )
        shown = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!B4"]})
        assert shown["ranges"][0]["values"] == [[1300]]
        await call(c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!B2", "values": [[1200]]})
        again = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!B4"]})
        assert again["ranges"][0]["values"] == [[1500]]
        formulas = await call(
            c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!B4"], "render": "formula"}
        )
        assert formulas["ranges"][0]["values"] == [["=SUM(B2:B3)"]]
    # Any other reader of the file sees the computed value too.
    from openpyxl import load_workbook

    assert load_workbook(budget, data_only=True)["Costs"]["B4"].value == 1500
    assert_well_formed(budget)


async def test_raw_input_stores_text_that_looks_like_a_formula(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        await call(
            c,
            "update_values",
            {"spreadsheet_id": "budget.xlsx", "range": "Costs!C1", "values": [["=1+1", "12", "TRUE"]], "input": "RAW"},
        )
        await call(
            c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!C2", "values": [["12", "TRUE", "5%"]]}
        )
        out = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!C1:E2"]})
    assert out["ranges"][0]["values"] == [["=1+1", "12", "TRUE"], [12, True, 0.05]]
    assert_well_formed(budget)


async def test_formula_that_cannot_be_computed_is_reported(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        await call(
            c,
            "update_values",
            {"spreadsheet_id": "budget.xlsx", "range": "Costs!C2", "values": [['=CONVERT(1,"m","cm")']]},
        )
        out = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:C3"]})
    assert out["ranges"][0]["uncomputed"] == ["Costs!C2"]
    assert_well_formed(budget)


async def test_append_rows_goes_after_the_last_row_with_data(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        done = await call(
            c,
            "append_rows",
            {"spreadsheet_id": "budget.xlsx", "range": "Costs!A:B", "values": [["gas", 50], ["tax", 20]]},
        )
        assert done["updated"][0]["range"] == "Costs!A4:B5"
        out = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A4:B5"]})
    assert out["ranges"][0]["values"] == [["gas", 50], ["tax", 20]]
    assert_well_formed(budget)


async def test_clear_values_and_batch_update_in_one_save(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        done = await call(
            c,
            "batch_update",
            {
                "spreadsheet_id": "budget.xlsx",
                "data": [
                    {"range": "Costs!C1", "values": [["double"]]},
                    {"range": "Costs!C2:C3", "values": [["=B2*2"], ["=B3*2"]]},
                ],
            },
        )
        assert done["total_cells"] == 3
        cleared = await call(c, "clear_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:A3"]})
        assert cleared["cleared"] == ["Costs!A1:A3"]
        out = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs"]})
    assert out["ranges"][0]["values"] == [["", "amount", "double"], ["", 1000, 2000], ["", 300, 600]]
    assert_well_formed(budget)


async def test_writing_more_rows_than_the_range_holds_is_refused(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        err = await fail(
            c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!A1:B1", "values": [[1, 2], [3, 4]]}
        )
    assert err["error"] == "bad_request"


async def test_find_in_spreadsheet_matches_text_and_regex_with_addresses(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        text = await call(c, "find_in_spreadsheet", {"spreadsheet_id": "budget.xlsx", "query": "HERE"})
        assert text["matches"] == [{"sheet": "My Sheet", "cell": "A2", "value": "it's here"}]
        regex = await call(
            c, "find_in_spreadsheet", {"spreadsheet_id": "budget.xlsx", "query": r"^\d{4}$", "regex": True}
        )
        assert [(m["cell"], m["value"]) for m in regex["matches"]] == [("B2", 1000)]
        whole = await call(
            c, "find_in_spreadsheet", {"spreadsheet_id": "budget.xlsx", "query": "foo", "whole_cell": True}
        )
        assert whole["matches"] == []
        bad = await fail(c, "find_in_spreadsheet", {"spreadsheet_id": "budget.xlsx", "query": "(", "regex": True})
        assert bad["error"] == "bad_request"


async def test_sheet_tools_add_rename_duplicate_delete(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        await call(
            c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "'My Sheet'!B1", "values": [["=Costs!B2"]]}
        )
        added = await call(c, "add_sheet", {"spreadsheet_id": "budget.xlsx", "title": "Extra"})
        assert added["sheet"]["title"] == "Extra"
        dup = await fail(c, "add_sheet", {"spreadsheet_id": "budget.xlsx", "title": "extra"})
        assert dup["error"] == "conflict"
        await call(c, "rename_sheet", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "title": "Cost 2026"})
        formula = await call(
            c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["'My Sheet'!B1"], "render": "formula"}
        )
        assert formula["ranges"][0]["values"] == [["='Cost 2026'!B2"]]
        copy = await call(
            c, "duplicate_sheet", {"spreadsheet_id": "budget.xlsx", "sheet": "Cost 2026", "title": "Copy"}
        )
        assert copy["sheet"]["rows"] == 3
        await call(c, "delete_sheet", {"spreadsheet_id": "budget.xlsx", "sheet": "Extra"})
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": "budget.xlsx"})
    assert [s["title"] for s in info["sheets"]] == ["Cost 2026", "My Sheet", "Copy"]
    assert_well_formed(budget)


async def test_insert_and_delete_rows_keep_formulas_pointing_at_the_same_data(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        await call(
            c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!B4", "values": [["=SUM(B2:B3)"]]}
        )
        await call(c, "insert_rows", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "at": 3, "count": 2})
        await call(c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!A3", "values": [["gas", 7]]})
        out = await call(
            c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!B6"], "render": "formula"}
        )
        assert out["ranges"][0]["values"] == [["=SUM(B2:B5)"]]
        await call(c, "delete_rows", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "at": 4, "count": 1})
        total = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A1:B5"]})
    assert total["ranges"][0]["values"] == [["item", "amount"], ["rent", 1000], ["gas", 7], ["food", 300], ["", 1307]]
    assert_well_formed(budget)


async def test_create_spreadsheet_makes_an_xlsx_and_refuses_an_existing_name(connect: Connect, root: Path) -> None:
    async with connect() as c:
        made = await call(c, "create_spreadsheet", {"title": "Plan 2027", "sheets": ["Q1", "Q2"]})
        assert made["id"] == "Plan 2027.xlsx"
        assert [s["title"] for s in made["sheets"]] == ["Q1", "Q2"]
        again = await fail(c, "create_spreadsheet", {"title": "Plan 2027"})
        assert again["error"] == "conflict"
    assert (root / "Plan 2027.xlsx").is_file()


async def test_csv_is_a_one_sheet_workbook(root: Path, connect: Connect) -> None:
    (root / "people.csv").write_text('name,age\n"Smith, Ann",41\nBob,007\n', encoding="utf-8")
    async with connect() as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": "people.csv"})
        assert [s["title"] for s in info["sheets"]] == ["people"]
        out = await call(c, "read_values", {"spreadsheet_id": "people.csv", "ranges": ["people"], "header": True})
        assert out["ranges"][0]["rows"] == [{"name": "Smith, Ann", "age": 41}, {"name": "Bob", "age": "007"}]
        await call(c, "append_rows", {"spreadsheet_id": "people.csv", "range": "people", "values": [["Cy", 9]]})
        await call(c, "update_values", {"spreadsheet_id": "people.csv", "range": "C1", "values": [["=1+1"]]})
        refused = await fail(c, "add_sheet", {"spreadsheet_id": "people.csv", "title": "More"})
        assert refused["error"] == "bad_request"
    # rows the calls did not write keep their text (and their length)
    assert (root / "people.csv").read_text(encoding="utf-8") == 'name,age,2\n"Smith, Ann",41\nBob,007\nCy,9\n'


async def test_ranges_past_the_last_row_or_column_or_written_backwards_are_refused_on_read_and_write(
    budget: Path, root: Path, connect: Connect
) -> None:
    (root / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    book = root / budget.name
    before, csv_before = book.read_bytes(), (root / "data.csv").read_bytes()
    refused = {}
    async with connect() as c:
        for sid, rng in [
            ("budget.xlsx", "Costs!1:1048577"),
            ("budget.xlsx", "Costs!XFE1"),
            ("budget.xlsx", "Costs!A1:ZZZ2"),
            ("budget.xlsx", "Costs!C3:A1"),
            ("data.csv", "A1048577"),
        ]:
            refused[rng] = await fail(c, "read_values", {"spreadsheet_id": sid, "ranges": [rng]})
        backwards = await fail(
            c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!C3:A1", "values": [[1, 2]]}
        )
        past = await fail(c, "clear_values", {"spreadsheet_id": "data.csv", "ranges": ["XFE1:XFF2"]})
        last = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!XFD1048576"]})
    assert {e["error"] for e in [*refused.values(), backwards, past]} == {"bad_request"}
    assert "1,048,576" in refused["Costs!1:1048577"]["message"]
    assert "XFE" in refused["Costs!XFE1"]["message"] and "XFD" in refused["Costs!XFE1"]["message"]
    assert "A1:C3" in refused["Costs!C3:A1"]["message"] and "A1:C3" in backwards["message"]
    assert last["ranges"][0]["range"] == "Costs!XFD1048576"
    assert book.read_bytes() == before and (root / "data.csv").read_bytes() == csv_before


async def test_writes_leave_no_temporary_files(budget: Path, root: Path, connect: Connect) -> None:
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!A1", "values": [["x"]]})
    assert sorted(os.listdir(root)) == ["budget.xlsx"]


async def test_spreadsheet_id_rejects_path_escape(root: Path, tmp_path: Path, connect: Connect) -> None:
    make_xlsx(tmp_path / "outside.xlsx", {"S": [[1]]})
    async with connect() as c:
        up = await fail(c, "read_values", {"spreadsheet_id": "../outside.xlsx", "ranges": ["A1"]})
        absolute = await fail(c, "get_spreadsheet", {"spreadsheet_id": str(tmp_path / "outside.xlsx")})
        created = await fail(c, "create_spreadsheet", {"title": "../escape"})
    assert up["error"] == absolute["error"] == created["error"] == "permission_denied"
    assert not (tmp_path / "escape.xlsx").exists()


async def test_spreadsheet_id_rejects_symlink_escape(root: Path, tmp_path: Path, connect: Connect) -> None:
    outside = make_xlsx(tmp_path / "secret" / "s.xlsx", {"S": [["secret"]]})
    (root / "link.xlsx").symlink_to(outside)
    async with connect() as c:
        err = await fail(c, "read_values", {"spreadsheet_id": "link.xlsx", "ranges": ["A1"]})
        listed = await call(c, "list_spreadsheets")
    assert err["error"] == "permission_denied"
    assert listed["spreadsheets"] == []


async def test_unknown_spreadsheet_is_not_found_pointing_to_list(connect: Connect) -> None:
    async with connect() as c:
        err = await fail(c, "get_spreadsheet", {"spreadsheet_id": "nope.xlsx"})
    assert err["error"] == "not_found"
    assert "list_spreadsheets" in err["message"]


async def test_read_only_mode_offers_only_reading_tools_and_names_the_setting(connect: Connect) -> None:
    async with connect(read_only=True) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        created = await fail(c, "create_spreadsheet", {"title": "New"})
        deleted = await fail(c, "delete_sheet", {"spreadsheet_id": "a.xlsx", "sheet": "Sheet1"})
        listed = await call(c, "list_spreadsheets")
    assert names == {"list_spreadsheets", "get_spreadsheet", "read_values", "find_in_spreadsheet"}
    assert created["error"] == "permission_denied" and deleted["error"] == "permission_denied"
    assert "sheets is read-only (SHEETS_READ_ONLY=1): create_spreadsheet is not available" in created["message"]
    assert listed["spreadsheets"] == []


WRITES = {
    "create_spreadsheet": lambda s: s.create_spreadsheet("new", None),
    "update_values": lambda s: s.update_values("book.xlsx", "S!A1", [[9]], "RAW"),
    "batch_update": lambda s: s.batch_update("book.xlsx", [{"range": "S!A1", "values": [[9]]}], "RAW"),
    "append_rows": lambda s: s.append_rows("book.xlsx", "S!A1", [[9]], "RAW"),
    "clear_values": lambda s: s.clear_values("book.xlsx", ["S!A1"]),
    "add_sheet": lambda s: s.add_sheet("book.xlsx", "T", 10, 10),
    "rename_sheet": lambda s: s.rename_sheet("book.xlsx", "S", "T"),
    "duplicate_sheet": lambda s: s.duplicate_sheet("book.xlsx", "S", "T"),
    "delete_sheet": lambda s: s.delete_sheet("book.xlsx", "S"),
    "insert_rows": lambda s: s.insert_rows("book.xlsx", "S", 1, 1),
    "delete_rows": lambda s: s.delete_rows("book.xlsx", "S", 1, 1),
}


@pytest.mark.parametrize("tool", sorted(WRITES))
def test_security_read_only_service_used_directly_refuses_every_change_naming_the_setting(
    root: Path, settings_for: Callable[..., Settings], tool: str
) -> None:
    make_xlsx(root / "book.xlsx", {"S": [[1], [2]]})
    before = (root / "book.xlsx").read_bytes()
    service = SheetsService(settings_for(root, read_only=True))
    try:
        with pytest.raises(PermissionDenied) as refused:
            WRITES[tool](service)
        assert service.read_values("book.xlsx", ["S!A1:A2"], "shown", False, 10, None).ranges[0].values == [[1], [2]]
    finally:
        service.close()
    assert "SHEETS_READ_ONLY" in refused.value.message
    assert (root / "book.xlsx").read_bytes() == before
    assert sorted(p.name for p in root.iterdir()) == ["book.xlsx"]


def test_toolsets_setting_picks_the_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from deskmcp.gateway import compose
    from deskmcp.servers import get_spec

    (tmp_path / "sheets").mkdir()
    monkeypatch.setenv("SHEETS_PATH", str(tmp_path / "sheets"))
    composition = compose([get_spec("sheets")], workspace=tmp_path, toolsets="sheets.read,sheets.structure")
    names = {t.name for t in anyio.run(composition.server.list_tools)}
    assert "insert_rows" in names
    assert "read_values" in names
    assert "update_values" not in names


async def test_destructive_tools_say_so_in_their_annotations(connect: Connect) -> None:
    async with connect() as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    for name in ("update_values", "clear_values", "delete_sheet", "delete_rows", "batch_update"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.destructive_hint is True
    assert tools["read_values"].annotations is not None
    assert tools["read_values"].annotations.read_only_hint is True


async def test_find_scans_large_sheets_in_chunks_and_says_when_the_budget_cut_it(
    root: Path, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deskmcp.sheets.backends.local import LocalBackend

    # chunks of 200 rows: the match is in the seventh, and the smallest budget (1,000 cells) ends in the third
    monkeypatch.setattr(LocalBackend, "scan_rows", 200)
    make_xlsx(root / "long.xlsx", {"S": [[f"r{i}", i] for i in range(1, 1_251)]})
    async with connect() as c:
        deep = await call(
            c, "find_in_spreadsheet", {"spreadsheet_id": "long.xlsx", "query": "r1249", "whole_cell": True}
        )
        assert deep["matches"] == [{"sheet": "S", "cell": "A1249", "value": "r1249"}]
        assert deep["truncated"] is False
    async with connect(max_cells=1_000) as c:
        cut = await call(
            c, "find_in_spreadsheet", {"spreadsheet_id": "long.xlsx", "query": "r1249", "whole_cell": True}
        )
    assert cut["matches"] == []
    assert cut["truncated"] is True


async def test_first_read_near_the_top_streams_and_matches_the_loaded_sheet(
    root: Path, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime as dt

    from deskmcp.sheets.backends import sheet_reader

    monkeypatch.setattr(sheet_reader, "STREAM_BYTES", 0)
    rows: list[list[object]] = [["n", "when", "ok", "ratio"]]
    rows += [[i, dt.datetime(2026, 1, 1 + i % 28), i % 2 == 0, i / 4] for i in range(1, 3001)]
    make_xlsx(root / "stream.xlsx", {"S": rows})
    args = {"spreadsheet_id": "stream.xlsx", "ranges": ["S!A1:D20"]}
    async with connect() as c:
        streamed = await call(c, "read_values", args)
        deep = await call(c, "read_values", {"spreadsheet_id": "stream.xlsx", "ranges": ["S!A2990:D3001"]})
        loaded = await call(c, "read_values", args)
    assert streamed["ranges"] == loaded["ranges"]
    assert streamed["ranges"][0]["values"][1] == [1, "2026-01-02", False, 0.25]
    assert deep["ranges"][0]["values"][-1][0] == 3000


async def test_security_csv_writes_escape_text_a_spreadsheet_app_would_run_as_a_formula(
    root: Path, connect: Connect
) -> None:
    path = root / "log.csv"
    path.write_text("name,note\nAnn,=A1\n", encoding="utf-8")
    attack = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "\tq", "\rr", "-5", "ok"]
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "log.csv", "range": "A3", "values": [attack], "input": "RAW"})
        await call(
            c, "update_values", {"spreadsheet_id": "log.csv", "range": "A4", "values": [["=1+1", "=WEBSERVICE(A1)"]]}
        )
        await call(
            c, "append_rows", {"spreadsheet_id": "log.csv", "range": "log", "values": [["=1+1"]], "input": "RAW"}
        )
        switched = await fail(
            c,
            "update_values",
            {"spreadsheet_id": "log.csv", "range": "B5", "values": [["=1+1"]], "input": "RAW", "escape_csv": False},
        )
    assert switched["error"] == "bad_request"  # the model cannot switch the escaping off
    rows = path.read_bytes().decode("utf-8").split("\n")
    assert rows[1] == "Ann,=A1"  # what the file already held is left as it was
    assert next(csv.reader([rows[2]])) == ["'" + attack[0], *("'" + a for a in attack[1:6]), "-5", "ok"]
    assert rows[3] == "2,'=WEBSERVICE(A1)"  # computed formulas are values; the others are escaped
    assert rows[4] == "'=1+1"


async def test_security_csv_formula_escaping_is_switched_off_only_by_the_setting(root: Path, connect: Connect) -> None:
    path = root / "log.csv"
    path.write_text("name\n", encoding="utf-8")
    async with connect(csv_escape_formulas=False) as c:
        await call(
            c, "update_values", {"spreadsheet_id": "log.csv", "range": "A2", "values": [["=1+1"]], "input": "RAW"}
        )
        await call(
            c, "append_rows", {"spreadsheet_id": "log.csv", "range": "A", "values": [["@SUM(1)"]], "input": "RAW"}
        )
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert path.read_text(encoding="utf-8") == "name\n=1+1\n@SUM(1)\n"
    for name in ("update_values", "batch_update", "append_rows"):
        assert "escape_csv" not in tools[name].input_schema["properties"]


async def test_raw_input_into_xlsx_is_text_and_user_entered_keeps_formulas(budget: Path, connect: Connect) -> None:
    async with connect() as c:
        await call(
            c, "append_rows", {"spreadsheet_id": "budget.xlsx", "range": "Costs", "values": [["=B2*2"]], "input": "RAW"}
        )
        await call(c, "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Costs!B4", "values": [["=B2*2"]]})
        await call(c, "insert_rows", {"spreadsheet_id": "budget.xlsx", "sheet": "Costs", "at": 1, "count": 1})
        shown = await call(c, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Costs!A5:B5"]})
    assert shown["ranges"][0]["values"] == [["=B2*2", 2000]]
    sheet = zipfile.ZipFile(budget).read("xl/worksheets/sheet1.xml").decode("utf-8")
    assert "<f>B3*2</f>" in sheet and "<f>B2*2</f>" not in sheet  # the formula moved; the text did not
    assert_well_formed(budget)
