"""list_emails by words, by meaning or both (mode) on a local mailbox, and what happens where
search by meaning cannot run: no model, no words, a backend that keeps no text here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.core.errors import BadRequest
from deskmcp.mail.backends.base import ByMeaning
from deskmcp.mail.query import parse_query, split_words
from deskmcp.mail.service import MailService
from tests.helpers.embedders import add_static_model
from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio


@pytest.fixture
def mailbox(workspace: Path) -> Path:
    deliver(workspace, make_mail("Site visit", "Rain and a storm are forecast; bring an umbrella.", days_ago=3))
    deliver(workspace, make_mail("Ski trip", "Snow, wind and cloudy skies all week.", days_ago=1))
    deliver(workspace, make_mail("Shelter", "The kitten purrs, the puppy barks.", days_ago=2))
    deliver(workspace, make_mail("Old storm", "A storm last year, umbrella lost.", days_ago=30), folder=".Trash")
    return workspace


def subjects(answer: dict[str, Any]) -> list[str]:
    return [e["subject"] for e in answer["emails"]]


@pytest.fixture
def with_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    store = tmp_path / "models"
    add_static_model(store, "topics")
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(store))
    return "topics"


async def test_without_a_model_list_emails_is_by_words_and_semantic_says_how_to_set_one_up(
    mailbox: Path, connect: Callable[..., Client]
) -> None:
    async with connect() as client:
        found = await call(client, "list_emails", {"query": "umbrella"})
        hybrid = await call(client, "list_emails", {"query": "umbrella", "mode": "hybrid"})
        error = await fail(client, "list_emails", {"query": "umbrella", "mode": "semantic"})
    assert found["mode"] == "lexical" and subjects(found) == ["Site visit"]
    assert found["emails"][0]["lexical_rank"] is None  # newest first: no rank
    assert hybrid["mode"] == "lexical" and subjects(hybrid) == ["Site visit"]  # (the answer says so)
    assert error["error"] == "bad_request" and "DESKMCP_EMBEDDER" in error["message"]


async def test_with_a_model_list_emails_ranks_by_meaning_within_the_querys_operators(
    mailbox: Path, connect: Callable[..., Client], with_model: str
) -> None:
    async with connect(embedder=with_model) as client:
        semantic = await call(client, "list_emails", {"query": "sunny", "mode": "semantic", "max_results": 2})
        hybrid = await call(client, "list_emails", {"query": "umbrella", "mode": "hybrid", "max_results": 3})
        default = await call(client, "list_emails", {"query": "umbrella"})
        filtered = await call(client, "list_emails", {"query": "sunny subject:ski", "mode": "semantic"})
        excluded = await call(client, "list_emails", {"query": "sunny -snow", "mode": "hybrid"})
        trash = await call(client, "list_emails", {"query": "umbrella in:trash", "mode": "semantic"})
        lexical = await call(client, "list_emails", {"query": "umbrella", "mode": "lexical"})
        operators_only = await call(client, "list_emails", {"query": "subject:ski"})
        no_words = await fail(client, "list_emails", {"query": "subject:ski", "mode": "semantic"})
    # "sunny" is in no message: by meaning the two weather messages come first, the pets one not.
    assert semantic["mode"] == "semantic" and set(subjects(semantic)) == {"Site visit", "Ski trip"}
    assert all(e["semantic_rank"] is not None and e["lexical_rank"] is None for e in semantic["emails"])
    # hybrid: the word match first, then the message nearest in meaning; Trash stays out as it
    # does by words. Not asked for, a listing stays by words even with a model set up.
    assert default["mode"] == "lexical" and subjects(default) == ["Site visit"]
    assert hybrid["mode"] == "hybrid" and subjects(hybrid)[:2] == ["Site visit", "Ski trip"]
    ranks = {e["subject"]: (e["lexical_rank"], e["semantic_rank"]) for e in hybrid["emails"]}
    assert ranks["Site visit"][0] == 1 and ranks["Ski trip"][0] is None and "Old storm" not in ranks
    assert subjects(filtered) == ["Ski trip"]
    assert "Ski trip" not in subjects(excluded) and subjects(excluded)[0] == "Site visit"
    assert subjects(trash) == ["Old storm"]
    assert lexical["mode"] == "lexical" and subjects(lexical) == ["Site visit"]
    assert operators_only["mode"] == "lexical" and subjects(operators_only) == ["Ski trip"]
    assert no_words["error"] == "bad_request" and "no" in no_words["message"] and "words" in no_words["message"]


async def test_pages_by_meaning_follow_each_other_without_repeats(
    mailbox: Path, connect: Callable[..., Client], with_model: str
) -> None:
    async with connect(embedder=with_model) as client:
        first = await call(client, "list_emails", {"query": "storm", "mode": "semantic", "max_results": 2})
        second = await call(
            client,
            "list_emails",
            {"query": "storm", "mode": "semantic", "max_results": 2, "cursor": first["next_cursor"]},
        )
        stale = await fail(
            client,
            "list_emails",
            {"query": "storm", "max_results": 2, "mode": "lexical", "cursor": first["next_cursor"]},
        )
    assert len(first["emails"]) == 2 and first["next_cursor"]
    assert not set(subjects(first)) & set(subjects(second)) and len(subjects(first) + subjects(second)) == 3
    assert stale["error"] == "bad_request"  # a cursor belongs to its query and mode


def test_a_backend_that_keeps_no_text_here_refuses_semantic_and_answers_hybrid_by_words(
    settings_for: Callable[..., Any],
) -> None:
    service = MailService(settings_for())

    class Remote:
        name = "imap"

    service.backend = Remote()  # type: ignore[assignment]  (only its name and kind are read)
    assert not isinstance(service.backend, ByMeaning)
    assert service._mode("hybrid", "umbrella") == "lexical"
    assert service._mode(None, "umbrella") == "lexical"
    with pytest.raises(BadRequest, match=r"Maildir account.*imap"):
        service._mode("semantic", "umbrella")


def test_the_words_ranked_by_meaning_are_the_querys_free_terms_and_the_rest_filters() -> None:
    text, rest = split_words(parse_query('umbrella "storm warning" from:bob -snow is:unread'))
    assert text == 'umbrella "storm warning"'
    assert rest == parse_query("from:bob -snow is:unread")
    assert split_words(parse_query("from:bob")) == ("", parse_query("from:bob"))
    assert split_words(None) == ("", None)
