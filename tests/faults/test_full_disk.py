"""A full disk: a 2 MiB tmpfs holds the files deskmcp writes, filled almost full, then a note write,
a workbook write and an index commit that need more room than is left. Each answers `io_error`
saying the disk is full, the earlier file is intact, no temporary file is left, and the index
still answers once room is made.

Mounting needs root (or CAP_SYS_ADMIN); where mount is refused the tests skip saying so."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.faults import FaultFigures

pytestmark = pytest.mark.anyio

DISK_BYTES = 2 * 1024 * 1024


@dataclass
class Disk:
    """A small file system mounted at `root`, and a filler file taking its room."""

    root: Path

    @property
    def filler(self) -> Path:
        return self.root / "filler.bin"

    def free(self) -> int:
        stats = os.statvfs(self.root)
        return stats.f_bavail * stats.f_frsize

    def fill(self, leave: int) -> None:
        """Take all the room but about `leave` bytes."""
        chunk = b"\0" * 65536
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while os.write(fd, chunk):
                pass
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        os.truncate(self.filler, max(0, self.filler.stat().st_size - leave))
        assert leave <= self.free() < leave + 65536

    def make_room(self) -> None:
        self.filler.unlink()


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    root = tmp_path / "disk"
    root.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"a small tmpfs cannot be mounted here (needs root): {mounted.stderr.strip()}")
    try:
        yield Disk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], capture_output=True, check=False)


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result.structured_content
    return json.loads(result.content[0].text)


def temporary_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


async def test_a_note_write_on_a_full_disk_answers_io_error_and_keeps_the_earlier_note(
    disk: Disk, tmp_path: Path, fault_figures: FaultFigures
) -> None:
    from deskmcp.vault.server import Settings, create_server

    vault = disk.root / "vault"
    vault.mkdir()
    earlier = "# Plan\n\nThe earlier plan.\n"
    (vault / "plan.md").write_text(earlier, encoding="utf-8")
    settings = Settings(workspace=tmp_path / "ws", vault_path=vault)
    async with Client(create_server(settings)) as client:
        with anyio.fail_after(60):
            disk.fill(leave=16 * 1024)
            result = await client.call_tool("write_note", {"path": "plan.md", "body": "x" * 300_000, "overwrite": True})
            error = error_of(result)
            disk.make_room()
            read = await client.call_tool("read_note", {"path": "plan.md"})
    assert error["error"] == "io_error", error
    assert "no space left" in error["message"].lower(), error
    assert (vault / "plan.md").read_text(encoding="utf-8") == earlier
    assert temporary_files(vault) == []
    assert not read.is_error and "The earlier plan." in read.content[0].text  # type: ignore[union-attr]
    fault_figures.record("answer", f"{error['error']}: {error['message']}")
    fault_figures.record("earlier note", "intact")
    fault_figures.record("temporary files left", len(temporary_files(vault)))


async def test_a_workbook_write_on_a_full_disk_answers_io_error_and_keeps_the_earlier_workbook(
    disk: Disk, tmp_path: Path, fault_figures: FaultFigures
) -> None:
    import openpyxl

    from deskmcp.sheets.server import Settings, create_server

    folder = disk.root / "sheets"
    folder.mkdir()
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Plan"
    sheet.append(["Item", "Cost"])
    sheet.append(["Rent", 1200])
    book.save(folder / "budget.xlsx")
    earlier = (folder / "budget.xlsx").read_bytes()
    settings = Settings(workspace=tmp_path / "ws", sheets_path=folder)
    # Text that does not compress: the workbook written would not fit in the room left.
    rows = [[os.urandom(24).hex() for _ in range(8)] for _ in range(400)]
    async with Client(create_server(settings)) as client:
        with anyio.fail_after(60):
            disk.fill(leave=16 * 1024)
            result = await client.call_tool(
                "update_values", {"spreadsheet_id": "budget.xlsx", "range": "Plan!A3", "values": rows}
            )
            error = error_of(result)
            disk.make_room()
            read = await client.call_tool("read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Plan!A1:B3"]})
    assert error["error"] == "io_error", error
    assert "no space left" in error["message"].lower(), error
    assert (folder / "budget.xlsx").read_bytes() == earlier
    assert temporary_files(folder) == []
    assert not read.is_error, read.content
    assert read.structured_content is not None
    assert read.structured_content["ranges"][0]["values"] == [["Item", "Cost"], ["Rent", 1200]]
    fault_figures.record("answer", f"{error['error']}: {error['message']}")
    fault_figures.record("earlier workbook", "intact (same bytes)")
    fault_figures.record("temporary files left", len(temporary_files(folder)))


async def test_an_index_commit_on_a_full_disk_answers_io_error_and_the_index_still_answers(
    disk: Disk, tmp_path: Path, fault_figures: FaultFigures
) -> None:
    from deskmcp.vault.server import Settings, create_server
    from deskmcp.vault.service import VaultService

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "kept.md").write_text("# Kept\n\nThe quarterly harbour survey.\n", encoding="utf-8")
    workspace = disk.root / "ws"
    settings = Settings(workspace=workspace, vault_path=vault, watch=False)
    service = VaultService(settings)
    service.rescan_seconds = 0  # every search looks for changed notes first
    async with Client(create_server(settings, service)) as client:
        with anyio.fail_after(120):
            first = await client.call_tool("search_notes", {"query": "harbour"})
            assert not first.is_error, first.content
            # Notes that do not compress, written by another program: indexing them needs more
            # room than the disk has left.
            for i in range(40):
                words = " ".join(os.urandom(6).hex() for _ in range(500))
                (vault / f"new-{i}.md").write_text(f"# New {i}\n\nlighthouse{i} {words}\n", encoding="utf-8")
            disk.fill(leave=16 * 1024)
            full = await client.call_tool("search_notes", {"query": "harbour"})
            disk.make_room()
            after = await client.call_tool("search_notes", {"query": "harbour"})
            caught_up = await client.call_tool("search_notes", {"query": "lighthouse39"})
    assert full.is_error, full.structured_content
    error = error_of(full)
    assert error["error"] == "io_error", error
    assert "no space left" in error["message"].lower(), error
    assert not after.is_error, after.content
    assert [n["path"] for n in after.structured_content["notes"]] == ["kept.md"]  # type: ignore[index]
    assert not caught_up.is_error, caught_up.content
    assert [n["path"] for n in caught_up.structured_content["notes"]] == ["new-39.md"]  # type: ignore[index]
    [database] = (workspace / ".deskmcp" / "index").glob("vault*.sqlite3")
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    fault_figures.record("answer", f"{error['error']}: {error['message']}")
    fault_figures.record("index after room was made", "integrity ok, the new notes found")
