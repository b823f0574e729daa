"""Gmail's search syntax, parsed once into a small tree every backend translates.

Supported: words and "phrases", `from:` `to:` `cc:` `bcc:` `subject:` `is:` `label:` `in:`
`has:attachment` `filename:` `after:` `before:` `newer_than:` `older_than:` `larger:` `smaller:`
`rfc822msgid:`, `OR` (or `|`), `-` / `NOT`, `AND`, parentheses and `{a b}` (any of), and a group
after an operator (`subject:(a b)` is `subject:a subject:b`, `from:{a b}` is `from:a OR from:b`).
Anything else written as `name:value` is refused with a `bad_request` naming the operator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from deskmcp.core.errors import BadRequest

OPERATORS = (
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "is",
    "label",
    "in",
    "has",
    "filename",
    "after",
    "before",
    "newer_than",
    "older_than",
    "larger",
    "smaller",
    "rfc822msgid",
)
IS_VALUES = ("unread", "read", "starred", "unstarred")
HAS_VALUES = ("attachment",)
_TOKEN = re.compile(r'\s*(\(|\)|\{|\}|-?[A-Za-z_][A-Za-z0-9_]*:"[^"]*"|-?"[^"]*"|[^\s(){}]+)')
_OP = re.compile(r"^(-?)([A-Za-z_][A-Za-z0-9_]*):(.*)$", re.DOTALL)
_REL = re.compile(r"^(\d+)([dmy])$")
_SIZE = re.compile(r"^(\d+)([kKmM]?)$")


@dataclass(frozen=True)
class Term:
    op: str | None  # None: free text
    value: str
    quoted: bool = False
    """Written in quotes ("quarter review", subject:"Q3"): the words as written, not their stems."""


@dataclass(frozen=True)
class Not:
    node: Node


@dataclass(frozen=True)
class And:
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    nodes: tuple[Node, ...]


Node = Term | Not | And | Or


def _bad(message: str, query: str, **details: object) -> BadRequest:
    return BadRequest(message, {"query": query, **details})


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens = [t for t in _TOKEN.findall(query) if t]
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> Node | None:
        nodes = self.sequence(end=None)
        if self.peek() is not None:
            raise _bad(f"Unbalanced {self.peek()!r} in the query.", self.query)
        return _and(nodes)

    def sequence(self, end: str | None) -> list[Node]:
        nodes: list[Node] = []
        while (token := self.peek()) is not None and token != end and token not in (")", "}"):
            if token in ("OR", "|"):
                self.take()
                if not nodes:
                    raise _bad("OR needs a term on each side.", self.query)
                right = self.unary()
                left = nodes.pop()
                left_nodes = left.nodes if isinstance(left, Or) else (left,)
                nodes.append(Or((*left_nodes, right)))
                continue
            if token == "AND":
                self.take()
                continue
            nodes.append(self.unary())
        return nodes

    def unary(self) -> Node:
        token = self.peek()
        if token is None:
            raise _bad("The query ends where a term was expected.", self.query)
        if token == "NOT" or (token == "-" and self.pos + 1 < len(self.tokens)):
            self.take()
            return Not(self.unary())
        if token in ("(", "{"):
            self.take()
            end = ")" if token == "(" else "}"
            inner = self.sequence(end)
            if self.peek() != end:
                raise _bad(f"Missing {end!r} in the query.", self.query)
            self.take()
            if not inner:
                raise _bad("Empty parentheses in the query.", self.query)
            return Or(tuple(inner)) if end == "}" else (_and(inner) or inner[0])
        if token in (")", "}"):
            raise _bad(f"Unbalanced {token!r} in the query.", self.query)
        self.take()
        negate = token.startswith("-") and len(token) > 1
        if negate:
            token = token[1:]
            if token in ("(", "{"):
                self.pos -= 1
                self.tokens[self.pos] = token
                return Not(self.unary())
        match = _OP.match(token)
        if match and not match.group(3) and match.group(2).lower() in OPERATORS and self.peek() in ("(", "{"):
            # Gmail's `subject:(a b)`: the operator applies to every word of the group.
            node = self.under(match.group(2).lower(), self.unary())
        else:
            node = self.term(token)
        return Not(node) if negate else node

    def under(self, op: str, node: Node) -> Node:
        """`node` (a group's tree) with `op` applied to each of its words and phrases."""
        if isinstance(node, Term):
            if node.op == op:  # subject:(a subject:b) says the same twice
                return node
            if node.op is not None:
                raise _bad(
                    f"Inside '{op}:( )' write only words, \"phrases\", OR and -; put '{node.op}:' outside"
                    f" the parentheses, e.g. {op}:(a b) {node.op}:{node.value or 'x'}.",
                    self.query,
                    operator=op,
                )
            return self.operator(op, node.value, quoted=node.quoted)
        if isinstance(node, Not):
            return Not(self.under(op, node.node))
        nodes = tuple(self.under(op, n) for n in node.nodes)
        return And(nodes) if isinstance(node, And) else Or(nodes)

    def term(self, token: str) -> Term:
        match = _OP.match(token)
        if match is None or (match.group(2).lower() not in OPERATORS and not _looks_like_operator(match.group(2))):
            return Term(None, token.strip('"'), quoted=_quoted(token))
        value = match.group(3)
        return self.operator(match.group(2).lower(), value.strip('"'), quoted=_quoted(value))

    def operator(self, op: str, value: str, *, quoted: bool = False) -> Term:
        """The term `op:value`, refused with what to write when `op` or `value` cannot be searched."""
        value = value.strip()
        if op not in OPERATORS:
            raise _bad(
                f"The search operator '{op}:' is not supported here."
                f" Supported: {', '.join(o + ':' for o in OPERATORS)}.",
                self.query,
                operator=op,
            )
        if not value:
            raise _bad(
                f"The operator '{op}:' needs a value: write {op}:word, {op}:\"a phrase\" or {op}:(a b).",
                self.query,
                operator=op,
            )
        if op == "is" and value.lower() not in IS_VALUES:
            raise _bad(
                f"'is:{value}' is not supported here; use is:{', is:'.join(IS_VALUES)}.", self.query, operator="is"
            )
        if op == "has" and value.lower() not in HAS_VALUES:
            raise _bad(f"'has:{value}' is not supported here; use has:attachment.", self.query, operator="has")
        if op in ("after", "before"):
            parse_day(value, self.query)
        if op in ("newer_than", "older_than"):
            relative_seconds(value, self.query)
        if op in ("larger", "smaller"):
            size_bytes(value, self.query)
        return Term(op, value, quoted)


def _quoted(text: str) -> bool:
    return len(text) > 1 and text.startswith('"') and text.endswith('"')


def _looks_like_operator(name: str) -> bool:
    # "http://x" or "10:30" are words; "category:social" is an operator we do not support.
    return name.isalpha() and name.lower() not in ("http", "https", "mailto", "re", "fwd")


def _and(nodes: list[Node]) -> Node | None:
    if not nodes:
        return None
    return nodes[0] if len(nodes) == 1 else And(tuple(nodes))


def parse_query(query: str) -> Node | None:
    """The tree of `query`; None for an empty query (everything)."""
    if len(query) > 2000:
        raise _bad("The query is longer than 2000 characters.", query[:100])
    return _Parser(query).parse()


def parse_day(value: str, query: str = "") -> datetime:
    """`2024/01/15`, `2024-01-15` or epoch seconds, as UTC midnight (or that instant)."""
    text = value.strip()
    if text.isdigit() and len(text) > 8:
        return datetime.fromtimestamp(int(text), tz=UTC)
    try:
        day = date.fromisoformat(text.replace("/", "-"))
    except ValueError:
        parts = text.replace("-", "/").split("/")
        try:
            day = date(int(parts[0]), int(parts[1]), int(parts[2]))
        except (ValueError, IndexError):
            raise _bad(f"'{value}' is not a date; write YYYY/MM/DD.", query, value=value) from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def relative_seconds(value: str, query: str = "") -> float:
    match = _REL.match(value.strip().lower())
    if match is None:
        raise _bad(f"'{value}' is not a relative age; write 7d, 2m or 1y.", query, value=value)
    amount, unit = int(match.group(1)), match.group(2)
    days = {"d": 1, "m": 30, "y": 365}[unit] * amount
    return timedelta(days=days).total_seconds()


def size_bytes(value: str, query: str = "") -> int:
    match = _SIZE.match(value.strip())
    if match is None:
        raise _bad(f"'{value}' is not a size; write 500K or 10M.", query, value=value)
    factor = {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
    return int(match.group(1)) * factor


def mentions_folder(node: Node | None, names: tuple[str, ...]) -> bool:
    """Whether the query names one of `names` with in: or label: (anywhere in the tree)."""
    if node is None:
        return False
    if isinstance(node, Term):
        return node.op in ("in", "label") and node.value.lower() in names
    if isinstance(node, Not):
        return mentions_folder(node.node, names)
    return any(mentions_folder(n, names) for n in node.nodes)


def free_words(node: Node | None) -> list[str]:
    """The positive free-text terms (for snippets)."""
    if node is None or isinstance(node, Not):
        return []
    if isinstance(node, Term):
        return [node.value] if node.op is None else []
    return [w for n in node.nodes for w in free_words(n)]


def split_words(node: Node | None) -> tuple[str, Node | None]:
    """The query's words to rank by meaning (its free-text terms at the top level, a quoted one
    kept in quotes) and the rest, which filters (None: nothing)."""
    terms = node.nodes if isinstance(node, And) else (() if node is None else (node,))
    words = [t for t in terms if isinstance(t, Term) and t.op is None]
    rest = tuple(t for t in terms if not (isinstance(t, Term) and t.op is None))
    text = " ".join(f'"{t.value}"' if t.quoted or " " in t.value else t.value for t in words)
    return text, (And(rest) if len(rest) > 1 else rest[0] if rest else None)
