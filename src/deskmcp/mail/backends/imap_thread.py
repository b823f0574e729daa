"""Conversations over IMAP, across folders.

A conversation is keyed by its root Message-ID: a message's first References entry, else the
root of the message its In-Reply-To names (looked up on the server: some clients write only
In-Reply-To), else its own Message-ID.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deskmcp.mail.backends import imap_fetch
from deskmcp.mail.mime import ParsedMail, decode, parse_bytes, thread_root

DEPTH = 5  # replies to replies followed through In-Reply-To alone
_FIELDS = "BODY.PEEK[HEADER.FIELDS (DATE MESSAGE-ID IN-REPLY-TO REFERENCES)]"


def _headers(item: dict[bytes, Any]) -> ParsedMail:
    return decode(parse_bytes(next((v for k, v in item.items() if k.startswith(b"BODY")), b""), fast=True))


def _any_of(header: str, values: list[str], rest: list[Any] | None = None) -> list[Any]:
    criteria: list[Any] = rest if rest is not None else ["HEADER", header, values[0]]
    for value in values if rest is not None else values[1:]:
        criteria = ["OR", ["HEADER", header, value], criteria]
    return criteria


class Conversations:
    """Roots of conversations (remembered: headers never change) and their members.

    `folders(client)` lists the folders a conversation spans; `select(client, folder)` opens one
    read-only and returns its UIDVALIDITY.
    """

    def __init__(self, folders: Callable[[Any], list[str]], select: Callable[[Any, str], int]) -> None:
        self.folders = folders
        self.select = select
        self.roots: dict[str, str] = {}

    def root(self, parsed: ParsedMail) -> str:
        if not parsed.references and parsed.in_reply_to:
            return self.roots.get(parsed.in_reply_to) or parsed.in_reply_to
        return thread_root(parsed)

    def resolve(self, client: Any, parents: set[str]) -> None:
        """Learn the roots of these parents (the In-Reply-To of replies without References)."""
        todo = {p for p in parents if p and p not in self.roots}
        chain: dict[str, str] = {}
        for _ in range(DEPTH):
            if not todo:
                break
            found = self._find(client, todo)
            following: set[str] = set()
            for mid in todo:
                parent = found.get(mid)
                if parent is not None and parent.references:
                    self.roots[mid] = parent.references[0]
                elif parent is not None and parent.in_reply_to and parent.in_reply_to not in chain:
                    chain[mid] = parent.in_reply_to
                    following.add(parent.in_reply_to)
                else:
                    self.roots[mid] = mid
            todo = {i for i in following if i not in self.roots}
        for mid in chain:
            seen, at = {mid}, chain[mid]
            while at in chain and at not in seen:
                seen.add(at)
                at = chain[at]
            self.roots[mid] = self.roots.get(at, at)

    def _find(self, client: Any, ids: set[str]) -> dict[str, ParsedMail]:
        out: dict[str, ParsedMail] = {}
        for folder in self.folders(client):
            missing = [i for i in ids if i not in out]
            if not missing:
                break
            self.select(client, folder)
            uids = client.search(_any_of("Message-ID", missing))
            for item in client.fetch(uids, [_FIELDS]).values() if uids else ():
                parsed = _headers(item)
                if parsed.rfc_message_id in ids:
                    out[parsed.rfc_message_id] = parsed
        return out

    def members(self, client: Any, root: str) -> list[tuple[float, str, int, int]]:
        """(sent time, folder, UIDVALIDITY, uid) of every message of the conversation `root`."""
        found: dict[tuple[str, int], tuple[float, str, int, int]] = {}
        known, asked = {root}, set[str]()
        for _ in range(DEPTH):
            new = sorted(known - asked)
            if not new:
                break
            asked |= set(new)
            for folder in self.folders(client):
                validity = self.select(client, folder)
                base: list[Any] = ["OR", ["HEADER", "References", root], ["HEADER", "Message-ID", root]]
                uids = [u for u in client.search(_any_of("In-Reply-To", new, base)) if (folder, u) not in found]
                for uid, item in client.fetch(uids, [_FIELDS, "INTERNALDATE"]).items() if uids else ():
                    parsed = _headers(item)
                    moment = parsed.timestamp if parsed.timestamp is not None else imap_fetch.arrival(item)
                    found[(folder, uid)] = (moment, folder, validity, uid)
                    if parsed.rfc_message_id:
                        known.add(parsed.rfc_message_id)
        return sorted(found.values())
