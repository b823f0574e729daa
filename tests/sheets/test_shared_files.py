"""Writes to a workbook file that other processes and programs write too: one deskmcp save of a file
at a time across processes, and never a save over a version of the file that was not read (the
change is applied again to the file as it now is, or refused with `conflict`). A lost write is
never answered as a success."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deskmcp.core.errors import Conflict, Timeout
from deskmcp.sheets.a1 import parse_a1
from deskmcp.sheets.backends.book import Book
from deskmcp.sheets.backends.local import LocalBackend
from tests.helpers.workbooks import make_xlsx

KINDS = ["xlsx-patched", "xlsx-openpyxl", "csv"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on an .xlsx patched in place, one saved through openpyxl, and a .csv."""
    return request.param


def _file(root: Path, kind: str, rows: list[list[Any]]) -> tuple[str, str]:
    """The workbook holding `rows` as another program writes it: its id and the range of its sheet."""
    if kind == "csv":
        (root / "t.csv").write_text("".join(",".join(map(str, row)) + "\n" for row in rows), encoding="utf-8")
        return "t.csv", "t"
    make_xlsx(root / "t.xlsx", {"S": rows})
    return "t.xlsx", "S"


def _backend(root: Path, kind: str, locks: Path) -> LocalBackend:
    backend = LocalBackend(root, lock_folder=locks)
    backend.fast_writes = kind != "xlsx-openpyxl"
    return backend


@pytest.fixture
def backends(root: Path, kind: str, tmp_path: Path) -> Iterator[tuple[LocalBackend, LocalBackend]]:
    """Two backends as two server processes on one workspace have them (their own in-process lock,
    one lock folder)."""
    first, second = _backend(root, kind, tmp_path / "locks"), _backend(root, kind, tmp_path / "locks")
    yield first, second
    first.close()
    second.close()


def _values(backend: LocalBackend, sid: str, sheet: str) -> list[list[Any]]:
    return backend.read(sid, [parse_a1(f"{sheet}!A1:C3")], "shown")[0].values


def test_a_save_of_a_file_another_process_is_saving_waits_for_it_and_never_loses_its_write(
    root: Path, kind: str, backends: tuple[LocalBackend, LocalBackend]
) -> None:
    first, second = backends
    second.locks.wait = 0  # give up at once instead of waiting out the first save
    sid, sheet = _file(root, kind, [["head"]])
    refused: list[Exception] = []

    def change(book: Book) -> None:
        # the first process has read the file and is about to save it when the second one writes
        book.put(parse_a1(f"{sheet}!A2"), [["first"]], "USER_ENTERED")
        try:
            second.write(sid, [(parse_a1(f"{sheet}!B2"), [["second"]])], "USER_ENTERED")
        except Timeout as exc:
            refused.append(exc)

    first.edit(sid, change, cells_only=True)
    assert refused, "the second process saved while the first held the file: one of the two writes is lost"
    assert refused[0].code == "timeout" and "another deskmcp process" in str(refused[0])
    assert _values(first, sid, sheet) == [["head"], ["first"]]
    second.locks.wait = 5  # the file is free again: it waits for nobody
    second.write(sid, [(parse_a1(f"{sheet}!B2"), [["second"]])], "USER_ENTERED")
    assert _values(first, sid, sheet) == [["head"], ["first", "second"]]


def test_a_file_another_program_saves_meanwhile_gets_the_change_applied_to_its_new_version(
    root: Path, kind: str, backends: tuple[LocalBackend, LocalBackend]
) -> None:
    backend, _ = backends
    sid, sheet = _file(root, kind, [["head"]])
    attempts: list[int] = []

    def change(book: Book) -> None:
        book.put(parse_a1(f"{sheet}!B1"), [["ours"]], "USER_ENTERED")
        if not attempts:  # another program saves the file after deskmcp read it, before deskmcp saves
            _file(root, kind, [["head"], ["theirs"]])
        attempts.append(1)

    backend.edit(sid, change, cells_only=True)
    assert len(attempts) == 2
    assert _values(backend, sid, sheet) == [["head", "ours"], ["theirs"]]


def test_a_file_changed_before_every_save_is_left_as_the_other_program_saved_it_and_answers_conflict(
    root: Path, kind: str, backends: tuple[LocalBackend, LocalBackend]
) -> None:
    backend, _ = backends
    sid, sheet = _file(root, kind, [["head"]])
    saves: list[int] = []

    def change(book: Book) -> None:
        book.put(parse_a1(f"{sheet}!B1"), [["ours"]], "USER_ENTERED")
        saves.append(1)
        _file(root, kind, [["head"], [f"theirs {len(saves)}"]])

    with pytest.raises(Conflict, match="changed by another program") as refused:
        backend.edit(sid, change, cells_only=True)
    assert refused.value.code == "conflict"
    assert _values(backend, sid, sheet) == [["head"], [f"theirs {backend.save_attempts}"]]


def test_a_new_spreadsheet_never_replaces_a_file_made_meanwhile(tmp_path: Path) -> None:
    from deskmcp.sheets.backends.file_guard import NO_FILE, FileChanged, write_bytes_atomically

    path = tmp_path / "new.csv"
    write_bytes_atomically(path, b"ours\n", expect=NO_FILE)
    with pytest.raises(FileChanged):
        write_bytes_atomically(path, b"again\n", expect=NO_FILE)
    assert path.read_bytes() == b"ours\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.csv"]
