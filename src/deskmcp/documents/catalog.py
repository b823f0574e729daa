"""The documents index: its schema and the queries the service and search run on it beyond the
core index's own (tags, roots, what is indexed under a folder). They hold no SQL themselves."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from deskmcp.core.search.index import IndexSchema, SearchIndex
from deskmcp.documents.models import DocumentSummary

SCHEMA = IndexSchema(
    name="documents",
    version=1,
    text_fields=("title", "tags", "path", "body"),
    weights=(10.0, 6.0, 3.0, 1.0),
    columns=(("root", "TEXT"), ("name_lc", "TEXT"), ("kind", "TEXT"), ("mtime", "REAL")),
    side_tables=(
        "CREATE TABLE tags (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE, tag TEXT NOT NULL)",
        "CREATE INDEX tags_tag ON tags(tag, doc_id)",
        "CREATE INDEX tags_doc ON tags(doc_id)",
        "CREATE INDEX docs_mtime ON docs(mtime)",
        "CREATE INDEX docs_kind ON docs(kind)",
    ),
)

_TAG_SEP = "\x1f"  # char(31): cannot occur in a cleaned tag
GIVEN_TAGS = "given_tags"
"""Key of a stored summary: the tags callers gave the document. Its other tags came from its
frontmatter and follow the file. A summary stored before this was kept lacks it: all its tags
count as given."""


@dataclass(frozen=True)
class Tagged:
    """A document as indexed: its fingerprint, its tags, and those of them callers gave."""

    fingerprint: str
    tags: tuple[str, ...]
    given: tuple[str, ...]


def stored_summary(summary: DocumentSummary, given: list[str]) -> bytes:
    """What a document's record stores: its summary, and the tags callers gave it."""
    return orjson.dumps({**summary.model_dump(mode="json"), GIVEN_TAGS: given})


def _tagged(fingerprint: str, tags: tuple[str, ...], given: list[str] | None) -> Tagged:
    """A document's `Tagged`; all its tags count as given when its summary was stored without them."""
    return Tagged(fingerprint, tags, tags if given is None else tuple(str(tag) for tag in given))


def indexed(index: SearchIndex, key: str) -> tuple[Tagged, DocumentSummary] | None:
    """A document's tags as indexed and its stored summary, or None when it is not indexed."""
    with index.reader() as conn:
        row = conn.execute("SELECT fingerprint, data FROM docs WHERE key=?", (key,)).fetchone()
    if row is None:
        return None
    summary = DocumentSummary.model_validate_json(row[1] or b"{}")
    given = orjson.loads(row[1]).get(GIVEN_TAGS) if row[1] else None
    return _tagged(str(row[0]), tuple(summary.tags), given), summary


def all_keys(index: SearchIndex) -> list[tuple[str, str]]:
    """The root name and key of every indexed document."""
    with index.reader() as conn:
        return [(str(root), str(key)) for root, key in conn.execute("SELECT root, key FROM docs")]


def keys_under(index: SearchIndex, root: str, prefix: str) -> list[str]:
    """The keys of the documents of `root` whose address starts with `prefix`."""
    with index.reader() as conn:
        rows = conn.execute(
            "SELECT key FROM docs WHERE root = ? AND substr(key, 1, ?) = ?", (root, len(prefix), prefix)
        )
        return [str(key) for (key,) in rows]


def fingerprints_and_tags(index: SearchIndex, keys: list[str] | None = None) -> dict[str, Tagged]:
    """Every indexed document's fingerprint and tags (those of `keys` only, when given)."""
    query = (
        "SELECT d.key, d.fingerprint, group_concat(t.tag, char(31)),"
        f" json_extract(CAST(d.data AS TEXT), '$.{GIVEN_TAGS}') FROM docs d"
        " LEFT JOIN tags t ON t.doc_id = d.id {where} GROUP BY d.id"
    )
    with index.reader() as conn:
        if keys is None:
            rows = conn.execute(query.format(where="")).fetchall()
        else:
            rows = []
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                where = f"WHERE d.key IN ({','.join('?' * len(chunk))})"
                rows += conn.execute(query.format(where=where), chunk).fetchall()
    found: dict[str, Tagged] = {}
    for key, fp, joined, given in rows:
        tags = tuple(joined.split(_TAG_SEP)) if joined else ()
        found[key] = _tagged(fp, tags, orjson.loads(given) if given is not None else None)
    return found


def tag_counts(index: SearchIndex) -> list[tuple[str, int]]:
    """Every tag with its documents, most used first, then by name."""
    with index.reader() as conn:
        rows = conn.execute("SELECT tag, count(*) AS n FROM tags GROUP BY tag ORDER BY n DESC, tag").fetchall()
    return [(str(tag), int(n)) for tag, n in rows]


def root_counts(index: SearchIndex) -> dict[str, int]:
    """The indexed documents per root name."""
    with index.reader() as conn:
        return {str(root): int(n) for root, n in conn.execute("SELECT root, count(*) FROM docs GROUP BY root")}
