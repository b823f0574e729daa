"""A .csv as a one-sheet workbook: a write changes only the cells it writes (the file's delimiter,
encoding, line ends, quoting and every other cell's text are kept byte for byte), and a read never
changes a number's digits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

# ;-separated Windows-1252 with CRLF line ends, as Excel saves a CSV in much of Europe: numbers in
# several spellings, a quoted field holding the delimiter, a quote and a line end, an empty line,
# a row shorter than the others, and no line end after the last row.
EUROPEAN = (
    "card;amount;ref;note\r\n"
    "4111111111111111111;1,50;1e5;Café\r\n"
    '12345678901234567890;2.50;0x1F;"a;b ""c""\r\nd"\r\n'
    "\r\n"
    "0.1000000000000000055511151231257827;+7;€ 3\r\n"
    "short;1"
).encode("cp1252")


async def test_a_csv_write_changes_only_the_cells_written_and_keeps_every_other_byte(
    root: Path, connect: Connect
) -> None:
    path = root / "pay.csv"
    path.write_bytes(EUROPEAN)
    sid = {"spreadsheet_id": "pay.csv"}
    async with connect() as c:
        await call(c, "update_values", {**sid, "range": "D1", "values": [["Bemerkung"]]})
        await call(c, "update_values", {**sid, "range": "E5", "values": [["x;y", "=2*3", True, None, "zoë"]]})
        await call(c, "append_rows", {**sid, "range": "pay", "values": [["new", 2.5]]})
    assert path.read_bytes() == (
        "card;amount;ref;Bemerkung\r\n"
        "4111111111111111111;1,50;1e5;Café\r\n"
        '12345678901234567890;2.50;0x1F;"a;b ""c""\r\nd"\r\n'
        "\r\n"
        '0.1000000000000000055511151231257827;+7;€ 3;;"x;y";6;TRUE;;zoë\r\n'
        "short;1\r\n"
        "new;2.5"
    ).encode("cp1252")


async def test_a_csv_cell_keeps_its_text_through_writes_of_other_rows(root: Path, connect: Connect) -> None:
    path = root / "t.csv"
    path.write_bytes(b'"id","total"\n"007","2.50"\n')
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "t.csv", "range": "A3", "values": [["008", "3"]]})
        await call(c, "clear_values", {"spreadsheet_id": "t.csv", "ranges": ["B2"]})
    # the file quotes every field: the cells written are quoted too
    assert path.read_bytes() == b'"id","total"\n"007",""\n"008","3"\n'


async def test_reading_a_csv_never_changes_the_digits_of_a_number(root: Path, connect: Connect) -> None:
    (root / "pay.csv").write_bytes(EUROPEAN)
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "pay.csv", "ranges": ["A2:C5"]})
        await call(c, "update_values", {"spreadsheet_id": "pay.csv", "range": "A7", "values": [["9007199254740993"]]})
        typed = await call(c, "read_values", {"spreadsheet_id": "pay.csv", "ranges": ["A7"]})
    # numbers a JSON number holds exactly are numbers; longer digit strings keep their text
    assert out["ranges"][0]["values"] == [
        ["4111111111111111111", "1,50", 100000],
        ["12345678901234567890", 2.5, "0x1F"],
        [],
        ["0.1000000000000000055511151231257827", 7, "€ 3"],
    ]
    assert typed["ranges"][0]["values"] == [["9007199254740993"]]
    assert (root / "pay.csv").read_bytes().endswith(b"short;1\r\n9007199254740993")


async def test_text_the_csv_encoding_cannot_hold_is_refused_and_the_file_is_unchanged(
    root: Path, connect: Connect
) -> None:
    path = root / "pay.csv"
    path.write_bytes(EUROPEAN)
    async with connect() as c:
        err = await fail(c, "update_values", {"spreadsheet_id": "pay.csv", "range": "A9", "values": [["東京"]]})
    assert err["error"] == "bad_request"
    assert "cp1252" in err["message"] and err["details"]["character"] == "U+6771"
    assert path.read_bytes() == EUROPEAN


async def test_a_byte_cp1252_has_no_character_for_reads_as_a_replacement_and_is_written_back_as_it_was(
    root: Path, connect: Connect
) -> None:
    path = root / "odd.csv"
    path.write_bytes(b"name;code\r\n\xe9t\xe9;\x81x\r\n")
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "odd.csv", "ranges": ["A1:B2"]})
        await call(c, "update_values", {"spreadsheet_id": "odd.csv", "range": "A3", "values": [["€"]]})
    assert out["ranges"][0]["values"] == [["name", "code"], ["été", "\ufffdx"]]
    assert path.read_bytes() == b"name;code\r\n\xe9t\xe9;\x81x\r\n\x80\r\n"
