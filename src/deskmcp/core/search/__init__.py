"""The search engine every indexed server uses.

`index.py` (`SearchIndex`) holds the records in SQLite (`records.py`: what a server writes and
reads; `sqlite.py`: page checks and statements over many ids; `codec.py`: compressed texts) and
ranks through a tantivy text index derived from them (`textindex.py`), whose search text is cut
into terms by `terms.py`, asked for through `query.py` and shown by `snippets.py`. Search by
meaning adds vectors (`vectors.py`) made by an embedder (`embedding.py`: the contract;
`embedders/`: the local model store and its backends), and `fusion.py` runs a search in the mode
asked for: by words, by meaning, or both fused.
"""
