"""Non-ASCII terms inside OR, negation and {} groups over a real Dovecot: every query answers, with
the messages the Maildir backend finds on the same mail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect
from tests.mail.dovecot import (
    BASE_DAY,
    Dovecot,
    Loaded,
    append_all,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

MAIL = [
    ("Visita", "Hola.", "José Díaz <jose@corp.test>"),
    ("Отчёт за квартал", "Смотрите отчёт.", "Олег <oleg@corp.test>"),
    ("budget review", "Numbers attached.", "Ann <ann@corp.test>"),
    ("Отчёт budget", "Cyrillic and ASCII.", "Олег <oleg@corp.test>"),
    ("会議の资料", "会议资料在这里。", "Tanaka <tanaka@corp.test>"),
    ("繁體 資料", "請參考資料。", "Chen <chen@corp.test>"),
    ("Überprüfung der Zahlen", "Bitte prüfen.", "Jörg <jorg@corp.test>"),
    ("Menu", "café crème", "Pierre <pierre@corp.test>"),
    ("Отчёт готов", "Done.", "Ann <ann@corp.test>"),
    ("资料清单", "清单", "Li <li@corp.test>"),
]

QUERIES = [
    "from:José OR from:Олег",
    "-subject:Отчёт subject:budget",
    "资料 OR 資料",
    "{from:José from:Jörg}",
    "subject:Отчёт -from:Олег",
    "资料 -subject:会議",
    "subject:Überprüfung OR subject:会議",
    "{subject:Visita subject:Menu} -from:José",
    "from:{José Олег}",
    "-subject:(Отчёт budget)",
    "(from:Олег OR from:Jörg) budget",
    "crème OR Überprüfung",
    "NOT {from:José from:Jörg} subject:Отчёт",
    "-资料 subject:資料",
    "{资料 Отчёт} -budget",
    "subject:Visita OR -from:Олег",
]


def messages() -> list[bytes]:
    return [
        make_mail(subject, body, sender=sender, days_ago=i + 1, msgid=f"<u{i}@corp.test>")
        for i, (subject, body, sender) in enumerate(MAIL)
    ]


async def answers(c: Any, query: str) -> list[str] | str:
    """The Message-IDs a query lists, newest first, or the error code it answers."""
    result = await c.call_tool("list_emails", {"query": query, "max_results": 100})
    if result.is_error:
        return str(result.content[0].text)  # type: ignore[union-attr]
    return [e["rfc_message_id"] for e in result.structured_content["emails"]]


async def test_imap_search_with_non_ascii_terms_in_or_not_and_groups_finds_what_the_maildir_finds(
    connect: Connect, dovecot: Dovecot, mailbox: str, workspace: Path
) -> None:
    raws = messages()
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY) for raw in raws])
    for raw in raws:
        deliver(workspace, raw)
    async with connect(**dovecot.settings(mailbox)) as c:
        over_imap = {q: await answers(c, q) for q in QUERIES}
    async with connect() as c:
        local = {q: await answers(c, q) for q in QUERIES}
    assert all(isinstance(found, list) for found in local.values()), local
    assert all(found for found in local.values()), local  # every query finds something
    failed = {q: found for q, found in over_imap.items() if not isinstance(found, list)}
    assert not failed, f"{len(failed)} of {len(QUERIES)} failed over IMAP: {failed}"
    assert over_imap == local
