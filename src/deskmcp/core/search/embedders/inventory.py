"""What `deskmcp models list` says: the store, its models, what `pull` can fetch, and which model
search uses. Reads manifests only (no hashing, no numpy), so it answers at once."""

from __future__ import annotations

from pathlib import Path

from deskmcp.core.search.embedders.downloads import CATALOG
from deskmcp.core.search.embedders.store import Manifest, default_store, list_models, store_configured


def describe_store(store: Path | None = None, *, configured: str | None = None) -> list[str]:
    """Lines for a person: one per model (name, kind, dimension, hash prefix, source)."""
    root = store or default_store()
    configured_by = store_configured() if store is None else None
    where = f" ({configured_by})" if configured_by else ""
    lines = [f"Model store: {root}{where}"]
    models = list_models(root)
    names: set[str] = set()
    if not models:
        lines.append("(no models: add one with `deskmcp models pull NAME` or `deskmcp models import PATH`)")
    for folder, entry in models:
        names.add(folder)
        if isinstance(entry, Manifest):
            lines.append(
                f"{folder}  {entry.kind}  {entry.dimension}  sha256:{entry.weights_sha256[:12]}  {entry.source}"
            )
        else:
            lines.append(f"{folder}  unusable: {entry.message}")
    pullable = [f"{name} ({CATALOG[name].about})" for name in sorted(CATALOG) if name not in names]
    if pullable:
        lines.append("`deskmcp models pull NAME` can add: " + "; ".join(pullable))
    if configured:
        lines.append(f"Search by meaning uses DESKMCP_EMBEDDER={configured}.")
    else:
        lines.append("DESKMCP_EMBEDDER is unset: search is by words only.")
    return lines
