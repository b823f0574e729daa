"""How a server asks the index for text matches, and how matches are marked in snippets.

User text is analysed into words and "quoted phrases" by the text index, never handed to a
query parser: these helpers only check there is something to search for and carry it, as
JSON, to the `text_match` SQL function every index connection defines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson

from deskmcp.core.errors import BadRequest

_TERM = re.compile(r'"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w", re.UNICODE)
SNIPPET_OPEN = "⟦"
SNIPPET_CLOSE = "⟧"
"""Every server's snippets mark matches as ⟦word⟧: brackets that do not occur in Markdown, so a model
never confuses a match with the author's **emphasis**."""


QUERY_WORDS = 'Any word may match, all-word hits first; "a phrase" as written; +word required; -word excluded'
"""How the search tools of every indexed server describe their query argument (see `index_terms`)."""


TEXT_MATCH = "d.id IN (SELECT value FROM json_each(text_match(?)))"
"""SQL over `docs d` keeping the records a text match selects; its parameter comes from
`text_match` or `fts_any_prefix`. Works in `where` clauses and on any `reader()` connection."""


def text_match(text: str, field: str | None = None) -> str:
    """The parameter of `TEXT_MATCH` for records matching every term (or "quoted phrase") of
    the user's `text`, in any text field or in `field` alone. The text is analysed into
    words, never parsed as syntax; text with no words is a `bad_request`."""
    if field is not None and not field.isidentifier():
        raise ValueError(f"bad column name {field!r}")
    if not any(_WORD.search(m.group(1) if m.group(1) is not None else m.group(2)) for m in _TERM.finditer(text)):
        raise BadRequest(f"The search query {text!r} has no words to search for.", {"query": text})
    return orjson.dumps({"field": field, "query": text}).decode()


def fts_any_prefix(column: str, values: Sequence[str]) -> str:
    """The parameter of `TEXT_MATCH` for records whose text field `column` contains any of
    `values`, each as words whose last one may be a prefix ("ali" finds "Alice")."""
    if not column.isidentifier():
        raise ValueError(f"bad column name {column!r}")
    phrases = [words for value in values if (words := " ".join(w for w in re.split(r"\W+", value) if w))]
    if not phrases:
        raise BadRequest("Nothing to match: the values have no letters or digits.", {"values": list(values)})
    return orjson.dumps({"field": column, "any_prefix": phrases}).decode()
