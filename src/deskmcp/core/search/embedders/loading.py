"""Opening a model of the store as an `Embedder`, checked before anything uses it.

A model is refused at load, never half-used: its weights must hash to the manifest's sha256, its
vectors must have the manifest's dimension, and a probe sentence must encode to one finite,
L2-normalised float32 row. numpy and the model libraries (the `semantic` extra) are imported
here, when a model is opened, never by `import deskmcp`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from deskmcp.core.errors import BadRequest, DeskError, IOFailure, ParseError
from deskmcp.core.extras import MissingExtra
from deskmcp.core.search.embedders.store import WEIGHTS, Manifest, default_store, find_model, read_manifest, sha256_file

if TYPE_CHECKING:
    from deskmcp.core.config import WorkspaceSettings
    from deskmcp.core.search.embedding import Embedder

PROBE = "Search by meaning: a probe sentence to check the model."


def open_embedder(name: str, *, store: Path | None = None) -> Embedder:
    """The model `name` of the store (default: DESKMCP_MODELS_DIR, else the user data folder's
    `models`), loaded and checked. A missing model is not_found; a model whose files disagree with
    its manifest, or that encodes to something other than finite unit rows, is parse_error."""
    folder = find_model(name, store)
    return open_folder(folder, read_manifest(folder))


def open_folder(folder: Path, manifest: Manifest, *, adding: bool = False) -> Embedder:
    """The model in `folder` described by `manifest`, checked. `adding`: the model is on its way
    into the store, so a failure is the source's fault (bad_request), not the store's."""
    try:
        return _open_checked(folder, manifest)
    except ParseError as exc:
        if not adding:
            raise
        raise BadRequest(
            f"Model {manifest.name!r} cannot be used, so it was not added: {exc.details['why']}.",
            {"name": manifest.name},
        ) from None


def _open_checked(folder: Path, manifest: Manifest) -> Embedder:
    weights = folder / WEIGHTS
    try:
        actual = sha256_file(weights)
    except FileNotFoundError:
        raise _corrupt(manifest, folder, f"its weights file {WEIGHTS} is missing") from None
    except OSError as exc:
        raise IOFailure(f"Cannot read {weights}: {exc.strerror or exc}.", {"path": str(weights)}) from None
    if actual != manifest.weights_sha256:
        raise _corrupt(
            manifest, folder, f"its weights hash to sha256 {actual}, its manifest says {manifest.weights_sha256}"
        )
    try:
        embedder = _load(folder, manifest)
    except ImportError as exc:
        missing = MissingExtra("semantic", f"Model {manifest.name!r} (search by meaning)", exc.name)
        raise BadRequest(missing.message, {"name": manifest.name, **missing.details}) from None
    except DeskError:
        raise
    except ValueError as exc:  # the backends' own checks say what is wrong
        raise _corrupt(manifest, folder, str(exc)) from None
    except Exception as exc:
        # model2vec, safetensors and tokenizers raise their own undocumented errors (tokenizers a
        # bare Exception) on broken files: each is this model's fault, said as such.
        raise _corrupt(manifest, folder, f"it cannot be loaded ({type(exc).__name__}: {exc})") from None
    if embedder.dimension != manifest.dimension:
        raise _corrupt(
            manifest,
            folder,
            f"its vectors have {embedder.dimension} dimensions, its manifest says {manifest.dimension}",
        )
    check_probe(embedder, manifest, folder)
    return embedder


def check_probe(embedder: Embedder, manifest: Manifest, folder: Path) -> None:
    """One probe sentence must give one finite float32 row of the declared width and length 1."""
    import numpy as np

    rows = embedder.encode([PROBE])
    if rows.dtype != np.float32 or rows.shape != (1, manifest.dimension):
        raise _corrupt(
            manifest, folder, f"a probe encodes to {rows.dtype} {rows.shape}, not float32 (1, {manifest.dimension})"
        )
    if not np.isfinite(rows).all():
        raise _corrupt(manifest, folder, "a probe encodes to values that are not finite numbers (NaN or infinity)")
    norm = float(np.linalg.norm(rows[0]))
    if abs(norm - 1.0) > 1e-3:
        raise _corrupt(manifest, folder, f"a probe encodes to a row of length {norm:.4f}, not 1")


def _load(folder: Path, manifest: Manifest) -> Embedder:
    if manifest.kind == "static":
        from deskmcp.core.search.embedders.static import StaticEmbedder, load_static_model

        return StaticEmbedder(manifest.model_id, load_static_model(folder))
    from deskmcp.core.search.embedders.bert import BertEmbedder

    return BertEmbedder.load(folder, manifest.model_id)


def _corrupt(manifest: Manifest, folder: Path, why: str) -> ParseError:
    return ParseError(
        f"Model {manifest.name!r} ({folder}) cannot be used: {why}. Remove it (`deskmcp models remove "
        f"{manifest.name}`) and import or pull it again.",
        {"name": manifest.name, "path": str(folder), "why": why},
    )


_opened: dict[tuple[str, Path], Embedder] = {}
_opening = threading.Lock()


def configured_embedder(settings: WorkspaceSettings, *, store: Path | None = None) -> Embedder | None:
    """The model `settings.embedder` names (DESKMCP_EMBEDDER), opened once per process and shared
    by every server; None when none is configured (search stays lexical)."""
    if settings.embedder is None:
        return None
    key = (settings.embedder, (store or default_store()).absolute())
    with _opening:
        if key not in _opened:
            _opened[key] = open_embedder(settings.embedder, store=key[1])
        return _opened[key]
