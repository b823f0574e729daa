"""Where rendered diagrams go: a sanitised file name in DIAGRAMS_OUT_DIR, inside DIAGRAMS_PROJECT_ROOT."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from deskmcp.core.errors import Conflict, IOFailure, PermissionDenied
from deskmcp.core.files import atomic_write_bytes
from deskmcp.core.paths import is_within, relative_posix, safe_join

if TYPE_CHECKING:
    from deskmcp.diagrams.settings import DiagramsSettings

MAX_STEM = 80
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


def filename_stem(title: str) -> str:
    """A portable file name from a title: ASCII letters, digits, '-' and '_' only, never empty."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    text = re.sub(r"[^a-z0-9_]+", "-", text).strip("-_")[:MAX_STEM].strip("-_")
    if not text:
        return "diagram"
    if text in _WINDOWS_RESERVED:
        return f"{text}-diagram"
    return text


def out_folder(settings: DiagramsSettings) -> Path:
    root = settings.root.resolve()
    out = settings.out_dir
    if out.is_absolute():
        resolved = out.resolve()
        if not is_within(root, resolved):
            raise PermissionDenied(
                f"DIAGRAMS_OUT_DIR {out} is outside DIAGRAMS_PROJECT_ROOT {root}; set it to a folder inside the "
                "project.",
                {"out_dir": str(out)},
            )
        return resolved
    return safe_join(root, out.as_posix(), allow_root=True)


def save_image(
    settings: DiagramsSettings, title: str, fmt: str, data: bytes, *, overwrite: bool, dry_run: bool = False
) -> str:
    """Write `data` as `<out>/<stem>.<fmt>` and return its project-relative path. An existing file
    is a conflict unless `overwrite`."""
    folder = out_folder(settings)
    name = f"{filename_stem(title)}.{fmt}"
    target = folder / name
    base = relative_posix(settings.root, folder)
    rel = name if base == "." else f"{base}/{name}"
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise PermissionDenied(f"{rel} is not a regular file; it will not be replaced.", {"path": rel})
    if target.exists() and not overwrite:
        raise Conflict(
            f"{rel} already exists. Pass overwrite=true to replace it, or choose another title.",
            {"path": rel},
        )
    if dry_run:
        return rel
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)
    except OSError as exc:
        raise IOFailure(f"Saving {rel} failed: {exc.strerror or exc}.", {"path": rel}) from exc
    return rel
