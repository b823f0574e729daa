"""JSON answers of the HTTP app: a payload, or a refusal as the error taxonomy's body and status."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from deskmcp.core.errors import AuthRequired, DeskError


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json", headers=headers)


def error_response(exc: DeskError) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="deskmcp"'} if isinstance(exc, AuthRequired) else None
    return json_response(exc.to_dict(), exc.http_status, headers)
