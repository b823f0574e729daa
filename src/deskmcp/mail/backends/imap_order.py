"""Newest first over IMAP: the server's SORT by Date where offered, else SEARCH and the sort
times fetched here; where a page ended (a stable boundary, not an offset); and the attachment
names behind has:/filename:. Sort times and attachment names never change for a message, so
both are remembered per (folder, UIDVALIDITY, uid)."""

from __future__ import annotations

from typing import Any

from deskmcp.core.errors import BadRequest
from deskmcp.mail.backends import imap_fetch, imap_search

CACHED = 200_000

# Where a page ends: (sent time, folder, uid).
Key = tuple[float, str, int]
Where = tuple[str, int]  # the selected folder and its UIDVALIDITY


def order(key: Key) -> tuple[float, str, int]:
    """Newest first; ties by folder, then the newer uid."""
    return (-key[0], key[1], -key[2])


class Ordering:
    def __init__(self) -> None:
        self._times: dict[tuple[str, int, int], float] = {}
        self._names: dict[tuple[str, int, int], tuple[str, ...]] = {}

    def newest_first(self, client: Any, where: Where, criteria: list[Any]) -> list[int]:
        """UIDs of the selected folder matching `criteria`, newest first."""
        from imapclient.exceptions import IMAPClientError

        charset = imap_search.charset_for(criteria)
        try:
            if client.has_capability("SORT"):
                return list(client.sort(["REVERSE", "DATE"], criteria, charset or "UTF-8"))
            uids = list(client.search(criteria, charset))
        except IMAPClientError as exc:
            if charset and "BADCHARSET" in str(exc).upper():
                raise BadRequest(
                    "This IMAP server cannot search for non-ASCII text; search with ASCII words"
                    " (a sender's address, another word of the subject).",
                    {"charset": charset},
                ) from exc
            raise
        times = self.times(client, where, uids)
        return sorted(uids, key=lambda u: (-times[u], -u))

    def remember(self, folder: str, validity: int, times: dict[int, float]) -> None:
        for uid, when in times.items():
            self._times[(folder, validity, uid)] = when

    def knows(self, where: Where, uids: list[int]) -> bool:
        """Whether the sort time of every uid is known here (`times` then asks the server nothing)."""
        folder, validity = where
        return all((folder, validity, u) in self._times for u in uids)

    def times(self, client: Any, where: Where, uids: list[int]) -> dict[int, float]:
        """The sort time of each uid in the selected folder."""
        folder, validity = where
        missing = [u for u in uids if (folder, validity, u) not in self._times]
        if missing:
            if len(self._times) > CACHED:
                self._times.clear()
            for uid, item in client.fetch(missing, imap_fetch.KEY_ITEMS).items():
                self._times[(folder, validity, uid)] = imap_fetch.sort_time(item)
        return {u: self._times.get((folder, validity, u), 0.0) for u in uids}

    def after(self, client: Any, where: Where, uids: list[int], boundary: Key) -> int:
        """Where in `uids` (newest first) the messages past `boundary` start: a binary search
        that fetches the sort times of a few messages."""
        low, high = 0, len(uids)
        target = order(boundary)
        while low < high:
            middle = (low + high) // 2
            uid = uids[middle]
            when = self.times(client, where, [uid])[uid]
            if order((when, where[0], uid)) <= target:
                low = middle + 1
            else:
                high = middle
        return low

    def with_structure(
        self, client: Any, where: Where, uids: list[int], conditions: list[imap_search.Structure]
    ) -> list[int]:
        """The uids whose attachments satisfy has:/filename: (read from BODYSTRUCTURE)."""
        if not conditions or not uids:
            return uids
        folder, validity = where
        missing = [u for u in uids if (folder, validity, u) not in self._names]
        if len(self._names) + len(missing) > CACHED:
            self._names.clear()
            missing = uids
        for start in range(0, len(missing), 1000):
            for uid, item in client.fetch(missing[start : start + 1000], ["BODYSTRUCTURE"]).items():
                found = imap_fetch.attachments(item.get(b"BODYSTRUCTURE"))
                self._names[(folder, validity, uid)] = tuple(a.filename for a in found)
        names = self._names
        return [u for u in uids if imap_search.matches_structure(names.get((folder, validity, u), ()), conditions)]
