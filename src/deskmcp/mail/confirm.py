"""What a person is shown before mail leaves, when the client can ask them (MCP elicitation).

The mail tools ask before sending to anyone not on MAIL_ALLOWED_RECIPIENTS (with an allowlist
set, other addresses are refused outright, so only an empty allowlist leaves an address
unchecked), unless MAIL_CONFIRM_SENDS is off. The question shows what goes out: the account,
every recipient, the subject, the start of the text and the attachments.

A yes is spent by the send it allowed (`spend_yes`): from protocol 2026-07-28 the person's answer
comes back with the request state the server sealed (AES-GCM under a random nonce, with the time it
was sealed: every question asked seals differently, so the sealed state is a one-time id), and the
same state with the same answer sent again (a client's retry, a replay by anyone who saw the
request) is refused instead of sending again.
"""

from __future__ import annotations

import hashlib
import time

from deskmcp.core.errors import Conflict
from deskmcp.core.once import ledger
from deskmcp.mail.models import OutgoingAttachment
from deskmcp.mail.service import MailService
from deskmcp.mail.settings import DEFAULT_ACCOUNT

EXCERPT_CHARS = 600


def outgoing_text(
    heading: str,
    service: MailService,
    *,
    to: str,
    cc: str | None,
    bcc: str | None,
    subject: str,
    body: str,
    attachments: list[str],
) -> str:
    """The question: `heading`, then the message as it will leave."""
    text = body.strip()
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS].rstrip() + " [...]"
    s = service.settings
    account = "" if s.account == DEFAULT_ACCOUNT else f" (account {s.account})"
    lines = [heading, f"From: {s.address}{account}", f"To: {to}"]
    if cc:
        lines.append(f"Cc: {cc}")
    if bcc:
        lines.append(f"Bcc: {bcc}")
    lines += [f"Subject: {subject}", f"Attachments: {', '.join(attachments) or 'none'}", "", text or "(no text)"]
    return "\n".join(lines)


def needs_person(service: MailService, idempotency_key: str | None) -> bool:
    """Whether a send must be confirmed by the person: MAIL_CONFIRM_SENDS is on, the allowlist does
    not vouch for the recipients (it is empty), and the key has not already been sent (a retry
    answers from the journal without sending again)."""
    s = service.settings
    if not s.confirm_sends or s.allowlist:
        return False
    if idempotency_key is not None:
        row = service.journal.get(idempotency_key)
        if row is not None and row.status == "sent":
            return False
    return True


def attachment_names(attachments: list[OutgoingAttachment] | None) -> list[str]:
    return [a.filename or (a.path or "").rsplit("/", 1)[-1] or "attachment" for a in attachments or []]


STATE_SECONDS = 900.0
"""How long a spent state is remembered: longer than the SDK's request-state lifetime (600 s),
past which the state itself is refused."""


def spend_yes(service: MailService, state: str | None, idempotency_key: str | None) -> str | None:
    """Spend the sealed request state that carried the person's yes (in the shared database when
    one is configured, so replicas agree; in this process otherwise), and answer the idempotency
    key the send goes on with: the caller's, or one named after the state, so that the send this
    yes allowed is journalled like any keyed send.

    The same state again is a `conflict` once its send is journalled as sent. When the first call
    with it was cut off before its outcome was recorded (its process killed in the middle of the
    send), the journal holds the send as pending: the retry goes on with the same key, and the
    keyed send looks for the message before sending the very same bytes, so the yes still sends
    one message, never none and never two. A yes given on the call's own stream (protocols before
    2026-07-28) has no state and cannot be sent twice. `state`: the sealed state as the client sent
    it (`deskmcp.core.server.sealed_request_state`)."""
    if not state:
        return idempotency_key
    once = hashlib.sha256(state.encode("utf-8")).hexdigest()
    key = idempotency_key or f"{CONFIRMED_KEY_PREFIX}{once}"
    if ledger(service.settings.database_url).spend("mail-confirmation", once, time.time() + STATE_SECONDS):
        return key
    row = service.journal.get(key)
    if row is not None and row.status == "sent":
        raise Conflict(
            "This confirmation was already used: the person's yes sends one message, and it was sent. "
            "To send again, call the tool again and the person is asked again; to check, search the Sent folder.",
            {"confirmation": "spent"},
        )
    # Spent, and its send not recorded as sent: the call that spent it ended before its outcome
    # (or is still sending, and the journal's claim on the key makes this call wait for it).
    return key


CONFIRMED_KEY_PREFIX = "confirmed-"
"""The idempotency key of a confirmed send made without one: this prefix and the digest of the
sealed state that carried the yes."""
