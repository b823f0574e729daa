"""The HTTP app through a real uvicorn on loopback: tool API, OpenAPI, MCP endpoint, security."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from deskmcp.core.errors import BadRequest
from deskmcp.gateway import compose
from deskmcp.servers import SERVERS
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions, resolve_token

JSON = {"content-type": "application/json"}


def post_tool(base: str, name: str, body: Any = None, **kwargs: Any) -> httpx2.Response:
    return httpx2.post(f"{base}/api/tools/{name}", json={} if body is None else body, timeout=30, **kwargs)


def test_health_names_the_servers_and_version(serve: Any, workspace: Path) -> None:
    composition = compose()
    tools = len(anyio.run(composition.server.list_tools))
    with serve(create_app(composition)) as base:
        health = httpx2.get(base + "/", timeout=30).json()

    assert health["status"] == "ok"
    assert health["servers"] == list(SERVERS)
    assert health["version"]
    assert health["tools"] == tools
    assert health["skipped"] == []


def test_health_reports_a_skipped_server_and_why(serve: Any, empty_workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        health = httpx2.get(base + "/", timeout=30).json()

    assert health["servers"] == [name for name in SERVERS if name != "meetings"]
    assert health["skipped"] == ["meetings"]
    assert "GRANOLA_CACHE_PATH" in health["skipped_reasons"]["meetings"]


@pytest.mark.anyio
async def test_tools_lists_every_tool_with_schemas_and_annotations(serve: Any, workspace: Path) -> None:
    composition = compose()
    expected = {t.name: t for t in await composition.server.list_tools()}

    with serve(create_app(composition)) as base:
        tools = httpx2.get(base + "/tools", timeout=30).json()

    assert {t["name"] for t in tools} == set(expected)
    search = next(t for t in tools if t["name"] == "granola_meetings_search")
    assert search["inputSchema"]["required"] == ["q"]
    assert "items" in search["outputSchema"]["properties"]
    assert search["annotations"]["readOnlyHint"] is True
    assert search["description"] == expected["granola_meetings_search"].description


def test_tool_api_returns_the_structured_result(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        response = post_tool(base, "granola.meetings.search", {"q": "budget"})

    assert response.status_code == 200
    assert [hit["title"] for hit in response.json()["items"]] == ["Budget review"]


def test_tool_api_accepts_an_empty_body_as_no_arguments(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        response = httpx2.post(base + "/api/tools/granola.cache.status", headers=JSON, timeout=30)

    assert response.status_code == 200
    assert response.json()["meetings"] == 3


@pytest.mark.parametrize(
    ("tool", "body", "status", "code"),
    [
        ("no.such.tool", {}, 404, "not_found"),
        ("granola.meetings.get", {"id": "m-nope"}, 404, "not_found"),
        ("granola.meetings.list", {"limit": "many"}, 400, "bad_request"),
        ("granola.meetings.search", {}, 400, "bad_request"),
        ("granola.meetings.list", ["not", "an", "object"], 400, "bad_request"),
    ],
)
def test_tool_api_answers_errors_with_the_taxonomy_body_and_status(
    serve: Any, workspace: Path, tool: str, body: Any, status: int, code: str
) -> None:
    with serve(create_app(compose())) as base:
        response = post_tool(base, tool, body)

    assert response.status_code == status
    payload = response.json()
    assert payload["error"] == code
    assert set(payload) == {"error", "message", "details"}
    assert "Traceback" not in payload["message"]


def test_tool_api_rejects_a_body_that_is_not_json(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        response = httpx2.post(
            base + "/api/tools/granola.meetings.list", content=b"{limit: 5", headers=JSON, timeout=30
        )

    assert response.status_code == 400
    assert response.json()["error"] == "bad_request"


def test_tool_api_and_mcp_endpoint_give_the_same_result(serve: Any, workspace: Path) -> None:
    import anyio

    async def through_mcp(url: str) -> Any:
        async with Client(url) as client:
            return (await client.call_tool("granola.meetings.list", {"limit": 2})).structured_content

    with serve(create_app(compose())) as base:
        rest = post_tool(base, "granola.meetings.list", {"limit": 2}).json()
        mcp = anyio.run(through_mcp, base + "/mcp")

    assert rest == mcp
    assert [m["id"] for m in rest["items"]] == ["m-hiring", "m-roadmap"]


def test_openapi_describes_every_tool_with_resolvable_references(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        document = httpx2.get(base + "/openapi.json", timeout=30).json()
        tools = httpx2.get(base + "/tools", timeout=30).json()

    assert document["openapi"].startswith("3.1")
    for tool in tools:
        operation = document["paths"][f"/api/tools/{tool['name']}"]["post"]
        assert operation["responses"]["404"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    schemas = document["components"]["schemas"]

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    found = refs(document)
    assert found
    for ref in found:
        assert ref.startswith("#/components/schemas/")
        assert ref.removeprefix("#/components/schemas/") in schemas
    assert "$defs" not in str(document)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_streamable_http_endpoint_serves_both_protocol_families(serve: Any, workspace: Path, mode: str) -> None:
    import anyio

    async def session(url: str) -> tuple[str, int, Any]:
        async with Client(url, mode=mode) as client:
            tools = await client.list_tools()
            status = await client.call_tool("granola.cache.status", {})
            return client.session.protocol_version or "", len(tools.tools), status.structured_content

    composition = compose()
    expected = len(anyio.run(composition.server.list_tools))
    with serve(create_app(composition)) as base:
        version, count, status = anyio.run(session, base + "/mcp")

    assert version == ("2025-11-25" if mode == "legacy" else mode)
    assert count == expected
    assert status["meetings"] == 3


def test_tool_api_rejects_a_foreign_host_header_against_dns_rebinding(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        tools = httpx2.get(base + "/tools", headers={"Host": "evil.example"}, timeout=30)
        call = post_tool(base, "granola.cache.status", headers={"Host": "evil.example"})
        origin = post_tool(base, "granola.cache.status", headers={"Origin": "http://evil.example"})
        mcp = httpx2.post(base + "/mcp", json={}, headers={"Host": "evil.example"}, timeout=30)

    assert tools.status_code == 421
    assert call.status_code == 421
    assert origin.status_code == 403
    assert mcp.status_code == 421
    for response in (tools, call, mcp):
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error"] == "permission_denied"
        assert "--allow-host" in response.json()["message"]
    assert origin.json()["error"] == "permission_denied"
    assert origin.json()["details"]["reason"] == "Invalid Origin header"


def test_a_host_header_that_only_begins_like_an_allowed_one_is_refused(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        port = base.rsplit(":", 1)[1]
        forged = [f"localhost:{port}@evil.example", f"127.0.0.1:{port}@evil.example", "[::1]:x@evil.example"]
        refused = [httpx2.get(base + "/tools", headers={"Host": host}, timeout=30) for host in forged]
        allowed = (f"localhost:{port}", f"[::1]:{port}")
        fine = [httpx2.get(base + "/tools", headers={"Host": host}, timeout=30) for host in allowed]

    for response in refused:
        assert response.status_code == 421 and response.json()["error"] == "permission_denied"
    assert [r.status_code for r in fine] == [200, 200]


def test_tool_api_rejects_a_cross_site_form_post_without_json_content_type(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        response = httpx2.post(
            base + "/api/tools/granola.cache.status",
            content=b"a=1",
            headers={"content-type": "application/x-www-form-urlencoded"},
            timeout=30,
        )

    assert response.status_code == 400
    assert response.json()["error"] == "bad_request"


def test_request_body_over_the_limit_is_refused_with_413(serve: Any, workspace: Path) -> None:
    big = {"q": "x" * 5000}
    with serve(create_app(compose(), HttpOptions(max_body_bytes=2048))) as base:
        rest = post_tool(base, "granola.meetings.search", big)
        mcp = httpx2.post(base + "/mcp", json=big, timeout=30)
        small = post_tool(base, "granola.meetings.search", {"q": "budget"})

    assert rest.status_code == 413
    assert mcp.status_code == 413
    assert small.status_code == 200
    for response in (rest, mcp):
        body = response.json()
        assert body["error"] == "bad_request"
        assert "--max-body-mb" in body["message"]
        assert body["details"]["status"] == 413


def test_unknown_endpoint_and_wrong_method_answer_with_the_error_json(serve: Any, workspace: Path) -> None:
    with serve(create_app(compose())) as base:
        missing = httpx2.get(base + "/nowhere", timeout=30)
        wrong_method = httpx2.get(base + "/api/tools/granola.cache.status", timeout=30)

    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    assert "/mcp" in missing.json()["message"]
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"] == "bad_request"


def test_create_app_refuses_a_non_loopback_bind_without_a_token(workspace: Path) -> None:
    with pytest.raises(BadRequest, match="DESKMCP_TOKEN"):
        create_app(compose(), HttpOptions(host="0.0.0.0"))


def test_resolve_token_generates_one_only_off_loopback() -> None:
    assert resolve_token("127.0.0.1", None) == (None, False)
    assert resolve_token("::1", None) == (None, False)
    assert resolve_token("localhost", "given") == ("given", False)
    token, generated = resolve_token("0.0.0.0", None)
    assert generated
    assert token is not None
    assert len(token) >= 32


def test_token_is_required_on_tool_api_and_mcp_when_bound_off_loopback(serve: Any, workspace: Path) -> None:
    import anyio

    token = "s3cret-token"
    auth = {"Authorization": f"Bearer {token}"}
    app = create_app(compose(), HttpOptions(host="0.0.0.0", token=token))

    async def mcp_with_token(url: str) -> int:
        async with (
            httpx2.AsyncClient(headers=auth, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return len((await client.list_tools()).tools)

    with serve(app) as base:
        no_token = httpx2.get(base + "/tools", timeout=30)
        wrong = post_tool(base, "granola.cache.status", headers={"Authorization": "Bearer nope"})
        mcp_no_token = httpx2.post(base + "/mcp", json={}, headers=JSON, timeout=30)
        with_token = httpx2.get(base + "/tools", headers=auth, timeout=30)
        call = post_tool(base, "granola.cache.status", headers=auth)
        open_health = httpx2.get(base + "/", timeout=30).json()
        full_health = httpx2.get(base + "/", headers=auth, timeout=30).json()
        mcp_tools = anyio.run(mcp_with_token, base + "/mcp")

    assert no_token.status_code == 401
    assert no_token.json()["error"] == "auth_required"
    assert no_token.headers["www-authenticate"].startswith("Bearer")
    assert wrong.status_code == 401
    assert mcp_no_token.status_code == 401
    assert with_token.status_code == 200
    assert call.status_code == 200
    assert mcp_tools == len(anyio.run(compose().server.list_tools))
    assert open_health["auth"] == "bearer"
    assert "skipped_reasons" not in open_health
    assert full_health["skipped_reasons"] == {}


def test_tool_api_hides_a_crash_behind_a_generic_internal_error(serve: Any, workspace: Path) -> None:
    composition = compose()

    @composition.server.tool("test.crash")
    def crash() -> str:
        raise RuntimeError(f"secret detail at {workspace}")

    with serve(create_app(composition)) as base:
        response = post_tool(base, "test.crash")

    assert response.status_code == 500
    payload = response.json()
    assert payload["error"] == "internal_error"
    assert "secret detail" not in response.text
    assert str(workspace) not in response.text
    assert "Traceback" not in response.text
