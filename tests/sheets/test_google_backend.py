"""The Google Sheets backend over the API's HTTP layer, with the discovery documents the client ships."""

from __future__ import annotations

import json
import random
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from googleapiclient.http import HttpMockSequence
from mcp import Client

from deskmcp.core.retry import RetryPolicy
from deskmcp.google.auth import SCOPES, FileTokenStore
from deskmcp.sheets.backends.google import GoogleBackend
from deskmcp.sheets.server import Settings, create_server
from deskmcp.sheets.service import SheetsService
from tests.helpers.clock import ManualClock
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio

SID = "1AbCdEf"
META = {
    "spreadsheetId": SID,
    "spreadsheetUrl": f"https://docs.google.com/spreadsheets/d/{SID}/edit",
    "properties": {"title": "Budget"},
    "sheets": [
        {
            "properties": {
                "sheetId": 0,
                "title": "Costs",
                "index": 0,
                "gridProperties": {"rowCount": 1000, "columnCount": 26, "frozenRowCount": 1},
            }
        },
        {"properties": {"sheetId": 77, "title": "My Sheet", "index": 1, "gridProperties": {"rowCount": 50}}},
    ],
    "namedRanges": [
        {
            "name": "Totals",
            "range": {"sheetId": 0, "startRowIndex": 0, "endRowIndex": 10, "startColumnIndex": 1, "endColumnIndex": 2},
        }
    ],
}


class RecordingHttp(HttpMockSequence):
    """HttpMockSequence that remembers each request (method, path, query, JSON body)."""

    def __init__(self, responses: list[tuple[dict[str, str], Any]]) -> None:
        super().__init__([(h, b if isinstance(b, bytes | str) else json.dumps(b)) for h, b in responses])
        self.requests: list[dict[str, Any]] = []

    def request(self, uri: str, method: str = "GET", body: Any = None, headers: Any = None, *a: Any, **k: Any) -> Any:
        parts = urllib.parse.urlsplit(uri)
        payload: Any = body
        if isinstance(body, bytes | str) and body and str(body).lstrip().startswith(("{", "[")):
            payload = json.loads(body)
        self.requests.append(
            {
                "method": method,
                "path": urllib.parse.unquote(parts.path),
                "query": urllib.parse.parse_qs(parts.query),
                "body": payload,
                "auth": (headers or {}).get("authorization"),
            }
        )
        return super().request(uri, method, body, headers, *a, **k)


def ok(body: Any) -> tuple[dict[str, str], Any]:
    return {"status": "200", "content-type": "application/json"}, body


def status(code: int, message: str = "failed", reason: str = "", **headers: str) -> tuple[dict[str, str], Any]:
    error: dict[str, Any] = {"code": code, "message": message, "errors": [{"reason": reason}] if reason else []}
    return {"status": str(code), "content-type": "application/json", **headers}, {"error": error}


def token_answer(access: str) -> tuple[dict[str, str], Any]:
    return ok({"access_token": access, "expires_in": 3600, "token_type": "Bearer", "scope": " ".join(SCOPES["sheets"])})


class Harness:
    def __init__(self, tmp_path: Path, responses: list[tuple[dict[str, str], Any]], **overrides: Any) -> None:
        expiry = overrides.pop("expiry", "2999-01-01T00:00:00Z")
        self.settings = Settings(
            workspace=tmp_path / "ws",
            backend="google",
            google_client_id="cid",
            google_client_secret="secret",
            **overrides,
        )
        FileTokenStore(self.settings.google_token_path).save(
            {
                "token": "access-1",
                "refresh_token": "refresh-1",
                "client_id": "cid",
                "client_secret": "secret",
                "scopes": list(SCOPES["sheets"]),
                "expiry": expiry,
            }
        )
        self.http = RecordingHttp(responses)
        self.clock = ManualClock()
        self.start = self.clock.monotonic()
        retry = RetryPolicy(attempts=5, base=1.0, cap=32.0, max_wait=60.0, clock=self.clock, rng=random.Random(7))
        self.backend = GoogleBackend(self.settings, http=self.http, clock=self.clock, retry=retry)
        self.client = Client(create_server(self.settings, SheetsService(self.settings, self.backend)))

    @property
    def waited(self) -> float:
        return self.clock.monotonic() - self.start

    def token(self) -> dict[str, Any]:
        return json.loads(self.settings.google_token_path.read_text(encoding="utf-8"))


async def test_list_spreadsheets_asks_drive_for_spreadsheets_by_name(tmp_path: Path) -> None:
    files = {"files": [{"id": SID, "name": "Budget", "modifiedTime": "2026-11-01T10:00:00Z"}], "nextPageToken": "t2"}
    h = Harness(tmp_path, [ok(files), ok({"files": [{"id": "2", "name": "Budget old"}]})])
    async with h.client as c:
        first = await call(c, "list_spreadsheets", {"query": "Bud'get", "limit": 1})
        second = await call(c, "list_spreadsheets", {"query": "Bud'get", "limit": 1, "cursor": first["next_cursor"]})
    assert first["spreadsheets"][0]["id"] == SID
    assert second["spreadsheets"][0]["id"] == "2"
    assert second["next_cursor"] is None
    q = h.http.requests[0]["query"]["q"][0]
    assert "mimeType='application/vnd.google-apps.spreadsheet'" in q
    assert "name contains 'Bud\\'get'" in q
    assert h.http.requests[1]["query"]["pageToken"] == ["t2"]


async def test_get_spreadsheet_gives_sizes_frozen_rows_and_named_ranges_in_a1(tmp_path: Path) -> None:
    h = Harness(tmp_path, [ok(META)])
    async with h.client as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert info["sheets"][0] | {} == info["sheets"][0]
    assert (info["sheets"][0]["rows"], info["sheets"][0]["frozen_rows"]) == (1000, 1)
    assert info["named_ranges"] == [{"name": "Totals", "range": "Costs!B1:B10"}]
    assert info["url"].startswith("https://docs.google.com/")
    assert h.http.requests[0]["auth"] == "Bearer access-1"


async def test_read_values_reads_every_range_in_one_batch_get(tmp_path: Path) -> None:
    answer = {
        "valueRanges": [
            {"range": "Costs!A1:B2", "values": [["item", "amount"], ["rent", "1,000"]]},
            {"range": "'My Sheet'!A1:A1", "values": [["x"]]},
        ]
    }
    h = Harness(tmp_path, [ok(answer)])
    async with h.client as c:
        out = await call(c, "read_values", {"spreadsheet_id": SID, "ranges": ["Costs!A1:B2", "'My Sheet'!A1"]})
    assert [r["values"] for r in out["ranges"]] == [[["item", "amount"], ["rent", "1,000"]], [["x"]]]
    [request] = h.http.requests
    assert request["path"].endswith(f"/spreadsheets/{SID}/values:batchGet")
    assert request["query"]["ranges"] == ["Costs!A1:B2", "'My Sheet'!A1"]
    assert request["query"]["valueRenderOption"] == ["FORMATTED_VALUE"]


async def test_read_values_with_header_and_raw_render_in_one_request(tmp_path: Path) -> None:
    answer = {
        "valueRanges": [
            {"range": "Costs!A1:B1", "values": [["item", "amount"]]},
            {"range": "Costs!A2:B3", "values": [["rent", 1000], ["food", 300]]},
        ]
    }
    h = Harness(tmp_path, [ok(answer)])
    async with h.client as c:
        out = await call(
            c,
            "read_values",
            {"spreadsheet_id": SID, "ranges": ["Costs!A1:B"], "header": True, "render": "raw", "limit": 2},
        )
    assert out["ranges"][0]["rows"] == [{"item": "rent", "amount": 1000}, {"item": "food", "amount": 300}]
    [request] = h.http.requests
    assert request["query"]["ranges"] == ["Costs!A1:B1", "Costs!A2:B4"]
    assert request["query"]["valueRenderOption"] == ["UNFORMATTED_VALUE"]
    assert request["query"]["dateTimeRenderOption"] == ["SERIAL_NUMBER"]


async def test_update_and_batch_update_write_through_one_values_batch_update(tmp_path: Path) -> None:
    answer = {
        "responses": [
            {"updatedRange": "Costs!A4:B4", "updatedRows": 1, "updatedColumns": 2, "updatedCells": 2},
            {"updatedRange": "Costs!D1", "updatedRows": 1, "updatedColumns": 1, "updatedCells": 1},
        ]
    }
    h = Harness(tmp_path, [ok({"responses": answer["responses"][:1]}), ok(answer)])
    async with h.client as c:
        one = await call(
            c, "update_values", {"spreadsheet_id": SID, "range": "Costs!A4", "values": [["total", "=SUM(B2:B3)"]]}
        )
        many = await call(
            c,
            "batch_update",
            {
                "spreadsheet_id": SID,
                "data": [
                    {"range": "Costs!A4", "values": [["total", "=SUM(B2:B3)"]]},
                    {"range": "Costs!D1", "values": [["note"]]},
                ],
                "input": "RAW",
            },
        )
    assert one["updated"][0]["range"] == "Costs!A4:B4"
    assert many["total_cells"] == 3
    first, second = h.http.requests
    assert first["path"].endswith("/values:batchUpdate")
    assert first["body"]["valueInputOption"] == "USER_ENTERED"
    assert second["body"]["valueInputOption"] == "RAW"
    assert [d["range"] for d in second["body"]["data"]] == ["Costs!A4", "Costs!D1"]


async def test_append_and_clear(tmp_path: Path) -> None:
    appended = {"updates": {"updatedRange": "Costs!A5:B6", "updatedRows": 2, "updatedColumns": 2, "updatedCells": 4}}
    h = Harness(tmp_path, [ok(appended), ok({"clearedRanges": ["Costs!A1:A3", "Costs!C1:C3"]})])
    async with h.client as c:
        done = await call(
            c, "append_rows", {"spreadsheet_id": SID, "range": "Costs!A:B", "values": [["gas", 50], ["tax", 20]]}
        )
        cleared = await call(c, "clear_values", {"spreadsheet_id": SID, "ranges": ["Costs!A1:A3", "Costs!C1:C3"]})
    assert done["updated"][0]["range"] == "Costs!A5:B6"
    assert cleared["cleared"] == ["Costs!A1:A3", "Costs!C1:C3"]
    append, clear = h.http.requests
    assert append["path"].endswith("/values/Costs!A:B:append")
    assert append["query"]["insertDataOption"] == ["INSERT_ROWS"]
    assert clear["path"].endswith("/values:batchClear")


async def test_create_spreadsheet_then_describe_it(tmp_path: Path) -> None:
    h = Harness(tmp_path, [ok({"spreadsheetId": SID}), ok(META)])
    async with h.client as c:
        made = await call(c, "create_spreadsheet", {"title": "Budget", "sheets": ["Costs", "My Sheet"]})
    assert made["id"] == SID
    assert h.http.requests[0]["body"]["sheets"][1]["properties"]["title"] == "My Sheet"


async def test_sheet_and_row_tools_send_batch_update_requests_by_sheet_id(tmp_path: Path) -> None:
    renamed = json.loads(json.dumps(META))
    renamed["sheets"][1]["properties"]["title"] = "Notes"
    added = {"replies": [{"addSheet": {"properties": {"sheetId": 5, "title": "Extra", "index": 2}}}]}
    duplicated = {"replies": [{"duplicateSheet": {"properties": {"sheetId": 6, "title": "Copy", "index": 3}}}]}
    h = Harness(
        tmp_path,
        [
            ok(added),
            ok(META),
            ok({"replies": [{}]}),
            ok(renamed),
            ok(duplicated),
            ok(renamed),
            ok({"replies": [{}]}),
            ok(renamed),
            ok({"replies": [{}]}),
            ok(renamed),
            ok({"replies": [{}]}),
        ],
    )
    async with h.client as c:
        assert (await call(c, "add_sheet", {"spreadsheet_id": SID, "title": "Extra"}))["sheet"]["sheet_id"] == 5
        renamed_out = await call(c, "rename_sheet", {"spreadsheet_id": SID, "sheet": "My Sheet", "title": "Notes"})
        assert renamed_out["sheet"]["title"] == "Notes"
        copy = await call(c, "duplicate_sheet", {"spreadsheet_id": SID, "sheet": "Notes", "title": "Copy"})
        assert copy["sheet"]["sheet_id"] == 6
        await call(c, "insert_rows", {"spreadsheet_id": SID, "sheet": "Costs", "at": 3, "count": 2})
        await call(c, "delete_rows", {"spreadsheet_id": SID, "sheet": "Notes", "at": 1, "count": 1})
        await call(c, "delete_sheet", {"spreadsheet_id": SID, "sheet": "Notes"})
    bodies = [r["body"]["requests"][0] for r in h.http.requests if r["path"].endswith(":batchUpdate")]
    assert bodies[0]["addSheet"]["properties"]["title"] == "Extra"
    assert bodies[1]["updateSheetProperties"]["properties"] == {"sheetId": 77, "title": "Notes"}
    assert bodies[2]["duplicateSheet"] == {"sourceSheetId": 77, "newSheetName": "Copy"}
    assert bodies[3]["insertDimension"]["range"] == {"sheetId": 0, "dimension": "ROWS", "startIndex": 2, "endIndex": 4}
    assert bodies[4]["deleteDimension"]["range"] == {"sheetId": 77, "dimension": "ROWS", "startIndex": 0, "endIndex": 1}
    assert bodies[5]["deleteSheet"] == {"sheetId": 77}


async def test_find_in_spreadsheet_reads_all_sheets_in_one_batch_get(tmp_path: Path) -> None:
    values = {
        "valueRanges": [
            {"range": "Costs!A1:B2", "values": [["item", "amount"], ["rent", "1,000"]]},
            {"range": "'My Sheet'!A1:A2", "values": [[], ["Rent is due"]]},
        ]
    }
    h = Harness(tmp_path, [ok(META), ok(values)])
    async with h.client as c:
        out = await call(c, "find_in_spreadsheet", {"spreadsheet_id": SID, "query": "rent"})
    assert [(m["sheet"], m["cell"]) for m in out["matches"]] == [("Costs", "A2"), ("My Sheet", "A2")]
    assert h.http.requests[1]["query"]["ranges"] == ["Costs", "'My Sheet'"]


async def test_401_refreshes_the_token_retries_and_saves_it(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(401, "expired"), token_answer("access-2"), ok(META)])
    async with h.client as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert info["title"] == "Budget"
    assert h.http.requests[2]["auth"] == "Bearer access-2"
    assert h.token()["token"] == "access-2"
    assert h.token()["refresh_token"] == "refresh-1"


async def test_revoked_grant_answers_auth_required_naming_the_command(tmp_path: Path) -> None:
    refused = (
        {"status": "400", "content-type": "application/json"},
        {"error": "invalid_grant", "error_description": "Token has been expired or revoked."},
    )
    h = Harness(tmp_path, [refused], expiry="2020-01-01T00:00:00Z")
    async with h.client as c:
        err = await fail(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert err["error"] == "auth_required"
    assert "deskmcp auth google" in err["message"]


async def test_429_waits_the_retry_after_and_retries(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(429, "Quota exceeded", "rateLimitExceeded", **{"retry-after": "7"}), ok(META)])
    async with h.client as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert info["title"] == "Budget"
    assert h.waited == pytest.approx(7.0)
    assert len(h.http.requests) == 2


async def test_429_asking_too_long_a_wait_answers_rate_limited_with_retry_after(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(429, "Quota exceeded", **{"retry-after": "300"})])
    async with h.client as c:
        err = await fail(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert err["error"] == "rate_limited"
    assert err["details"]["retry_after"] == 300
    assert h.waited == 0


async def test_server_errors_are_retried_with_backoff_on_reads(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(503, "backend"), status(500, "backend"), ok(META)])
    async with h.client as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert info["title"] == "Budget"
    assert 0 < h.waited <= 1.0 + 2.0


async def test_append_is_not_repeated_after_an_ambiguous_server_error(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(503, "backend")])
    async with h.client as c:
        err = await fail(c, "append_rows", {"spreadsheet_id": SID, "range": "Costs", "values": [["x"]]})
    assert err["error"] == "external_service_error"
    assert "may or may not have been applied" in err["message"]
    assert len(h.http.requests) == 1


async def test_client_side_limit_spaces_requests_per_minute(tmp_path: Path) -> None:
    h = Harness(tmp_path, [ok(META), ok(META), ok(META)], requests_per_minute=2)
    async with h.client as c:
        for _ in range(3):
            await call(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert h.waited == pytest.approx(30.0)


async def test_not_found_and_forbidden_map_onto_the_taxonomy(tmp_path: Path) -> None:
    h = Harness(
        tmp_path, [status(404, "Requested entity was not found."), status(403, "The caller does not have permission")]
    )
    async with h.client as c:
        missing = await fail(c, "get_spreadsheet", {"spreadsheet_id": "nope"})
        forbidden = await fail(c, "get_spreadsheet", {"spreadsheet_id": "theirs"})
    assert missing["error"] == "not_found"
    assert "list_spreadsheets" in missing["message"]
    assert forbidden["error"] == "permission_denied"


async def test_bad_range_from_google_is_bad_request(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(400, "Unable to parse range: Nope!A1")])
    async with h.client as c:
        err = await fail(c, "read_values", {"spreadsheet_id": SID, "ranges": ["Nope!A1"]})
    assert err["error"] == "bad_request"
    assert "Unable to parse range" in err["message"]


async def test_missing_authorisation_answers_auth_required(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path / "ws", backend="google")
    async with Client(create_server(settings)) as c:
        err = await fail(c, "list_spreadsheets")
    assert err["error"] == "auth_required"
    assert "deskmcp auth google" in err["message"]


async def test_403_unregistered_caller_limit_is_permission_denied_not_retried(tmp_path: Path) -> None:
    # "userRateLimitExceededUnreg" names a missing project, not load: only exact reasons are rate limits.
    h = Harness(tmp_path, [status(403, "Daily Limit for Unauthenticated Use Exceeded.", "userRateLimitExceededUnreg")])
    async with h.client as c:
        err = await fail(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert err["error"] == "permission_denied"
    assert len(h.http.requests) == 1
    assert h.waited == 0


async def test_403_daily_limit_is_rate_limited_at_once(tmp_path: Path) -> None:
    h = Harness(tmp_path, [status(403, "Daily Limit Exceeded", "dailyLimitExceeded")])
    async with h.client as c:
        err = await fail(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert err["error"] == "rate_limited"
    assert err["details"]["reason"] == "dailyLimitExceeded"
    assert len(h.http.requests) == 1


async def test_403_rate_limit_in_error_info_details_is_retried(tmp_path: Path) -> None:
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "x"}
    limited = (
        {"status": "403", "content-type": "application/json", "retry-after": "5"},
        {"error": {"code": 403, "message": "Quota exceeded", "status": "PERMISSION_DENIED", "details": [info]}},
    )
    h = Harness(tmp_path, [limited, ok(META)])
    async with h.client as c:
        info_out = await call(c, "get_spreadsheet", {"spreadsheet_id": SID})
    assert info_out["title"] == "Budget"
    assert h.waited == pytest.approx(5.0)
