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
