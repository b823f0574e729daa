"""Snippets: the passage of a record's text that shows a search's matches, the matches marked.

The text index ranks; this module cuts. For each record, the fields are tried in the schema's
order; a field where no query word can occur is skipped, and a long one (a transcript) is cut to
a window around the first place one can before tantivy's snippet generator analyses it, so a
snippet costs the same for 2 KB or 2 MB.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from deskmcp.core.search.terms import MAX_TOKEN_BYTES

if TYPE_CHECKING:
    import tantivy

WINDOW = 2000
"""Characters of a long field analysed for its snippet, around the first possible match."""


FAST_SNIPPET = 400
"""ASCII texts longer than this are cut into the snippet generator's fragments here, and only
those where a query word can begin are analysed."""


def cut(
    generator_for: Callable[[str], tantivy.SnippetGenerator],
    analyze: Callable[[str], list[str]],
    fields: Sequence[str],
    texts: Mapping[int, Sequence[str]],
    width: int,
    marks: tuple[str, str],
    words: Sequence[str] = (),
) -> dict[int, str]:
    """One snippet per record: the field passage with the most matches, matches marked.
    Fields are tried in the schema's order, and the first passage showing as many matches as
    the query has words is taken.

    A field where none of `words` can occur is skipped, and a long field (a transcript) is
    cut to a window around the first place one of them occurs before it is analysed, so a
    snippet costs the same for 2 KB or 2 MB. A word the analyser folds (`café` for `cafe`)
    is looked for by analysing only the field's non-ASCII words."""
    # A stem is a prefix of its word save for a letter or two ("compani" <- "company").
    stems = sorted({w[: max(3, len(w) - 2)].lower() for w in words})
    prefixes = sorted({p for w in words for p in _prefixes(w.lower())})
    generators: dict[str, tantivy.SnippetGenerator] = {}  # made for the fields a snippet is tried in
    analysed = set(words)
    wanted = max(1, len(analysed))
    folded: dict[str, bool] = {}  # a non-ASCII run: whether it analyses into a query word
    out: dict[int, str] = {}
    for doc_id, values in texts.items():
        best: tuple[int, int, str] | None = None
        for name, text in zip(fields, values, strict=True):
            if not text:
                continue
            head = 0
            piece = text
            found = _word_start(text, stems) if stems else -1
            if found < 0 and stems and not text.isascii():
                found = _folded_word_start(analyze, text, analysed, folded)
            if found < 0 and stems:
                continue  # none of the words can be in this field
            if found >= 0 and len(text) > 2 * WINDOW:
                head = max(0, found - WINDOW // 2)
                piece = text[head : found + WINDOW]
            generator = generators.get(name)
            if generator is None:
                generator = generators[name] = generator_for(name)
            fragment, ranges, start, end = _best_fragment(generator, name, piece, prefixes, width)
            if not fragment:
                continue
            rendered = _mark(fragment, ranges, marks)
            if head > 0 or start > 0:
                rendered = "…" + rendered
            if head + len(piece) < len(text) or end < len(piece.encode()):
                rendered += "…"
            candidate = (len(ranges), len(fragment), rendered)
            if best is None or candidate[:2] > best[:2]:
                best = candidate
            if len(ranges) >= wanted:
                break  # every word is shown: a later (lighter) field cannot do better
        if best is None:
            first = next((t for t in values if t), "")
            best = (0, 0, first[:width] + ("…" if len(first) > width else ""))
        out[doc_id] = best[2]
    return out


def _folded_word_start(analyze: Callable[[str], list[str]], text: str, words: set[str], memo: dict[str, bool]) -> int:
    """Where in `text` the first run of non-blank characters holding a non-ASCII one begins
    whose analysed words include one of `words`, or -1. Runs end at ASCII blanks, where the
    analyser splits words too, so each run is analysed as the field's analysis would see it."""
    at = 0
    while (hit := _NON_ASCII.search(text, at)) is not None:
        start = _run_start(text, hit.start())
        run = _RUN.match(text, start)
        assert run is not None  # `_RUN` matches the empty string too
        chars = run.group()
        matches = memo.get(chars)
        if matches is None:
            matches = memo[chars] = not words.isdisjoint(analyze(chars))
        if matches:
            return start
        at = max(run.end(), hit.end())
    return -1


def _prefixes(word: str) -> tuple[str, ...]:
    """How every word the analyser turns into `word` (a stem) begins: the stem but its last two
    letters, which the English stemmer may have rewritten ("possibility" -> "possibl", "using"
    -> "use"), and for its three irregular words the spelling they have ("dying" -> "die")."""
    head = word[: max(2, len(word) - 2)]
    return (head, word[0] + "y") if word in _IRREGULAR else (head,)


_IRREGULAR = frozenset({"die", "lie", "tie"})


def _best_fragment(
    generator: tantivy.SnippetGenerator, field: str, piece: str, prefixes: Sequence[str], width: int
) -> tuple[str, list[tuple[int, int]], int, int]:
    """The snippet generator's best fragment of `piece`: its text, its matches (UTF-8 offsets in
    it) and where it lies in `piece` (UTF-8 offsets); an empty text when nothing matches.

    The generator cuts the text into fragments of at most `width` characters from the start,
    a word at a time, and keeps the one whose matches score highest (the first of equals).
    For a long ASCII piece those fragments are found here, and only the ones where a query
    word can begin are given to the generator, each after a gap it cannot bridge: it cuts
    them as it would have, scores them alike and picks the same one, having analysed a few
    hundred characters rather than thousands. (A query word can begin where one of `prefixes`
    begins a word.)"""
    import tantivy as tv

    parts: list[tuple[int, int]] | None = None
    if prefixes and len(piece) > FAST_SNIPPET and piece.isascii():
        parts = _fragments(piece, width)
    if parts is None:
        snippet = generator.snippet_from_doc(tv.Document(**{field: piece}))
        where = snippet.fragment_range()
        return snippet.fragment(), [(r.start, r.end) for r in snippet.highlighted()], where.start, where.end
    starts = _word_starts(piece.lower(), prefixes)
    kept: list[tuple[int, int]] = []
    i = 0
    for first, stop in parts:
        while i < len(starts) and starts[i] < first:
            i += 1
        if i < len(starts) and starts[i] < stop:
            kept.append((first, stop))
    if not kept:
        return "", [], 0, 0
    gap = " " * (width + 1)
    snippet = generator.snippet_from_doc(tv.Document(**{field: gap.join(piece[a:b] for a, b in kept)}))
    fragment = snippet.fragment()
    if not fragment:
        return "", [], 0, 0
    where = snippet.fragment_range()
    at = 0
    for first, stop in kept:  # back from the joined text to the piece
        if where.start < at + stop - first:
            start = first + where.start - at
            break
        at += stop - first + len(gap)
    else:  # pragma: no cover - the fragment is one of the parts joined
        raise AssertionError("the snippet's fragment lies in none of the parts given")
    return fragment, [(r.start, r.end) for r in snippet.highlighted()], start, start + where.end - where.start


def _fragments(piece: str, width: int) -> list[tuple[int, int]] | None:
    """(start, stop) of each fragment the snippet generator cuts the ASCII `piece` into: the
    first starts at 0, each next one at the first word that would take the current one past
    `width` characters, and each stops where its last word ends (its words being the runs of
    letters and digits). None when a word is longer than `width` (or than the analyser keeps)."""
    if width >= MAX_TOKEN_BYTES:
        return None
    n = len(piece)
    parts: list[tuple[int, int]] = []
    start = 0
    while True:
        limit = start + width
        if limit >= n:
            stop = n
            while stop > start and not piece[stop - 1].isalnum():
                stop -= 1
            parts.append((start, stop))
            return parts
        cut = limit
        if piece[cut].isalnum() and piece[cut - 1].isalnum():  # a word across the limit starts the next one
            while cut > start and piece[cut - 1].isalnum():
                cut -= 1
            if cut == start:  # the fragment's first word alone is longer
                return None
            following = cut
        else:
            following = cut
            while following < n and not piece[following].isalnum():
                following += 1
        stop = cut
        while stop > start and not piece[stop - 1].isalnum():
            stop -= 1
        parts.append((start, stop))
        if following >= n:
            return parts
        start = following


def _word_starts(lowered: str, stems: Sequence[str]) -> list[int]:
    """Every place in `lowered` where one of `stems` begins a word, in order."""
    found: set[int] = set()
    for stem in stems:
        at = lowered.find(stem)
        while at >= 0:
            if not _in_word(lowered, at):
                found.add(at)
            at = lowered.find(stem, at + 1)
    return sorted(found)


def _run_start(text: str, at: int) -> int:
    """Where the run of non-blank characters holding `text[at]` begins (looking back a little
    further each time, so a text with many non-ASCII characters is not read back to its start
    for each of them)."""
    low, step = at, 64
    while True:
        low = max(0, low - step)
        blank = max(text.rfind(c, low, at) for c in _BLANKS)
        if blank >= 0 or low == 0:
            return blank + 1
        step *= 2


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


_BLANKS = " \t\n\r\x0b\x0c"


_RUN = re.compile(r"[^ \t\n\r\x0b\x0c]*")


def _word_start(text: str, stems: Sequence[str]) -> int:
    """Where in `text` one of `stems` (lower-case) first begins a word, in any case, or -1.

    A non-ASCII text is searched as UTF-8 with its ASCII letters lower-cased, several times
    faster than lower-casing it as text; ASCII stems are found there just the same (a word
    whose non-ASCII letters fold to them is for the analyser to find)."""
    if text.isascii() or not all(stem.isascii() for stem in stems):
        return _first_word_start(text.lower(), stems)
    data = text.encode("utf-8", "surrogatepass").lower()
    at = _first_word_start(data, [stem.encode() for stem in stems])
    return at if at <= 0 else len(data[:at].decode("utf-8", "surrogatepass"))


def _first_word_start(lowered: str | bytes, stems: Sequence[str] | Sequence[bytes]) -> int:
    """Where in `lowered` (a lower-cased text) one of `stems` first begins a word, or -1.
    (`str.find`, then a look at the character before: many times faster than a case-blind
    regex's `\\b` over a long transcript.)"""
    best = -1
    for stem in stems:
        at = lowered.find(stem)  # pyright: ignore[reportArgumentType]
        while at >= 0 and (best < 0 or at < best):
            if not _in_word(lowered, at):
                best = at
                break
            at = lowered.find(stem, at + 1)  # pyright: ignore[reportArgumentType]
    return best


def _in_word(lowered: str | bytes, at: int) -> bool:
    """Whether the character before `at` is a letter or a digit (in text or UTF-8): the analyser
    splits words at anything else, `_` included."""
    if not at:
        return False
    if isinstance(lowered, str):
        before = lowered[at - 1]
    else:
        start = at - 1
        while start > 0 and 0x80 <= lowered[start] < 0xC0:  # back to the character's first byte
            start -= 1
        before = lowered[start:at].decode("utf-8", "surrogatepass")
    return before.isalnum()


def _mark(fragment: str, ranges: Sequence[tuple[int, int]], marks: tuple[str, str]) -> str:
    """Wrap each highlighted range (UTF-8 byte offsets, as tantivy reports them) in `marks`."""
    raw = fragment.encode()
    parts: list[str] = []
    at = 0
    for start, end in sorted(ranges):
        if start < at:
            continue
        parts.append(raw[at:start].decode(errors="replace"))
        parts.append(marks[0] + raw[start:end].decode(errors="replace") + marks[1])
        at = end
    parts.append(raw[at:].decode(errors="replace"))
    return "".join(parts)
