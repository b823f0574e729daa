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


async def libreoffice_csv(path: Path, workdir: Path) -> list[str]:
    """The lines of the CSV LibreOffice (soffice, headless) makes of the first sheet of `path`; the
    test is skipped where LibreOffice is not installed."""
    import shutil

    import anyio
    import pytest

    soffice = shutil.which("soffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not on PATH")
    out = workdir / "out"
    command = [
        soffice,
        f"-env:UserInstallation={(workdir / 'profile').as_uri()}",
        "--headless",
        "--norestore",
        "--convert-to",
        "csv",
        "--outdir",
        str(out),
        str(path),
    ]
    with anyio.fail_after(120):
        await anyio.run_process(command, check=True)
    return (out / f"{path.stem}.csv").read_text(encoding="utf-8").splitlines()
