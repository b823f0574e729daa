"""Frontmatter that round-trips: values as JSON, edits that touch only the changed lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.core import frontmatter
from deskmcp.core.errors import ParseError
from tests.helpers.corpora import QUARTZ
from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

HAND_WRITTEN = """---
title: "Weekly sync"   # quoted on purpose
date: 2026-01-05
start: 09:30
end: 12:45
created: 2026-01-05T09:30:00Z
answer: yes
mode: 0755
tags:
  - work
  - 'meeting'
nested:
  owner: Ann
  # inner comment
  ids: [1, 2]
notes: |
  first line

  after a blank line
---
Body with [[links]].
"""


def test_yaml_1_1_sexagesimal_times_stay_strings_and_dates_become_iso() -> None:
    values = frontmatter.parse(frontmatter.split(HAND_WRITTEN).yaml_text, "n.md")
    assert values["start"] == "09:30"
    assert values["end"] == "12:45"
    assert values["date"] == "2026-01-05"
    assert values["created"] == "2026-01-05T09:30:00+00:00"
    assert values["answer"] == "yes"
    assert values["mode"] == 755
    assert values["tags"] == ["work", "meeting"]
    assert values["nested"] == {"owner": "Ann", "ids": [1, 2]}
    assert values["notes"] == "first line\n\nafter a blank line\n"


def test_updating_with_unchanged_values_keeps_the_text_identical() -> None:
    parts = frontmatter.split(HAND_WRITTEN)
    values = frontmatter.parse(parts.yaml_text, "n.md")
    assert frontmatter.update(parts.yaml_text, values, dict(values), "n.md") == parts.yaml_text


def test_changing_one_field_leaves_every_other_line_as_written() -> None:
    parts = frontmatter.split(HAND_WRITTEN)
    values = frontmatter.parse(parts.yaml_text, "n.md")
    wanted = {**values, "end": "13:00", "status": "done"}
    del wanted["answer"]
    updated = frontmatter.update(parts.yaml_text, values, wanted, "n.md")
    expected = parts.yaml_text.replace("end: 12:45\n", "end: '13:00'\n").replace("answer: yes\n", "")
    assert updated == expected + "status: done\n"
    assert frontmatter.parse(updated, "n.md") == wanted


def test_new_dates_are_written_plain_and_read_back_as_the_same_string() -> None:
    text = frontmatter.render({"due": "2026-02-01", "time": "9:30", "flag": "no"})
    assert text == "due: 2026-02-01\ntime: '9:30'\nflag: 'no'\n"
    assert frontmatter.parse(text, "n.md") == {"due": "2026-02-01", "time": "9:30", "flag": "no"}


def test_corrupt_yaml_is_a_parse_error_naming_the_file_and_line() -> None:
    text = "---\ntitle: ok\ntags: [a, b\nstatus: x\n---\nbody\n"
    with pytest.raises(ParseError) as caught:
        frontmatter.parse(frontmatter.split(text).yaml_text, "Inbox/bad.md")
    assert caught.value.details["path"] == "Inbox/bad.md"
    assert caught.value.details["line"] in (4, 5)
    assert "Inbox/bad.md" in caught.value.message


def test_alias_bombs_are_refused_instead_of_expanded() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for name in "bcdefgh":
        prev = chr(ord(name) - 1)
        bomb += f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
    with pytest.raises(ParseError):
        frontmatter.parse(bomb, "bomb.md")


async def test_read_note_of_corrupt_frontmatter_returns_the_body_and_the_error(connect: Connect, vault: Path) -> None:
    write(vault, "bad.md", "---\ntitle: ok\ntags: [a, b\n---\nStill readable.\n")
    async with connect() as client:
        note = await call(client, "read_note", {"path": "bad"})
        assert note["body"] == "Still readable.\n"
        assert note["frontmatter"] == {}
        assert "bad.md" in note["frontmatter_error"] and "line" in note["frontmatter_error"]
        strict = await fail(client, "read_note", {"path": "bad", "strict": True})
        assert strict["error"] == "parse_error"
        assert strict["details"]["path"] == "bad.md"
        patch = await fail(client, "patch_frontmatter", {"path": "bad", "key": "status", "value": "x"})
        assert patch["error"] == "parse_error"
        found = await call(client, "search_notes", {"query": "readable"})
        assert [n["path"] for n in found["notes"]] == ["bad.md"]


async def test_write_note_with_the_frontmatter_read_keeps_the_file_byte_identical(
    connect: Connect, vault: Path
) -> None:
    path = write(vault, "hand.md", HAND_WRITTEN)
    async with connect() as client:
        note = await call(client, "read_note", {"path": "hand.md"})
        again = await call(
            client,
            "write_note",
            {
                "path": "hand.md",
                "frontmatter": note["frontmatter"],
                "body": note["body"],
                "expected_hash": note["content_hash"],
            },
        )
    assert path.read_text(encoding="utf-8") == HAND_WRITTEN
    assert again["content_hash"] == note["content_hash"]


async def test_crlf_and_bom_notes_round_trip_byte_identically(connect: Connect, vault: Path) -> None:
    original = "\ufeff---\r\nstatus: open\r\nwhen: 09:30\r\n---\r\nLine one\r\nLine two\r\n"
    path = vault / "windows.md"
    path.write_bytes(original.encode("utf-8"))
    async with connect() as client:
        note = await call(client, "read_note", {"path": "windows"})
        assert note["frontmatter"] == {"status": "open", "when": "09:30"}
        await call(
            client,
            "write_note",
            {"path": "windows", "frontmatter": note["frontmatter"], "body": note["body"], "overwrite": True},
        )
        assert path.read_bytes() == original.encode("utf-8")
        await call(client, "patch_frontmatter", {"path": "windows", "key": "status", "value": "closed"})
    assert path.read_bytes() == original.replace("status: open", "status: closed").encode("utf-8")


async def test_values_written_are_the_values_read_filtered_and_patched(connect: Connect, vault: Path) -> None:
    numberish = {"version": "1e3", "code": "0o17", "sha": "12e45", "answer": "yes", "id": 10**24}
    async with connect() as client:
        written = await call(client, "write_note", {"path": "v.md", "body": "hi\n", "frontmatter": numberish})
        read = await call(client, "read_note", {"path": "v.md"})
        expected = {**numberish, "id": str(10**24)}  # beyond 64 bits: its digits
        assert written["frontmatter"] == read["frontmatter"] == expected
        listed = await call(client, "list_notes", {"filter": "version:1e3"})
        assert [n["path"] for n in listed["notes"]] == ["v.md"]
        patched = await call(client, "patch_frontmatter", {"path": "v.md", "key": "ref", "value": "5e10"})
        assert patched["frontmatter"]["ref"] == "5e10"
        assert (await call(client, "read_note", {"path": "v.md"}))["frontmatter"]["ref"] == "5e10"


async def test_a_body_written_to_a_note_ending_at_its_frontmatter_keeps_the_block(
    connect: Connect, vault: Path
) -> None:
    path = write(vault, "n.md", "---\nstatus: active\ntags: [work]\n---")
    async with connect() as client:
        note = await call(client, "read_note", {"path": "n.md"})
        await call(client, "write_note", {"path": "n.md", "body": "New body\n", "expected_hash": note["content_hash"]})
        assert path.read_text(encoding="utf-8") == "---\nstatus: active\ntags: [work]\n---\nNew body\n"
        listed = await call(client, "list_notes", {"filter": "status:active"})
        assert [n["path"] for n in listed["notes"]] == ["n.md"]


def _quartz_notes() -> list[Path]:
    return sorted(QUARTZ.rglob("*.md")) if QUARTZ.is_dir() else []


@pytest.mark.skipif(not QUARTZ.is_dir(), reason="the shared quartz-docs corpus is not present")
async def test_every_quartz_docs_note_round_trips_byte_identically(
    connect: Connect, tmp_path: Path, vault: Path
) -> None:
    originals: dict[str, bytes] = {}
    for source in _quartz_notes():
        rel = source.relative_to(QUARTZ).as_posix()
        originals[rel] = source.read_bytes()
        target = vault / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(originals[rel])
    assert len(originals) > 50
    async with connect() as client:
        for rel in originals:
            note = await call(client, "read_note", {"path": rel})
            assert note["frontmatter_error"] is None, rel
            await call(
                client,
                "write_note",
                {
                    "path": rel,
                    "frontmatter": note["frontmatter"],
                    "body": note["body"],
                    "expected_hash": note["content_hash"],
                },
            )
        changed = await _patch_first_with_frontmatter(client, originals, vault)
    for rel, data in originals.items():
        if rel != changed:
            assert (vault / rel).read_bytes() == data, rel


async def _patch_first_with_frontmatter(client: Client, originals: dict[str, bytes], vault: Path) -> str:
    """Patch one field of a real note and check only that field's line changed."""
    for rel, data in originals.items():
        text = data.decode("utf-8")
        parts = frontmatter.split(text)
        if parts.has_block and parts.yaml_text.startswith("title:"):
            await call(client, "patch_frontmatter", {"path": rel, "key": "title", "value": "Renamed"})
            note = await call(client, "read_note", {"path": rel})
            assert note["frontmatter"]["title"] == "Renamed"
            old_line, rest = parts.yaml_text.split("\n", 1)
            expected = parts.bom + parts.opening + "title: Renamed\n" + rest + parts.closing + parts.body
            assert (vault / rel).read_text(encoding="utf-8") == expected, old_line
            return rel
    pytest.skip("no quartz-docs note starts its frontmatter with title:")


async def test_a_note_that_is_not_utf8_is_replaced_only_whole(connect: Connect, vault: Path) -> None:
    path = vault / "Menu.md"
    path.write_bytes("# Menu\ncaf\xe9\n".encode("latin-1"))
    async with connect() as client:
        # Keeping its frontmatter would need reading it: refused, saying how to replace it whole.
        error = await fail(client, "write_note", {"path": "Menu.md", "body": "# Menu\n", "overwrite": True})
        assert error["error"] == "parse_error"
        assert "overwrite=true and its frontmatter" in error["message"]
        assert path.read_bytes() == "# Menu\ncaf\xe9\n".encode("latin-1")
        await call(
            client, "write_note", {"path": "Menu.md", "body": "# Menu\ncafé\n", "frontmatter": {}, "overwrite": True}
        )
    assert path.read_text(encoding="utf-8") == "# Menu\ncafé\n"
