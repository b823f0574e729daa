"""The workbook files of the local backend: which folders hold them, what a spreadsheet id names,
which formats exist and which of them can be saved without losing content.

A spreadsheet's id is its path relative to its folder (`budget.xlsx`, `reports/q3.xlsx`),
prefixed by `NAME:` for the extra folders of `SHEETS_FOLDERS`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deskmcp.core.errors import BadRequest, NotFound
from deskmcp.core.paths import relative_posix, safe_join
from deskmcp.sheets.models import SpreadsheetRef
from deskmcp.sheets.xlsx.parts import MAX_CELLS_PART_BYTES, dropped_content, read_part

FORMATS = {".xlsx": "xlsx", ".xlsm": "xlsm", ".ods": "ods", ".xls": "xls", ".xlsb": "xlsb", ".csv": "csv"}
WRITABLE = ("xlsx", "csv")


def stat_key(path: Path, st: os.stat_result | None = None) -> tuple[Any, ...]:
    """What identifies one version of a file, for the caches kept while it is unchanged (`st`: its
    status as already known, e.g. as just written)."""
    st = st or path.stat()
    return (str(path), st.st_mtime_ns, st.st_size, st.st_ino)


def no_sheet(path: Path, sheet: str, names: list[str]) -> NotFound:
    return NotFound(
        f"No sheet {sheet!r} in {path.name}. Sheets: {', '.join(names)}.", {"sheet": sheet, "sheets": names}
    )


class WorkbookFolders:
    """The main folder and the extra ones, with the lock that keeps to one save at a time."""

    def __init__(self, root: Path, folders: list[Path] | None = None, *, create_root: bool = True) -> None:
        if create_root:  # the default folder only: a configured one that is missing is a typo to report
            root.mkdir(parents=True, exist_ok=True)
        self.roots: dict[str, Path] = {"": root.resolve()}
        for folder in folders or []:
            label = re.sub(r"[^\w.-]", "_", folder.name) or "folder"
            base, n = label, 2
            while label in self.roots:
                label, n = f"{base}{n}", n + 1
            self.roots[label] = folder.resolve()
        self.write_lock = threading.Lock()  # one save at a time; reads go on meanwhile

    def file_id(self, label: str, root: Path, path: Path) -> str:
        rel = relative_posix(root, path)
        return f"{label}:{rel}" if label else rel

    def check_root(self) -> None:
        """not_found when the main folder is missing (SHEETS_PATH names a folder that does not exist)."""
        root = self.roots[""]
        if not root.is_dir():
            raise NotFound(
                f"The sheets folder {root} does not exist. Create it or set SHEETS_PATH to your workbooks folder.",
                {"root": str(root), "variable": "SHEETS_PATH"},
            )

    def locate(self, spreadsheet_id: str, *, must_exist: bool = True) -> tuple[Path, str]:
        """The file a spreadsheet id names, never outside its folder, and its format."""
        self.check_root()
        label, sep, rel = spreadsheet_id.partition(":")
        if sep and label in self.roots and label:
            root = self.roots[label]
        else:
            root, rel = self.roots[""], spreadsheet_id
        path = safe_join(root, rel)
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise BadRequest(
                f"{spreadsheet_id!r} is not a workbook ({', '.join(FORMATS)}). Call list_spreadsheets for valid ids.",
                {"spreadsheet_id": spreadsheet_id},
            )
        if must_exist and not path.is_file():
            raise NotFound(
                f"No spreadsheet {spreadsheet_id!r}. Call list_spreadsheets for valid ids.",
                {"spreadsheet_id": spreadsheet_id},
            )
        return path, fmt

    def files(self) -> Iterator[tuple[str, Path, Path]]:
        """Every workbook file (label, folder, path), hidden and Office lock files left out."""
        for label, root in self.roots.items():
            if not root.is_dir():
                continue
            for path in root.rglob("*"):
                rel = path.relative_to(root).parts
                if any(p.startswith((".", "~$")) for p in rel) or path.suffix.lower() not in FORMATS:
                    continue
                if path.is_file() and (path.resolve() == path or path.resolve().is_relative_to(root)):
                    yield label, root, path

    def list_spreadsheets(self, query: str | None, offset: int, limit: int) -> tuple[list[SpreadsheetRef], bool]:
        self.check_root()
        found = []
        needle = (query or "").lower()
        for label, root, path in self.files():
            sid = self.file_id(label, root, path)
            if needle and needle not in sid.lower():
                continue
            mtime = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).isoformat(timespec="seconds")
            found.append(SpreadsheetRef(id=sid, name=path.stem, modified=mtime))
        found.sort(key=lambda r: r.id.lower())
        return found[offset : offset + limit], len(found) > offset + limit


def writability(path: Path, fmt: str) -> tuple[bool, str | None]:
    """Whether a workbook can be saved here without losing content, and if not why (for the model)."""
    if fmt == "csv":
        return True, None
    if fmt == "ods":
        return False, (
            "ods workbooks are read-only here: deskmcp has no OpenDocument writer that keeps the file's "
            "styles, formulas and other content. create_spreadsheet an .xlsx and copy the values to edit them, "
            "or edit the file in LibreOffice."
        )
    if fmt != "xlsx":
        return False, (
            f"{fmt} workbooks are read-only here; create_spreadsheet an .xlsx and copy the values to edit them."
        )
    try:
        with zipfile.ZipFile(path) as zf:
            strict = b"purl.oclc.org/ooxml" in read_part(zf, "xl/workbook.xml")[:4096]
    except (OSError, KeyError, zipfile.BadZipFile):
        return False, "The file is not a valid xlsx package."
    if strict:
        return False, (
            "Read-only: it is Strict OOXML, which cannot be saved here without losing content. "
            "Copy the values to a new workbook to edit them."
        )
    return True, None


def kept_content(path: Path, *, sheets: bool = False) -> list[str]:
    """What an .xlsx holds that a whole-workbook save (openpyxl) would drop (e.g. ['charts']): such
    a workbook is only ever changed by patching its package, which copies those parts unchanged.
    `sheets`: the worksheet parts are read too, for the extensions openpyxl drops with them
    (sparklines, newer conditional formats and validations, slicer lists)."""
    try:
        with zipfile.ZipFile(path) as zf:
            found = dropped_content(zf.namelist())
            if sheets:
                for name in zf.namelist():
                    if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
                        continue
                    data = read_part(zf, name, MAX_CELLS_PART_BYTES)
                    if b"sparklineGroup" in data and "sparklines" not in found:
                        found.append("sparklines")
                    elif b"<extLst" in data and "sheet extensions" not in found:
                        found.append("sheet extensions")
    except (OSError, zipfile.BadZipFile):
        return []
    return found
