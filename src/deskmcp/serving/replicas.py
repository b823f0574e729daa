"""Running `deskmcp serve all --http` as several processes behind a load balancer.

Three things make a process interchangeable with its siblings:

- stateless streamable HTTP (`DESKMCP_STATELESS` / `--stateless`): no MCP session lives in a
  process, so any replica can answer any request;
- one request-state key ring for all of them (`DESKMCP_STATE_KEYS`): the state the SDK seals
  into a multi-round-trip answer (protocol 2026-07-28: a send that asks the person first) is
  opened by whichever replica the retry reaches. Without shared keys each process would seal
  with a key of its own, and a retry reaching another replica would be refused;
- the proxies whose `X-Forwarded-For` / `X-Forwarded-Proto` are believed
  (`DESKMCP_TRUSTED_PROXIES` / `--trusted-proxy`); nobody else's are.

Only the CLI reads these settings; the HTTP app receives them in `httpapi.HttpOptions`.
"""

from __future__ import annotations

import ipaddress

from mcp.server.request_state import RequestStateSecurity
from pydantic import Field, SecretStr

from deskmcp.core.errors import BadRequest
from deskmcp.core.settings import Settings, env_alias

MIN_KEY_CHARS = 32
"""The SDK derives its AES-256 key from each secret, and asks for at least 32 bytes of it."""

KEY_ADVICE = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


class ReplicaSettings(Settings):
    """Environment: `DESKMCP_STATELESS`, `DESKMCP_STATE_KEYS`, `DESKMCP_TRUSTED_PROXIES`."""

    stateless: bool = Field(
        default=False,
        validation_alias=env_alias("stateless", "DESKMCP_STATELESS"),
        description="Serve MCP without sessions, so that any replica can answer any request.",
    )
    state_keys: SecretStr = Field(
        default=SecretStr(""),
        validation_alias=env_alias("state_keys", "DESKMCP_STATE_KEYS"),
        description="Comma-separated secrets (32 characters or more each) every replica seals and opens "
        "request state with; the first seals, all open (add the new one first to rotate).",
    )
    trusted_proxies: str = Field(
        default="",
        validation_alias=env_alias("trusted_proxies", "DESKMCP_TRUSTED_PROXIES"),
        description="Comma-separated addresses or networks of the proxies whose X-Forwarded-* headers are believed.",
    )


def state_keys(value: str) -> list[str]:
    """`"k1, k2"` -> the key ring, each key checked for length."""
    keys = [part.strip() for part in value.split(",") if part.strip()]
    short = [i + 1 for i, key in enumerate(keys) if len(key.encode("utf-8")) < MIN_KEY_CHARS]
    if short:
        raise BadRequest(
            f"DESKMCP_STATE_KEYS: key number {', '.join(map(str, short))} is shorter than {MIN_KEY_CHARS} "
            f"characters; {KEY_ADVICE}.",
            {"short_keys": short},
        )
    if len(set(keys)) != len(keys):
        raise BadRequest("DESKMCP_STATE_KEYS names one key twice; list each key once, the sealing key first.")
    return keys


def request_state_security(settings: ReplicaSettings) -> RequestStateSecurity | None:
    """The shared request-state policy, or None (the SDK's per-process key) when no keys are set.

    Stateless replicas without shared keys are refused: a retry reaching another replica would
    fail for the person, with nothing telling the operator why."""
    keys = state_keys(settings.state_keys.get_secret_value())
    if keys:
        return RequestStateSecurity(keys=keys)
    if settings.stateless:
        raise BadRequest(
            "Stateless serving (--stateless, DESKMCP_STATELESS) needs DESKMCP_STATE_KEYS set to the same "
            f"secret on every replica, so that each opens the state another sealed; {KEY_ADVICE}."
        )
    return None


def trusted_proxies(value: str, extra: list[str] | tuple[str, ...] = ()) -> tuple[str, ...]:
    """The proxy addresses and networks from `DESKMCP_TRUSTED_PROXIES` and `--trusted-proxy`, checked."""
    out: list[str] = []
    for part in [*value.split(","), *extra]:
        item = part.strip()
        if not item:
            continue
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise BadRequest(
                f"{item!r} in DESKMCP_TRUSTED_PROXIES (or --trusted-proxy) is not an IP address or network; "
                "write e.g. 127.0.0.1 or 10.0.0.0/8, comma-separated.",
                {"proxy": item},
            ) from None
        out.append(str(network) if "/" in item else item)
    return tuple(dict.fromkeys(out))
