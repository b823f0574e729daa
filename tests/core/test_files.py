from pathlib import Path

import pytest

from deskmcp.core import files
from deskmcp.core.errors import IOFailure, NotFound
from deskmcp.core.files import atomic_write_text, read_bytes_limited


def test_atomic_write_replaces_content_and_keeps_the_mode(tmp_path: Path):
    target = tmp_path / "n.md"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o600)
    atomic_write_text(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_interrupted_atomic_write_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    target = tmp_path / "n.md"
    target.write_text("old", encoding="utf-8")

    def crash(src: Path, dst: Path) -> None:
        raise OSError("disk unplugged")

    monkeypatch.setattr(files, "replace_file", crash)
    with pytest.raises(OSError, match="unplugged"):
        atomic_write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_read_bytes_limited_refuses_a_file_over_the_limit_before_reading(tmp_path: Path):
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(IOFailure) as info:
        read_bytes_limited(big, 1024)
    assert info.value.details["size"] == 2048
    assert read_bytes_limited(big, 4096) == b"x" * 2048


def test_read_bytes_limited_reports_a_missing_file_as_not_found(tmp_path: Path):
    with pytest.raises(NotFound):
        read_bytes_limited(tmp_path / "nope", 10)


HOLDER = """
import sys
from pathlib import Path

from deskmcp.core.files import temporary_beside

fd, tmp = temporary_beside(Path(sys.argv[1]))
print(tmp, flush=True)
sys.stdin.read()  # a write under way, until the test kills this process
"""


def test_a_killed_writes_temporary_file_is_removed_by_the_next_write_into_its_folder_never_a_live_ones(
    tmp_path: Path,
):
    import subprocess
    import sys

    writer = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "big.md")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        assert writer.stdout is not None
        held = Path(writer.stdout.readline().strip())
        assert held.parent == tmp_path and held.exists()
        atomic_write_text(tmp_path / "other.md", "one")
        assert held.exists()  # another process's write under way: left alone
    finally:
        writer.kill()  # kill -9: its temporary file stays behind
        writer.wait(timeout=30)
    assert held.exists()
    atomic_write_text(tmp_path / "other.md", "two")
    assert not held.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.md"]


def test_a_temporary_file_held_in_this_process_is_left_alone_and_files_not_of_deskmcp_are_kept(tmp_path: Path):
    fd, held = files.temporary_beside(tmp_path / "a.md")
    # Hidden temporary files of other programs (or shaped like them) are not deskmcp's to remove.
    others = [".a.md.abcdefgh.tmp", ".a.md.swp", "a.deskmcp.tmp", ".a.md.abcdefgh.deskmcp.tmp.keep"]
    for name in others:
        (tmp_path / name).write_text("theirs", encoding="utf-8")
    try:
        atomic_write_text(tmp_path / "b.md", "b")
        assert held.exists()
    finally:
        import os

        os.close(fd)
    assert files.remove_leftovers(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*others, "b.md"])
