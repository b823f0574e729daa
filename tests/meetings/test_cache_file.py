import json
from pathlib import Path

import orjson
import pytest

from deskmcp.core.errors import DeskError
from deskmcp.meetings.cache_file import read_document
from deskmcp.meetings.normalize import transcript_digest, transcript_segments

TRICKY = [
    "plain words",
    'quotes " and backslashes \\ and \\" together \\\\"',
    "newlines\nand\ttabs and control \x01 chars",
    "accents: Tomás, naïve café; CJK 会议; emoji 😀👍🏽 (surrogate pairs when escaped)",
    "\\u0041 written literally, and a lone backslash at the end \\",
]


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 11, 13, 64, 4096])
def test_a_string_cache_is_unescaped_exactly_whatever_the_chunk_boundaries(
    tmp_path: Path, chunk: int, ascii_only: bool
):
    inner = {"state": {"documents": {f"d{i}": {"title": t} for i, t in enumerate(TRICKY)}}, "version": 3}
    path = tmp_path / "cache-v3.json"
    path.write_text(
        json.dumps({"cache": json.dumps(inner, ensure_ascii=ascii_only)}, ensure_ascii=ascii_only), encoding="utf-8"
    )
    document = read_document(path, 1 << 20, chunk_bytes=chunk)
    assert document.inner
    assert orjson.loads(document.data) == inner


def test_an_object_cache_is_read_as_it_is(tmp_path: Path):
    path = tmp_path / "cache-v6.json"
    path.write_text(json.dumps({"cache": {"state": {"documents": {}}, "version": 6}}), encoding="utf-8")
    document = read_document(path, 1 << 20, chunk_bytes=7)
    assert not document.inner
    assert bytes(document.data) == path.read_bytes()


def test_a_cache_replaced_while_it_is_read_is_read_again(tmp_path: Path):
    path = tmp_path / "cache-v3.json"
    old = json.dumps({"cache": json.dumps({"state": {"documents": {"a": {"title": "old " * 50}}}})})
    new = json.dumps({"cache": json.dumps({"state": {"documents": {"a": {"title": "new " * 60}}}})})
    path.write_text(old, encoding="utf-8")
    calls: list[int] = []

    def replace_once(n: int) -> None:
        if not calls:
            replacement = tmp_path / "next.json"
            replacement.write_text(new, encoding="utf-8")
            replacement.replace(path)
        calls.append(n)

    document = read_document(path, 1 << 20, chunk_bytes=64, after_chunk=replace_once)
    assert orjson.loads(document.data)["state"]["documents"]["a"]["title"].startswith("new")


def test_a_cache_that_keeps_changing_while_read_is_a_parse_error_not_a_mix(tmp_path: Path):
    path = tmp_path / "cache-v3.json"
    text = json.dumps({"cache": json.dumps({"state": {"documents": {"a": {"title": "x" * 500}}}})})
    path.write_text(text, encoding="utf-8")

    def rewrite(_n: int) -> None:
        path.write_text(text + " ", encoding="utf-8")

    with pytest.raises(DeskError, match="kept changing") as caught:
        read_document(path, 1 << 20, chunk_bytes=64, after_chunk=rewrite)
    assert caught.value.code == "parse_error"


@pytest.mark.parametrize(
    "content",
    [b'{"cache": "{\\"state\\": {\\"documents\\": 1}"}', b'{"cache": "abc\\"}', b'{"cache": "\\uZZZZ"}'],
)
def test_a_malformed_string_cache_is_a_parse_error(tmp_path: Path, content: bytes):
    path = tmp_path / "cache-v3.json"
    path.write_bytes(content)
    try:
        document = read_document(path, 1 << 20, chunk_bytes=4)
    except DeskError as exc:
        assert exc.code == "parse_error"
    else:
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(document.data)


def test_a_cache_over_the_size_limit_is_refused_before_reading(tmp_path: Path):
    path = tmp_path / "cache-v6.json"
    path.write_bytes(b"{" + b" " * 5000 + b"}")
    with pytest.raises(DeskError, match="over the") as caught:
        read_document(path, 1000)
    assert caught.value.code == "io_error"


@pytest.mark.parametrize(
    "raw",
    [
        [
            {"text": " Hello ", "start_timestamp": "2024-05-06T09:00:00Z", "end_timestamp": "2024-05-06T09:00:04Z"},
            {"text": "draft", "is_final": False, "end_timestamp": "2024-05-06T09:00:09Z"},
            {"text": "   ", "end_timestamp": "2024-05-06T09:00:10Z"},
            {"text": "Bye", "end": 1715000000},
            {"text": "last blank", "is_final": True},
            {"text": ""},
        ],
        {"segments": [{"text": "wrapped", "end_timestamp": "2024-05-06T09:00:04Z"}]},
        [{"text": 42}, "not an object", {"text": "kept"}],
        [],
    ],
)
def test_the_transcript_digest_agrees_with_the_normalised_segments(raw: object):
    segments = transcript_segments(raw)
    digest = transcript_digest(orjson.dumps(raw))
    assert digest.text == "\n".join(s["text"] for s in segments)
    assert digest.segments == len(segments)
    assert digest.end == (segments[-1]["end"] if segments else None)
