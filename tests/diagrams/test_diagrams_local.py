"""list_files and read_file over the local source, through the in-memory client."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from deskmcp.diagrams.sources.contract import SNIFF_BYTES, glob_regex, read_text
from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def _tree(root: Path) -> None:
    write(root, "README.md", "# Demo\n")
    write(root, "src/app/main.py", "print('hi')\n")
    write(root, "src/app/util.py", "x = 1\n")
    write(root, "src/lib/core.ts", "export {}\n")
    write(root, "docs/guide.md", "guide\n")


async def test_list_files_returns_sorted_forward_slash_paths_relative_to_the_project(
    connect: Connect, project: Path
) -> None:
    _tree(project)
    async with connect() as client:
        listed = await call(client, "list_files")
    paths = [f["path"] for f in listed["files"]]
    assert paths == ["README.md", "docs/guide.md", "src/app/main.py", "src/app/util.py", "src/lib/core.ts"]
    assert listed["total"] == 5
    assert listed["files"][0] == {"path": "README.md", "type": "file", "size": 7}
    assert listed["next_cursor"] is None


async def test_list_files_applies_root_glob_and_recursive_the_same_way(connect: Connect, project: Path) -> None:
    _tree(project)
    async with connect() as client:
        py = await call(client, "list_files", {"root": "src", "glob": "**/*.py"})
        assert [f["path"] for f in py["files"]] == ["src/app/main.py", "src/app/util.py"]
        by_name = await call(client, "list_files", {"glob": "*.md"})
        assert [f["path"] for f in by_name["files"]] == ["README.md", "docs/guide.md"]
        anchored = await call(client, "list_files", {"root": "./src/", "glob": "app/*"})
        assert [f["path"] for f in anchored["files"]] == ["src/app/main.py", "src/app/util.py"]
        flat = await call(client, "list_files", {"recursive": False})
        assert [(f["path"], f["type"]) for f in flat["files"]] == [
            ("README.md", "file"),
            ("docs", "dir"),
            ("src", "dir"),
        ]
        braces = await call(client, "list_files", {"glob": "**/*.{py,ts}"})
        assert braces["total"] == 3


def test_glob_double_star_matches_zero_or_more_folders() -> None:
    assert glob_regex("**/*.py").match("a.py")
    assert glob_regex("**/*.py").match("a/b/c.py")
    assert glob_regex("src/**/x.py").match("src/x.py")
    assert glob_regex("src/**/x.py").match("src/a/b/x.py")
    assert not glob_regex("src/*.py").match("src/a/x.py")
    assert glob_regex("docs/**").match("docs/a/b.md")
    assert glob_regex("file?.txt").match("file1.txt")
    assert not glob_regex("[!a]*.txt").match("abc.txt")


async def test_list_files_pages_through_a_large_folder_with_cursors(connect: Connect, project: Path) -> None:
    for i in range(25):
        write(project, f"f/{i:03}.txt", "x")
    seen: list[str] = []
    async with connect() as client:
        cursor = None
        while True:
            args: dict[str, object] = {"limit": 10}
            if cursor:
                args["cursor"] = cursor
            page = await call(client, "list_files", args)
            assert page["total"] == 25
            seen += [f["path"] for f in page["files"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        error = await fail(client, "list_files", {"glob": "*.md", "cursor": page_cursor_of(seen)})
    assert seen == [f"f/{i:03}.txt" for i in range(25)]
    assert error["error"] == "bad_request"


def page_cursor_of(_seen: list[str]) -> str:
    from deskmcp.core.pagination import encode_cursor

    return encode_cursor(10, "another-query")


async def test_list_files_leaves_out_git_folder_and_gitignored_paths(connect: Connect, project: Path) -> None:
    write(project, ".git/HEAD", "ref: refs/heads/main\n")
    write(project, ".gitignore", "build/\n*.log\n!keep.log\n")
    write(project, "build/out.js", "x")
    write(project, "a.log", "x")
    write(project, "keep.log", "x")
    write(project, "src/.gitignore", "generated.py\n")
    write(project, "src/generated.py", "x")
    write(project, "src/main.py", "x")
    async with connect() as client:
        listed = await call(client, "list_files")
        everything = await call(client, "list_files", {"include_ignored": True})
        in_src = await call(client, "list_files", {"root": "src"})
    assert [f["path"] for f in listed["files"]] == [".gitignore", "keep.log", "src/.gitignore", "src/main.py"]
    assert "build/out.js" in [f["path"] for f in everything["files"]]
    assert "src/generated.py" in [f["path"] for f in everything["files"]]
    assert not any(f["path"].startswith(".git/") for f in everything["files"])
    assert [f["path"] for f in in_src["files"]] == ["src/.gitignore", "src/main.py"]


async def test_list_files_reports_a_missing_root_as_not_found(connect: Connect, project: Path) -> None:
    write(project, "a.txt", "x")
    async with connect() as client:
        missing = await fail(client, "list_files", {"root": "nope"})
        a_file = await fail(client, "list_files", {"root": "a.txt"})
    assert missing["error"] == "not_found"
    assert a_file["error"] == "bad_request"


async def test_list_files_rejects_traversal_and_absolute_roots(connect: Connect) -> None:
    async with connect() as client:
        assert (await fail(client, "list_files", {"root": "../"}))["error"] == "permission_denied"
        assert (await fail(client, "list_files", {"root": "/etc"}))["error"] == "permission_denied"


async def test_list_files_skips_symlinks_that_leave_the_project(
    connect: Connect, project: Path, tmp_path: Path
) -> None:
    outside = write(tmp_path, "secret.txt", "top secret")
    write(project, "inside.txt", "ok")
    os.symlink(outside, project / "leak.txt")
    os.symlink(project / "inside.txt", project / "alias.txt")
    async with connect() as client:
        listed = await call(client, "list_files")
    assert [f["path"] for f in listed["files"]] == ["alias.txt", "inside.txt"]


async def test_read_file_returns_text_with_line_numbers(connect: Connect, project: Path) -> None:
    write(project, "src/a.py", "one\ntwo\nthree\n")
    async with connect() as client:
        whole = await call(client, "read_file", {"path": "src/a.py"})
        part = await call(client, "read_file", {"path": "./src//a.py", "start_line": 2, "end_line": 2})
        tail = await call(client, "read_file", {"path": "src\\a.py", "start_line": 3})
    assert whole["content"] == "one\ntwo\nthree\n"
    assert whole["truncated"] is False
    assert whole["end_line"] == 3
    assert whole["size"] == 14
    assert part["content"] == "two\n"
    assert part["path"] == "src/a.py"
    assert tail["content"] == "three\n"


async def test_read_file_cuts_at_max_chars_and_says_where_to_read_on(connect: Connect, project: Path) -> None:
    write(project, "big.txt", "".join(f"line {i}\n" for i in range(1, 2001)))
    async with connect(max_chars=1000) as client:
        capped = await call(client, "read_file", {"path": "big.txt", "max_chars": 50_000})
        small = await call(client, "read_file", {"path": "big.txt", "max_chars": 20})
        later = await call(client, "read_file", {"path": "big.txt", "start_line": 1999})
    assert len(capped["content"]) == 1000
    assert capped["truncated"] is True
    assert small["content"] == "line 1\nline 2\nline 3"
    assert small["end_line"] == 3
    assert later["content"] == "line 1999\nline 2000\n"
    assert later["truncated"] is False


async def test_read_file_reports_binary_files_instead_of_decoding_them(connect: Connect, project: Path) -> None:
    write(project, "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write(project, "packed.bin", bytes(range(1, 32)) * 20)  # no NUL, but control bytes throughout
    async with connect() as client:
        png = await call(client, "read_file", {"path": "logo.png"})
        packed = await call(client, "read_file", {"path": "packed.bin"})
    assert png["binary"] is True
    assert png["content"] == ""
    assert png["encoding"] is None
    assert png["size"] == 16 + 256
    assert (packed["binary"], packed["content"]) == (True, "")


async def test_read_file_decodes_text_in_another_encoding_and_says_which(connect: Connect, project: Path) -> None:
    write(project, "plain.md", "# Café\n")
    write(project, "notes.md", "# Café\nThe naïve flow – “quoted”\n".encode("cp1252"))
    write(project, "utf16.txt", "hello\r\nwörld\r\n".encode("utf-16"))
    write(project, "utf16be.txt", b"\xfe\xff" + "big end\n".encode("utf-16-be"))
    write(project, "bom.md", "\ufeff# Title\n".encode())
    async with connect() as client:
        plain = await call(client, "read_file", {"path": "plain.md"})
        notes = await call(client, "read_file", {"path": "notes.md"})
        utf16 = await call(client, "read_file", {"path": "utf16.txt"})
        utf16be = await call(client, "read_file", {"path": "utf16be.txt", "start_line": 1, "end_line": 1})
        bom = await call(client, "read_file", {"path": "bom.md"})
    assert (plain["content"], plain["encoding"], plain["replaced"]) == ("# Café\n", "utf-8", 0)
    assert (notes["content"], notes["encoding"]) == ("# Café\nThe naïve flow – “quoted”\n", "cp1252")
    assert (notes["binary"], notes["truncated"], notes["end_line"]) == (False, False, 2)
    assert (utf16["content"], utf16["encoding"], utf16["end_line"]) == ("hello\r\nwörld\r\n", "utf-16-le", 2)
    assert (utf16be["content"], utf16be["encoding"]) == ("big end\n", "utf-16-be")
    assert (bom["content"], bom["encoding"]) == ("# Title\n", "utf-8-sig")


async def test_read_file_decodes_a_file_the_same_way_wherever_its_first_non_utf8_byte_lies(
    connect: Connect, project: Path
) -> None:
    write(project, "early.txt", "é".encode("latin-1") + b"a" * 10_000 + b"\n")
    write(project, "late.txt", b"a" * 10_000 + "é".encode("latin-1") + b"tail\n")
    async with connect() as client:
        early = await call(client, "read_file", {"path": "early.txt"})
        late = await call(client, "read_file", {"path": "late.txt"})
    assert (early["content"], early["encoding"], early["replaced"]) == ("é" + "a" * 10_000 + "\n", "cp1252", 0)
    assert (late["content"], late["encoding"], late["replaced"]) == ("a" * 10_000 + "étail\n", "cp1252", 0)


async def test_read_file_flags_every_byte_it_replaces_instead_of_returning_it(connect: Connect, project: Path) -> None:
    write(project, "mixed.txt", "é".encode() + b"a" * 10_000 + "é".encode("latin-1") + b"tail\n")
    write(project, "nul_late.txt", b"a" * 20_000 + b"\x00" + b"tail\n")
    async with connect() as client:
        mixed = await call(client, "read_file", {"path": "mixed.txt"})
        nul = await call(client, "read_file", {"path": "nul_late.txt"})
    assert (mixed["content"], mixed["encoding"], mixed["replaced"]) == (
        "é" + "a" * 10_000 + "\ufffdtail\n",
        "utf-8",
        1,
    )
    assert "\x00" not in nul["content"]
    assert (nul["content"], nul["binary"], nul["replaced"]) == ("a" * 20_000 + "\ufffdtail\n", False, 1)


def test_replaced_bytes_are_counted_in_the_text_returned_wherever_the_chunks_end() -> None:
    # the first chunk is the UTF-8 head ending in "\r"; a Latin-1 byte and a NUL follow it
    data = "é".encode() + b"a" * (SNIFF_BYTES - 3) + b"\r" + b"\xe9\nb\x00\n"
    whole = read_text(io.BytesIO(data), 1_000_000)
    assert whole.text == "é" + "a" * (SNIFF_BYTES - 3) + "\r\ufffd\nb\ufffd\n"
    assert (whole.encoding, whole.replaced, whole.lines) == ("utf-8", 2, 3)
    assert read_text(io.BytesIO(data), 1_000_000, start_line=2).replaced == 2
    cut = read_text(io.BytesIO(data), 2, start_line=2)
    assert (cut.text, cut.replaced, cut.truncated) == ("\ufffd\n", 1, True)
    assert read_text(io.BytesIO(data), 10).replaced == 0
    # a Latin-1 byte closing the ASCII head reads as cp1252 too, not as a cut UTF-8 character
    split = read_text(io.BytesIO(b"a" * (SNIFF_BYTES - 1) + b"\xe9tail\n"), 1_000_000)
    assert (split.text[-6:], split.encoding, split.replaced) == ("étail\n", "cp1252", 0)


async def test_read_file_past_the_last_line_is_a_bad_request_naming_the_line_count(
    connect: Connect, project: Path
) -> None:
    write(project, "three.txt", "1\n2\n3\n")
    write(project, "empty.txt", "")
    async with connect() as client:
        past = await fail(client, "read_file", {"path": "three.txt", "start_line": 50, "end_line": 60})
        just_past = await fail(client, "read_file", {"path": "three.txt", "start_line": 4})
        empty = await call(client, "read_file", {"path": "empty.txt"})
        last = await call(client, "read_file", {"path": "three.txt", "start_line": 3, "end_line": 60})
    assert past["error"] == "bad_request"
    assert "3 lines" in past["message"]
    assert past["details"] == {"path": "three.txt", "start_line": 50, "lines": 3}
    assert just_past["details"]["lines"] == 3
    assert (empty["content"], empty["truncated"], empty["end_line"]) == ("", False, None)
    assert (last["content"], last["end_line"]) == ("3\n", 3)


async def test_read_file_keeps_multibyte_text_whole_across_chunks(connect: Connect, project: Path) -> None:
    text = "é€😀\r\n" * 20_000
    write(project, "u.txt", text)
    async with connect() as client:
        read = await call(client, "read_file", {"path": "u.txt", "start_line": 19_999})
    assert read["content"] == "é€😀\r\n" * 2
    assert read["binary"] is False


class _CountingStream(io.BytesIO):
    """A file whose reads are counted: what a read costs is what it pulls from the file."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def test_a_bounded_read_of_a_file_without_newlines_reads_what_it_returns_not_the_whole_line() -> None:
    stream = _CountingStream(b"a" * (8 << 20))
    read = read_text(stream, max_chars=10)
    assert (read.text, read.truncated, read.end_line) == ("a" * 10, True, 1)
    assert stream.bytes_read <= SNIFF_BYTES + (1 << 16)


async def test_read_file_cuts_a_file_without_newlines_at_max_chars(connect: Connect, project: Path) -> None:
    write(project, "one-line.min.js", "x" * (4 << 20))
    async with connect() as client:
        head = await call(client, "read_file", {"path": "one-line.min.js", "max_chars": 10})
        second = await fail(client, "read_file", {"path": "one-line.min.js", "start_line": 2})
    assert (head["content"], head["truncated"], head["end_line"]) == ("x" * 10, True, 1)
    assert (second["error"], second["details"]["lines"]) == ("bad_request", 1)


def test_line_ends_split_across_chunks_count_as_one_line() -> None:
    # "\r" closes the first chunk and "\n" opens the next: one line end, not two
    first = "a" * (SNIFF_BYTES - 1) + "\r"
    text = first + "\n" + "b" * 70_000 + "\r" + "c\rd\n"
    read = read_text(io.BytesIO(text.encode()), max_chars=1_000_000, start_line=2)
    assert read.text == "b" * 70_000 + "\rc\rd\n"
    assert read_text(io.BytesIO(text.encode()), 1_000_000, 3, 4).text == "c\rd\n"
    assert read_text(io.BytesIO(text.encode()), 1_000_000).text == text


async def test_read_file_reports_missing_files_and_folders(connect: Connect, project: Path) -> None:
    write(project, "src/a.py", "x")
    async with connect() as client:
        missing = await fail(client, "read_file", {"path": "src/b.py"})
        folder = await fail(client, "read_file", {"path": "src"})
        bad_range = await fail(client, "read_file", {"path": "src/a.py", "start_line": 5, "end_line": 2})
    assert missing["error"] == "not_found"
    assert "list_files" in missing["message"]
    assert folder["error"] == "bad_request"
    assert bad_range["error"] == "bad_request"


async def test_read_file_rejects_traversal_absolute_and_nul_paths(connect: Connect, project: Path) -> None:
    async with connect() as client:
        for path in ("../secret.txt", "src/../../secret.txt", "/etc/passwd", "C:/Windows/win.ini", "a\x00b"):
            error = await fail(client, "read_file", {"path": path})
            assert error["error"] == "permission_denied", path


async def test_read_file_rejects_symlink_escape(connect: Connect, project: Path, tmp_path: Path) -> None:
    write(tmp_path, "secret.txt", "top secret")
    os.symlink(tmp_path / "secret.txt", project / "leak.txt")
    os.symlink(tmp_path, project / "outside")
    async with connect() as client:
        for path in ("leak.txt", "outside/secret.txt"):
            error = await fail(client, "read_file", {"path": path})
            assert error["error"] == "permission_denied"
            assert "top secret" not in str(error)


async def test_absolute_paths_inside_the_project_name_the_same_file(connect: Connect, project: Path) -> None:
    write(project, "src/a.py", "x = 1\n")
    async with connect() as client:
        read = await call(client, "read_file", {"path": str(project / "src" / "a.py")})
        listed = await call(client, "list_files", {"root": str(project / "src")})
    assert read["path"] == "src/a.py"
    assert [f["path"] for f in listed["files"]] == ["src/a.py"]


async def test_local_source_refuses_repo_and_ref(connect: Connect) -> None:
    async with connect() as client:
        error = await fail(client, "list_files", {"ref": "main"})
        unknown = await fail(client, "list_files", {"source": "ftp"})
    assert error["error"] == "bad_request"
    assert unknown["error"] == "bad_request"


async def test_a_missing_project_root_is_reported_by_every_tool_and_never_created(
    connect: Connect, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-project"
    async with connect(root=missing) as client:
        errors = [
            await fail(client, "list_files"),
            await fail(client, "read_file", {"path": "README.md"}),
            await fail(client, "list_files", {"source": "git"}),
            await fail(client, "render_mermaid", {"code": "flowchart LR\n  A --> B\n", "title": "x"}),
        ]
    for error in errors:
        assert error["error"] == "not_found"
        assert "DIAGRAMS_PROJECT_ROOT" in error["message"] and str(missing) in error["message"]
        assert error["details"] == {"variable": "DIAGRAMS_PROJECT_ROOT", "path": str(missing)}
    assert not missing.exists()


async def test_the_default_project_folder_is_created_on_first_use(tmp_path: Path) -> None:
    from mcp import Client

    from deskmcp.diagrams.server import Settings, create_server

    settings = Settings(workspace=tmp_path / "ws")
    async with Client(create_server(settings)) as client:
        listed = await call(client, "list_files")
    assert listed["total"] == 0
    assert (tmp_path / "ws" / "project").is_dir()
