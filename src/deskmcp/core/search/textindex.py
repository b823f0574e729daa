"""The text side of a `SearchIndex`: a tantivy index that ranks the top k without scoring every match.

It holds no truth of its own. SQLite keeps the records, their texts and a generation counter;
this index is derived from them, stamped with the generation it reflects, and rebuilt from
SQLite whenever the stamp differs (a crash between the two commits) or it cannot be opened.

Writes are added to a long-lived writer and committed lazily: before the next read, or when
the index is closed. A bulk load of many batches therefore pays for one commit, and a crash
before that commit only means a rebuild from SQLite on the next open.

Queries are built from analysed terms (`Query.term_query`, `Query.phrase_query`), never by
handing the user's text to tantivy's query parser, so no character is ever syntax.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import re
import shutil
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from deskmcp.core.errors import BadRequest, IOFailure
from deskmcp.core.files import PRIVATE_FILE, private_files, private_folder
from deskmcp.core.search import snippets
from deskmcp.core.search.terms import MAX_TOKEN_BYTES, nfc, split_terms

if TYPE_CHECKING:
    import tantivy

log = logging.getLogger(__name__)


ENGINE = "tantivy-2"
"""Bumped when the analyser or the field layout changes: every text index is rebuilt."""

ID = "__id"
STAMP = "__stamp"
TOKENIZER = "deskmcp_en"
STAMP_ID = 0
"""The record id of the document carrying the stamp; SQLite ids start at 1."""
WRITER_HEAP = 96_000_000
LOCK_WAIT = 30.0
"""Seconds a write waits for another process's writer before giving up."""
IDLE_RELEASE = 3.0
"""Seconds without writes after which queued writes are committed (reads commit them at
once) and the writer is let go for other processes."""
WANTED = "writer.wanted"
"""A file in the index folder that a process waiting for the writer touches: the process holding
it commits and lets it go at once rather than after IDLE_RELEASE (two replicas serving the same
user's index would otherwise wait seconds per write, and one writing steadily would keep it)."""
WANTED_FRESH = 2.0
"""Seconds a touch of WANTED counts (a waiter touches it again every few tens of milliseconds;
an older touch was left by one that has gone)."""
WANTED_POLL = 0.1
"""How often a held writer looks for a waiter."""
DEFERRED_COMMIT = 2.0
"""Seconds that writes queued as deferrable (a bulk load) may wait for a commit: a search
during the load then sees what was committed up to that long ago, instead of committing a
small segment of its own that merges would have to rewrite."""
QUERY_MEMO = 64
"""Parsed search texts kept for reuse: a search, its total and its unmatched terms parse the same text."""
COUNT_MEMO = 8
"""Totals of recent ranked searches kept, each for the searcher that counted it (and as many
searches' best matches)."""
SHOWN_TRIED = 3
"""Best matches of a recent search tried, each alone, before counting whether a term of it
matches anything (see `holds`)."""
RUN = 16
"""Consecutive ids from this many on are matched as a range rather than one term each."""
ALL_WORDS_BOOST = 1.0
"""A ranked search adds this times the bm25 of its words (stop words aside) to a record holding
every one of them: with 1.0 such a record scores twice."""
TERM = re.compile(r'"([^"]*)"|(\S+)')
WORD = re.compile(r"\w", re.UNICODE)


def analyzer() -> tantivy.TextAnalyzer:
    """Words split on anything that is not a letter or digit, lower-cased, diacritics folded
    (é -> e), English-stemmed (meetings -> meet), words over MAX_TOKEN_BYTES dropped."""
    import tantivy as tv

    return (
        tv.TextAnalyzerBuilder(tv.Tokenizer.simple())
        .filter(tv.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(tv.Filter.lowercase())
        .filter(tv.Filter.ascii_fold())
        .filter(tv.Filter.stemmer("english"))
        .build()
    )


def _folder() -> tantivy.TextAnalyzer:
    import tantivy as tv

    return (
        tv.TextAnalyzerBuilder(tv.Tokenizer.simple())
        .filter(tv.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(tv.Filter.lowercase())
        .filter(tv.Filter.ascii_fold())
        .build()
    )


class TextIndex:
    """A tantivy index over `fields` (weighted), keyed by the SQLite record id."""

    def __init__(self, folder: Path, fields: Sequence[str], weights: Sequence[float]) -> None:
        import tantivy as tv

        self._tv = tv
        self.folder = folder
        self.fields = tuple(fields)
        self.weights = tuple(weights) if weights else tuple(1.0 for _ in fields)
        self._analyzer = analyzer()
        self._plain = _folder()
        builder = tv.SchemaBuilder()
        builder.add_unsigned_field(ID, indexed=True, fast=True)
        builder.add_text_field(STAMP, stored=True, tokenizer_name="raw")
        for name in self.fields:
            builder.add_text_field(name, tokenizer_name=TOKENIZER)
        self.schema = builder.build()
        self._lock = threading.RLock()
        self._writer: tantivy.IndexWriter | None = None
        self._pending = False
        self._urgent = False
        """Something queued must be searchable by the next read (not only deferrable writes)."""
        self._committed_at = time.monotonic()
        self._pending_stamp: str | None = None
        self._timer: threading.Timer | None = None
        self._release_at = 0.0
        self._reloaded_for: str | None = None
        self._memo_lock = threading.Lock()
        self._queries: dict[tuple[str, bool], UserQuery] = {}
        self._counts: list[tuple[tantivy.Searcher, tantivy.Query, int]] = []
        self._shown: list[tuple[tantivy.Searcher, tantivy.Query, list[tantivy.DocAddress]]] = []
        self.index = self._open()
        self._searcher = self.index.searcher()

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> tantivy.Index:
        tv = self._tv
        private_folder(self.folder)
        try:
            index = tv.Index(self.schema, path=str(self.folder), reuse=True)
        except ValueError as exc:  # a schema that differs, or files tantivy cannot read
            log.warning("text index %s is unreadable (%s); recreating it", self.folder, exc)
            shutil.rmtree(self.folder, ignore_errors=True)
            private_folder(self.folder)
            index = tv.Index(self.schema, path=str(self.folder), reuse=False)
        private_files(self.folder)
        index.register_tokenizer(TOKENIZER, self._analyzer)
        index.config_reader("manual")
        return index

    def empty(self) -> bool:
        """Whether the index holds no document at all (not even a stamp)."""
        return self._searcher.num_docs == 0

    def stamp(self) -> str | None:
        """The generation this index reflects (None when it has never been committed)."""
        tv = self._tv
        try:
            result = self._searcher.search(tv.Query.term_query(self.schema, ID, STAMP_ID), 1)
            if not result.hits:
                return None
            value = self._searcher.doc(result.hits[0][1]).get_first(STAMP)
        except ValueError as exc:
            log.warning("text index %s cannot be read (%s)", self.folder, exc)
            return None
        return value if isinstance(value, str) else None

    def reset(self) -> None:
        """Throw an index that cannot be written away and start an empty one."""
        with self._lock:
            self._release()
            shutil.rmtree(self.folder, ignore_errors=True)
            self.index = self._open()
            self._searcher = self.index.searcher()

    def close(self) -> None:
        with self._lock:
            try:
                self.commit()
                self._settle()
            except (ValueError, OSError) as exc:  # a full disk: the next open finds the stamp behind and rebuilds
                log.warning("text index %s: commit on close failed (%s)", self.folder, exc)
            finally:
                self._release()

    def discard(self) -> None:
        """Drop the queued writes and the writer after a commit failed (a full disk): the stamp
        stays behind the records', so the index is rebuilt from them."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        """Drop the writer (and with it the lock other processes wait for); queued writes are lost."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        writer, self._writer = self._writer, None
        self._pending = False
        if writer is not None:
            with contextlib.suppress(ValueError):  # nothing to roll back
                writer.rollback()
            del writer

    # -- writing ---------------------------------------------------------------------------

    def begin(self) -> None:
        """Take the writer before the records change, waiting while another process holds it.

        Records and text are then committed in the same order in every process."""
        deadline = time.monotonic() + LOCK_WAIT
        delay = 0.01
        while True:
            with self._lock:
                if self._timer is not None:  # no idle release while a change is under way
                    self._timer.cancel()
                    self._timer = None
                if self._writer is not None:
                    return
                try:
                    self._writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=2)
                except ValueError as exc:
                    if "LockBusy" not in str(exc) or time.monotonic() > deadline:
                        raise IOFailure(
                            f"The search index {self.folder} stayed locked by another process for"
                            f" {LOCK_WAIT:.0f} s; try again, or stop the other deskmcp using it.",
                            {"index": str(self.folder)},
                        ) from exc
                    self._ask()
                else:
                    with contextlib.suppress(OSError):
                        (self.folder / WANTED).unlink()
                    self.index.reload()  # what another process committed before we took the lock
                    self._searcher = self.index.searcher()
                    return
            time.sleep(delay)
            delay = min(delay * 2, WANTED_POLL / 2)

    def _ask(self) -> None:
        """Tell the process holding the writer that this one waits for it (see WANTED)."""
        with contextlib.suppress(OSError):
            (self.folder / WANTED).touch(mode=PRIVATE_FILE)

    def _wanted(self) -> bool:
        """Whether another process waits for the writer this one holds."""
        try:
            age = time.time() - (self.folder / WANTED).stat().st_mtime
        except OSError:
            return False
        return age < WANTED_FRESH

    def end(self) -> None:
        """After a change: the writer stays for the next batch; once writes pause it commits,
        lets its merges finish and goes, so another process can write."""
        with self._lock:
            self._arm()

    def _arm(self) -> None:
        """Let the writer go once writes pause for IDLE_RELEASE, or as soon as another process
        waits for it."""
        if self._timer is not None:
            self._timer.cancel()
        self._release_at = time.monotonic() + IDLE_RELEASE
        self._watch_later(0.0 if self._wanted() else WANTED_POLL)

    def _watch_later(self, delay: float) -> None:
        self._timer = threading.Timer(min(delay, max(0.0, self._release_at - time.monotonic())), self._watch)
        self._timer.daemon = True
        self._timer.start()

    def _watch(self) -> None:
        with self._lock:
            if self._timer is not threading.current_thread():  # cancelled meanwhile: a change began
                return
            if self._writer is not None and time.monotonic() < self._release_at and not self._wanted():
                self._watch_later(WANTED_POLL)
                return
            self._idle()

    def settle(self) -> None:
        """Commit now, let the merges finish and drop the writer (its memory goes back to the
        system): after a bulk write, rather than once writes have paused for IDLE_RELEASE."""
        self._idle()

    def _idle(self) -> None:
        with self._lock:
            try:
                self.commit()
                self._settle()
            except (ValueError, OSError) as exc:  # the next open finds the stamp behind and rebuilds
                log.warning("text index %s: commit failed (%s)", self.folder, exc)
                self._release()

    def _settle(self) -> None:
        """Let the writer's segment merges finish, then drop it (and its lock)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.wait_merging_threads()
            del writer
            self.index.reload()
            self._searcher = self.index.searcher()
            _trim()

    def write(
        self,
        deletes: Iterable[int],
        adds: Iterable[tuple[int, Sequence[str]]],
        stamp: str,
        *,
        deferred: bool = False,
    ) -> None:
        """Queue deletes (by record id) then additions; visible after the next `commit`, which
        the next read makes at once unless every queued write is `deferred` (then it commits
        once DEFERRED_COMMIT seconds have passed since the last commit)."""
        tv = self._tv
        with self._lock:
            if self._writer is None:
                self.begin()
            writer = self._writer
            assert writer is not None
            gone = list(deletes)
            if gone:  # by query: tantivy's delete by term does not match an unsigned field from Python
                writer.delete_documents_by_query(tv.Query.term_set_query(self.schema, ID, gone))
            for doc_id, texts in adds:
                doc = tv.Document()
                doc.add_unsigned(ID, doc_id)
                for name, text in zip(self.fields, texts, strict=True):
                    if text:
                        doc.add_text(name, text)
                writer.add_document(doc)
            self._pending = True
            self._urgent = self._urgent or not deferred
            self._pending_stamp = stamp

    def clear(self, stamp: str) -> None:
        with self._lock:
            if self._writer is None:
                self.begin()
            assert self._writer is not None
            if self._pending:  # queued additions would survive delete_all_documents
                self._writer.rollback()
            self._writer.delete_all_documents()
            self._pending = True
            self._urgent = True
            self._pending_stamp = stamp

    def commit(self) -> None:
        """Make queued writes searchable, stamped with the generation they reflect, and let
        the writer go."""
        tv = self._tv
        with self._lock:
            if not self._pending or self._writer is None:
                return
            writer = self._writer
            writer.delete_documents_by_query(tv.Query.term_query(self.schema, ID, STAMP_ID))
            doc = tv.Document()
            doc.add_unsigned(ID, STAMP_ID)
            doc.add_text(STAMP, self._pending_stamp or "")
            writer.add_document(doc)
            writer.commit()
            self._pending = self._urgent = False
            self._committed_at = time.monotonic()
            self.index.reload()
            self._searcher = self.index.searcher()
            self._arm()

    def refresh(self, expected: str) -> None:
        """Pick up what another process committed when the records say the text moved on."""
        if self._pending or expected == self._reloaded_for:
            return
        with self._lock:
            if self._pending:
                return
            self.index.reload()
            self._searcher = self.index.searcher()
            self._reloaded_for = expected

    @property
    def pending(self) -> bool:
        return self._pending

    # -- queries ---------------------------------------------------------------------------

    def searcher(self) -> tantivy.Searcher:
        if self._pending and (self._urgent or time.monotonic() - self._committed_at >= DEFERRED_COMMIT):
            self.commit()
        return self._searcher

    def parse(self, text: str, field: str | None = None) -> tantivy.Query:
        """Every term (or "quoted phrase") of the user's text must match in some field (in
        `field` alone when given).

        The text is only ever analysed into words: operators, field names, stars and stray
        quotes are searched as the words they contain.
        """
        tv = self._tv
        musts: list[tuple[tantivy.Occur, tantivy.Query]] = []
        saw_word = False
        for match in TERM.finditer(nfc(text)):
            chunk = match.group(1) if match.group(1) is not None else match.group(2)
            if not WORD.search(chunk):
                continue
            saw_word = True
            words = self._analyzer.analyze(chunk)
            if not words:
                continue
            musts.append((tv.Occur.Must, self._any_field(words, field)))
        if not saw_word:
            raise BadRequest(f"The search query {text!r} has no words to search for.", {"query": text})
        if not musts:
            return tv.Query.empty_query()
        return musts[0][1] if len(musts) == 1 else tv.Query.boolean_query(musts)

    def user_query(self, text: str, *, every: bool = False) -> UserQuery:
        """The query for a person's search text (see `_user_query`), parsed once for the last
        QUERY_MEMO texts (tantivy queries are immutable, so one can serve every reader)."""
        key = (text, every)
        found = self._queries.get(key)
        if found is not None:
            return found
        asked = self._user_query(text, every=every)
        with self._memo_lock:
            if len(self._queries) >= QUERY_MEMO:
                del self._queries[next(iter(self._queries))]
            self._queries[key] = asked
        return asked

    def _user_query(self, text: str, *, every: bool = False) -> UserQuery:
        """The query for a person's search text (see `index_terms`).

        Ranked (the default): records holding any of its words match (a stop word alone is not
        enough), best bm25 first; those holding every word but the stop words score more. `every`
        (a filter, as a listing uses): each word but the stop words must match. Either way
        `+word` must and `-word` must not match, and a "quoted phrase" matches as a phrase only."""
        tv = self._tv
        musts: list[tantivy.Query] = []
        shoulds: list[tantivy.Query] = []
        stops: list[tantivy.Query] = []
        nots: list[tantivy.Query] = []
        named: list[tuple[str, tantivy.Query]] = []
        stop_named: list[tuple[str, tantivy.Query]] = []
        words_of: dict[bool, list[str]] = {True: [], False: []}
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for term in split_terms(nfc(text)):
            words = self._analyzer.analyze(term.body)
            if not words or (term.sign, tuple(words)) in seen:
                continue  # only overlong words, or a term written twice
            seen.add((term.sign, tuple(words)))
            query = self._any_field(words)
            if term.sign == "-":
                nots.append(query)
                continue
            if term.stop:
                stops.append(query)
            else:
                (musts if term.sign == "+" or every else shoulds).append(query)
            (stop_named if term.stop else named).append((term.text, query))
            words_of[term.stop].extend(words)
        if not (musts or shoulds or stops):
            if nots:
                raise BadRequest(
                    f"The search query {text!r} only excludes words: add a word to search for.", {"query": text}
                )
            raise BadRequest(f"The search query {text!r} has no words to search for.", {"query": text})
        if not named:  # only stop words: they are what was asked for
            named, words_of[False] = stop_named, words_of[True]
            if every:
                musts, stops = stops, []
        clauses = [(tv.Occur.Must, q) for q in musts]
        if shoulds and not musts:  # at least one word that is not a stop word must match
            clauses.append((tv.Occur.Must, shoulds[0] if len(shoulds) == 1 else _any_of(tv, shoulds)))
        else:
            clauses.extend((tv.Occur.Should, q) for q in shoulds)
        if len(shoulds) > 1:
            every_word = tv.Query.boolean_query([(tv.Occur.Must, q) for q in shoulds])
            clauses.append((tv.Occur.Should, tv.Query.boost_query(every_word, ALL_WORDS_BOOST)))
        clauses.extend((tv.Occur.Should, q) for q in stops)
        clauses.extend((tv.Occur.MustNot, q) for q in nots)
        single = len(clauses) == 1 and clauses[0][0] != tv.Occur.MustNot
        marked = [q for _, q in named]
        return UserQuery(
            query=clauses[0][1] if single else tv.Query.boolean_query(clauses),
            marked=marked[0] if len(marked) == 1 else _any_of(tv, marked),
            words=words_of[False],
            terms=named,
        )

    def _any_field(self, words: list[str], field: str | None = None) -> tantivy.Query:
        tv = self._tv
        if field is not None and field not in self.fields:
            raise ValueError(f"unknown text field {field!r}")
        shoulds: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for name, weight in zip(self.fields, self.weights, strict=True):
            if field is not None and name != field:
                continue
            if len(words) == 1:
                query = tv.Query.term_query(self.schema, name, words[0])
            else:
                query = tv.Query.phrase_query(self.schema, name, list(words))
            if weight != 1.0:
                query = tv.Query.boost_query(query, float(weight))
            shoulds.append((tv.Occur.Should, query))
        return shoulds[0][1] if len(shoulds) == 1 else tv.Query.boolean_query(shoulds)

    def any_prefix(self, field: str, values: Sequence[str]) -> tantivy.Query:
        """Records whose `field` holds any of `values` as words, the last one as a prefix
        ("ali" finds Alice, "bob st" finds Bob Stone)."""
        tv = self._tv
        if field not in self.fields:
            raise ValueError(f"unknown text field {field!r}")
        shoulds: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for value in values:
            plain = self._plain.analyze(nfc(value))
            if not plain:
                continue
            stemmed = self._analyzer.analyze(" ".join(plain[:-1])) if len(plain) > 1 else []
            # The index holds stemmed words: a whole last word ("alice") is matched by its
            # stem ("alic"), a partial one ("ali") as typed.
            for last in dict.fromkeys([plain[-1], *self._analyzer.analyze(plain[-1])]):
                shoulds.append((tv.Occur.Should, tv.Query.phrase_prefix_query(self.schema, field, [*stemmed, last])))
        if not shoulds:
            return tv.Query.empty_query()
        return tv.Query.boolean_query(shoulds)

    def restrict(self, query: tantivy.Query, runs: Sequence[tuple[int, int]]) -> tantivy.Query:
        """`query` limited to the records whose ids lie in `runs` (inclusive, from a filter
        SQLite resolved), still ranked top-k.

        Long runs (records indexed together: a folder, a batch) become range queries over
        the id column, which cost far less than one term per record."""
        tv = self._tv
        ranges = [(a, b) for a, b in runs if b - a >= RUN]
        singles = [i for a, b in runs if b - a < RUN for i in range(a, b + 1)]
        allowed: list[tuple[tantivy.Occur, tantivy.Query]] = [
            (tv.Occur.Should, tv.Query.range_query(self.schema, ID, tv.FieldType.Unsigned, a, b)) for a, b in ranges
        ]
        if singles:
            allowed.append((tv.Occur.Should, tv.Query.term_set_query(self.schema, ID, singles)))
        within = allowed[0][1] if len(allowed) == 1 else tv.Query.boolean_query(allowed)
        return tv.Query.boolean_query([(tv.Occur.Must, query), (tv.Occur.Must, within)])

    def top(
        self, query: tantivy.Query, limit: int, offset: int = 0, *, counted: bool = False
    ) -> list[tuple[int, float]]:
        """(record id, score) of the best `limit` matches after `offset`, best first.

        `counted`: every match is counted in the same pass, and a `count` of the same query
        object on the same searcher answers from that (a search is usually followed by its total)."""
        if limit <= 0:
            return []
        searcher = self.searcher()
        result = searcher.search(query, limit, count=counted, offset=offset)
        with self._memo_lock:
            if counted:
                total = int(getattr(result, "count", 0) or 0)
                self._counts = _remembered(self._counts, (searcher, query, total))
            if result.hits:
                best = [address for _, address in result.hits[:SHOWN_TRIED]]
                self._shown = _remembered(self._shown, (searcher, query, best))
        if not result.hits:
            return []
        ids = searcher.fast_field_values(ID, [addr for _, addr in result.hits])
        return [(int(i), float(score)) for (score, _), i in zip(result.hits, ids, strict=True) if i is not None]

    def ids(self, query: tantivy.Query) -> list[int]:
        """Every matching record id, unranked."""
        searcher = self.searcher()
        total = searcher.num_docs
        if total == 0:
            return []
        result = searcher.search(query, total, count=False, order_by_field=ID)
        return [int(value) for value, _ in result.hits]

    def holds(self, query: tantivy.Query, among: tantivy.Query | None = None) -> bool:
        """Whether any record matches `query`. The best matches of a recent `top` of `among` on
        the current searcher are tried first, each alone (a look at one record where a count
        reads every match): a search's words are usually in its best matches."""
        searcher = self.searcher()
        counted = self._counted(searcher, query)
        if counted is not None:
            return counted > 0
        if among is not None:
            best = next((b for seen, shown, b in self._shown if seen is searcher and shown is among), [])
            for address in best:
                try:
                    query.explain(searcher, address)
                except ValueError:  # "does not match"
                    continue
                return True
        return self.count(query) > 0

    def count(self, query: tantivy.Query) -> int:
        searcher = self.searcher()
        counted = self._counted(searcher, query)
        if counted is not None:
            return counted
        result = searcher.search(query, 1, count=True)
        return int(getattr(result, "count", 0) or 0)  # `count` is missing from the type stubs

    def _counted(self, searcher: tantivy.Searcher, query: tantivy.Query) -> int | None:
        """The total a recent counted `top` of `query` on `searcher` found, if one is kept."""
        return next((total for seen, counted, total in self._counts if seen is searcher and counted is query), None)

    # -- snippets --------------------------------------------------------------------------

    def words(self, text: str) -> list[str]:
        """The analysed words of the user's text (what `parse` searches for)."""
        return [w for m in TERM.finditer(nfc(text)) for w in self._analyzer.analyze(m.group(1) or m.group(2) or "")]

    def snippets(
        self,
        query: tantivy.Query,
        texts: Mapping[int, Sequence[str]],
        tokens: int,
        marks: tuple[str, str],
        words: Sequence[str] = (),
    ) -> dict[int, str]:
        """One snippet per record: the field passage with the most matches, matches marked
        (`snippets.cut`: fields in the schema's order, long fields cut to a window first)."""
        searcher = self.searcher()
        width = max(40, tokens * 8)

        def generator(field: str) -> tantivy.SnippetGenerator:
            made = self._tv.SnippetGenerator.create(searcher, query, self.schema, field)
            made.set_max_num_chars(width)
            return made

        return snippets.cut(generator, self._analyzer.analyze, self.fields, texts, width, marks, words)


_Memo = TypeVar("_Memo", bound=tuple[Any, ...])


def _remembered(memo: list[_Memo], entry: _Memo) -> list[_Memo]:
    """`memo` with `entry` last, keeping the last `COUNT_MEMO` entries of `entry`'s searcher only:
    an older searcher kept here would keep its segments (merged away since) open and mapped."""
    searcher = entry[0]
    return [*(kept for kept in memo[-(COUNT_MEMO - 1) :] if kept[0] is searcher), entry]


@dataclass
class UserQuery:
    """A person's search text as queries: what ranks, what snippets mark, and each term alone."""

    query: tantivy.Query
    marked: tantivy.Query
    """What snippets mark: every term but the excluded ones, stop words only when alone."""
    words: list[str]
    """The analysed words of `marked`."""
    terms: list[tuple[str, tantivy.Query]]
    """Each term searched for, in the order written, with the query matching it alone: excluded
    terms and stop words aside (stop words are these terms when there is nothing else)."""


def _any_of(tv: Any, queries: Sequence[tantivy.Query]) -> tantivy.Query:
    return tv.Query.boolean_query([(tv.Occur.Should, q) for q in queries])


def _trim() -> None:
    """Hand the memory a writer freed back to the operating system (glibc keeps freed heap
    pages otherwise: a first index would leave the server a few hundred megabytes larger)."""
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):  # not glibc: nothing to do
            _LIBC = False
    if isinstance(_LIBC, ctypes.CDLL):
        _LIBC.malloc_trim(0)


_LIBC: ctypes.CDLL | bool | None = None
