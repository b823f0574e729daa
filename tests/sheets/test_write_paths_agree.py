"""The two ways an .xlsx cell write is saved (the package patched in place, and openpyxl's whole
load and save with SHEETS_FAST_WRITES=0) leave the same cells, values, formulas and flags, for
random sequences of writes, appends and clears over several sheets. Each write is checked to have
gone the way it was meant to: a marker in the styles part survives a patch and not openpyxl."""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deskmcp.sheets.a1 import parse_a1
from deskmcp.sheets.backends.local import LocalBackend
from tests.helpers.workbooks import make_xlsx

SHEETS = ["S", "My T"]
MARKER = b"<!-- written by another program -->"
STYLES = "xl/styles.xml"
# formulas over both sheets, as a person types them (`USER_ENTERED`)
FORMULAS = [
    "=A1+B2",
    "=SUM(A1:A6)",
    "=S!A1*2",
    "='My T'!B1-1",
    '="x"&A2',
    '=IF(A1>2,"big","small")',
    '=COUNTIF(A1:C6,">1")',
    "=AVERAGE(B1:B6)",
    "=MAX(S!A:A)",
    '=IFERROR(A1/B1,"none")',
    '=LEN(C1)&"!"',
]

cells_text = st.text(alphabet="abcXYZ -=+'", min_size=0, max_size=6)
values = st.one_of(
    st.integers(min_value=-1000, max_value=1000),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False).map(lambda f: round(f, 3)),
    cells_text,
    st.booleans(),
    st.sampled_from(FORMULAS),
)
sheet = st.sampled_from(SHEETS)
edits = st.one_of(
    st.tuples(
        st.just("write"),
        sheet,
        st.integers(1, 6),
        st.integers(1, 4),
        st.lists(st.lists(values, min_size=1, max_size=3), min_size=1, max_size=2),
        st.sampled_from(["USER_ENTERED", "RAW"]),
    ),
    st.tuples(st.just("append"), sheet, st.lists(st.lists(values, min_size=1, max_size=3), min_size=1, max_size=2)),
    st.tuples(st.just("clear"), sheet, st.integers(1, 6), st.integers(1, 4), st.integers(0, 2), st.integers(0, 2)),
)


def _letters(col: int) -> str:
    return "ABCDEFGH"[col - 1]


def base_workbook(folder: Path) -> Path:
    """Two sheets of values and formulas, saved by another program (a marker in its styles part)."""
    path = make_xlsx(
        folder / "book.xlsx",
        {
            "S": [[3, 4, "fig"], [1.5, "=A1*2", "=S!A1+'My T'!A1"], ["pear", True, "=SUM(A1:B2)"]],
            "My T": [[10, "=S!C3+A1"], [None, "=COUNTA(S!A1:C3)"]],
        },
    )
    with zipfile.ZipFile(path) as zf:
        items = [(info, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in items:
            if info.filename == STYLES:
                data = data.replace(b"</styleSheet>", MARKER + b"</styleSheet>", 1)
            zf.writestr(info, data)
    assert _marked(path)
    return path


def _apply(backend: LocalBackend, edit: tuple[Any, ...]) -> Any:
    kind, title = edit[0], edit[1]
    quoted = f"'{title}'" if " " in title else title
    if kind == "write":
        _kind, _title, row, col, rows, mode = edit
        rng = parse_a1(f"{quoted}!{_letters(col)}{row}")
        return backend.write("book.xlsx", [(rng, rows)], mode)
    if kind == "append":
        return backend.append("book.xlsx", parse_a1(f"{quoted}!A1:D1"), edit[2], "USER_ENTERED")
    _kind, _title, row, col, tall, wide = edit
    rng = parse_a1(f"{quoted}!{_letters(col)}{row}:{_letters(col + wide)}{row + tall}")
    return backend.clear("book.xlsx", [rng])


def _marked(path: Path) -> bool:
    with zipfile.ZipFile(path) as zf:
        return MARKER in zf.read(STYLES)


def _cells(backend: LocalBackend) -> list[Any]:
    out = []
    for title in SHEETS:
        quoted = f"'{title}'" if " " in title else title
        for render in ("raw", "formula"):
            grid = backend.read("book.xlsx", [parse_a1(f"{quoted}!A1:H20")], render)[0]  # type: ignore[arg-type]
            out.append((title, render, grid.values, sorted(grid.uncomputed), grid.errors))
    return out


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(edits, min_size=1, max_size=3))
def test_patched_and_openpyxl_writes_leave_the_same_cells(changes: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory(prefix="deskmcp-paths-") as tmp:
        base = base_workbook(Path(tmp))
        folders = {}
        for name in ("patched", "openpyxl"):
            folders[name] = Path(tmp) / name
            folders[name].mkdir()
            shutil.copy(base, folders[name] / "book.xlsx")
        patched, whole = LocalBackend(folders["patched"]), LocalBackend(folders["openpyxl"])
        whole.fast_writes = False
        try:
            for change in changes:
                a, b = _apply(patched, change), _apply(whole, change)
                assert a == b, change
                assert _marked(folders["patched"] / "book.xlsx"), f"{change} was not patched in place"
                assert not _marked(folders["openpyxl"] / "book.xlsx"), f"{change} did not go through openpyxl"
                assert _cells(patched) == _cells(whole), change
        finally:
            patched.close()
            whole.close()


def test_shared_strings_without_a_namespace_read_the_same_when_read_and_when_a_write_computes_formulas(
    tmp_path: Path,
) -> None:
    # A1 is shared string 0 of an `sst` part declaring no namespace; B1 joins it to C1
    path = make_xlsx(tmp_path / "book.xlsx", {"S": [[1, "=A1&C1"]]})
    sst = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"
    with zipfile.ZipFile(path) as zf:
        items = [(info, zf.read(info).decode()) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, text in items:
            if info.filename == "xl/worksheets/sheet1.xml":
                text = re.sub(r'<c r="A1"[^>]*>.*?</c>', '<c r="A1" t="s"><v>0</v></c>', text)
            elif info.filename == "[Content_Types].xml":
                text = text.replace(
                    "</Types>", f'<Override PartName="/xl/sharedStrings.xml" ContentType="{sst}"/></Types>'
                )
            elif info.filename == "xl/_rels/workbook.xml.rels":
                text = text.replace(
                    "</Relationships>",
                    f'<Relationship Id="rId90" Type="{rel}" Target="sharedStrings.xml"/></Relationships>',
                )
            elif info.filename == STYLES:
                text = text.replace("</styleSheet>", MARKER.decode() + "</styleSheet>", 1)
            zf.writestr(info, text.encode())
        zf.writestr("xl/sharedStrings.xml", "<sst><si><t>hello</t></si></sst>")
    backend = LocalBackend(tmp_path)
    try:
        assert backend.read("book.xlsx", [parse_a1("S!A1")], "raw")[0].values == [["hello"]]
        backend.write("book.xlsx", [(parse_a1("S!C1"), [["!"]])], "USER_ENTERED")
        assert _marked(path), "the write was not patched in place"
        assert backend.read("book.xlsx", [parse_a1("S!A1:C1")], "raw")[0].values == [["hello", "hello!", "!"]]
    finally:
        backend.close()


def test_dates_written_in_place_are_shown_as_dates_with_the_format_an_openpyxl_save_gives(tmp_path: Path) -> None:
    # openpyxl writes an empty `<numFmts count="0"/>`: the date format must still be added to it
    row = [["2024-01-15", "=DATE(2024,2,1)", "=A5+30", "=A5+0.25", "=A5+B5", 3]]
    shown: dict[str, Any] = {}
    for name in ("patched", "openpyxl"):
        folder = tmp_path / name
        base_workbook(folder)
        backend = LocalBackend(folder)
        backend.fast_writes = name == "patched"
        try:
            backend.write("book.xlsx", [(parse_a1("S!A5"), row)], "USER_ENTERED")
            assert _marked(folder / "book.xlsx") == (name == "patched")
            shown[name] = backend.read("book.xlsx", [parse_a1("S!A5:F5")], "shown")[0].values  # type: ignore[arg-type]
        finally:
            backend.close()
    assert shown["patched"][0][:3] == ["2024-01-15", "2024-02-01", "2024-02-14"]
    assert shown["patched"] == shown["openpyxl"]
