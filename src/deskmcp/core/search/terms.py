"""How a person's search text becomes terms: words, "quoted phrases", +required, -excluded, stop words.

Nothing here is syntax a query parser sees: the text is cut at whitespace and quotes, and the
text index analyses each term into words. Unquoted text is words, each a term of its own
("look-and-feel" is three); a "quoted phrase" is one term, matching as a phrase. A term written
`+word` or `+"a phrase"` must match; `-word` or `-"a phrase"` must not (`-e-mail`: the phrase).
A term whose words are all stop words (the, what, did...) only adds to the score: it is never
needed for a record to match, unless it is written `+the` or quoted, or the text holds nothing
else.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal


def nfc(text: str) -> str:
    """`text` in Unicode's composed form (NFC): `é` one character, as most systems write it.
    Names made on macOS and text copied from some documents decompose it (`e` and a combining
    accent), which would not match a word typed the usual way; both are indexed and searched
    composed. (Checked first: text already composed, as nearly all is, is returned as it is.)"""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def fold(text: str) -> str:
    """How names, tags and filter values are compared: lower case and composed (`nfc`), so
    `Café` written with a combining accent (as macOS may name a file) is `café`."""
    return nfc(text.lower())


_TERM = re.compile(r'([+-]?)"([^"]*)"|(\S+)')
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_STOP_WORDS = """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just let may me might more most must my myself no nor not of off on once only or other our ours
    ourselves out over own same shall she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon us very was we
    were what when where which while who whom whose why will with would yet you your yours yourself
    yourselves
    s t d ll m re ve don didn doesn isn wasn weren aren hasn haven hadn won wouldn couldn shouldn
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""English function words, and the pieces of contractions (what's, didn't) once cut at the apostrophe."""

MAX_TOKEN_BYTES = 256
"""Longer words (in UTF-8 bytes: 85 CJK characters, a long URL path) are not indexed."""

Sign = Literal["", "+", "-"]


@dataclass(frozen=True)
class Term:
    """One term of the search text."""

    text: str
    """The term as written, without its sign (a phrase keeps its quotes): how answers name it."""
    body: str
    """The text the index analyses into words."""
    sign: Sign
    quoted: bool

    @property
    def stop(self) -> bool:
        """Every word of an unquoted, unsigned term is a stop word: it ranks, but is never needed."""
        if self.quoted or self.sign:
            return False
        words = _WORD.findall(self.body.casefold())
        return bool(words) and all(w in STOP_WORDS for w in words)


def split_terms(text: str) -> list[Term]:
    """The terms of `text` that hold a letter or digit, in the order written."""
    terms: list[Term] = []
    for match in _TERM.finditer(text):
        sign: Sign
        if match.group(3) is None:
            body = match.group(2)
            sign = "+" if match.group(1) == "+" else "-" if match.group(1) == "-" else ""
            term = Term(f'"{body}"', body, sign, quoted=True)
        else:
            chunk = match.group(3)
            if len(chunk) > 1 and chunk[0] in "+-" and _WORD.search(chunk[1:]):
                sign = "+" if chunk[0] == "+" else "-"
                term = Term(chunk[1:], chunk[1:].strip('"'), sign, quoted=False)
            else:  # each word alone: "remote's" is the word remote (and a stop word)
                terms.extend(Term(word, word, "", quoted=False) for word in _WORD.findall(chunk))
                continue
        if _WORD.search(term.body):
            terms.append(term)
    return terms
