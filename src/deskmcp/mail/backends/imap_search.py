"""Gmail queries as IMAP SEARCH criteria: which folders a query spans, the criteria sent to the
server, and the part IMAP SEARCH cannot say (attachments), checked on each message's BODYSTRUCTURE.

Labels that are not folders are IMAP keywords. A keyword is an atom (ASCII, no spaces or
brackets), so label names are encoded reversibly: letters, digits, `_`, `-` and `.` stay, any
other character becomes `=XX` per UTF-8 byte (`Follow up` is `Follow=20up`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from deskmcp.core.errors import BadRequest
from deskmcp.mail.query import And, Node, Not, Or, Term, parse_day, relative_seconds, size_bytes

FOLDER_WORDS = ("unread", "starred", "read", "anywhere")
HIDDEN = ("TRASH", "SPAM")
_KEEP = re.compile(r"[A-Za-z0-9_.-]")
_ESCAPED = re.compile(rb"=([0-9A-F]{2})")


def keyword_for(label: str) -> bytes:
    """The IMAP keyword that stores `label` (reversible: see `label_for_keyword`)."""
    out = []
    for ch in label:
        if _KEEP.fullmatch(ch):
            out.append(ch)
        else:
            out.extend(f"={byte:02X}" for byte in ch.encode("utf-8"))
    return "".join(out).encode("ascii")


def label_for_keyword(keyword: bytes) -> str:
    """The label a keyword stores; a keyword another program set is shown as it is."""
    decoded = _ESCAPED.sub(lambda m: bytes([int(m.group(1), 16)]), keyword)
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError:
        return keyword.decode("utf-8", "replace")


def is_user_keyword(flag: bytes) -> bool:
    # System flags start with a backslash; `$`-keywords ($Forwarded, $MDNSent, $Junk...) are
    # the mail clients' own bookkeeping, not labels the user gave.
    return not flag.startswith((b"\\", b"$"))


@dataclass(frozen=True)
class Structure:
    """A condition on the message's MIME structure: has:attachment or filename:X."""

    op: str
    value: str
    negated: bool = False


@dataclass
class Plan:
    """What a query asks of the IMAP server.

    `label` is the folder or label the query names at its top level (None: every folder but
    Trash and Spam; every folder at all with `everywhere`). `structure` holds top-level
    attachment conditions, checked on BODYSTRUCTURE after the search.
    """

    label: str | None
    everywhere: bool
    rest: Node | None
    structure: list[Structure] = field(default_factory=list)


def plan(node: Node | None) -> Plan:
    terms = list(node.nodes) if isinstance(node, And) else ([node] if node is not None else [])
    label: str | None = None
    everywhere = False
    structure: list[Structure] = []
    rest: list[Node] = []
    for term in terms:
        inner, negated = (term.node, True) if isinstance(term, Not) else (term, False)
        if isinstance(inner, Term) and inner.op in ("has", "filename"):
            structure.append(Structure(inner.op, inner.value, negated))
            continue
        if (
            not negated
            and label is None
            and not everywhere
            and isinstance(inner, Term)
            and inner.op in ("in", "label")
            and inner.value.lower() not in FOLDER_WORDS[:3]
        ):
            if inner.value.lower() == "anywhere":
                everywhere = True
            else:
                label = inner.value
            continue
        rest.append(term)
    remaining = And(tuple(rest)) if len(rest) > 1 else (rest[0] if rest else None)
    return Plan(label, everywhere, remaining, structure)


_FLAG_TERMS = {"unread": ("\\Seen", False), "read": ("\\Seen", True), "starred": ("\\Flagged", True)}
_IS_TERMS = {**_FLAG_TERMS, "unstarred": ("\\Flagged", False)}


@dataclass(frozen=True)
class Local:
    """A query a local copy can answer: every one of `words` (case-insensitive substrings), and
    each flag of `flags` set (True) or not (False)."""

    words: list[str]
    flags: dict[str, bool]


def local_terms(plan: Plan, shortest: int) -> Local | None:
    """The query as words (each at least `shortest` characters, no phrase) and read/starred
    conditions, at most one folder, nothing else: what a local copy of the text and flags can
    answer; else None."""
    if plan.structure:
        return None
    terms = () if plan.rest is None else plan.rest.nodes if isinstance(plan.rest, And) else (plan.rest,)
    words: list[str] = []
    flags: dict[str, bool] = {}
    for term in terms:
        if not isinstance(term, Term):
            return None
        value = term.value.lower()
        table = _IS_TERMS if term.op == "is" else _FLAG_TERMS if term.op in ("in", "label") else None
        if table is not None and value in table:
            flag, wanted = table[value]
            if flags.get(flag, wanted) != wanted:
                return None  # is:read is:unread: the server says what that means
            flags[flag] = wanted
            continue
        if term.op is not None or len(term.value) < shortest or any(ch.isspace() for ch in term.value):
            return None
        words.append(term.value)
    return Local(words, flags)


def names_label(node: Node | None) -> bool:
    """Whether `node` has an in:/label: term that becomes a KEYWORD criterion."""
    if node is None:
        return False
    if isinstance(node, Term):
        return node.op in ("in", "label") and node.value.lower() not in FOLDER_WORDS
    if isinstance(node, Not):
        return names_label(node.node)
    return any(names_label(n) for n in node.nodes)


def criteria(node: Node | None, keywords: bool) -> list[Any]:
    """The IMAP SEARCH criteria of `node` (has:/filename: inside OR or NOT only approximated), as
    one flat list in IMAP's prefix notation, without parenthesised groups: `a AND b` inside OR or
    NOT is sent as `NOT OR NOT a NOT b`. imapclient sends each non-ASCII value of a flat list as a
    literal in the search's charset, but encodes a nested list as ASCII and would glue a group's
    parentheses onto a literal, so a non-ASCII term inside OR or `-` would never reach the server."""
    if node is None:
        return ["ALL"]
    return [token for key in _keys(node, keywords) for token in key]


def _keys(node: Node, keywords: bool) -> list[list[Any]]:
    """`node` as search keys that must all match, each key a list of tokens."""
    if isinstance(node, And):
        return [key for n in node.nodes for key in _keys(n, keywords)]
    if isinstance(node, Not):
        return [_negated(_one(_keys(node.node, keywords)))]
    if isinstance(node, Or):
        parts = [_one(_keys(n, keywords)) for n in node.nodes]
        combined = parts[-1]
        for part in reversed(parts[:-1]):
            combined = ["OR", *part, *combined]
        return [combined]
    return [_term(node, keywords)]


def _negated(key: list[Any]) -> list[Any]:
    return key[1:] if key and key[0] == "NOT" else ["NOT", *key]


def _one(keys: list[list[Any]]) -> list[Any]:
    """Keys that must all match as one key: `a b` is `NOT OR NOT a NOT b` (De Morgan)."""
    if len(keys) <= 1:
        return keys[0] if keys else ["ALL"]
    return ["NOT", "OR", *_negated(keys[0]), *_negated(_one(keys[1:]))]


def _term(term: Term, keywords: bool) -> list[Any]:
    op, value = term.op, term.value
    simple = {None: "TEXT", "from": "FROM", "to": "TO", "cc": "CC", "bcc": "BCC", "subject": "SUBJECT"}
    if op in simple:
        return [simple[op], value]
    if op == "is":
        return [{"unread": "UNSEEN", "read": "SEEN", "starred": "FLAGGED", "unstarred": "UNFLAGGED"}[value.lower()]]
    if op == "has":  # only inside OR/NOT; at the top level BODYSTRUCTURE decides
        return ["HEADER", "Content-Type", "multipart/mixed"]
    if op == "filename":
        return ["BODY", value]
    if op in ("after", "before"):
        day = parse_day(value).date()
        return ["SINCE" if op == "after" else "BEFORE", day]
    if op in ("newer_than", "older_than"):
        day = (datetime.now(UTC) - timedelta(seconds=relative_seconds(value))).date()
        return ["SINCE" if op == "newer_than" else "BEFORE", day]
    if op in ("larger", "smaller"):
        return [op.upper(), size_bytes(value)]
    if op == "rfc822msgid":
        return ["HEADER", "Message-ID", value if value.startswith("<") else f"<{value}>"]
    if op in ("label", "in"):
        lower = value.lower()
        if lower in ("unread", "starred", "read"):
            return [{"unread": "UNSEEN", "starred": "FLAGGED", "read": "SEEN"}[lower]]
        if lower == "anywhere":
            return ["ALL"]
        if keywords:
            return ["KEYWORD", keyword_for(value)]
        raise BadRequest(
            f"On IMAP a query can name one folder (in:/label: at its top level); '{op}:{value}' inside OR or"
            " after '-' needs keyword support, which this server lacks.",
            {"operator": op, "value": value},
        )
    raise BadRequest(f"The search operator '{op}:' is not supported on IMAP.", {"operator": op})


def charset_for(items: list[Any]) -> str | None:
    """UTF-8 when any criterion is non-ASCII text (servers must accept it, RFC 3501 6.4.4); else none."""
    for item in items:
        if isinstance(item, list) and charset_for(item):
            return "UTF-8"
        if isinstance(item, str) and not item.isascii():
            return "UTF-8"
    return None


def matches_structure(filenames: tuple[str, ...], conditions: list[Structure]) -> bool:
    """Whether a message with these attachments satisfies every has:/filename: condition."""
    for condition in conditions:
        if condition.op == "has":
            found = bool(filenames)
        else:
            wanted = condition.value.lower()
            found = any(wanted in name.lower() for name in filenames)
        if found == condition.negated:
            return False
    return True
