"""Each user's Google token in PostgreSQL, sealed with AES-GCM to the principal it belongs to.

A deployment serving several users (`deskmcp.serving.users`) keeps their tokens in one table of the
database `DESKMCP_DATABASE_URL`, one row per principal. A row holds the token sealed with
AES-256-GCM under one of the keys of `DESKMCP_TOKEN_KEYS` (`id:base64key,...`, the first one
seals, every one opens) and the principal's issuer and subject as associated data: a row copied
to another user's key does not open, nor does one whose key id is no longer configured (both
answer auth_required: sign in to Google again). A row sealed with an older key is sealed again
with the first one when it is read.

Refreshing happens under the row's lock (`SELECT ... FOR UPDATE`): a replica that finds the
token already refreshed by another while it waited takes that one instead of spending the same
refresh token a second time (Google rotates them, and refuses one used twice).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, LiteralString

from deskmcp.core.errors import AuthRequired, BadRequest
from deskmcp.core.postgres import connection

if TYPE_CHECKING:
    from psycopg import Connection

TABLE = "deskmcp_google_tokens"
SIGN_IN = "Sign in to Google again (GET /auth/url)."


@dataclass(frozen=True)
class SealingKeys:
    """The AES-256-GCM keys by id; `current` seals."""

    keys: dict[str, bytes]
    current: str

    @classmethod
    def parse(cls, value: str, setting: str = "DESKMCP_TOKEN_KEYS") -> SealingKeys:
        """`"id1:base64,id2:base64"`: 32-byte keys (urlsafe or standard base64), the first one seals."""
        keys: dict[str, bytes] = {}
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            kid, sep, encoded = part.partition(":")
            try:
                key = base64.b64decode(encoded.replace("-", "+").replace("_", "/") + "==", validate=False)
            except (binascii.Error, ValueError):
                key = b""
            if not sep or not kid.strip() or len(key) != 32 or kid.strip() in keys:
                raise BadRequest(
                    f"{setting} must be id:key pairs separated by commas, each key 32 random bytes in base64 "
                    f"(e.g. `python -c 'import os,base64;print(base64.b64encode(os.urandom(32)).decode())'`), "
                    f"each id once; {kid.strip() or 'an entry'!r} is not.",
                    {"setting": setting},
                )
            keys[kid.strip()] = key
        if not keys:
            raise BadRequest(f"{setting} names no key; give at least one id:base64key.", {"setting": setting})
        return cls(keys, next(iter(keys)))

    def seal(self, plain: bytes, associated: bytes) -> tuple[str, bytes]:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(12)
        return self.current, nonce + AESGCM(self.keys[self.current]).encrypt(nonce, plain, associated)

    def open(
        self, key_id: str, sealed: bytes, associated: bytes, *, what: str = "Google token", again: str = SIGN_IN
    ) -> bytes:
        """`sealed` opened; auth_required naming `what` was stored and how to sign in `again` otherwise."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key = self.keys.get(key_id)
        if key is None:
            raise AuthRequired(
                f"The stored {what} was sealed with key {key_id!r}, which DESKMCP_TOKEN_KEYS no longer holds. {again}",
                {"key_id": key_id},
            )
        try:
            return AESGCM(key).decrypt(sealed[:12], sealed[12:], associated)
        except (InvalidTag, ValueError):
            raise AuthRequired(f"The stored {what} does not open for this user. {again}", {}) from None


SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (owner TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
    " sealed BYTEA NOT NULL, updated TIMESTAMPTZ NOT NULL DEFAULT now())"
)
REMOTE_TABLE = "deskmcp_remote_tokens"
REMOTE_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {REMOTE_TABLE} (owner TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
    " sealed BYTEA NOT NULL, updated TIMESTAMPTZ NOT NULL DEFAULT now())"
)


class Held:
    """The row as read under its lock; `save` writes within the same transaction."""

    def __init__(self, store: PostgresTokenStore, conn: Connection[Any], data: dict[str, Any] | None) -> None:
        self._store = store
        self._conn = conn
        self.data = data

    def save(self, data: dict[str, Any]) -> None:
        self._store._write(self._conn, data)
        self.data = data


class PostgresTokenStore:
    """The `TokenStore` of one principal (issuer, subject) in PostgreSQL (see the module docstring)."""

    table: LiteralString = TABLE
    schema: LiteralString = SCHEMA
    what = "Google token"
    again = SIGN_IN

    def __init__(self, url: str, keys: SealingKeys, issuer: str, subject: str) -> None:
        import hashlib

        self.url = url
        self.keys = keys
        self.associated = f"{issuer}\0{subject}".encode()
        self.owner = hashlib.sha256(self.associated).hexdigest()[:32]

    def _connection(self) -> AbstractContextManager[Connection[Any]]:
        return connection(
            self.url,
            self.schema,
            unreachable="The token database could not be reached: {exc}. Check DESKMCP_DATABASE_URL.",
        )

    def _read(self, conn: Connection[Any], *, lock: bool) -> dict[str, Any] | None:
        row = conn.execute(
            f"SELECT key_id, sealed FROM {self.table} WHERE owner = %s" + (" FOR UPDATE" if lock else ""), (self.owner,)
        ).fetchone()
        if row is None:
            return None
        key_id, sealed = row[0], bytes(row[1])
        data = json.loads(self.keys.open(key_id, sealed, self.associated, what=self.what, again=self.again))
        if key_id != self.keys.current:
            self._write(conn, data)  # sealed again with the newest key
        return data if isinstance(data, dict) else None

    def _write(self, conn: Connection[Any], data: dict[str, Any]) -> None:
        key_id, sealed = self.keys.seal(json.dumps(data, sort_keys=True).encode(), self.associated)
        conn.execute(
            f"INSERT INTO {self.table} (owner, key_id, sealed, updated) VALUES (%s, %s, %s, now())"
            " ON CONFLICT (owner) DO UPDATE SET key_id = excluded.key_id, sealed = excluded.sealed,"
            " updated = excluded.updated",
            (self.owner, key_id, sealed),
        )

    def load(self) -> dict[str, Any] | None:
        with self._connection() as conn, conn.transaction():
            return self._read(conn, lock=False)

    def save(self, data: dict[str, Any]) -> None:
        with self._connection() as conn, conn.transaction():
            self._write(conn, data)

    def forget(self) -> None:
        """The row goes (a sign-out)."""
        with self._connection() as conn, conn.transaction():
            conn.execute(f"DELETE FROM {self.table} WHERE owner = %s", (self.owner,))

    @contextmanager
    def refreshing(self) -> Iterator[Held]:
        """The row locked for the time of a refresh: another replica's refresh waits for this one."""
        with self._connection() as conn, conn.transaction():
            yield Held(self, conn, self._read(conn, lock=True))


class RemoteTokenStore(PostgresTokenStore):
    """One principal's sign-in to one remote MCP server (`deskmcp.connect.remote_sign_in`), sealed the
    same way in a table of its own: the remote's name is part of the associated data, so a row copied
    to another user or another remote does not open."""

    table = REMOTE_TABLE
    schema = REMOTE_SCHEMA

    def __init__(self, url: str, keys: SealingKeys, issuer: str, subject: str, remote: str, again: str) -> None:
        super().__init__(url, keys, issuer, subject)
        import hashlib

        self.associated = f"{issuer}\0{subject}\0{remote}".encode()
        self.owner = hashlib.sha256(self.associated).hexdigest()[:32]
        self.what = f"sign-in to {remote}"
        self.again = again
