"""`deskmcp models list | import | pull | remove`, through typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from deskmcp.cli import app
from deskmcp.core.search.embedders import open_embedder
from deskmcp.core.search.embedders.downloads import CATALOG
from tests.helpers.embedders import FileServer, add_static_model, write_static_model, write_tiny_bert

runner = CliRunner()


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    models = tmp_path / "models"
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(models))
    return models


def test_models_list_shows_the_store_its_models_and_what_pull_can_fetch(store: Path) -> None:
    add_static_model(store)
    result = runner.invoke(app, ["models", "list"])

    assert result.exit_code == 0, result.output
    assert str(store) in result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("tiny-static "))
    assert line.split()[1:3] == ["static", "16"]
    assert "all-MiniLM-L6-v2" in result.stdout
    assert "DESKMCP_EMBEDDER is unset" in result.stdout


def test_models_list_names_the_configured_model_and_an_unusable_folder(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_static_model(store)
    (store / "broken").mkdir()
    monkeypatch.setenv("DESKMCP_EMBEDDER", "tiny-static")
    result = runner.invoke(app, ["models", "list"])

    assert result.exit_code == 0, result.output
    assert "DESKMCP_EMBEDDER=tiny-static" in result.stdout
    assert any(line.startswith("broken ") and "manifest.json" in line for line in result.stdout.splitlines())


def test_models_import_adds_a_folder_under_its_name_or_the_one_given(store: Path, tmp_path: Path) -> None:
    source = write_tiny_bert(tmp_path / "my-encoder")
    assert runner.invoke(app, ["models", "import", str(source)]).exit_code == 0
    result = runner.invoke(app, ["models", "import", str(write_static_model(tmp_path / "s")), "--name", "fast"])

    assert result.exit_code == 0, result.output
    assert "fast" in result.stdout
    assert sorted(p.name for p in store.iterdir()) == ["fast", "my-encoder"]
    assert open_embedder("my-encoder").dimension == 32
    assert open_embedder("fast").model_id.startswith("fast@sha256:")


def test_models_import_of_a_folder_without_a_model_says_what_is_missing(store: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["models", "import", str(tmp_path / "empty")])

    assert result.exit_code == 2
    assert "model.safetensors" in result.stderr
    assert not store.exists() or not any(store.iterdir())


def test_models_import_of_a_name_already_present_is_refused(store: Path, tmp_path: Path) -> None:
    add_static_model(store)
    result = runner.invoke(app, ["models", "import", str(write_static_model(tmp_path / "x")), "--name", "tiny-static"])

    assert result.exit_code == 1
    assert "deskmcp models remove tiny-static" in result.stderr


def test_models_remove_deletes_the_model_and_a_second_remove_is_not_found(store: Path) -> None:
    add_static_model(store)
    assert runner.invoke(app, ["models", "remove", "tiny-static"]).exit_code == 0
    assert list(store.iterdir()) == []

    again = runner.invoke(app, ["models", "remove", "tiny-static"])
    assert again.exit_code == 1
    assert "No model 'tiny-static'" in again.stderr


def test_models_pull_of_a_tampered_catalog_file_keeps_nothing(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real catalog entry, from a loopback server that holds another file under its name.
    with FileServer.running() as server:
        server.serve(CATALOG["all-MiniLM-L6-v2"].path, b"not the model")
        monkeypatch.setenv("DESKMCP_MODELS_URL", server.base)
        result = runner.invoke(app, ["models", "pull", "all-MiniLM-L6-v2"])
        assert len(server.requests) == 1

    assert result.exit_code == 1
    assert "not the pinned b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54" in result.stderr
    assert "nothing was kept" in result.stderr
    assert not any(store.iterdir())
