"""Fifty real messages (bounces, HTML-only, raw 8-bit headers, broken MIME): each lists, reads and is found."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import Connect, call

pytestmark = pytest.mark.anyio


def load_corpus(workspace: Path) -> list[Path]:
    corpus = shared_corpus("emails")
    files = sorted(corpus.rglob("*.eml"))
    new = workspace / "mail" / "new"
    new.mkdir(parents=True)
    for sub in ("cur", "tmp"):
        (workspace / "mail" / sub).mkdir()
    for i, path in enumerate(files):
        shutil.copyfile(path, new / f"17000000{i:02d}.M{i}P1.corpus")
    return files


async def test_every_corpus_message_lists_reads_and_is_found_by_a_word(connect: Connect, workspace: Path) -> None:
    files = load_corpus(workspace)
    assert len(files) == 50
    async with connect() as c:
        emails: list[dict] = []
        cursor = None
        while True:
            page = await call(c, "list_emails", {"query": "", "max_results": 100, "cursor": cursor})
            emails.extend(page["emails"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert len(emails) == 50
        for email in emails:
            full = await call(c, "get_email", {"message_id": email["id"]})
            assert full["id"] == email["id"]
            assert "\ufffd" not in full["subject"] or "\ufffd" in email["subject"]
            words = re.findall(r"\b[^\W\d_]{4,}\b", full["subject"] + " " + full["body"])
            if not words:
                continue
            found = await call(c, "list_emails", {"query": f'"{words[0]}"', "max_results": 100})
            assert email["id"] in [e["id"] for e in found["emails"]], words[0]


async def test_corpus_edge_cases_decode_readably(connect: Connect, workspace: Path) -> None:
    load_corpus(workspace)
    async with connect() as c:

        async def one(query: str) -> dict:
            hits = (await call(c, "list_emails", {"query": query, "max_results": 5}))["emails"]
            assert hits, query
            return await call(c, "get_email", {"message_id": hits[0]["id"]})

        bilingual = await one("поживаешь")
        assert "Как ты поживаешь?" in bilingual["subject"]
        txt = (await call(c, "list_emails", {"query": "filename:txt", "max_results": 10}))["emails"]
        japanese = [e for e in txt if e["subject"].startswith("まみむめも")]
        full = await call(c, "get_email", {"message_id": japanese[0]["id"]})
        assert full["attachment_names"] == ["かきくけこかきくけこかきくけこかきくけこかきくけこ.txt"]
        estonian = await one("Eelanalüüsi")
        assert estonian["attachment_names"] == ["Eelanalüüsi päring.jpg"]
        html_only = await one("mega long link")
        assert "<" not in html_only["body"][:200] and html_only["body"]
        bad_date = await one("subject:Vlsta")
        # "Pn, 29 paX 2007 21:13:00 +0100" cannot be read: dated by its delivery instead, flagged
        assert bad_date["date_source"] == "received" and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]{8}Z", bad_date["date"])
        latin = await one("Lütkebohle")
        assert "Ingo Lütkebohle" in latin["sender"]
        shift_jis = await one("あいうえお")
        assert "テスト" in shift_jis["body"]
        enclosed = await one("subject:Wow")
        assert enclosed["attachment_names"] == ["thanks.eml"]
        reply = await one('subject:"Test reply email"')
        assert reply["in_reply_to"] and reply["references"]
