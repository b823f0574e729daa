"""What a list summary needs from an IMAP server, in one FETCH: flags, size, arrival time, the
MIME structure, the few headers a summary shows, and a preview (the server's PREVIEW where it
offers one, else the first 2 KB of the text)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from deskmcp.mail.backends.imap_structure import Attachment, attachments
from deskmcp.mail.mime import SNIPPET_CHARS, ParsedMail, decode, parse_bytes, parse_date

HEADERS = "FROM TO CC SUBJECT DATE MESSAGE-ID IN-REPLY-TO REFERENCES CONTENT-TYPE CONTENT-TRANSFER-ENCODING"
KEY_ITEMS = ["INTERNALDATE", "BODY.PEEK[HEADER.FIELDS (DATE)]"]
TEXT_BYTES = 2048


def summary_items(preview: bool) -> list[str]:
    items = ["FLAGS", "RFC822.SIZE", "INTERNALDATE", "BODYSTRUCTURE", f"BODY.PEEK[HEADER.FIELDS ({HEADERS})]"]
    return [*items, "PREVIEW" if preview else f"BODY.PEEK[TEXT]<0.{TEXT_BYTES}>"]


def _part(item: dict[bytes, Any], prefix: bytes) -> bytes:
    value = next((v for k, v in item.items() if k.startswith(prefix)), b"")
    return value if isinstance(value, bytes) else b""


def sort_time(item: dict[bytes, Any]) -> float:
    """When a message was sent, the way IMAP SORT DATE sees it: its Date header, else its arrival."""
    header = _part(item, b"BODY[HEADER").decode("utf-8", "replace")
    _, _, value = header.partition(":")
    moment = parse_date(value.strip()) if value else None
    return moment.timestamp() if moment else arrival(item)


def arrival(item: dict[bytes, Any]) -> float:
    arrived = item.get(b"INTERNALDATE")
    if isinstance(arrived, datetime):
        return (arrived if arrived.tzinfo else arrived.astimezone()).timestamp()
    return 0.0


@dataclass
class Fetched:
    """One message of a summary FETCH, decoded."""

    uid: int
    flags: tuple[bytes, ...]
    parsed: ParsedMail
    snippet: str
    attachments: list[Attachment]
    time: float
    arrived: float  # INTERNALDATE: when the server received it


def read(uid: int, item: dict[bytes, Any]) -> Fetched:
    headers = _part(item, b"BODY[HEADER")
    text = _part(item, b"BODY[TEXT]")
    preview = item.get(b"PREVIEW")
    # compat32: several times faster than the modern policy, headers decoded the same way
    parsed = decode(parse_bytes(headers + text if text else headers, fast=True))
    if isinstance(preview, bytes):
        snippet = " ".join(preview.decode("utf-8", "replace").split())[:SNIPPET_CHARS]
    else:
        snippet = parsed.snippet
    moment = parsed.timestamp if parsed.timestamp is not None else arrival(item)
    return Fetched(
        uid=uid,
        flags=tuple(item.get(b"FLAGS", ())),
        parsed=parsed,
        snippet=snippet,
        attachments=attachments(item.get(b"BODYSTRUCTURE")),
        time=moment,
        arrived=arrival(item),
    )
