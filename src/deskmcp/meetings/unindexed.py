"""Searching the meetings a first index has not reached yet, by a scan of their text.

While a big cache's first index runs in the background, the reader sends every meeting's
searchable text before it sends the meetings to index (`worker.search_texts`). A search then
answers from the index for the meetings indexed so far and from a scan of these texts for the
others, so that it considers every meeting long before the index holds them all.

The scan finds the meetings the index would find for the same search text: the text is read
into terms as the index reads it (`split_terms`: words, "quoted phrases", +required, -excluded,
stop words), each term analysed by the index's own analyser (`textindex.analyzer`: lower case,
diacritics folded, English stems), and matched against the meetings' words the same way:

- A field's text is lower-cased (ASCII) or cut into the index's words, lower-cased and folded
  by the index's analyser without its stemmer (any other text), then kept as UTF-8 bytes. A
  word is a run of letters and digits, as the index's tokenizer cuts them.
- A term's stem is looked for as the words beginning with all of the stem but its last letter
  (the English stemmer keeps at least that much of a word, but for dying, lying and tying,
  looked for by their first letter): each distinct such word is analysed by the index's
  analyser, and those whose stem is the term's are the term's words. A phrase matches its words
  in a row, in one field.
- The filters (dates, platform, folder, participants) are those of the index's answers
  (`Filters.admits`).

What differs from the index is the ranking: a scanned meeting's score is an estimate of the
index's bm25 (the field weights, the every-word boost, term frequencies counted here, document
frequencies among the scanned meetings, field lengths from their size), so answers mark
scanned hits `provisional`. Stop words beside other words do not add to a scanned meeting's
score. A word longer than the index keeps (256 bytes) is left in the scanned text, so a phrase
written across such a word could match here and not in the index.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tantivy

from deskmcp.core.dates import iso
from deskmcp.core.search.query import SNIPPET_CLOSE, SNIPPET_OPEN
from deskmcp.core.search.terms import MAX_TOKEN_BYTES, fold, nfc, split_terms
from deskmcp.core.search.textindex import ALL_WORDS_BOOST, analyzer
from deskmcp.meetings.catalog import SCHEMA
from deskmcp.meetings.filters import Filters

FIELDS = len(SCHEMA.text_fields)
WEIGHTS = np.array(SCHEMA.weights, dtype=np.float64)
_SEPARATOR = b"\x00"
"""Between two fields in the scanned bytes: no word or phrase runs across it."""
_WORD = rb"[0-9a-z\x80-\xff]"
_GAP = rb"[^0-9a-z\x80-\xff\x00]+"
_AFTER = rb"(?![0-9a-z\x80-\xff])"
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ_", b"abcdefghijklmnopqrstuvwxyz ")
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]")
_IS_WORD = np.zeros(256, dtype=bool)
_IS_WORD[list(b"0123456789abcdefghijklmnopqrstuvwxyz")] = True
_IS_WORD[0x80:] = True
_SHORTENED = {"die": "d", "lie": "l", "tie": "t"}
"""Stems the English stemmer makes from a word that differs in more than the stem's last
letter (dying, lying, tying): their words are looked for by this prefix."""
K1, B = 1.2, 0.75
"""bm25's parameters, as the index uses them."""
BYTES_PER_WORD = 6.0
"""A field's length in words, estimated from its size."""


def _plain() -> tantivy.TextAnalyzer:
    """The index's analyser without its stemmer: its words, lower-cased and folded."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


class Folding:
    """A field's text as the scan reads it: lower case, and every character that is not a
    letter or digit a space (so `_` too, which the index's tokenizer cuts at); a letter beyond
    ASCII folded as the index's analyser folds it (é -> e), found once per character."""

    def __init__(self) -> None:
        self._plain = _plain()
        self._folded: dict[str, str] = {}

    def __call__(self, text: str) -> bytes:
        if text.isascii():
            return text.encode("ascii").translate(_LOWER)
        lowered = nfc(text.lower())
        for char in set(_BEYOND_ASCII.findall(lowered)):
            folded = self._folded.get(char)
            if folded is None:
                folded = self._folded[char] = "".join(self._plain.analyze(char)) if char.isalnum() else " "
            if folded != char:
                lowered = lowered.replace(char, folded)
        return lowered.encode("utf-8").translate(_LOWER)


@dataclass
class Pending:
    """One meeting not indexed yet: what its answer and the filters need."""

    key: str
    title: str
    participants_text: str
    start_ts: str | None
    platform: str | None
    folders: list[tuple[str, str]]
    participants: list[str]
    has_transcript: bool

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.key,
            "title": self.title,
            "start_ts": self.start_ts,
            "platform": self.platform,
            "participants": self.participants,
            "folders": [name for _, name in self.folders],
            "has_transcript": self.has_transcript,
        }


@dataclass
class ScanHit:
    pending: Pending
    score: float
    at: int


@dataclass
class ScanResult:
    hits: list[ScanHit]
    held: set[str]
    """The terms (as written) that some meeting passing the filters holds."""
    scanned: int
    """How many meetings were scanned."""
    snippet: Callable[[ScanHit], str | None]
    """A hit's snippet (made for the hits shown only)."""


@dataclass
class _Term:
    text: str
    words: list[str]
    sign: str
    stop: bool


@dataclass
class _Query:
    musts: list[_Term] = field(default_factory=list)
    shoulds: list[_Term] = field(default_factory=list)
    stops: list[_Term] = field(default_factory=list)
    nots: list[_Term] = field(default_factory=list)
    named: list[_Term] = field(default_factory=list)


class Unindexed:
    """The meetings of a first index not indexed yet, searchable by a scan. Thread-safe: the
    indexer adds texts and marks meetings indexed while searches scan."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stem = analyzer()
        self._fold = Folding()
        self._items: list[Pending] = []
        self._lengths: list[int] = []
        self._filling = bytearray()
        self._buffer = b""
        self._starts = np.zeros(0, dtype=np.int64)
        self._sizes = np.zeros((0, FIELDS), dtype=np.float64)
        self._alive = np.zeros(0, dtype=bool)
        self._index_of: dict[str, int] = {}
        self._indexed: list[str] = []
        self._stems: dict[bytes, list[str]] = {}
        self.ready = False
        """Every meeting's text has arrived: a scan now covers every meeting not indexed."""
        self.arrived = threading.Event()
        """Set with `ready`."""

    # -- filling --------------------------------------------------------------------------

    def add(self, items: Sequence[Sequence[Any]]) -> None:
        """Meetings' texts as `worker.search_texts` makes them."""
        for key, texts, start_ts, platform, folders, names, has_transcript in items:
            self._index_of[key] = len(self._items)
            self._items.append(
                Pending(
                    key=key,
                    title=texts[0],
                    participants_text=texts[1],
                    start_ts=start_ts,
                    platform=platform,
                    folders=[(str(i), str(n)) for i, n in folders],
                    participants=list(names),
                    has_transcript=bool(has_transcript),
                )
            )
            for text in texts:
                scanned = self._fold(text or "")
                if self._lengths:
                    self._filling += _SEPARATOR
                self._filling += scanned
                self._lengths.append(len(scanned))

    def finish(self) -> None:
        """Every meeting's text has arrived: join them into the bytes a scan reads."""
        lengths = np.array(self._lengths, dtype=np.int64)
        starts = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths):
            starts[1:] = np.cumsum(lengths + len(_SEPARATOR))[:-1]
        buffer = bytes(self._filling)  # searched by patterns: words found come back as bytes
        self._filling = bytearray()
        with self._lock:
            self._buffer = buffer
            self._starts = starts
            self._sizes = lengths.reshape(-1, FIELDS).astype(np.float64) / BYTES_PER_WORD
            self._alive = np.ones(len(self._items), dtype=bool)
            for key in self._indexed:
                self._drop(key)
            self.ready = True
        self.arrived.set()
        self._lengths = []

    def indexed(self, keys: Sequence[str]) -> None:
        """These meetings are searchable in the index now: no longer scanned (kept until every
        text has arrived when they come before)."""
        with self._lock:
            self._indexed.extend(keys)
            if self.ready:
                for key in keys:
                    self._drop(key)

    def _drop(self, key: str) -> None:
        at = self._index_of.get(key)
        if at is not None:
            self._alive[at] = False

    def keys(self) -> list[str]:
        """Every meeting's key, in the order its text came."""
        return [p.key for p in self._items]

    def remaining(self) -> int:
        with self._lock:
            return int(self._alive.sum())

    # -- searching ------------------------------------------------------------------------

    def _query(self, text: str) -> _Query:
        """The terms of a search text, as the index's ranked search reads them."""
        query = _Query()
        seen: set[tuple[str, tuple[str, ...]]] = set()
        stop_named: list[_Term] = []
        for term in split_terms(nfc(text)):
            words = self._stem.analyze(term.body)
            if not words or (term.sign, tuple(words)) in seen:
                continue
            seen.add((term.sign, tuple(words)))
            each = _Term(term.text, words, term.sign, term.stop)
            if term.sign == "-":
                query.nots.append(each)
                continue
            if term.stop:
                query.stops.append(each)
                stop_named.append(each)
            else:
                (query.musts if term.sign == "+" else query.shoulds).append(each)
                query.named.append(each)
        if not query.named:
            query.named = stop_named
        return query

    def _words_of(self, stem: str, buffer: bytes) -> tuple[bytes, list[bytes]]:
        """The prefix every word of `stem` begins with, and the distinct words of the scanned
        text whose stem is `stem` (with, at most, words that only occur inside longer ones:
        the match checks where words begin)."""
        prefix = (_SHORTENED.get(stem) or (stem[:-1] if len(stem) > 1 else stem)).encode("utf-8")
        pattern = re.compile(re.escape(prefix) + _WORD + b"*")
        found: list[bytes] = []
        for word in set(pattern.findall(buffer)):
            stems = self._stems.get(word)
            if stems is None:
                stems = self._stems[word] = self._stem.analyze(word.decode("utf-8", errors="replace"))
            if stems == [stem]:
                found.append(word)
        return prefix, found

    def _pattern(self, term: _Term, buffer: bytes) -> re.Pattern[bytes] | None:
        """The term as a pattern over the scanned text, beginning with a literal (which the
        regular expression engine looks for fast); where a match begins is checked apart
        (`_matches`). None when a word of it occurs nowhere."""
        parts: list[bytes] = []
        for stem in term.words:
            prefix, words = self._words_of(stem, buffer)
            if not words:
                return None
            rest = b"|".join(re.escape(w[len(prefix) :]) for w in sorted(words, key=len, reverse=True))
            parts.append(re.escape(prefix) + b"(?:" + rest + b")")
        return re.compile(_GAP.join(parts) + _AFTER)

    def _matches(
        self, pattern: re.Pattern[bytes] | None, buffer: bytes, begin: int = 0, end: int | None = None
    ) -> np.ndarray:
        """Where the pattern matches at the beginning of a word."""
        if pattern is None:
            return np.zeros(0, dtype=np.int64)
        stop = len(buffer) if end is None else end
        found = np.fromiter((m.start() for m in pattern.finditer(buffer, begin, stop)), dtype=np.int64)
        if not len(found):
            return found
        view = np.frombuffer(buffer, dtype=np.uint8)
        before = np.where(found > 0, view[np.maximum(found - 1, 0)], 0)
        return found[~_IS_WORD[before] | (found == 0)]

    def _counts(self, pattern: re.Pattern[bytes] | None, buffer: bytes, starts: np.ndarray, n: int) -> np.ndarray:
        """How often the pattern occurs in each meeting's each field: an (n, FIELDS) array."""
        positions = self._matches(pattern, buffer)
        slots = np.searchsorted(starts, positions, side="right") - 1
        return np.bincount(slots, minlength=n * FIELDS).reshape(n, FIELDS).astype(np.float64)

    def search(self, text: str, admits: Callable[[Pending], bool]) -> ScanResult:
        """The meetings not indexed yet that the index would find for `text` and that pass
        `admits` (a `Filters.admits`), best estimate first."""
        with self._lock:
            buffer, starts, sizes, items = self._buffer, self._starts, self._sizes, self._items
            alive = self._alive.copy()
        n = len(items)
        query = self._query(text)
        keep = alive & np.fromiter((admits(p) for p in items), dtype=bool, count=n)
        patterns: dict[int, re.Pattern[bytes] | None] = {}
        counts: dict[int, np.ndarray] = {}

        def of(term: _Term) -> np.ndarray:
            if id(term) not in counts:
                patterns[id(term)] = self._pattern(term, buffer)
                counts[id(term)] = self._counts(patterns[id(term)], buffer, starts, n)
            return counts[id(term)]

        def holds(term: _Term) -> np.ndarray:
            return of(term).sum(axis=1) > 0

        match = keep.copy()
        for term in query.musts:
            match &= holds(term)
        if query.shoulds and not query.musts:
            match &= np.logical_or.reduce([holds(t) for t in query.shoulds])
        elif not query.musts and not query.shoulds:
            match &= np.logical_or.reduce([holds(t) for t in query.stops])
        for term in query.nots:
            match &= ~holds(term)
        held = {t.text for t in query.named if (holds(t) & keep).any()}

        scored = query.musts + query.shoulds if query.musts or query.shoulds else query.stops
        scores = np.zeros(n, dtype=np.float64)
        population = max(int(keep.sum()), 1)
        average = np.maximum(sizes[keep].mean(axis=0) if keep.any() else np.ones(FIELDS), 1e-9)
        norm = K1 * (1 - B + B * sizes / average)
        every = np.ones(n, dtype=bool)
        words_score = np.zeros(n, dtype=np.float64)
        for term in scored:
            tf = of(term)
            df = (tf[keep] > 0).sum(axis=0)
            idf = np.log(1 + (population - df + 0.5) / (df + 0.5))
            part = (WEIGHTS * idf * tf * (K1 + 1) / (tf + norm)).sum(axis=1)
            scores += part
            if term in query.shoulds:
                words_score += part
                every &= tf.sum(axis=1) > 0
        if len(query.shoulds) > 1:
            scores += np.where(every, ALL_WORDS_BOOST * words_score, 0.0)
        order = np.flatnonzero(match)
        order = order[np.argsort(-scores[order], kind="stable")]
        hits = [ScanHit(items[i], float(scores[i]), int(i)) for i in order]
        return ScanResult(
            hits=hits,
            held=held,
            scanned=int(alive.sum()),
            snippet=lambda hit: self._snippet(hit.at, scored, patterns, buffer, starts),
        )

    def _snippet(
        self,
        at: int,
        terms: Sequence[_Term],
        patterns: dict[int, re.Pattern[bytes] | None],
        buffer: bytes,
        starts: np.ndarray,
    ) -> str | None:
        """Some words around the first match in the meeting's most weighted field that has
        one, matches marked (from the scanned text: lower case)."""
        for slot in range(at * FIELDS, at * FIELDS + FIELDS):
            begin = int(starts[slot])
            end = int(starts[slot + 1]) - len(_SEPARATOR) if slot + 1 < len(starts) else len(buffer)
            found = [int(x[0]) for t in terms if len(x := self._matches(patterns.get(id(t)), buffer, begin, end))]
            if not found:
                continue
            first = min(found)
            left = max(begin, first - 60)
            right = min(end, first + 120)
            window = buffer[left:right]
            spans = sorted(
                (m.start(), m.end())
                for t in terms
                if (p := patterns.get(id(t))) is not None
                for m in p.finditer(window)
            )
            out: list[str] = []
            cursor = 0
            for start, stop in spans:
                if start < cursor:
                    continue
                out.append(window[cursor:start].decode("utf-8", errors="ignore"))
                out.append(SNIPPET_OPEN + window[start:stop].decode("utf-8", errors="ignore") + SNIPPET_CLOSE)
                cursor = stop
            out.append(window[cursor:].decode("utf-8", errors="ignore"))
            text = "".join(out).replace("\n", " ").strip()
            return ("…" if left > begin else "") + text + ("…" if right < end else "")
        return None


def admits(filters: Filters, stem: tantivy.TextAnalyzer | None = None) -> Callable[[Pending], bool]:
    """Whether a meeting not indexed yet passes `filters`, as `Filters.sql` decides it over the
    index: its start within the dates, its platform, its folder (by id or name, case aside),
    and a participant's words, the last one as a prefix (`TextIndex.any_prefix`)."""
    stem = stem or analyzer()
    plain = _plain()
    start, end = iso(filters.start), iso(filters.end)
    folder = filters.folder
    folded = fold(folder) if folder else None
    prefixes: list[tuple[list[str], list[str]]] = []
    for value in filters.participants:
        words = plain.analyze(nfc(" ".join(w for w in re.split(r"\W+", value) if w)))
        if words:
            head = stem.analyze(" ".join(words[:-1])) if len(words) > 1 else []
            prefixes.append((head, list(dict.fromkeys([words[-1], *stem.analyze(words[-1])]))))

    def named(pending: Pending) -> bool:
        tokens = stem.analyze(nfc(pending.participants_text))
        for head, lasts in prefixes:
            for i in range(len(tokens) - len(head)):
                if tokens[i : i + len(head)] == head and any(tokens[i + len(head)].startswith(x) for x in lasts):
                    return True
        return False

    def check(pending: Pending) -> bool:
        if start is not None and (pending.start_ts is None or pending.start_ts < start):
            return False
        if end is not None and (pending.start_ts is None or pending.start_ts >= end):
            return False
        if filters.platform and pending.platform != filters.platform:
            return False
        if folder and not any(i == folder or fold(n) == folded for i, n in pending.folders):
            return False
        return named(pending) if filters.participants else True

    return check
