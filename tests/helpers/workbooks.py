"""Workbooks for the tests, written by openpyxl as another program would."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def make_xlsx(path: Path, sheets: dict[str, list[list[Any]]]) -> Path:
    """An xlsx written by openpyxl with the given rows per sheet."""
    from openpyxl import Workbook

    wb = Workbook()
    first = True
    for title, rows in sheets.items():
        ws: Any = wb.active if first else wb.create_sheet()
        ws.title = title
        first = False
        for row in rows:
            ws.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path


def assert_well_formed(path: Path) -> None:
    """Every XML part of the package at `path` parses (an .xlsx a write left behind must)."""
    import zipfile
    from xml.etree import ElementTree

    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.endswith((".xml", ".rels")):
                try:
                    ElementTree.fromstring(zf.read(name))
                except ElementTree.ParseError as exc:
                    raise AssertionError(f"{path.name}: {name} is not well-formed XML: {exc}") from exc


async def libreoffice_convert(path: Path, workdir: Path, to: str) -> Path:
    """The file LibreOffice (soffice, headless) makes of `path` converted `to` an extension, with
    its filter when one is needed (`"csv"`, `"pdf"`, `"xlsx:Calc MS Excel 2007 XML"`, LibreOffice's
    own .xlsx writer), in `workdir`/lo-<extension>; the test is skipped where LibreOffice is not
    installed, and fails when no file comes out."""
    import shutil

    import anyio
    import pytest

    soffice = shutil.which("soffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not on PATH")
    extension = to.partition(":")[0]
    out = workdir / f"lo-{extension}"
    command = [
        soffice,
        f"-env:UserInstallation={(workdir / 'lo-profile').as_uri()}",
        "--headless",
        "--norestore",
        "--convert-to",
        to,
        "--outdir",
        str(out),
        str(path),
    ]
    with anyio.fail_after(180):
        await anyio.run_process(command, check=True)
    made = out / f"{path.stem}.{extension}"
    assert made.is_file(), f"LibreOffice made no .{extension} of {path.name}"
    return made


async def libreoffice_csv(path: Path, workdir: Path) -> list[str]:
    """The lines of the CSV LibreOffice makes of the first sheet of `path` (`libreoffice_convert`)."""
    return (await libreoffice_convert(path, workdir, "csv")).read_text(encoding="utf-8").splitlines()


LIBREOFFICE_XLSX = "xlsx:Calc MS Excel 2007 XML"
"""The conversion to LibreOffice's own .xlsx writer (`libreoffice_convert`'s `to`)."""


BUILTIN_FORMATS = {0: "General", 14: "mm-dd-yy", 22: "m/d/yy h:mm"}
"""The built-in number formats (ECMA-376 Part 1, 18.8.30) a date cell may name by id."""


def stored_cells(path: Path, part: str = "xl/worksheets/sheet1.xml") -> dict[str, tuple[str, str | None, str]]:
    """What each cell of a worksheet part stores, by reference: its type (`t`, `n` when absent),
    the text of its `<v>` (None without one) and the code of its number format (from the styles)."""
    import zipfile
    from xml.etree import ElementTree

    ns = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    with zipfile.ZipFile(path) as zf:
        sheet = ElementTree.fromstring(zf.read(part))
        styles = ElementTree.fromstring(zf.read("xl/styles.xml"))
    codes = dict(BUILTIN_FORMATS)
    for fmt in styles.iter(f"{ns}numFmt"):
        codes[int(fmt.get("numFmtId", "0"))] = fmt.get("formatCode", "")
    xfs = styles.find(f"{ns}cellXfs")
    formats = [int(xf.get("numFmtId", "0")) for xf in (xfs if xfs is not None else [])]
    out: dict[str, tuple[str, str | None, str]] = {}
    for cell in sheet.iter(f"{ns}c"):
        v = cell.find(f"{ns}v")
        fmt_id = formats[int(cell.get("s", "0"))] if formats else 0
        out[cell.get("r", "")] = (cell.get("t", "n"), v.text if v is not None else None, codes.get(fmt_id, str(fmt_id)))
    return out
