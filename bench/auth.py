"""The cost of authorization per call: checking a JWT access token with the issuer's keys cached.

    uv run python -m bench.auth [--calls 5000]

The verifier deskmcp uses over HTTP (`deskmcp.serving.auth.verifier.AccessTokenVerifier`) checks tokens
signed RS256 (2048-bit), ES256 and Ed25519 (EdDSA): header and allow-list, key lookup by kid, signature,
iss, aud, exp, nbf, iat, scopes, then the principal. The issuer is an in-process ASGI app, asked
once for its metadata and keys before timing (a warm key set): no network in the loop. Prints
per-call CPU time (this thread's, which other processes on a busy machine do not inflate) and
wall-clock mean, p50 and p95 in microseconds for each algorithm, and whether p95 is under the
1 ms target. One token per algorithm, checked `--calls` times (nothing is cached per token).
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import httpx2
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bench.common import percentile
from deskmcp.serving.auth.settings import AuthorizationSettings
from deskmcp.serving.auth.verifier import AccessTokenVerifier, principal_of

ISSUER = "https://issuer.example"
RESOURCE = "https://desk.example/mcp"
TARGET_MS = 1.0


def issuer_app(keys: list[RSAKey | ECKey | OKPKey]) -> Starlette:
    async def metadata(_request: Request) -> JSONResponse:
        return JSONResponse({"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"})

    async def jwks(_request: Request) -> JSONResponse:
        return JSONResponse({"keys": [k.as_dict(private=False) for k in keys]})

    return Starlette(routes=[Route("/.well-known/oauth-authorization-server", metadata), Route("/jwks", jwks)])


async def run(calls: int) -> None:
    keys: dict[str, RSAKey | ECKey | OKPKey] = {
        "RS256": RSAKey.generate_key(2048, parameters={"kid": "rsa"}, private=True),
        "ES256": ECKey.generate_key("P-256", parameters={"kid": "ec"}, private=True),
        "Ed25519": OKPKey.generate_key("Ed25519", parameters={"kid": "ed"}, private=True),
    }
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=issuer_app(list(keys.values()))))
    verifier = AccessTokenVerifier(AuthorizationSettings(issuer=ISSUER, resource=RESOURCE), client=client)
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "app",
        "scope": "read write",
        "iat": now,
        "exp": now + 3600,
    }
    print(f"JWT access token check, warm key set, {calls} calls per algorithm")
    print(f"{'alg':<8} {'cpu us':>8} {'mean us':>9} {'p50 us':>9} {'p95 us':>9}  p95 < {TARGET_MS:g} ms")
    for alg, key in keys.items():
        token = jwt.encode({"alg": alg, "kid": key.kid, "typ": "at+jwt"}, claims, key, algorithms=[alg])
        principal_of(await verifier.check(token))  # warms the metadata and the key set
        fetches = verifier.issuer.fetches
        samples: list[float] = []
        cpu_start = time.thread_time()
        for _ in range(calls):
            start = time.perf_counter()
            principal_of(await verifier.check(token))
            samples.append((time.perf_counter() - start) * 1e6)
        cpu = (time.thread_time() - cpu_start) / calls * 1e6
        assert verifier.issuer.fetches == fetches, "the key set was fetched during the timed loop"
        p95 = percentile(samples, 95)
        print(
            f"{alg:<8} {cpu:>8.1f} {statistics.fmean(samples):>9.1f} {percentile(samples, 50):>9.1f} {p95:>9.1f}  "
            f"{'yes' if p95 < TARGET_MS * 1000 else 'NO'}"
        )
    await verifier.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    anyio.run(run, args.calls)


if __name__ == "__main__":
    main()
