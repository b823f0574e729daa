"""What get_spreadsheet tells of a local workbook: its sheets (size, frozen panes, hidden), named
ranges, chart sheets, and whether it can be changed here. An .xlsx is described from its package
XML without loading a sheet; other formats are read (and cached) to count their rows."""

from __future__ import annotations

import zipfile
from pathlib import Path

from deskmcp.core.errors import ParseError
from deskmcp.sheets.backends.sheet_reader import SheetReader
from deskmcp.sheets.backends.workbook_files import kept_content, writability
from deskmcp.sheets.models import NamedRange, SheetInfo, SpreadsheetInfo
from deskmcp.sheets.xlsx.parts import check_sizes, defined_names, sheet_head, sheet_parts


def describe(reader: SheetReader, spreadsheet_id: str, path: Path, fmt: str) -> SpreadsheetInfo:
    sheets: list[SheetInfo] = []
    named: list[NamedRange] = []
    note = None
    if fmt in ("xlsx", "xlsm"):
        sheets, named, note = _describe_xlsx(reader, path, fmt)
    else:
        sheets = _loaded_sheets(reader, path, fmt, reader.sheet_names(path, fmt))
    writable, why = writability(path, fmt)
    if writable and fmt == "xlsx" and (kept := kept_content(path)):
        why = (
            f"It holds {', '.join(kept)}: every write keeps them as they are (the file is patched in place); "
            "a change that would need the whole workbook rewritten is refused instead."
        )
    return SpreadsheetInfo(
        id=spreadsheet_id,
        title=path.stem,
        sheets=sheets,
        named_ranges=named,
        writable=writable,
        note=" ".join(n for n in (note, why) if n) or None,
    )


def _loaded_sheets(reader: SheetReader, path: Path, fmt: str, names: list[str]) -> list[SheetInfo]:
    """Sheets measured by loading them (a .csv's one sheet, .ods/.xls, packages the XML misses)."""
    sheets = []
    for i, name in enumerate(names):
        data = reader.grid(path, fmt, name)
        sheets.append(
            SheetInfo(sheet_id=i, title=name, index=i, rows=len(data), columns=max((len(r) for r in data), default=0))
        )
    return sheets


def _describe_xlsx(reader: SheetReader, path: Path, fmt: str) -> tuple[list[SheetInfo], list[NamedRange], str | None]:
    try:
        with zipfile.ZipFile(path) as zf:
            check_sizes(zf)
            parts = sheet_parts(zf)
            named = [NamedRange(name=n, range=r) for n, r in defined_names(zf)]
            heads = {p.name: sheet_head(zf, p.part) for p in parts if p.kind == "worksheet" and p.part}
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
    sheets: list[SheetInfo] = []
    names = reader.sheet_names(path, fmt)
    for index, part in enumerate(p for p in parts if p.kind == "worksheet"):
        if part.name not in names:
            continue
        head = heads.get(part.name)
        rows, columns = (head.rows, head.columns) if head else (None, None)
        if rows is None or columns is None:  # no <dimension>: measured from the cells, never loaded
            size = reader.extent(path, part.name)
            rows, columns = size.rows, size.columns
        sheets.append(
            SheetInfo(
                sheet_id=index,
                title=part.name,
                index=len(sheets),
                rows=rows,
                columns=columns,
                frozen_rows=head.frozen_rows if head else 0,
                frozen_columns=head.frozen_columns if head else 0,
                hidden=part.hidden,
            )
        )
    if not sheets and names:  # Strict OOXML and other packages the regexes do not follow
        sheets = _loaded_sheets(reader, path, fmt, names)
    charts = [p.name for p in parts if p.kind == "chartsheet"]
    note = f"Chart sheets (not readable as values): {', '.join(charts)}." if charts else None
    return sheets, named, note
