import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.core.pagination import decode_cursor, encode_cursor, page, query_key


def test_cursor_round_trips_for_the_same_query():
    key = query_key("list", {"q": "x"})
    assert decode_cursor(encode_cursor(40, key), key) == 40
    assert decode_cursor(None, key) == 0


def test_cursor_from_another_query_is_refused():
    cursor = encode_cursor(10, query_key("a"))
    with pytest.raises(BadRequest, match="different query"):
        decode_cursor(cursor, query_key("b"))


@pytest.mark.parametrize("garbage", ["not-base64!!", "e30", "eyJvIjogLTF9", "x" * 5])
def test_garbage_cursor_is_a_bad_request(garbage: str):
    with pytest.raises(BadRequest):
        decode_cursor(garbage, query_key("a"))


def test_page_offers_a_next_cursor_only_when_more_rows_exist():
    key = query_key("a")
    assert page(0, 10, 10, key) is None
    nxt = page(0, 10, 11, key)
    assert nxt is not None and decode_cursor(nxt, key) == 10
