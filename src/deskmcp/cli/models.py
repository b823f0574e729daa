"""`deskmcp models`: the model store search by meaning uses."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deskmcp.cli import app
from deskmcp.core.errors import BadRequest, DeskError

models_app = typer.Typer(
    help="The models search by meaning uses (DESKMCP_EMBEDDER names one): list, import, pull, distill, remove. "
    "The store is DESKMCP_MODELS_DIR, else the 'models' folder of your data folder; see docs/search.md.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(models_app, name="models")


def _models_failure(exc: DeskError) -> typer.Exit:
    """A model-store failure: its message on stderr; exit code 2 for a bad request, else 1."""
    typer.echo(f"deskmcp: {exc.message}", err=True)
    return typer.Exit(2 if isinstance(exc, BadRequest) else 1)


@models_app.command("list")
def models_list() -> None:
    """The models in the store, those `pull` can add, and the one search uses."""
    from deskmcp.core.config import WorkspaceSettings
    from deskmcp.core.search.embedders.inventory import describe_store

    typer.echo("\n".join(describe_store(configured=WorkspaceSettings().embedder)))


@models_app.command("import")
def models_import(
    path: Annotated[Path, typer.Argument(help="A model folder: model.safetensors, tokenizer.json, config.json.")],
    name: Annotated[str | None, typer.Option("--name", help="Name in the store (default: the folder's).")] = None,
) -> None:
    """Copy a model folder (a model2vec static model or a BERT sentence encoder) into the store, checked."""
    from deskmcp.core.search.embedders.importing import import_model

    try:
        manifest = import_model(path, name=name)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Added {manifest.model_id} ({manifest.kind}, {manifest.dimension} dimensions).")


@models_app.command("pull")
def models_pull(name: Annotated[str, typer.Argument(help="A catalog model, as `deskmcp models list` shows.")]) -> None:
    """Download a catalog model, check it against its pinned sha256, and add it (nothing is kept otherwise)."""
    from deskmcp.core.search.embedders.downloads import pull_model

    try:
        manifest = pull_model(name)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Added {manifest.model_id} ({manifest.kind}, {manifest.dimension} dimensions).")


@models_app.command("distill")
def models_distill(
    source: Annotated[str, typer.Argument(help="A BERT encoder of the store, e.g. all-MiniLM-L6-v2.")],
    name: Annotated[str, typer.Argument(help="Name of the static model to add.")],
    dimensions: Annotated[int, typer.Option("--dimensions", help="Width of its vectors (PCA).", min=1)] = 256,
) -> None:
    """Make a fast static model from a sentence encoder: each token's vector through the encoder, PCA-reduced."""
    import time

    from deskmcp.core.search.embedders.distill import distill_model

    started = time.monotonic()

    def report(done: int, total: int) -> None:
        typer.echo(f"deskmcp: {done:,} of {total:,} tokens encoded", err=True)

    try:
        manifest = distill_model(source, name, dimensions=dimensions, progress=report)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Added {manifest.model_id} ({manifest.dimension} dimensions) in {time.monotonic() - started:.0f} s.")


@models_app.command("remove")
def models_remove(name: Annotated[str, typer.Argument(help="A model of the store.")]) -> None:
    """Delete a model from the store."""
    from deskmcp.core.search.embedders.store import remove_model

    try:
        folder = remove_model(name)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Removed {name} ({folder}).")
