"""Opaque cursors: an offset bound to the query it was issued for."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Annotated

import orjson
from pydantic import Field

from deskmcp.core.errors import BadRequest

CursorArg = Annotated[str | None, Field()]
"""The `cursor` argument of every paged tool: the answer's next_cursor, which every paged tool's
answer carries (no description: the name says it, and forty tools would repeat one)."""


def query_key(*parts: object) -> str:
    """A short digest of everything that defines a result list (filters, query, order)."""
    return hashlib.blake2b(orjson.dumps(parts, default=str), digest_size=6).hexdigest()


def encode_cursor(offset: int, key: str) -> str:
    raw = orjson.dumps({"o": offset, "k": key})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, key: str) -> int:
    """The offset stored in `cursor`; 0 for none. A cursor from another query is refused."""
    if cursor is None or cursor == "":
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        offset = data["o"]
        issued_for = data["k"]
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise BadRequest(
            "The cursor is not valid. Pass the next_cursor of a previous page unchanged, or omit it.",
            {"cursor": cursor},
        ) from exc
    if not isinstance(offset, int) or offset < 0:
        raise BadRequest("The cursor is not valid.", {"cursor": cursor})
    if issued_for != key:
        raise BadRequest(
            "The cursor belongs to a different query or filters; repeat the first call without a cursor.",
            {"cursor": cursor},
        )
    return offset


def page(offset: int, limit: int, fetched: int, key: str) -> str | None:
    """The next cursor when `fetched` (asked for limit + 1) shows there is more."""
    return encode_cursor(offset + limit, key) if fetched > limit else None
