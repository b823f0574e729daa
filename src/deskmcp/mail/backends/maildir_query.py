"""A parsed mail query (`mail.query`) as the SQL filter of the Maildir index.

The Maildir backend keeps one row per message in the index's `docs` table (folder, flags, date,
size, headers, labels) and its words in the full-text index; `listing` turns a query into a
clause over those, as `(sql, params)` with the user's text only ever in `params`. Plain words
and header operators become full-text matches (`core.search.index.text_match`); flags, dates, sizes,
folders and labels become conditions on `docs` columns (alias `d`). A quoted term on the subject
and body ("quarter review") means the words as written, which the stemmed index cannot say: the
rows holding them come from a `PhraseRows` the backend passes. Pure functions: no index is
opened here, so the translation is tested as a table.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import orjson

from deskmcp.core.errors import BadRequest
from deskmcp.core.search.index import TEXT_MATCH, fts_any_prefix, text_match
from deskmcp.mail import mailstore
from deskmcp.mail.query import And, Node, Not, Or, Term, mentions_folder, parse_day, relative_seconds, size_bytes

Clause = tuple[str, list[Any]]
"""A SQL condition and its parameters."""

LABEL_SEP = "\x1f"
"""Between (and around) the labels stored in `docs.labels`, so a label matches only whole."""

TEXT_OPERATORS = (None, "from", "to", "cc", "bcc", "subject", "filename")
"""Operators answered by the full-text index (None: a plain word)."""

_TEXT_COLUMNS = {
    "from": "sender",
    "to": "tos",
    "cc": "ccs",
    "bcc": "bccs",
    "subject": "subject",
    "filename": "filenames",
}

EXACT_FIELDS: dict[str | None, tuple[str, ...]] = {None: ("subject", "body"), "subject": ("subject",)}
"""Where a quoted term is matched as written: a free one in the subject and body, `subject:` in the
subject. Other header operators match a quoted name by its words, stemmed like any other term."""

ROWS = "d.id IN (SELECT value FROM json_each(?))"
"""SQL keeping the index rows whose ids its parameter (a JSON array) lists."""

PhraseRows = Callable[[str, tuple[str, ...]], list[int]]
"""The index rows whose fields (of `EXACT_FIELDS`) hold a quoted term's words as written."""

_WORD = re.compile(r"[^\W_]+")

# Scripts written without spaces between words (Han, kana, Hangul, half-width katakana).
CJK = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0002fa1f]+"
)


def cjk_pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def cjk_grams(text: str) -> str:
    """Every run of CJK characters in `text` as its overlapping pairs, then its last character
    alone: "会議の" is "会議 議の の". A phrase of pairs then finds any substring of two or more
    characters, a prefix any single one, and the lone character closing each run keeps a phrase
    from matching across two runs."""
    words: list[str] = []
    for run in CJK.findall(text):
        words.extend(cjk_pairs(run))
        words.append(run[-1])
    return " ".join(words)


def exact_words(value: str) -> re.Pattern[str] | None:
    """What a quoted term matches: its words as written, adjacent and in order (anything but
    letters and digits between them, as the index splits words), case-insensitive, not stemmed.
    None when it holds no words."""
    words = _WORD.findall(value)
    if not words:
        return None
    body = r"[\W_]+".join(map(re.escape, words))
    return re.compile(rf"(?<![^\W_]){body}(?![^\W_])", re.IGNORECASE)


def listing(
    query: Node | None, *, common: bool = False, now: float | None = None, phrases: PhraseRows | None = None
) -> Clause:
    """The filter of a listing: `query`'s clause, trash and spam left out unless it names them.
    `common`: the query's words match many messages (see `where`); `now` (default: the clock)
    anchors newer_than and older_than; `phrases` finds the rows of quoted terms (without it, as
    in the translation's own tests, they match by their stems)."""
    clause, params = where(query, common=common, now=now, phrases=phrases) if query is not None else ("1", [])
    if not mentions_folder(query, ("trash", "spam", "anywhere")):
        clause = f"({clause}) AND d.folder NOT IN (?, ?)"
        params = [*params, mailstore.SYSTEM_FOLDERS["TRASH"], mailstore.SYSTEM_FOLDERS["SPAM"]]
    return clause, params


def where(node: Node, *, common: bool = False, now: float | None = None, phrases: PhraseRows | None = None) -> Clause:
    """The clause of one query node. With `common`, full-text matches are written so that SQLite
    walks the newest messages in date order and checks each against them (the first page is
    found early) rather than fetching every match and sorting."""
    if isinstance(node, And | Or):
        parts = [where(n, common=common, now=now, phrases=phrases) for n in node.nodes]
        joiner = " AND " if isinstance(node, And) else " OR "
        return joiner.join(f"({c})" for c, _ in parts), [p for _, ps in parts for p in ps]
    if isinstance(node, Not):
        clause, params = where(node.node, common=common, now=now, phrases=phrases)
        return f"NOT ({clause})", params
    return term_clause(node, common=common, now=now, phrases=phrases)


def word_alternatives(node: Node) -> list[Term] | None:
    """The terms of the query's first part made only of full-text words (one word, or words
    joined by OR), whose match counts tell whether the query is common; None when it has none."""
    terms = node.nodes if isinstance(node, And) else (node,)
    for term in terms:
        alternatives = term.nodes if isinstance(term, Or) else (term,)
        if all(
            isinstance(t, Term) and t.op in TEXT_OPERATORS and not t.quoted and not CJK.search(t.value)
            for t in alternatives
        ):
            return [t for t in alternatives if isinstance(t, Term)]
    return None


def term_clause(
    term: Term, *, common: bool = False, now: float | None = None, phrases: PhraseRows | None = None
) -> Clause:
    """The clause of one `op:value` term (or plain word)."""
    # A leading + keeps SQLite from driving the query by the matches' rowids.
    fts = ("+" if common else "") + TEXT_MATCH
    value = term.value
    op = term.op
    # Words with spaces between them were written in quotes ("quarterly review"): a phrase.
    text = f'"{value}"' if " " in value and '"' not in value else value
    if CJK.search(value) and op in TEXT_OPERATORS:
        return cjk_clause(op, value)
    if term.quoted and op in EXACT_FIELDS and phrases is not None:
        return ROWS, [orjson.dumps(phrases(value, EXACT_FIELDS[op])).decode()]
    if op is None:
        return fts, [text_match(text)]
    if op in _TEXT_COLUMNS:
        return fts, [text_match(text, _TEXT_COLUMNS[op])]
    if op == "is":
        return {
            "unread": ("d.unread = 1", []),
            "read": ("d.unread = 0", []),
            "starred": ("d.starred = 1", []),
            "unstarred": ("d.starred = 0", []),
        }[value.lower()]
    if op == "has":
        return "d.has_att = 1", []
    if op in ("label", "in"):
        return label_clause(value)
    if op in ("after", "before"):
        moment = parse_day(value).timestamp()
        return ("d.ts >= ?" if op == "after" else "d.ts < ?"), [moment]
    if op in ("newer_than", "older_than"):
        edge = (time.time() if now is None else now) - relative_seconds(value)
        return ("d.ts >= ?" if op == "newer_than" else "d.ts < ?"), [edge]
    if op in ("larger", "smaller"):
        return ("d.size > ?" if op == "larger" else "d.size < ?"), [size_bytes(value)]
    if op == "rfc822msgid":
        wanted = value if value.startswith("<") else f"<{value}>"
        return "d.rfc = ?", [wanted]
    raise BadRequest(f"The search operator '{op}:' is not supported by the local mailbox.", {"operator": op})


def cjk_clause(op: str | None, value: str) -> Clause:
    """Chinese, Japanese and Korean write words without spaces between them, so the word
    index holds a whole run of text ("会議の議事録") as one word. A term in these scripts
    matches as a substring instead: in the header columns a listing already reads (subject,
    sender, To, Cc), else through the index's character pairs of every such run (`grams`)."""
    column = {"from": "sender", "to": "tos", "cc": "ccs", "subject": "subject"}.get(op or "")
    if column is not None:
        return f"instr(lower(d.{column}), ?) > 0", [value.lower()]
    clauses: list[str] = []
    params: list[Any] = []
    for run in CJK.findall(value):
        clauses.append(TEXT_MATCH)
        if len(run) == 1:  # a lone character begins a pair, or ends its run
            params.append(fts_any_prefix("grams", [run]))
        else:
            params.append(text_match('"' + " ".join(cjk_pairs(run)) + '"', "grams"))
    return " AND ".join(clauses), params


def label_clause(value: str) -> Clause:
    """`label:X` / `in:X`: a special word (anywhere, starred, unread, read, drafts), else the
    folder of that name or a stored label, spelt with spaces, dashes or underscores alike."""
    lower = value.lower()
    special: dict[str, Clause] = {
        "anywhere": ("1", []),
        "starred": ("d.starred = 1", []),
        "unread": ("d.unread = 1", []),
        "read": ("d.unread = 0", []),
        "drafts": ("d.folder = ?", [mailstore.SYSTEM_FOLDERS["DRAFT"]]),
    }
    if lower in special:
        clause, params = special[lower]
        return clause, list(params)
    try:
        directory = mailstore.folder_dir(value)
    except BadRequest:
        directory = "." + value
    variants = {value.lower(), value.lower().replace("-", " "), value.lower().replace("-", "_")}
    label_parts = " OR ".join("instr(lower(d.labels), ?) > 0" for _ in variants)
    return (
        f"lower(d.folder) = ? OR {label_parts}",
        [directory.lower(), *(f"{LABEL_SEP}{v}{LABEL_SEP}" for v in variants)],
    )
