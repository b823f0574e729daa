"""Who a request acts for, once its access token has been verified.

A remote deployment verifies each request's OAuth access token (`deskmcp.serving.auth`) and binds the
verified principal for the time the request is handled; everything per user (the workspace, the
Google tokens, the send journal) is chosen from it. With no authorization server configured (one
person on one machine, stdio or the static bearer token) there is no principal and
`current_principal()` answers None.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Principal:
    """A user as the authorization server names them: issuer and subject, and what the token allows."""

    issuer: str
    subject: str
    scopes: frozenset[str] = field(default_factory=frozenset)
    client_id: str | None = None

    @property
    def key(self) -> str:
        """A stable name for this user that is safe as a folder or row key (no path characters)."""
        digest = hashlib.sha256(f"{self.issuer}\0{self.subject}".encode()).hexdigest()
        return digest[:32]


_current: ContextVar[Principal | None] = ContextVar("deskmcp_principal", default=None)


def current_principal() -> Principal | None:
    """The principal the running request acts for, or None when the server has no authorization server."""
    return _current.get()


@contextmanager
def acting_for(principal: Principal | None) -> Iterator[None]:
    """Bind `principal` for the code run inside the block (and the tasks it starts)."""
    token = _current.set(principal)
    try:
        yield
    finally:
        _current.reset(token)
