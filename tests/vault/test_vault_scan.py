"""The first index of a vault: what it reads and finds, and what is left when it is cut short."""

import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from deskmcp.demo.vault import write_vault
from deskmcp.vault import links as md
from deskmcp.vault.catalog import Catalog
from deskmcp.vault.notes import read_for_index
from deskmcp.vault.service import VaultService

# The tag rule as written in Obsidian terms: a `#` at the start of a line or after a space, (, [, comma
# or semicolon, then letters, digits, _, - and /.
TAG = re.compile(r"(?:^|(?<=[\s(\[,;]))#([\w\-/]+)", re.UNICODE)
PIECES = ["[[", "]]", "![[", "[", "]", "(", ")", "!", "#", "##", " ", "\u00a0", "\t", ",", ";", "|", "/", "-", "a"]
PIECES += ["Note", "x.md", "](", "](a.md)", "#1", "tag", "é", "[[a|b]]", "[[a#h]]", "[t](b.md#h)", "`code`"]


def reference_links(lines: list[str]) -> list[tuple[Any, ...]]:
    """Links as the full patterns find them, tried at every position of every line."""
    found: list[tuple[Any, ...]] = []
    for number, line in enumerate(lines, start=1):
        for match in md.WIKILINK.finditer(line):
            target_part, _, alias = match.group(2).partition("|")
            target, _, heading = target_part.partition("#")
            if target.strip():
                found.append(
                    (target.strip(), heading.strip() or None, alias.strip() or None, bool(match.group(1)), number)
                )
        for match in md.MD_LINK.finditer(line):
            href = unquote(match.group(3))
            if not md.URL_SCHEME.match(href):
                heading = unquote(match.group(4) or "").lstrip("#") or None
                found.append((href, heading, match.group(2).strip() or None, bool(match.group(1)), number))
    return found


def reference_tags(lines: list[str]) -> list[str]:
    tags = [m.group(1).strip("/") for line in lines for m in TAG.finditer(line)]
    return [t for t in tags if t and not t.replace("/", "").isdigit()]


def test_links_and_tags_found_from_their_first_character_are_those_the_full_patterns_find():
    rng = random.Random(27)
    for _ in range(20_000):
        lines = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(rng.randint(1, 3))]
        found = [(k.target, k.heading, k.alias, k.embed, k.line) for k in md.links(lines, "")]
        assert found == reference_links(lines), lines
        assert md.inline_tags(lines) == reference_tags(lines), lines


def test_a_note_is_read_whole_up_to_the_limit_and_not_at_all_past_it(tmp_path: Path):
    for size, expected in ((0, b""), (10, b"x" * 10), (2048, b"x" * 2048), (2049, None)):
        note = tmp_path / f"n{size}.md"
        note.write_bytes(b"x" * size)
        data, mtime_ns, length = read_for_index(note, 2048)
        assert (data, length, mtime_ns) == (expected, size, note.stat().st_mtime_ns)


def test_a_scan_that_finds_the_index_true_never_says_the_answers_are_partial(vault: Path, settings_for: Any):
    write_vault(vault, random.Random(5), notes=40)
    service = VaultService(settings_for(vault, watch=False))
    try:
        seen: list[object] = []
        service.catalog.scan(on_walked=lambda _count: seen.append(service.indexing()))
        (vault / "Inbox" / "new arrival.md").write_text("# New arrival\n", encoding="utf-8")
        service.catalog.scan(on_walked=lambda _count: seen.append(service.indexing()))
        service.catalog.scan(on_walked=lambda _count: seen.append(service.indexing()))
    finally:
        service.close()
    first, changed, unchanged = seen
    assert first is not None and changed is not None
    assert (changed.done, changed.total) == (first.total, first.total + 1)  # type: ignore[attr-defined]
    assert unchanged is None


CUT_SHORT = """
import os, signal, sys
from pathlib import Path
from deskmcp.vault import catalog

class Killed(catalog.Catalog):
    applied = 0
    def _apply(self, records, deletes, *, deferred=False):
        if self.applied == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # the power goes off with two batches written
        self.applied += 1
        return super()._apply(records, deletes, deferred=deferred)

catalog.BATCH = 40
Killed(Path(sys.argv[1]), Path(sys.argv[2]), 1 << 20).scan(deferred=True)
"""


def keys_and_snippets(cat: Catalog, query: str) -> list[tuple[str, str]]:
    """Every hit of `query` with its snippet, sorted: two builds of one vault may order equal scores
    differently (the text index writes with two threads), so the comparison is of what is found."""
    return sorted((h.key, h.snippet or "") for h in cat.index.search(query, limit=500))


@pytest.mark.e2e
def test_a_first_index_killed_midway_leaves_a_consistent_index_the_next_scan_completes(vault: Path, tmp_path: Path):
    write_vault(vault, random.Random(9), notes=150)
    index = tmp_path / "killed" / "vault.sqlite3"
    index.parent.mkdir()
    done = subprocess.run([sys.executable, "-c", CUT_SHORT, str(vault), str(index)], check=False, timeout=120)
    assert done.returncode == -9
    killed = Catalog(vault, index, 1 << 20)
    clean = Catalog(vault, tmp_path / "clean.sqlite3", 1 << 20)
    try:
        written = killed.index.count()
        assert written == 80  # the two batches committed before the kill, nothing half-written
        # every record SQLite holds is searchable by its own title: the text index agrees with it
        for hit in killed.index.select(limit=written):
            title = str(hit.columns["title"])
            assert hit.key in [h.key for h in killed.index.search(f'"{title}"', limit=500)], title
        resumed = killed.scan()
        assert (resumed.indexed, killed.index.count()) == (resumed.seen - written, resumed.seen)
        clean.scan()
        for query in ("project", "meeting notes", '"status update"', "alpha -beta"):
            assert keys_and_snippets(killed, query) == keys_and_snippets(clean, query), query
        assert killed.tag_counts("", 50) == clean.tag_counts("", 50)
    finally:
        killed.close()
        clean.close()


def test_an_index_of_a_vault_with_tags_is_kept_when_opened_again(vault: Path, tmp_path: Path):
    # SQLite's own check, run when an index opens, must find nothing in a sound one: a false
    # report would set it aside and index the whole vault at every start.
    write_vault(vault, random.Random(3), notes=60)
    path = tmp_path / "vault.sqlite3"
    first = Catalog(vault, path, 1 << 20)
    try:
        first.scan()
        count = first.index.count()
        assert count >= 60
        assert first.index.count(where="EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id)") > 0
    finally:
        first.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    again = Catalog(vault, path, 1 << 20)
    try:
        assert again.index.count() == count
    finally:
        again.close()
    assert not [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
