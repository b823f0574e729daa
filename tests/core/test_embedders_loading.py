"""Opening a model of the store: the checks made at load, and the configured embedder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deskmcp.core.config import WorkspaceSettings
from deskmcp.core.errors import BadRequest, NotFound, ParseError, PermissionDenied
from deskmcp.core.search.embedders import configured_embedder, default_store, open_embedder
from deskmcp.core.search.embedders.importing import import_model
from deskmcp.core.search.embedders.store import Manifest, sha256_file, write_manifest
from deskmcp.core.search.embedding import Embedder
from tests.helpers.embedders import (
    add_static_model,
    add_tiny_bert,
    static_vectors,
    tiny_bert_tensors,
    write_static_model,
    write_tiny_bert,
)


def _edit_manifest(folder: Path, **changes: object) -> None:
    path = folder / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | changes), encoding="utf-8")


def _place_unchecked(store: Path, name: str, folder: Path, kind: str, dimension: int) -> None:
    """Put a model folder into the store with a true manifest, without the checks an import makes."""
    target = store / name
    store.mkdir(parents=True, exist_ok=True)
    folder.rename(target)
    write_manifest(target, Manifest(name, kind, dimension, sha256_file(target / "model.safetensors"), "test"))  # type: ignore[arg-type]


def test_open_embedder_encodes_unit_float32_rows_stamped_with_the_weights_hash(tmp_path: Path) -> None:
    store = tmp_path / "models"
    manifest = add_static_model(store)
    embedder = open_embedder("tiny-static", store=store)

    assert isinstance(embedder, Embedder)
    assert embedder.model_id == f"tiny-static@sha256:{sha256_file(store / 'tiny-static' / 'model.safetensors')}"
    assert embedder.model_id == manifest.model_id
    assert embedder.dimension == 16
    rows = embedder.encode(["kitten purrs", "the invoice total", "rain and snow"])
    assert rows.dtype == np.float32
    assert rows.shape == (3, 16)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 16)


def test_texts_about_one_topic_are_closer_than_texts_about_another(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_static_model(store)
    embedder = open_embedder("tiny-static", store=store)

    query, same, other = embedder.encode(["kitten purrs", "a cat and a dog", "the invoice total"])
    assert float(query @ same) > 0.9
    assert float(query @ same) > float(query @ other) + 0.5


def test_a_text_of_unknown_words_encodes_to_a_zero_row(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_static_model(store)
    rows = open_embedder("tiny-static", store=store).encode(["", "zzz qqq"])
    assert not rows.any()


def test_a_missing_model_is_not_found_naming_the_models_commands(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as caught:
        open_embedder("absent", store=tmp_path / "models")
    message = caught.value.message
    assert "'absent'" in message
    assert "deskmcp models list" in message
    assert "deskmcp models import" in message
    assert "deskmcp models pull" in message


def test_the_default_store_is_deskmcp_models_dir_else_the_user_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DESKMCP_MODELS_DIR", raising=False)
    assert default_store() == tmp_path / "home" / ".local" / "share" / "deskmcp" / "models"
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(tmp_path / "elsewhere"))
    assert default_store() == tmp_path / "elsewhere"
    add_static_model(tmp_path / "elsewhere")
    assert open_embedder("tiny-static").dimension == 16


def test_security_a_model_name_that_leaves_the_store_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store" / "models"
    add_static_model(tmp_path / "store" / "outside")
    for name in ("../outside/tiny-static", "/etc", ".hidden", "a/b", ""):
        with pytest.raises(BadRequest):
            open_embedder(name, store=store)


def test_weights_that_no_longer_match_the_manifest_hash_are_refused(tmp_path: Path) -> None:
    store = tmp_path / "models"
    manifest = add_static_model(store)
    write_static_model(store / "tiny-static", vectors=static_vectors() * 2)

    with pytest.raises(ParseError) as caught:
        open_embedder("tiny-static", store=store)
    assert manifest.weights_sha256 in caught.value.message
    assert sha256_file(store / "tiny-static" / "model.safetensors") in caught.value.message
    assert "deskmcp models remove tiny-static" in caught.value.message


def test_a_manifest_declaring_another_dimension_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_static_model(store)
    _edit_manifest(store / "tiny-static", dimension=32)

    with pytest.raises(ParseError, match="16 dimensions, its manifest says 32"):
        open_embedder("tiny-static", store=store)


def test_a_static_model_with_nan_weights_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "models"
    vectors = static_vectors()
    vectors[7, 3] = np.nan
    _place_unchecked(store, "nan-static", write_static_model(tmp_path / "nan", vectors=vectors), "static", 16)

    with pytest.raises(ParseError, match="not finite"):
        open_embedder("nan-static", store=store)


def test_a_bert_encoder_with_nan_weights_is_refused(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    store = tmp_path / "models"
    folder = write_tiny_bert(tmp_path / "nan")
    tensors = tiny_bert_tensors()
    tensors["encoder.layer.1.output.dense.weight"][0, 0] = np.nan
    save_file(tensors, str(folder / "model.safetensors"))
    _place_unchecked(store, "nan-bert", folder, "bert", 32)

    with pytest.raises(ParseError, match=r"encoder\.layer\.1\.output\.dense\.weight .*not finite"):
        open_embedder("nan-bert", store=store)


def test_an_unreadable_manifest_or_missing_weights_is_a_parse_error(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_static_model(store)
    add_tiny_bert(store)
    (store / "tiny-static" / "manifest.json").write_text("{not json", encoding="utf-8")
    (store / "tiny-bert" / "model.safetensors").unlink()

    with pytest.raises(ParseError, match="manifest"):
        open_embedder("tiny-static", store=store)
    with pytest.raises(ParseError, match=r"weights file model\.safetensors is missing"):
        open_embedder("tiny-bert", store=store)


def test_truncated_weights_with_a_matching_manifest_are_refused(tmp_path: Path) -> None:
    store = tmp_path / "models"
    folder = write_static_model(tmp_path / "cut")
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    _place_unchecked(store, "cut", folder, "static", 16)

    with pytest.raises(ParseError, match="cannot be loaded"):
        open_embedder("cut", store=store)


def test_the_embedder_setting_is_read_from_deskmcp_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    assert WorkspaceSettings().embedder is None
    monkeypatch.setenv("DESKMCP_EMBEDDER", "all-MiniLM-L6-v2")
    assert WorkspaceSettings().embedder == "all-MiniLM-L6-v2"
    monkeypatch.setenv("DESKMCP_EMBEDDER", "")
    assert WorkspaceSettings().embedder is None


def test_configured_embedder_is_none_without_a_model_and_opened_once_with_one(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_static_model(store)
    assert configured_embedder(WorkspaceSettings(), store=store) is None

    settings = WorkspaceSettings(embedder="tiny-static")
    first = configured_embedder(settings, store=store)
    assert first is not None
    assert first.dimension == 16
    assert configured_embedder(settings, store=store) is first


def test_configured_embedder_naming_an_absent_model_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="deskmcp models pull"):
        configured_embedder(WorkspaceSettings(embedder="absent"), store=tmp_path / "models")


@pytest.mark.e2e
def test_importing_deskmcp_and_the_embedders_package_loads_no_numpy() -> None:
    code = (
        "import sys, deskmcp, deskmcp.core.search.embedders, deskmcp.core.config; "
        "print(sorted(m for m in ('numpy', 'model2vec', 'tokenizers', 'safetensors') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_import_refuses_nan_weights_and_keeps_nothing(tmp_path: Path) -> None:
    vectors = static_vectors()
    vectors[3, 0] = np.inf
    store = tmp_path / "models"

    with pytest.raises(BadRequest, match="not added: its embeddings hold values that are not finite"):
        import_model(write_static_model(tmp_path / "bad", vectors=vectors), store=store)
    assert list(store.iterdir()) == []


def test_import_refuses_an_encoder_whose_config_disagrees_with_its_weights(tmp_path: Path) -> None:
    store = tmp_path / "models"
    with pytest.raises(BadRequest, match="not added"):
        import_model(
            write_tiny_bert(tmp_path / "wide", config={"hidden_size": 64, "num_attention_heads": 4}), store=store
        )
    assert list(store.iterdir()) == []


def test_security_import_refuses_a_model_file_linked_from_outside_its_folder(tmp_path: Path) -> None:
    store = tmp_path / "models"
    folder = write_static_model(tmp_path / "linked")
    secret = tmp_path / "elsewhere" / "README.md"
    secret.parent.mkdir()
    secret.write_text("a file of this machine the model folder links to\n", encoding="utf-8")
    (folder / "README.md").symlink_to(secret)

    with pytest.raises(PermissionDenied, match="outside"):
        import_model(folder, store=store)
    assert not store.exists() or list(store.iterdir()) == []
