"""What a sign-in done through the person's browser needs on either side of the trip, shared by
Google's sign-in (`deskmcp.google.web`) and the users' sign-ins to remote MCP servers
(`deskmcp.connect.remote_sign_in`):

- `seal_state` / `open_state`: the `state` the browser carries, a JSON payload sealed (AES-GCM
  with the deployment's keys, bound to `associated`) and written `KEY_ID.BASE64URL`; opened only
  with the same keys and associated data, and only before its expiry (the payload's `e`);
- `state_owner` / `spend_state`: the principal who began (the payload's `iss` and `sub`), whom
  a callback made by another signed-in principal may not finish for; and the state's one-time id
  (`n`) spent in a ledger, so it finishes once;
- `page_html`: the small page the browser shows at the end.
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any, Protocol

from deskmcp.core.errors import AuthRequired, DeskError
from deskmcp.core.once import OnceLedger
from deskmcp.core.principal import Principal


class Sealer(Protocol):
    """Seals and opens bytes bound to associated data (`google.sealed_tokens.SealingKeys`)."""

    def seal(self, plain: bytes, associated: bytes) -> tuple[str, bytes]: ...

    def open(self, key_id: str, sealed: bytes, associated: bytes) -> bytes: ...


def seal_state(keys: Sealer, payload: dict[str, Any], associated: bytes) -> str:
    """`payload` sealed with the newest key, as the `state` of an authorization request."""
    key_id, sealed = keys.seal(json.dumps(payload).encode(), associated)
    return f"{key_id}.{base64.urlsafe_b64encode(sealed).decode().rstrip('=')}"


def open_state(keys: Sealer, state: str | None, associated: bytes, now: float, unknown: DeskError) -> dict[str, Any]:
    """The payload `seal_state` sealed into `state`; `unknown` raised for a state that does not open
    (altered, another deployment's or another flow's) or whose expiry `e` is before `now`."""
    key_id, _, encoded = (state or "").partition(".")
    try:
        sealed = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        payload = json.loads(keys.open(key_id, sealed, associated))
    except (AuthRequired, ValueError):
        raise unknown from None
    if not isinstance(payload, dict) or float(payload.get("e", 0)) < now:
        raise unknown
    return payload


def state_owner(payload: dict[str, Any], caller: Principal | None, other_user: DeskError) -> Principal:
    """The principal who began the sign-in `payload` is the state of; `other_user` raised when
    `caller` is signed in as someone else (a caller of None is the browser coming back, which the
    sealed state alone authorises)."""
    owner = Principal(str(payload["iss"]), str(payload["sub"]))
    if caller is not None and (caller.issuer, caller.subject) != (owner.issuer, owner.subject):
        raise other_user
    return owner


def spend_state(spent: OnceLedger, kind: str, payload: dict[str, Any], used: DeskError) -> None:
    """The state's one-time id spent in `spent` until its expiry; `used` raised when it already was."""
    once = payload.get("n")
    if not isinstance(once, str) or not spent.spend(kind, once, float(payload["e"])):
        raise used


_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>deskmcp</title>
<style>body{{font-family:system-ui,sans-serif;max-width:34em;margin:4em auto;line-height:1.5}}</style></head>
<body><h1>{title}</h1><p>{text}</p></body></html>"""


def page_html(title: str, text: str) -> str:
    """The page shown in the browser at the end of a sign-in (both texts escaped)."""
    return _PAGE.format(title=html.escape(title), text=html.escape(text))
