"""The dependency index of a write: references read once per shape read what the tokenizer reads,
and a change finds every formula whose range holds it, whatever the range's height."""

from __future__ import annotations

import random

import pytest

from deskmcp.sheets.formulas.dependencies import Area, Dependents, InputReader, inputs

NAMES = {"RATE2024": "Rates!$B$2", "TAX": "Rates!$C$1:$C$9", "LOOP": "LOOP"}

FORMULAS = [
    "=B7*2",
    "=SUM(B7:D7)",
    "=SUM(D9:B2)",  # corners the other way round
    '=IF(Y7>1000000,"big","small")',
    "=SUM(Data!B2:B101)",
    "='Q1 2024'!A1+'Bob''s'!C3",  # sheet names with digits and quotes
    "=Sheet2!A1+Sheet2!B2:B9",
    "=SUM(B:B)+AVERAGE($C:D)",
    "=$A$1*A$2+$A3",
    "=LOG10(A12)+ATAN2(B1,C1)",  # digits in function names
    '="A1 and B2"&C3',  # references inside text are text
    "=1E5+2.5e-3+.5+A1",
    "=RATE2024*B4+SUM(TAX)",  # defined names with digits
    "=UNKNOWN7+A1",
    "=LOOP+1",
    '=INDIRECT("A"&B2)',
    "=_xlfn.XLOOKUP(A2,B1:B9,C1:C9)",
    "=OFFSET(A1,1,1)",
    "=#REF!+A1",
    "=A1:B2 C3",  # an operator the tokenizer does not read
    "=ZZZ1048576+XFD1",
    "=A99999999999+B2",  # a row past any sheet
    "=SUM(  A1 : A3 )",
    "= A1 ",
]


def _names(sheet: str, name: str) -> str | None:
    return NAMES.get(name)


def _sibling(formula: str, shift: int) -> str:
    """The same formula with every digit run changed (what a fill down does to row numbers)."""
    import re

    return re.sub(r"\d+", lambda m: str(int(m.group(0)) + shift), formula)


@pytest.mark.parametrize("formula", FORMULAS)
def test_references_read_once_per_shape_are_those_the_tokenizer_reads(formula: str) -> None:
    reader = InputReader(_names)
    for text in (formula, _sibling(formula, 3), _sibling(formula, 250), formula):
        assert reader.areas(text, "Here") == inputs(text, "Here", _names), text


def test_a_change_makes_stale_every_formula_whose_range_holds_it_whatever_its_height() -> None:
    rng = random.Random(20)
    areas: dict[tuple[str, int, int], list[Area] | None] = {}
    index = Dependents()
    for n in range(3000):
        height = rng.choice([1, 1, 2, 3, 100, 255, 256, 257, 5000, 10_000_000])
        row0 = rng.randint(1, 20_000)
        col0 = rng.randint(1, 6)
        area = Area(rng.choice(["S", "T"]), row0, col0, row0 + height - 1, col0 + rng.choice([0, 0, 2]))
        key = ("F", n + 1, 1)
        areas[key] = [area]
        index.add(key, [area])
    for _ in range(300):
        cell = (rng.choice(["S", "T"]), rng.randint(1, 25_000), rng.randint(1, 9))
        expected = {
            key
            for key, found in areas.items()
            if found
            and any(a.sheet == cell[0] and a.row0 <= cell[1] <= a.row1 and a.col0 <= cell[2] <= a.col1 for a in found)
        }
        assert index.stale([cell]) == expected, cell


def test_formulas_added_as_a_block_are_found_like_those_added_one_by_one() -> None:
    rows = list(range(2, 2000))
    one, block = Dependents(), Dependents()
    for r in rows:
        one.add(("S", r, 9), [Area("S", r, 2, r, 4), Area("T", 1, 1, 10_000_000, 1)])
    block.add_block(
        "S", rows, [9] * len(rows), [("S", 2, 4, rows, rows), ("T", 1, 1, [1] * len(rows), [10_000_000] * len(rows))]
    )
    for cell in [("S", 500, 3), ("S", 1, 3), ("S", 1999, 4), ("T", 7, 1), ("S", 600, 9)]:
        assert one.stale([cell]) == block.stale([cell])


def test_a_formula_reading_any_cell_is_stale_after_every_change_and_chains_follow() -> None:
    index = Dependents()
    index.add(("S", 1, 1), None)  # INDIRECT
    index.add(("S", 2, 1), [Area("S", 1, 1, 1, 1)])  # reads the INDIRECT cell
    index.add(("S", 3, 1), [Area("S", 9, 9, 9, 9)])
    assert index.stale([("T", 50, 50)]) == {("S", 1, 1), ("S", 2, 1)}
    assert index.stale([]) == set()


@pytest.mark.parametrize(
    "anchor",
    [
        "=A1*2",
        "=$A1+B$1",
        "=SUM(B:D)+SUM($C:$C)",
        "=Sheet2!A1:B2",
        "='My 2'!$A$1*A1",
        "=SUM(E9:C2)",
        '="A1"&LOG10(A1)',
    ],
)
def test_shared_formulas_read_their_anchors_references_moved_as_excel_moves_them(anchor: str) -> None:
    from deskmcp.sheets.a1 import cell_name
    from deskmcp.sheets.xlsx.patch_sheets import _shared_reads, translate

    master = ("C3", anchor[1:], 3, 3)
    rows = [3, 4, 9, 500]
    for col in (3, 4, 7):
        moved = _shared_reads(master, col, rows, "S")
        assert moved is not None
        for i, row in enumerate(rows):
            expected = inputs("=" + translate(master, cell_name(row, col)), "S")
            assert [Area(s, firsts[i], c0, lasts[i], c1) for s, c0, c1, firsts, lasts in moved] == expected


def test_shared_formulas_whose_references_would_leave_the_sheet_are_left_to_the_translator() -> None:
    from deskmcp.sheets.xlsx.patch_sheets import Fallback, _shared_reads, translate

    master = ("C3", "A2+B3", 3, 3)
    assert _shared_reads(master, 3, [3, 1], "S") is None  # A0 above the first row
    assert _shared_reads(master, 1, [3], "S") is None  # two columns left of A
    assert _shared_reads(("C3", "RATE*A1", 3, 3), 3, [4], "S") is None  # a name: read in full
    with pytest.raises(Fallback):
        translate(master, "C1")


def _sheet_part(rows: dict[int, list[tuple[str, str]]]) -> bytes:
    """A worksheet part of formula cells: row -> (cell, formula text without '=')."""
    body = b"".join(
        f'<row r="{r}">'.encode()
        + b"".join(f'<c r="{ref}"><f>{text}</f><v>0</v></c>'.encode() for ref, text in cells)
        + b"</row>"
        for r, cells in sorted(rows.items())
    )
    return b'<worksheet><dimension ref="A1:Z200"/><sheetData>' + body + b"</sheetData></worksheet>"


def test_the_scan_finds_what_each_formula_reads_when_its_digit_runs_differ_in_length_and_interleave() -> None:
    """Formulas of one shape whose row numbers have different lengths (`=B9*2`, `=B10*2`), in an order
    where those of different lengths alternate (`=A5+A10`, `=A16+A6`, `=A7+A12`): each is indexed with
    the cells it reads, as if added one by one."""
    from deskmcp.sheets.xlsx.patch_sheets import Sheet, scan_sheet

    rows: dict[int, list[tuple[str, str]]] = {}
    texts: dict[tuple[int, int], str] = {}
    for r in range(5, 120):
        row = [(f"C{r}", f"B{r}*2"), (f"D{r}", f"A{r}+A{r + 5}" if r % 2 else f"A{r + 10}+A{r}")]
        rows[r] = row
        texts[(r, 3)], texts[(r, 4)] = row[0][1], row[1][1]
    sheet = Sheet.load("S", "xl/worksheets/sheet1.xml", _sheet_part(rows))
    scanned, one_by_one = Dependents(), Dependents()
    reader = InputReader(_names)
    uncached, shares = scan_sheet(sheet, (), reader, scanned)
    assert uncached == [] and shares == {}
    for (r, c), text in texts.items():
        one_by_one.add(("S", r, c), inputs("=" + text, "S"))
    assert scanned.keys() == one_by_one.keys() == {("S", r, c) for r, c in texts}
    for cell in [("S", r, c) for r in (5, 9, 10, 14, 15, 16, 99, 100, 101, 124, 129) for c in (1, 2)]:
        assert scanned.stale([cell]) == one_by_one.stale([cell]), cell


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (b'<sheetData><row r="1"><c r="A1"><v>1</v></c><c r="B1" s="2"/></row></sheetData>', True),
        (b"<sheetData><row><c><v>1</v></c></row></sheetData>", False),  # a cell without attributes
        (b'<sheetData><row r="1"><c/><c r="B1"/></row></sheetData>', False),
        (b'<sheetData><row r="1"><c s="1" r="A1"/></row></sheetData>', False),  # r not first
        (b"<sheetData><row r='1'><c r='A1'/></row></sheetData>", False),  # single quotes
        (b'<x:sheetData><x:row r="1"><x:c r="A1"/></x:row></x:sheetData>', False),  # prefixed
        (b'<cols><col min="1"/></cols><sheetData/><conditionalFormatting><cfRule/></conditionalFormatting>', True),
        (
            b'<sheetData><row r="1"><c r="A1" t="inlineStr"><is><r><rPr><color rgb="FF0000"/></rPr>'
            b"<t>c</t></r></is></c></row></sheetData>",
            True,
        ),
    ],
)
def test_a_part_is_plain_when_every_cell_tag_starts_with_its_double_quoted_reference(
    part: bytes, expected: bool
) -> None:
    from deskmcp.sheets.xlsx.cellxml import plain

    assert plain(part) is expected
    assert plain(bytearray(part)) is expected


@pytest.mark.parametrize("stretch", [300, 1 << 17])
def test_the_scan_reads_stretch_by_stretch_what_it_reads_formula_by_formula(
    monkeypatch: pytest.MonkeyPatch, stretch: int
) -> None:
    """Stretches of a few rows, or one of the whole part (each question asked of a stretch at once,
    its formulas grouped by a pass per text of zeros, or sorted when there are many): many shapes,
    a text with an entity other than XML's five (`&#65;`), escaped comparisons, formulas in a row
    written (left out), without a cached value (reported) and shared ones (read from their anchor)
    are indexed as the tokenizer reads each formula."""
    from deskmcp.sheets.xlsx import patch_sheets
    from deskmcp.sheets.xlsx.patch_sheets import Sheet, scan_sheet

    monkeypatch.setattr(patch_sheets, "SCAN_BYTES", stretch)
    shapes = [f"{column}{{r}}*2+{column}$1" for column in "ABCDFGHIJKLM"] + [
        "SUM(B{r}:D{r})",
        'IF(B{r}&gt;3,"x&amp;y","n")',
        'B{r}&amp;"&#65;"&amp;C{r}',
        "IF(B{r}&lt;&gt;C{r},B{r},0)",
        "Other!A{r}+B{r}",
        "MAX(B1:B{r})",
    ]
    body, texts, no_value = [], {}, set()
    for r in range(2, 90):
        text = shapes[(r * 7) % len(shapes)].format(r=r)
        value = "" if r % 11 == 0 else "<v>1</v>"
        if value == "":
            no_value.add(("S", r, 5))
        cells = f'<c r="E{r}"><f>{text}</f>{value}</c>'
        if r == 40:
            cells += f'<c r="F{r}"><f t="shared" ref="F40:F42" si="0">B{r}*3</f><v>1</v></c>'
        elif r in (41, 42):
            cells += f'<c r="F{r}"><f t="shared" si="0"/><v>1</v></c>'
        texts[(r, 5)] = text
        body.append(f'<row r="{r}">{cells}</row>')
    part = ("<worksheet><sheetData>" + "".join(body) + "</sheetData></worksheet>").encode()
    sheet = Sheet.load("S", "xl/worksheets/sheet1.xml", part)
    scanned, expected = Dependents(), Dependents()
    uncached, shares = scan_sheet(sheet, {("S", 30, 5)}, InputReader(_names), scanned)
    assert set(uncached) == no_value - {("S", 30, 5)}
    assert set(shares) == {6}
    import html

    for (r, c), text in texts.items():
        if r != 30:
            expected.add(("S", r, c), inputs("=" + html.unescape(text), "S"))
    for r in (40, 41, 42):
        expected.add(("S", r, 6), inputs(f"=B{r}*3", "S"))
    assert scanned.keys() == expected.keys()
    for cell in [("S", r, c) for r in (1, 2, 3, 29, 30, 40, 41, 42, 55, 65, 89, 90) for c in (1, 2, 3, 4, 5)]:
        assert scanned.stale([cell]) == expected.stale([cell]), cell
    assert scanned.stale([("Other", 28, 1)]) == expected.stale([("Other", 28, 1)]) == {("S", 28, 5)}


@pytest.mark.parametrize(
    ("rows", "where", "disorder"),
    [
        ('<row r="1"/><row r="3" spans="1:2"><c r="A3"/></row><row r="7"/>', {1: 0, 3: 12, 7: 52}, None),
        ('<row/><row><c r="A2"/></row>', {1: 0, 2: 6}, None),  # unnumbered: each the one after the last
        ('<row r="2"/><row/><row r="9"/>', {2: 0, 3: 12, 9: 18}, None),
        ('<row r="4"/><row r="2"/><row r="5"/>', {4: 0, 2: 12, 5: 24}, 2),  # out of order
        ('<row r="4"/><row r="4"/>', {4: 0}, 4),  # numbered twice: the first kept
        ('<row r="0"/><row r="1"/>', {0: 0, 1: 12}, 0),
        ("", {}, None),
    ],
)
def test_a_sheet_part_knows_where_each_row_starts_and_the_first_out_of_order(
    rows: str, where: dict[int, int], disorder: int | None
) -> None:
    from deskmcp.sheets.xlsx.patch_sheets import Sheet

    head = '<worksheet><dimension ref="A1:C9"/><sheetData>'
    sheet = Sheet.load("S", "p", (head + rows + "</sheetData></worksheet>").encode())
    assert {row: at - len(head) for row, at in sheet.rows.items()} == where
    assert sheet.disorder == disorder
    assert sheet.max_row == max(where, default=0) and sheet.max_column == 3
