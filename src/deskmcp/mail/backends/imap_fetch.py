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
    preview = item.get(b"PREVIEW")
    return from_parts(
        uid,
        tuple(item.get(b"FLAGS", ())),
        headers=_part(item, b"BODY[HEADER"),
        text=_part(item, b"BODY[TEXT]"),
        preview=preview if isinstance(preview, bytes) else None,
        found=attachments(item.get(b"BODYSTRUCTURE")),
        arrived=arrival(item),
    )


def from_parts(
    uid: int,
    flags: tuple[bytes, ...],
    *,
    headers: bytes,
    text: bytes,
    preview: bytes | None,
    found: list[Attachment],
    arrived: float,
) -> Fetched:
    """A summary from what a summary FETCH returns (or what the local copy kept of it): the
    HEADERS fields, the first TEXT_BYTES of the text, the server's preview if it has one."""
    # compat32: several times faster than the modern policy, headers decoded the same way
    parsed = decode(parse_bytes(headers + text if text else headers, fast=True), text=preview is None)
    if preview is not None:
        snippet = " ".join(preview.decode("utf-8", "replace").split())[:SNIPPET_CHARS]
    else:
        snippet = parsed.snippet
    return Fetched(
        uid=uid,
        flags=flags,
        parsed=parsed,
        snippet=snippet,
        attachments=found,
        time=parsed.timestamp if parsed.timestamp is not None else arrived,
        arrived=arrived,
    )


def header_fields(head: bytes) -> bytes:
    """What `BODY[HEADER.FIELDS (HEADERS)]` returns for a message whose header block is `head`:
    the lines of those fields (with their continuation lines), in order, and a blank line."""
    wanted = {name.encode().lower() for name in HEADERS.split()}
    out: list[bytes] = []
    keep = False
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):
            if keep:
                out.append(line)
            continue
        name, colon, _ = line.partition(b":")
        keep = bool(colon) and name.strip().lower() in wanted
        if keep:
            out.append(line)
    return b"".join(out) + b"\r\n"


def split_message(raw: bytes) -> tuple[bytes, bytes]:
    """A message's header block (through its last header line) and its text (after the blank line)."""
    found = [(at, sep) for sep in (b"\r\n\r\n", b"\n\n") if (at := raw.find(sep)) >= 0]
    if not found:
        return raw, b""
    at, sep = min(found)
    return raw[: at + len(sep) // 2], raw[at + len(sep) :]
