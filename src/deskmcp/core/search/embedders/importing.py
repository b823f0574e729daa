"""Adding a model folder to the store (`deskmcp models import PATH`).

The folder is recognised by its files: a model2vec static model (`model.safetensors` holding an
`embeddings` tensor) or a BERT sentence encoder (`config.json` of a BERT model, mean pooling).
Only the files the backend reads are copied; the model is checked from its new place before it
is renamed into the store, so a model that cannot be used never enters it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from deskmcp.core.errors import BadRequest, Conflict, DeskError, NotFound, PermissionDenied
from deskmcp.core.extras import MissingExtra
from deskmcp.core.search.embedders.loading import open_folder
from deskmcp.core.search.embedders.store import (
    WEIGHTS,
    Manifest,
    ModelKind,
    check_name,
    install,
    model_folder,
    sha256_file,
    staging_folder,
    write_manifest,
)

STATIC_FILES = (WEIGHTS, "tokenizer.json", "config.json")
BERT_FILES = (WEIGHTS, "tokenizer.json", "config.json")
OPTIONAL_FILES = ("sentence_bert_config.json", "README.md", "LICENSE")


def import_model(
    path: Path, *, name: str | None = None, store: Path | None = None, source: str | None = None
) -> Manifest:
    """Copy the model in folder `path` into the store as `name` (default: the folder's name)."""
    path = path.expanduser()
    if not path.is_dir():
        raise NotFound(f"{path} is not a folder; name the folder that holds the model's files.", {"path": str(path)})
    name = check_name(name or path.name)
    if model_folder(name, store).exists():
        raise Conflict(
            f"A model named {name!r} is already in the store. Remove it first (`deskmcp models remove {name}`) "
            "or choose another name with --name.",
            {"name": name},
        )
    kind = detect_kind(path)
    staged = staging_folder(name, store)
    try:
        for file in STATIC_FILES if kind == "static" else BERT_FILES:
            shutil.copyfile(own_file(path, file), staged / file)
        for file in OPTIONAL_FILES:
            if (path / file).is_file():
                shutil.copyfile(own_file(path, file), staged / file)
        manifest = Manifest(
            name=name,
            kind=kind,
            dimension=declared_dimension(staged, kind),
            weights_sha256=sha256_file(staged / WEIGHTS),
            source=source or f"imported from {path.absolute()}",
        )
        write_manifest(staged, manifest)
        open_folder(staged, manifest, adding=True)
        install(staged, name, store)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return manifest


def own_file(folder: Path, file: str) -> Path:
    """`folder / file`, refused when it is a link leading out of `folder`: importing copies only
    the model's own files, never another file of this machine that a link names."""
    source = folder / file
    if not source.resolve().is_relative_to(folder.resolve()):
        raise PermissionDenied(
            f"{source} is a link to a file outside {folder}; copy the model's files into the folder itself.",
            {"path": str(source)},
        )
    return source


def detect_kind(path: Path) -> ModelKind:
    """Which backend runs the model in `path`; bad_request naming what is missing otherwise."""
    missing = [file for file in (WEIGHTS, "tokenizer.json", "config.json") if not (path / file).is_file()]
    if missing:
        raise BadRequest(
            f"{path} does not hold a model: {', '.join(missing)} missing. A model folder holds "
            "model.safetensors, tokenizer.json and config.json (a model2vec static model or a BERT "
            "sentence encoder such as all-MiniLM-L6-v2).",
            {"path": str(path), "missing": missing},
        )
    if "embeddings" in _tensor_names(path / WEIGHTS):
        return "static"
    config = _json(path / "config.json")
    if config.get("model_type") == "bert" or "BertModel" in config.get("architectures", []):
        pooling = path / "1_Pooling" / "config.json"
        if pooling.is_file() and not _json(pooling).get("pooling_mode_mean_tokens", False):
            raise BadRequest(
                f"{path} is a BERT encoder whose sentence vector is not the mean of its tokens "
                "(1_Pooling/config.json); only mean pooling is supported.",
                {"path": str(path)},
            )
        return "bert"
    raise BadRequest(
        f"{path} is neither a model2vec static model (no 'embeddings' tensor) nor a BERT encoder "
        f"(config.json names model_type {config.get('model_type')!r}).",
        {"path": str(path)},
    )


def declared_dimension(folder: Path, kind: ModelKind) -> int:
    try:
        if kind == "static":
            from deskmcp.core.search.embedders.static import static_dimension

            return static_dimension(folder)
        from deskmcp.core.search.embedders.bert import BertConfig

        return BertConfig.read(folder).hidden
    except DeskError:
        raise
    except Exception as exc:  # safetensors raises its own undocumented errors
        raise BadRequest(f"{folder.name} is not a usable model: {exc}.", {"path": str(folder)}) from None


def _tensor_names(weights: Path) -> set[str]:
    try:
        from safetensors import safe_open

        with safe_open(str(weights), framework="numpy") as opened:
            return set(opened.keys())
    except ImportError as exc:
        raise MissingExtra("semantic", "Adding a model", exc.name) from None
    except Exception as exc:  # safetensors raises its own undocumented errors
        raise BadRequest(f"{weights} is not a safetensors file ({exc}).", {"path": str(weights)}) from None


def _json(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadRequest(f"{path} is not readable JSON ({exc}).", {"path": str(path)}) from None
    return raw if isinstance(raw, dict) else {}
