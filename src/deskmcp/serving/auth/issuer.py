"""The authorization server as the resource server sees it: its metadata and its signing keys.

The metadata is found at the issuer's well-known URLs (RFC 8414, then OpenID Connect Discovery)
and must name the configured issuer exactly. The keys (`jwks_uri`) are cached; a token signed
with a key id the cache lacks causes one refetch (the issuer rotated its keys), at most once per
`jwks_refetch_interval`, so a stream of tokens with made-up key ids cannot make deskmcp hammer
the issuer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from deskmcp.serving.auth.settings import AuthorizationSettings

log = logging.getLogger("deskmcp.serving.auth")


class IssuerUnavailable(Exception):
    """The issuer's metadata or keys could not be had (network, status, or a malformed document)."""


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414's path-inserted URL, then OpenID Connect's."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]
    if path:
        urls.append(f"{origin}/.well-known/openid-configuration{path}")
    return urls


class IssuerKeys:
    """The issuer's metadata and key set, fetched on first use and cached."""

    def __init__(
        self,
        settings: AuthorizationSettings,
        client: httpx2.AsyncClient,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._fetched_at: float | None = None
        self._refetched_for_unknown_at: float | None = None
        self._metadata_lock = anyio.Lock()
        self._keys_lock = anyio.Lock()
        self.fetches = 0
        """How many times the key set was fetched (for tests and logs)."""

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            async with self._metadata_lock:
                if self._metadata is None:
                    self._metadata = await self._discover()
        return self._metadata

    async def key_set(self, kid: str | None) -> KeySet:
        """The cached keys; fetched again when too old, or once per interval when `kid` is unknown."""
        now = self.clock()
        keys = self._keys
        if keys is not None and self._fetched_at is not None:
            fresh = now - self._fetched_at < self.settings.jwks_max_age
            known = kid is None or any(k.kid == kid for k in keys.keys)
            if fresh and known:
                return keys
            last = self._refetched_for_unknown_at
            if fresh and last is not None and now - last < self.settings.jwks_refetch_interval:
                return keys  # an unknown kid refetched the keys a moment ago: not again so soon
            if fresh:
                self._refetched_for_unknown_at = now
        async with self._keys_lock:
            if self._keys is keys:  # nobody refreshed them while this task waited
                await self._fetch_keys()
        assert self._keys is not None
        return self._keys

    async def _discover(self) -> dict[str, Any]:
        for url in metadata_urls(self.settings.issuer):
            document = await self._get_json(url, missing_ok=True)
            if document is None:
                continue
            if document.get("issuer") != self.settings.issuer:
                raise IssuerUnavailable(
                    f"the metadata at {url} names issuer {document.get('issuer')!r}, not {self.settings.issuer!r}"
                )
            return document
        raise IssuerUnavailable(f"no authorization server metadata at {', '.join(metadata_urls(self.settings.issuer))}")

    async def _fetch_keys(self) -> None:
        jwks_uri = (await self.metadata()).get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise IssuerUnavailable("the issuer's metadata has no jwks_uri")
        document = await self._get_json(jwks_uri)
        assert document is not None
        try:
            keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise IssuerUnavailable(f"the key set at {jwks_uri} could not be read: {exc}") from exc
        self._keys = keys
        self._fetched_at = self.clock()
        self.fetches += 1
        log.info("fetched %d signing keys from %s", len(keys.keys), jwks_uri)

    async def _get_json(self, url: str, *, missing_ok: bool = False) -> dict[str, Any] | None:
        try:
            response = await self.client.get(url, headers={"Accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise IssuerUnavailable(f"{url} could not be reached: {exc}") from exc
        if missing_ok and response.status_code in (404, 405):
            return None
        if response.status_code != 200:
            raise IssuerUnavailable(f"{url} answered HTTP {response.status_code}")
        try:
            document = response.json()
        except ValueError as exc:
            raise IssuerUnavailable(f"{url} did not answer JSON") from exc
        if not isinstance(document, dict):
            raise IssuerUnavailable(f"{url} did not answer a JSON object")
        return document
