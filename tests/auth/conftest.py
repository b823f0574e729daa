"""The authorization server the authorization tests share: oidc-provider, started once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.authorization_server import AuthorizationServer, authorization_server, provider_missing


@pytest.fixture(scope="session")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthorizationServer]:
    """oidc-provider on a free loopback port (skips, saying why, when node or the package is missing)."""
    if (reason := provider_missing()) is not None:
        pytest.skip(reason)
    with authorization_server(tmp_path_factory.mktemp("oidc")) as server:
        yield server
