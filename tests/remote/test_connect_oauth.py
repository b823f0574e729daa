"""What `deskmcp connect` keeps on this machine as an OAuth client: the token file (0600, an expired
access token never handed back, only its refresh token), the loopback redirect listener (code,
state and the RFC 9207 `iss` passed on; an error answer refused), and the redirect port kept for
the registration that names it. The whole flow against authorization servers is the conformance
suite's client authorization scenarios (conformance/run.sh)."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from deskmcp.connect.oauth import ClientSettings, LoopbackRedirect, TokenFile, oauth_for

pytestmark = pytest.mark.anyio

URL = "https://desk.example.com/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_security_the_token_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    store = TokenFile(tmp_path / "connect" / "oauth.json")
    await store.set_tokens(OAuthToken(access_token="at", refresh_token="rt", expires_in=3600))
    await store.set_client_info(OAuthClientInformationFull(client_id="cid", redirect_uris=None))

    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert (await store.get_tokens()).access_token == "at"  # type: ignore[union-attr]
    assert (await store.get_client_info()).client_id == "cid"  # type: ignore[union-attr]


async def test_an_expired_access_token_is_not_handed_back_only_its_refresh_token(tmp_path: Path) -> None:
    clock = Clock()
    store = TokenFile(tmp_path / "oauth.json", clock=clock)
    await store.set_tokens(OAuthToken(access_token="at", refresh_token="rt", expires_in=60))

    clock.now += 30
    fresh = await store.get_tokens()
    clock.now += 31
    expired = await store.get_tokens()

    assert fresh is not None and fresh.access_token == "at" and fresh.expires_in == 30
    assert expired is not None and expired.access_token == "" and expired.refresh_token == "rt"


async def test_an_expired_access_token_without_a_refresh_token_is_dropped(tmp_path: Path) -> None:
    clock = Clock()
    store = TokenFile(tmp_path / "oauth.json", clock=clock)
    await store.set_tokens(OAuthToken(access_token="at", expires_in=60))
    clock.now += 61
    assert await store.get_tokens() is None


async def answer_redirect(redirect: LoopbackRedirect, query: dict[str, str]) -> tuple[int, object]:
    redirect.listen()
    async with anyio.create_task_group() as tg:
        outcome: list[object] = []

        async def wait() -> None:
            try:
                outcome.append(await redirect.wait(seconds=30))
            except OAuthFlowError as exc:
                outcome.append(exc)

        tg.start_soon(wait)
        async with httpx2.AsyncClient(timeout=30) as http:
            page = await http.get(redirect.redirect_uri, params=query)
    return page.status_code, outcome[0]


async def test_the_redirect_listener_passes_on_the_code_the_state_and_the_issuer() -> None:
    with anyio.fail_after(60):
        status, result = await answer_redirect(
            LoopbackRedirect(), {"code": "c-1", "state": "s-1", "iss": "https://login.example.com"}
        )
    assert status == 200
    assert (result.code, result.state, result.iss) == ("c-1", "s-1", "https://login.example.com")  # type: ignore[attr-defined]


async def test_security_an_error_answer_from_the_authorization_server_is_refused() -> None:
    with anyio.fail_after(60):
        status, result = await answer_redirect(
            LoopbackRedirect(), {"error": "access_denied", "error_description": "the person said no", "state": "s"}
        )
    assert status == 400
    assert isinstance(result, OAuthFlowError)
    assert "the person said no" in str(result)


def test_the_redirect_port_is_kept_for_the_registration_that_names_it(tmp_path: Path) -> None:
    first = oauth_for(URL, folder=tmp_path)
    second = oauth_for(URL, folder=tmp_path)
    other = oauth_for("https://elsewhere.example.com/mcp", folder=tmp_path)
    uris = [str(p.context.client_metadata.redirect_uris[0]) for p in (first, second, other)]  # type: ignore[index]

    assert uris[0] == uris[1]
    assert uris[0].startswith("http://127.0.0.1:") and uris[0].endswith("/callback")
    assert len(list(tmp_path.glob("oauth-*.json"))) == 2


async def test_a_pre_registered_client_is_used_instead_of_registering(tmp_path: Path) -> None:
    provider = oauth_for(URL, folder=tmp_path, client=ClientSettings(client_id="team-cid", client_secret="s3cret"))
    info = await provider.context.storage.get_client_info()
    assert info is not None
    assert (info.client_id, info.client_secret, info.token_endpoint_auth_method) == (
        "team-cid",
        "s3cret",
        "client_secret_basic",
    )
