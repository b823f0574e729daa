import json
import subprocess
import sys

import pytest

from deskmcp.core.errors import ERRORS_BY_CODE, Conflict, DeskError, NotFound, from_payload


def test_every_error_is_a_plain_exception_whose_text_is_the_json_body():
    exc = NotFound("No meeting 'abc'. Call meetings_list for valid ids.", {"id": "abc"})
    assert NotFound.__mro__[1:] == (DeskError, Exception, BaseException, object)
    assert json.loads(str(exc)) == {
        "error": "not_found",
        "message": "No meeting 'abc'. Call meetings_list for valid ids.",
        "details": {"id": "abc"},
    }


def test_codes_are_unique_and_map_to_http_statuses():
    assert len(ERRORS_BY_CODE) == 13
    statuses = {code: cls.http_status for code, cls in ERRORS_BY_CODE.items()}
    assert statuses["bad_request"] == 400
    assert statuses["permission_denied"] == 403
    assert statuses["not_found"] == 404
    assert statuses["conflict"] == 409
    assert statuses["parse_error"] == 422
    assert statuses["rate_limited"] == 429
    assert statuses["mcp_unavailable"] == 503


def test_payload_round_trips_to_the_same_class():
    original = Conflict("exists", {"path": "a.md"})
    rebuilt = from_payload(original.to_dict())
    assert type(rebuilt) is Conflict
    assert rebuilt.details == {"path": "a.md"}


def test_unknown_code_in_a_payload_becomes_internal_error():
    rebuilt = from_payload({"error": "weird", "message": "m"})
    assert isinstance(rebuilt, DeskError)
    assert rebuilt.code == "internal_error"


@pytest.mark.e2e
def test_importing_the_taxonomy_does_not_load_the_mcp_sdk():
    # A fresh interpreter: the test process itself has the SDK loaded already.
    code = (
        "import sys, deskmcp.core.errors, deskmcp.core.dates\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
