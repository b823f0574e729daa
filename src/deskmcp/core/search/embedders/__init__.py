"""Models for search by meaning: the local model store and the backends that run its models.

`open_embedder(name)` loads a model of the store as a checked `Embedder` (core/search/embedding.py);
`configured_embedder(settings)` is the one the servers use (DESKMCP_EMBEDDER, or None: search
stays lexical). Backends: static models in model2vec's format (`static`), BERT-style sentence
encoders run on numpy (`bert`), and static models distilled from an encoder (`distill`).
Models enter the store only through `deskmcp models import/pull/distill`; nothing is fetched
while a server runs. numpy and the model libraries are imported only when a model is opened.
"""

from deskmcp.core.search.embedders.loading import configured_embedder, open_embedder
from deskmcp.core.search.embedders.store import default_store

__all__ = ["configured_embedder", "default_store", "open_embedder"]
