"""Keeping the local copy of an IMAP account true, folder by folder, incrementally.

A folder's state on the server (UIDVALIDITY, UIDNEXT, message count, HIGHESTMODSEQ where the
server has CONDSTORE) is compared with the state the copy was made for: the same state means
nothing changed; a new UIDVALIDITY drops the folder's copy and reads it again; otherwise the
UIDs from the recorded UIDNEXT on are fetched, expunged UIDs found (the count says whether any
went; VANISHED (EARLIER) where the server has QRESYNC, else the folder's UID list) and removed,
and flags refreshed (only those changed since the recorded MODSEQ where CONDSTORE allows).

The text kept is what SEARCH TEXT looks in: every header, decoded, and every body part,
transfer-decoded and in Unicode. With it, what a summary FETCH would return (`imap_fetch`):
the summary headers and the start of the text, cut from the message fetched anyway, and the
attachments its BODYSTRUCTURE lists (and the server's PREVIEW, where it has one).
"""

from __future__ import annotations

import base64
import binascii
import logging
import quopri
from collections.abc import Callable
from email import message_from_bytes
from email.header import decode_header, make_header
from email.message import Message
from typing import Any

from deskmcp.mail.backends import imap_fetch
from deskmcp.mail.backends.imap_store import FolderState, ImapStore, Kept, Stored
from deskmcp.mail.backends.imap_structure import attachments

log = logging.getLogger(__name__)

BATCH = 250
"""Messages fetched and written at once (one transaction each)."""


def state_of(info: dict[bytes, Any], *, exists_key: bytes = b"EXISTS") -> FolderState:
    """A folder's state from a SELECT/EXAMINE answer (or a STATUS one with `MESSAGES`)."""
    return FolderState(
        validity=int(info[b"UIDVALIDITY"]),
        uidnext=int(info.get(b"UIDNEXT", 0) or 0),
        messages=int(info.get(exists_key, 0) or 0),
        modseq=int(_first(info.get(b"HIGHESTMODSEQ", 0)) or 0),
    )


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list | tuple) else value


def _header_value(value: str) -> str:
    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError, UnicodeError):
        return value


_ENCODINGS = {"", "7bit", "8bit", "binary", "quoted-printable", "base64"}


def _payload_text(part: Message) -> str:
    """A text part's words as the server searches them (HTML as it is, markup included); other
    types and parts in an unknown transfer encoding are not searched."""
    if part.get_content_maintype() != "text":
        return ""
    encoding = str(part.get("Content-Transfer-Encoding", "")).split(";")[0].strip().lower()
    if encoding not in _ENCODINGS:
        return ""
    payload = part.get_payload()
    if not isinstance(payload, str):
        return ""
    data = payload.encode("utf-8", "surrogateescape")
    if encoding == "quoted-printable":
        data = quopri.decodestring(data)
    elif encoding == "base64":
        try:
            data = base64.b64decode(b"".join(data.split()) + b"==")
        except binascii.Error:
            data = b""
    charset = part.get_content_charset() or "us-ascii"
    try:
        return data.decode(charset, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def search_text(raw: bytes) -> str:
    """The text a SEARCH TEXT looks in: headers (decoded) and every body part (decoded)."""
    msg = message_from_bytes(raw)
    out: list[str] = []
    for part in msg.walk():
        if part is msg or part.get_content_maintype() != "multipart":
            for name, value in part.items():
                out.append(f"{name}: {_header_value(str(value))}")
        if part.is_multipart():
            continue
        out.append(_payload_text(part))
    return "\n".join(out)


def stored(uid: int, item: dict[bytes, Any]) -> Stored:
    raw = item.get(b"BODY[]") or b""
    raw = raw if isinstance(raw, bytes) else b""
    head, text = imap_fetch.split_message(raw)
    preview = item.get(b"PREVIEW")
    kept = Kept(
        headers=imap_fetch.header_fields(head),
        # as a summary FETCH asks: the start of the text only where the server makes no preview
        text=b"" if isinstance(preview, bytes) else text[: imap_fetch.TEXT_BYTES],
        preview=preview if isinstance(preview, bytes) else None,
        attachments=tuple((a.filename, a.content_type, a.size) for a in attachments(item.get(b"BODYSTRUCTURE"))),
        arrived=imap_fetch.arrival(item),
    )
    return Stored(
        uid=uid,
        time=imap_fetch.sort_time(item),
        flags=tuple(item.get(b"FLAGS", ())),
        text=search_text(raw),
        kept=kept,
    )


ITEMS = ["FLAGS", "INTERNALDATE", "BODYSTRUCTURE", "BODY.PEEK[HEADER.FIELDS (DATE)]", "BODY.PEEK[]"]


def items(client: Any) -> list[str]:
    """What a sync fetches of each new message (the server's PREVIEW too, where it has one)."""
    return [*ITEMS, "PREVIEW"] if client.has_capability("PREVIEW") else ITEMS


def sync_folder(
    client: Any,
    store: ImapStore,
    folder: str,
    *,
    progress: Callable[[int], None] | None = None,
    batch: int = BATCH,
    vanished: bool = False,
) -> FolderState:
    """Bring the copy of `folder` up to the server's state (the folder is selected read-only here).
    `vanished`: QRESYNC is enabled on `client`, so expunged messages are named by the server
    rather than found from the folder's UID list. Returns the state the copy is now true for."""
    info = client.select_folder(folder, readonly=True)
    live = state_of(info)
    known = store.state(folder)
    if known is not None and known.validity != live.validity:
        log.info("UIDVALIDITY of %s changed: reading it again", folder)
        store.drop(folder)
        known = None
    if known == live:
        return live
    start = known.uidnext if known is not None else 1
    new = sorted(u for u in client.search(["UID", f"{start}:*"]) if u >= start) if live.messages else []
    done = 0
    for begin in range(0, len(new), batch):
        part = new[begin : begin + batch]
        fetched = client.fetch(part, items(client))
        store.add(folder, [stored(uid, item) for uid, item in fetched.items()])
        done += len(part)
        if progress is not None:
            progress(done)
    if known is not None:
        # Only the flags changed since the recorded MODSEQ where the server keeps one (CONDSTORE);
        # with QRESYNC enabled the same FETCH names the messages expunged since then (VANISHED).
        modifiers = [f"CHANGEDSINCE {known.modseq}"] if known.modseq and live.modseq else None
        ask_vanished = vanished and modifiers is not None
        if ask_vanished:
            modifiers = [*(modifiers or ()), "VANISHED"]
            client._imap.untagged_responses.pop("VANISHED", None)  # (left by an earlier command)
        changed: dict[int, Any] = {}
        kept_uids = sorted(store.uids(folder))
        for begin in range(0, len(kept_uids), 2000):
            changed.update(client.fetch(kept_uids[begin : begin + 2000], ["FLAGS"], modifiers=modifiers))
        if ask_vanished:
            ranges = uid_ranges(client._imap.untagged_responses.pop("VANISHED", []))
            store.remove(folder, [u for u in kept_uids if any(low <= u <= high for low, high in ranges)])
        if store.count(folder) != live.messages:  # some went unreported: which ones
            present = set(client.search(["ALL"])) if live.messages else set()
            store.remove(folder, store.uids(folder) - present)
        store.set_flags(folder, {uid: tuple(item.get(b"FLAGS", ())) for uid, item in changed.items()})
    store.mark(folder, live)
    return live


def uid_ranges(responses: list[Any]) -> list[tuple[int, int]]:
    """The UID ranges of untagged `VANISHED (EARLIER) 41,43:116` responses (as imaplib keeps them)."""
    ranges: list[tuple[int, int]] = []
    for response in responses:
        text = response.decode("ascii", "replace") if isinstance(response, bytes) else str(response)
        for part in text.replace("(EARLIER)", "").strip().split(","):
            low, _, high = part.strip().partition(":")
            if low.isdigit() and (not high or high.isdigit()):
                a, b = int(low), int(high or low)
                ranges.append((min(a, b), max(a, b)))
    return ranges


def behind(store: ImapStore, folder: str, live: FolderState) -> int | None:
    """How many messages the copy of `folder` lacks (None: it must be read whole again)."""
    known = store.state(folder)
    if known is None or known.validity != live.validity:
        return None
    return max(0, live.uidnext - known.uidnext)
