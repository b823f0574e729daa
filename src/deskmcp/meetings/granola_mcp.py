"""Granola's hosted MCP server as the meetings server reads it: list, get, transcript.

The hosted server (`https://mcp.granola.ai/mcp`, streamable HTTP) works on every Granola plan and
signs people in with OAuth 2.1 (PKCE, dynamic client registration); deskmcp is its OAuth client
through `deskmcp.connect.oauth` (tokens in a 0600 file, refreshed). What is published about it,
and what deskmcp assumes beyond that (docs/meetings.md, "Granola's hosted MCP server"):

- Tool names and arguments (Maton's "Granola MCP Routing Reference" and its schemas, Composio's
  and Scalekit's Granola MCP connectors): `list_meetings` `{}`, `get_meetings`
  `{"meeting_ids": [id, ...]}`, `get_meeting_transcript` `{"meeting_id": id}` (paid plans only;
  Scalekit: the Basic plan sees the last 30 days and no transcripts). About 100 requests a minute
  (the same reference).
- Answers are MCP tool results whose content is `text` (the reference's only example is
  `query_granola_meetings`'s prose). The format of the text of `list_meetings`, `get_meetings`
  and `get_meeting_transcript` is **not published**. deskmcp reads, in this order:
  `structuredContent` when the server sends it; else the text when it is JSON. Either way an
  answer is a list, or an object holding the list under `meetings` (list/get) or `transcript`
  (transcript). A meeting is read with the public API's note fields (`api_notes`: id, title,
  created_at, updated_at, owner, attendees, calendar_event, folder_membership, summary_markdown /
  summary_text, web_url), the same company's names for the same things: an assumption, not a
  published fact. Anything else is `parse_error` naming the tool.
- A transcript refused as an error result whose text speaks of a plan, tier, upgrade or paid
  feature is read as "this plan has no transcripts": the meetings sync without them and
  `granola.cache.status` says so (`sync.transcripts`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import orjson

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import AuthRequired, DeskError, ExternalServiceError, ParseError, PermissionDenied
from deskmcp.core.throttle import Throttle, TokenBucket
from deskmcp.meetings.granola_api import ListedNote, NotePage

if TYPE_CHECKING:
    import httpx2
    from anyio.from_thread import BlockingPortal
    from mcp import Client
    from mcp.types import CallToolResult

    from deskmcp.connect.oauth import Browser

log = logging.getLogger(__name__)

SERVICE = "Granola's hosted MCP server"
HOSTED_URL = "https://mcp.granola.ai/mcp"
PER_MINUTE = 100.0
"""About 100 requests a minute (Maton's routing reference): kept to with a small burst."""
BURST = 5
GET_BATCH = 10
"""Meetings asked for in one `get_meetings` call."""
_PLAN_WORDS = re.compile(r"\b(plan|tier|upgrade|paid|subscription)\b", re.IGNORECASE)
SIGN_IN = "Run `deskmcp auth granola` to sign in to Granola in the browser."
USER_SIGN_IN_PATH = "/auth/granola/url"
USER_SIGN_IN = (
    f"Sign in to Granola with your own account: open {USER_SIGN_IN_PATH} on this deskmcp server (with your "
    "deskmcp access token) and follow the address it answers in a browser."
)
"""How a user of a shared server signs in (users mode: `servers.RemoteSignIn` named "granola")."""


def signed_out(sign_in: str = SIGN_IN) -> AuthRequired:
    details = {"service": SERVICE, "setting": "GRANOLA_MCP_URL"}
    if sign_in == USER_SIGN_IN:
        details = {"service": SERVICE, "sign_in": USER_SIGN_IN_PATH}
    return AuthRequired(
        f"deskmcp is not signed in to {SERVICE}, or Granola no longer accepts its sign-in. {sign_in}", details
    )


async def no_browser(url: str) -> None:
    """The browser of an unattended sync: there is none, signing in is `deskmcp auth granola`'s."""
    from mcp.client.auth import OAuthFlowError

    del url
    raise OAuthFlowError(signed_out().message)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _text(result: CallToolResult) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def payload(tool: str, result: CallToolResult, key: str) -> list[Any]:
    """The list an answer of `tool` holds: structuredContent first, else JSON text; a list, or an
    object holding it under `key`. Anything else: `parse_error` naming the tool."""
    data: Any = result.structured_content
    if data is None:
        try:
            data = orjson.loads(_text(result))
        except orjson.JSONDecodeError:
            data = None
    if isinstance(data, dict) and isinstance(data.get(key), list):
        data = data[key]
    if not isinstance(data, list):
        raise ParseError(
            f"{SERVICE} answered {tool} in a shape deskmcp does not understand (expected a list, or an object "
            f"with a list '{key}'); deskmcp asks again at the next sync.",
            {"service": SERVICE, "tool": tool},
        )
    return data


def as_note(meeting: dict[str, Any]) -> dict[str, Any]:
    """A hosted meeting as a public API note (same field names, see the module's notes)."""
    note = dict(meeting)
    if "id" not in note and isinstance(note.get("meeting_id"), str):
        note["id"] = note["meeting_id"]
    note.pop("transcript", None)  # the transcript comes from its own tool
    return note


class GranolaMcp:
    """A client of the hosted MCP server at `url`, with the same face as `GranolaApi` (a listing
    page, a note by id) so that the API source's sync runs on it unchanged."""

    def __init__(
        self,
        url: str,
        *,
        auth: httpx2.Auth | None = None,
        signed_in: Callable[[], bool] = lambda: True,
        sign_in: str = SIGN_IN,
        clock: Clock = SYSTEM_CLOCK,
        rate: float = 1.0,
        timeout: float = 60.0,
    ) -> None:
        """`auth`: the OAuth client (`deskmcp.connect.oauth.oauth_for`); `signed_in`: whether its token
        file holds tokens (without them no request is made: nobody is there to sign in)."""
        self.url = url
        self.auth = auth
        self.signed_in = signed_in
        self.sign_in = sign_in
        """How to sign in, said in auth_required."""
        self.timeout = timeout
        self.throttle = Throttle(concurrency=1, bucket=TokenBucket(BURST, PER_MINUTE / 60 * rate, clock), clock=clock)
        self.requests = 0
        self.transcripts: str | None = None
        """Why transcripts are not synced ("not on this Granola plan: ..."), once the server said so."""
        self._batch: dict[str, dict[str, Any]] = {}
        self.sessions = 0
        """MCP sessions opened (one per sync)."""
        self._portal: BlockingPortal | None = None
        self._session: ExitStack | None = None
        self._client: Client | None = None
        self._statuses: list[int] = []
        """The HTTP statuses of the call under way (what a failure is read from)."""

    def close(self) -> None:
        """Nothing is kept open between syncs: a session ends with its sync."""

    # -- the session of a sync -------------------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[None]:
        """Every call made inside goes through one MCP session (one handshake, one HTTP
        connection), opened at the first call and closed on the way out. A call that fails
        ends the session; the next call inside opens another. Outside, each call has its own."""
        with anyio.from_thread.start_blocking_portal() as portal:
            self._portal = portal
            try:
                yield
            finally:
                self._end_session()
                self._portal = None

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[Client]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def record(response: httpx2.Response) -> None:
            self._statuses.append(response.status_code)

        http = httpx2.AsyncClient(
            auth=self.auth, timeout=httpx2.Timeout(self.timeout), event_hooks={"response": [record]}
        )
        async with http, Client(streamable_http_client(self.url, http_client=http)) as client:
            yield client

    def _end_session(self) -> None:
        stack, self._session = self._session, None
        if stack is not None:
            try:
                stack.close()
            except Exception as exc:  # a session that broke may fail to close: it is gone either way
                log.debug("%s: the session ended with %s", SERVICE, type(exc).__name__)

    # -- one tool call -------------------------------------------------------------------------

    def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        if not self.signed_in():
            raise signed_out(self.sign_in)
        with self.throttle:
            self.requests += 1
            portal = self._portal
            if portal is None:
                return anyio.run(self._call, tool, arguments)
            self._statuses = []
            try:
                if self._session is None:
                    stack = ExitStack()
                    self._client = stack.enter_context(portal.wrap_async_context_manager(self._connected()))
                    self._session = stack
                    self.sessions += 1
                assert self._client is not None
                return portal.call(self._client.call_tool, tool, arguments)
            except Exception as exc:  # the remote boundary: said as the taxonomy's error
                self._end_session()
                raise self._failure(tool, exc, self._statuses) from exc

    async def _call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """One call in a session of its own."""
        self._statuses = []
        self.sessions += 1
        try:
            async with self._connected() as client:
                return await client.call_tool(tool, arguments)
        except Exception as exc:  # the remote boundary: said as the taxonomy's error
            raise self._failure(tool, exc, self._statuses) from exc

    def _failure(self, tool: str, exc: BaseException, statuses: list[int]) -> DeskError:
        from mcp.client.auth import OAuthFlowError

        leaves = _leaves(exc)
        if any(isinstance(leaf, OAuthFlowError) for leaf in leaves) or 401 in statuses:
            return signed_out(self.sign_in)
        for leaf in leaves:
            if isinstance(leaf, AuthRequired):
                return leaf  # said by the sign-in's own tokens (none for this address, a refresh refused)
        if statuses and statuses[-1] == 403:
            return PermissionDenied(
                f"{SERVICE} refused {tool} (403) for the account deskmcp signed in as. {self.sign_in}",
                {"service": SERVICE, "tool": tool, "status": 403},
            )
        reason = "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaves)[:300]
        return ExternalServiceError(
            f"{SERVICE} could not be reached for {tool}; answers come from the last sync.",
            {"service": SERVICE, "tool": tool, "reason": reason},
        )

    def _checked(self, tool: str, result: CallToolResult) -> CallToolResult:
        if result.is_error:
            raise ExternalServiceError(
                f"{SERVICE} answered {tool} with an error: {_text(result)[:300]}",
                {"service": SERVICE, "tool": tool},
            )
        return result

    # -- the face the sync uses ------------------------------------------------------------------

    def list_page(self, *, updated_after: str | None, cursor: str | None) -> NotePage:
        """Every meeting `list_meetings` answers (it has no published paging nor filter: one page)."""
        del updated_after, cursor
        tool = "list_meetings"
        listed: list[ListedNote] = []
        for item in payload(tool, self._checked(tool, self.call(tool, {})), "meetings"):
            note = as_note(item) if isinstance(item, dict) else {}
            note_id = note.get("id")
            if not isinstance(note_id, str) or not note_id:
                raise ParseError(
                    f"{SERVICE} answered {tool} with a meeting without an id; the sync tries again at the next one.",
                    {"service": SERVICE, "tool": tool},
                )
            updated = note.get("updated_at")
            listed.append(ListedNote(note_id, updated if isinstance(updated, str) else ""))
        self._batch.clear()
        return NotePage(listed, False, None)

    def prefetch(self, note_ids: list[str]) -> None:
        """Ask for these meetings in one `get_meetings` call (kept for `get_note`)."""
        tool = "get_meetings"
        wanted = [i for i in note_ids if i not in self._batch]
        for start in range(0, len(wanted), GET_BATCH):
            chunk = wanted[start : start + GET_BATCH]
            got = payload(tool, self._checked(tool, self.call(tool, {"meeting_ids": chunk})), "meetings")
            for item in got:
                note = as_note(item) if isinstance(item, dict) else {}
                if isinstance(note.get("id"), str) and note["id"] in chunk:
                    self._batch[note["id"]] = note

    def get_note(self, note_id: str) -> dict[str, Any] | None:
        """The meeting with its transcript (when the plan has them); None when it is gone."""
        if note_id not in self._batch:
            self.prefetch([note_id])
        note = self._batch.pop(note_id, None)
        if note is None:
            return None
        if self.transcripts is None:
            transcript = self.transcript(note_id)
            if transcript is not None:
                note["transcript"] = transcript
        return note

    def transcript(self, note_id: str) -> list[Any] | None:
        """The meeting's transcript segments; None when this plan has none (said in `transcripts`)."""
        tool = "get_meeting_transcript"
        result = self.call(tool, {"meeting_id": note_id})
        if result.is_error and _PLAN_WORDS.search(_text(result)):
            self.transcripts = f"not on this Granola plan: {_text(result)[:200]}"
            log.info("%s: transcripts are not available on this plan", SERVICE)
            return None
        return payload(tool, self._checked(tool, result), "transcript")


def token_file_for(url: str, folder: Path | None = None) -> Path:
    """Where `deskmcp auth granola` keeps the tokens for `url` (`deskmcp connect`'s folder)."""
    from deskmcp.connect.oauth import token_folder, token_path

    return token_path(folder or token_folder(), url)


def signed_in_at(path: Path) -> bool:
    """Whether the token file at `path` holds tokens (a sign-in finished there)."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(data, dict) and isinstance(data.get("tokens"), dict)


async def sign_in(url: str, *, folder: Path | None = None, browser: Browser | None = None) -> list[str]:
    """Sign in to the hosted server at `url` in the browser (`deskmcp auth granola`) and keep the
    tokens (`deskmcp.connect.oauth`); the server's tool names, read once signed in."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from deskmcp.connect.oauth import oauth_for, open_browser

    auth = oauth_for(url, folder=folder, browser=browser or open_browser)
    async with (
        httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return [tool.name for tool in (await client.list_tools()).tools]
