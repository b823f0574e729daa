"""Granola's public API, as the meetings server reads it: list notes, get one with its transcript.

Reference: https://docs.granola.ai (API reference: "List notes", "Get note"; rate limits).

- `GET /v1/notes`: `page_size` 1-30 (default 10), `cursor`, `created_before`, `created_after`,
  `updated_after`; answers `{"notes": [...], "hasMore": bool, "cursor": str | null}`, each
  note listed with `id`, `object`, `title`, `owner`, `created_at`, `updated_at`.
- `GET /v1/notes/{note_id}?include=transcript`: the note (see `api_notes` for its fields);
  401 for an invalid key, 404 for a note that is not (or no longer) there.
- Authentication: `Authorization: Bearer grn_...`; keys exist on Business and Enterprise plans.
- Rate limits (per workspace): 25 requests in a burst per 5 seconds, 5 per second sustained;
  beyond them 429 with `Retry-After`.

Every request goes through the core's policy (`core/http.py`): a token bucket at the published
limits, 429 waited out as `Retry-After` says, 5xx and refused connections retried with
backoff. The key is sent in the header only: it is never logged nor put in an error.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import AuthRequired, DeskError, NotFound, ParseError, PermissionDenied
from deskmcp.core.http import new_client, request
from deskmcp.core.retry import RetryPolicy
from deskmcp.core.throttle import Throttle, TokenBucket

if TYPE_CHECKING:
    import httpx2

SERVICE = "Granola's API"
PAGE_SIZE = 30
"""The most notes a listing page may hold (the reference's `page_size` maximum)."""
BURST = 25
PER_SECOND = 5.0
"""The published rate limits: 25 requests in a burst (per 5 s), 5 per second sustained."""
MARGIN = 0.98
"""The share of the sustained rate kept to, with one request of the burst left unused: a request
that reaches the service a few milliseconds later than the one after it would otherwise find
the bucket empty and cost a 429 and a second's wait."""


@dataclass(frozen=True)
class ListedNote:
    id: str
    updated_at: str


@dataclass(frozen=True)
class NotePage:
    notes: list[ListedNote]
    has_more: bool
    cursor: str | None


def key_error() -> AuthRequired:
    return AuthRequired(
        "Granola's API refused GRANOLA_API_KEY (401): the key is wrong, revoked or expired. Create one in the "
        "Granola app (Settings -> Connectors -> API keys) and set GRANOLA_API_KEY to it.",
        {"service": SERVICE, "status": 401, "setting": "GRANOLA_API_KEY"},
    )


def plan_error() -> PermissionDenied:
    return PermissionDenied(
        "Granola's API denied access (403): API keys work on Business and Enterprise plans only (on "
        "Enterprise, an admin allows API access for members). Without API access, see the README's "
        "'Connect Granola' for the other sources.",
        {"service": SERVICE, "status": 403, "setting": "GRANOLA_API_KEY"},
    )


class GranolaApi:
    """A client of the public API at `base_url`, paced at the published limits (scaled by `rate`)."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        rate: float = 1.0,
        timeout: float = 30.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = new_client(
            timeout=timeout,
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json", "User-Agent": "deskmcp"},
            transport=transport,
        )
        bucket = TokenBucket(BURST - 1, PER_SECOND * rate * MARGIN, clock)
        self.throttle = Throttle(concurrency=1, bucket=bucket, clock=clock)
        # A background sync can wait out a long Retry-After; a tool call never waits on this.
        self.retry = RetryPolicy(attempts=8, base=1.0, cap=30.0, max_wait=600.0, clock=clock)
        self.requests = 0
        self.transcripts: str | None = None
        """Every plan with API access has transcripts: never set."""

    def close(self) -> None:
        self.client.close()

    def session(self) -> AbstractContextManager[None]:
        """A sync's requests share the client's connection already: nothing more to open."""
        return nullcontext()

    def prefetch(self, note_ids: list[str]) -> None:
        """Notes are fetched one by one (`get_note`): nothing to ask for ahead."""

    def _get(self, path: str, params: dict[str, Any]) -> bytes:
        self.requests += 1
        try:
            response = request(
                self.client,
                "GET",
                f"{self.base_url}{path}",
                service=SERVICE,
                retry=self.retry,
                throttle=self.throttle,
                params=params,
            )
        except AuthRequired as exc:
            raise key_error() from exc
        except PermissionDenied as exc:
            raise plan_error() from exc
        return response.content

    def list_page(self, *, updated_after: str | None, cursor: str | None, page_size: int = PAGE_SIZE) -> NotePage:
        """One page of the note listing (newest first, as Granola sends it)."""
        params: dict[str, Any] = {"page_size": page_size}
        if updated_after:
            params["updated_after"] = updated_after
        if cursor:
            params["cursor"] = cursor
        body = self._get("/v1/notes", params)
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ParseError(
                f"{SERVICE} sent a page of its note listing that is not JSON ({exc}); the sync stopped and "
                "starts again at that page.",
                {"service": SERVICE, "cursor": cursor},
            ) from exc
        notes = data.get("notes") if isinstance(data, dict) else None
        if not isinstance(notes, list):
            raise ParseError(
                f"{SERVICE} sent a page of its note listing without a list of 'notes'; the sync stopped and "
                "starts again at that page.",
                {"service": SERVICE, "cursor": cursor},
            )
        listed: list[ListedNote] = []
        for note in notes:
            note_id = note.get("id") if isinstance(note, dict) else None
            if not isinstance(note_id, str) or not note_id:
                raise ParseError(
                    f"{SERVICE} listed a note without an id; the sync stopped and starts again at that page.",
                    {"service": SERVICE, "cursor": cursor},
                )
            updated = note.get("updated_at")
            listed.append(ListedNote(note_id, updated if isinstance(updated, str) else ""))
        next_cursor = data.get("cursor")
        has_more = data.get("hasMore") is True and isinstance(next_cursor, str) and bool(next_cursor)
        return NotePage(listed, has_more, next_cursor if has_more else None)

    def get_note(self, note_id: str) -> dict[str, Any] | None:
        """The note with its transcript; None when it is gone (deleted or no longer shared)."""
        try:
            body = self._get(f"/v1/notes/{note_id}", {"include": "transcript"})
        except NotFound:
            return None
        try:
            note = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ParseError(
                f"{SERVICE} sent note {note_id!r} as something that is not JSON ({exc}); it is fetched again "
                "at the next sync.",
                {"service": SERVICE, "id": note_id},
            ) from exc
        if not isinstance(note, dict) or note.get("id") != note_id:
            raise ParseError(
                f"{SERVICE} sent note {note_id!r} as something that is not that note; it is fetched again at "
                "the next sync.",
                {"service": SERVICE, "id": note_id},
            )
        return note


def is_unreachable(error: DeskError) -> bool:
    """Whether `error` means the service could not be reached (the index then answers, stale),
    rather than a setting to fix (a wrong key, a plan without API access)."""
    return not isinstance(error, AuthRequired | PermissionDenied)
