"""search_notes reads a question as words: any word ranks, stop words are never needed, "phrases"
stay phrases, +word is required, -word excluded, and words no note holds are named."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def paths(answer: dict) -> list[str]:
    return [n["path"] for n in answer["notes"]]


async def test_search_notes_answers_a_question_with_the_notes_holding_its_words(connect: Connect, vault: Path) -> None:
    write(vault, "Meetings/n1.md", "The team agreed the remote control budget at twelve euros.\n")
    write(vault, "Meetings/n2.md", "Lunch is at noon.\n")
    async with connect() as client:
        found = await call(client, "search_notes", {"query": "What was the budget for the zorblax?"})
    assert paths(found) == ["Meetings/n1.md"]
    assert found["total"] == 1
    assert found["unmatched_terms"] == ["zorblax"]
    assert "⟦budget⟧" in found["notes"][0]["snippet"] and "⟦the⟧" not in found["notes"][0]["snippet"].lower()


async def test_search_notes_ranks_notes_holding_every_word_first(connect: Connect, vault: Path) -> None:
    for i in range(8):  # "review" is common, so it weighs little on its own
        write(vault, f"f{i}.md", f"review notes item{i} x\n")
    write(vault, "many.md", "budget budget budget x\n")
    write(vault, "both.md", "budget review x y\n")
    async with connect() as client:
        found = await call(client, "search_notes", {"query": "budget review", "limit": 3})
    assert paths(found)[:2] == ["both.md", "many.md"]


async def test_search_notes_keeps_a_quoted_phrase_exact(connect: Connect, vault: Path) -> None:
    write(vault, "a.md", "annual renewals are due\n")
    write(vault, "b.md", "renewals annual report\n")
    async with connect() as client:
        phrase = await call(client, "search_notes", {"query": '"annual renewals" zorblax'})
        words = await call(client, "search_notes", {"query": "annual renewals"})
    assert paths(phrase) == ["a.md"]
    assert phrase["unmatched_terms"] == ["zorblax"]
    assert sorted(paths(words)) == ["a.md", "b.md"]


async def test_search_notes_requires_a_plus_word_and_excludes_a_minus_word(connect: Connect, vault: Path) -> None:
    write(vault, "a.md", "budget review\n")
    write(vault, "b.md", "budget draft\n")
    write(vault, "c.md", "review only\n")
    async with connect() as client:
        required = await call(client, "search_notes", {"query": "+budget review"})
        excluded = await call(client, "search_notes", {"query": "budget review -draft"})
        only_excluded = await fail(client, "search_notes", {"query": "-draft"})
    assert sorted(paths(required)) == ["a.md", "b.md"]
    assert sorted(paths(excluded)) == ["a.md", "c.md"]
    assert only_excluded["error"] == "bad_request" and "only excludes" in only_excluded["message"]


async def test_search_notes_with_no_match_names_the_words_no_note_holds(connect: Connect, vault: Path) -> None:
    write(vault, "Archive/old.md", "rocket engine\n")
    write(vault, "Projects/new.md", "budget review\n")
    async with connect() as client:
        nothing = await call(client, "search_notes", {"query": "zorblax quux"})
        in_folder = await call(client, "search_notes", {"query": "the rocket", "folder": "Projects"})
    assert nothing["notes"] == [] and nothing["total"] == 0
    assert nothing["unmatched_terms"] == ["zorblax", "quux"]
    # the folder filter stays exact: rocket is in a note, but not in one the folder holds
    assert in_folder["notes"] == []
    assert in_folder["unmatched_terms"] == ["rocket"]  # stop words are never needed, nor named


def _decomposed(text: str) -> str:
    return unicodedata.normalize("NFD", text)


async def test_decomposed_accents_are_found_marked_filtered_and_linked_as_typed(connect: Connect, vault: Path) -> None:
    # Written the way macOS may write them: every accent a letter plus a combining mark.
    name = _decomposed("Crème brûlée.md")
    write(vault, name, _decomposed("---\ntags: [résumé]\nchef: señor\n---\nA crème brûlée for the café.\n"))
    write(vault, "Index.md", "see [[Crème brûlée]]\n")
    async with connect() as client:
        found = await call(client, "search_notes", {"query": "brûlée café"})
        assert paths(found) == [name, "Index.md"]  # the link holds the words too
        assert found["unmatched_terms"] == []
        assert "⟦brûlée⟧" in found["notes"][0]["snippet"] and "⟦café⟧" in found["notes"][0]["snippet"]
        assert paths(await call(client, "list_notes", {"tag": "résumé"})) == [name]
        assert paths(await call(client, "list_notes", {"filter": "chef:señor"})) == [name]
        tags = await call(client, "list_note_tags", {"prefix": "rés"})
        assert [t["count"] for t in tags["tags"]] == [1]
        links = await call(client, "get_links", {"path": "Index.md"})
        assert [link["resolved_path"] for link in links["links"]] == [name]


async def test_a_note_named_with_decomposed_accents_is_read_and_written_by_the_name_as_typed(
    connect: Connect, vault: Path
) -> None:
    name = _decomposed("Réunions/Crème brûlée.md")
    write(vault, name, "first\n")
    async with connect() as client:
        note = await call(client, "read_note", {"path": "Réunions/Crème brûlée"})
        assert note["path"] == name and note["body"] == "first\n"
        written = await call(
            client,
            "write_note",
            {"path": "Réunions/Crème brûlée.md", "body": "second\n", "expected_hash": note["content_hash"]},
        )
        assert written["path"] == name
    assert [p.name for p in (vault / _decomposed("Réunions")).iterdir()] == [_decomposed("Crème brûlée.md")]
    assert (vault / name).read_text(encoding="utf-8") == "second\n"
