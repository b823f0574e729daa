"""mail/mime.py on its own: addresses, encoded words, charsets and attachment names, as tables of raw
mail -> what the tools show. Each row is read with both parsers (the modern one behind get_email and
the fast one behind the index), which must agree."""

from __future__ import annotations

import pytest

from deskmcp.mail.mime import address_list, decode, decode_words, fix_text, header_text, parse_bytes, parse_date

PARSERS = pytest.mark.parametrize("fast", [False, True], ids=["modern", "fast"])


def header(name: str, value: str | bytes, *, fast: bool) -> str:
    raw = f"{name}: ".encode() + (value if isinstance(value, bytes) else value.encode("ascii")) + b"\r\n\r\nbody\r\n"
    return header_text(parse_bytes(raw, fast=fast), name)


ADDRESSES: list[tuple[str, str | bytes, str]] = [
    ("plain", "Alice <alice@example.org>", "Alice <alice@example.org>"),
    ("bare", "alice@example.org", "alice@example.org"),
    ("encoded-word", "=?UTF-8?Q?Jos=C3=A9_D=C3=ADaz?= <jose@example.org>", "José Díaz <jose@example.org>"),
    (
        "encoded-words-folded",
        "=?UTF-8?Q?Jos=C3=A9_D?=\r\n =?UTF-8?Q?=C3=ADaz?= <jose@example.org>",
        "José Díaz <jose@example.org>",
    ),
    ("comment-name", "jose@example.org (Jose)", "Jose <jose@example.org>"),
    ("quoted-comma", '"Doe, Jane" <jane@example.org>', '"Doe, Jane" <jane@example.org>'),
    ("list", "a@example.org, Bea <b@example.org>", "a@example.org, Bea <b@example.org>"),
    ("raw-utf8", b"J\xc3\xbcrgen <j@example.org>", "Jürgen <j@example.org>"),
    ("raw-latin1", b"J\xfcrgen <j@example.org>", "Jürgen <j@example.org>"),
    ("group", "undisclosed-recipients:;", "undisclosed-recipients:;"),
]


@PARSERS
@pytest.mark.parametrize(("value", "shown"), [(v, s) for _, v, s in ADDRESSES], ids=[i for i, _, _ in ADDRESSES])
def test_address_headers_show_decoded_names_and_quote_names_with_specials(
    value: str | bytes, shown: str, fast: bool
) -> None:
    assert header("From", value, fast=fast) == shown


SUBJECTS: list[tuple[str, str | bytes, str]] = [
    ("q-latin1", "=?ISO-8859-1?Q?caf=E9?=", "café"),
    ("b-utf8", "=?UTF-8?B?5pel5pys6Kqe?=", "日本語"),
    ("b-koi8r", "=?KOI8-R?B?8NLJ18XU?=", "Привет"),
    ("adjacent-words-join", "=?utf-8?q?a?= =?utf-8?q?b?=", "ab"),
    ("raw-utf8", b"Caf\xc3\xa9 raw", "Café raw"),
    ("raw-cp1252", b"Caf\xe9 latin", "Café latin"),
    ("folded", "Hello\r\n world", "Hello world"),
    ("unknown-charset-ascii", "=?x-unknown?Q?abc?=", "abc"),
    ("unknown-charset-utf8-bytes", "=?x-unknown?Q?caf=C3=A9?= and =?utf-8?q?more?=", "café and more"),
    ("unknown-charset-latin1-bytes", "=?x-unknown?Q?caf=E9?=", "café"),
    ("utf8-label-latin1-bytes", "=?utf-8?Q?caf=E9?=", "café"),
    ("raw-text-beside-encoded-word", b"Caf\xe9 =?utf-8?q?ok?=", "Café ok"),
]


@PARSERS
@pytest.mark.parametrize(("value", "shown"), [(v, s) for _, v, s in SUBJECTS], ids=[i for i, _, _ in SUBJECTS])
def test_subjects_decode_encoded_words_and_raw_8bit_on_one_line(value: str | bytes, shown: str, fast: bool) -> None:
    assert header("Subject", value, fast=fast) == shown


def test_address_list_keeps_lower_case_addresses_and_drops_what_is_not_one() -> None:
    assert address_list("A <A@X.example>, b@y.example, nobody") == ["a@x.example", "b@y.example"]


def test_fix_text_reads_escaped_raw_bytes_as_utf8_else_cp1252() -> None:
    assert fix_text("caf\udcc3\udca9") == "café"
    assert fix_text("caf\udce9") == "café"
    assert fix_text("plain") == "plain"


def test_decode_words_leaves_a_broken_encoded_word_as_written() -> None:
    assert decode_words("=?utf-8?q?ok?=") == "ok"
    assert decode_words("=?broken") == "=?broken"


@pytest.mark.parametrize(
    ("value", "moment"),
    [
        ("Sun, 1 Nov 2026 10:00:00 +0100", "2026-11-01T09:00:00+00:00"),
        ("Sun, 1 Nov 2026 10:00:00", "2026-11-01T10:00:00+00:00"),  # no zone: read as UTC
        ("garbage", None),
        ("", None),
    ],
)
def test_dates_are_utc_and_garbled_ones_are_none(value: str, moment: str | None) -> None:
    parsed = parse_date(value)
    assert (parsed.isoformat() if parsed else None) == moment


def single(ctype: str, body: bytes, encoding: str = "8bit") -> bytes:
    return (
        b"From: a@example.org\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
        + f"Content-Type: {ctype}\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n".encode()
        + body
    )


BODIES: list[tuple[str, bytes, str]] = [
    ("latin1", single("text/plain; charset=iso-8859-1", b"caf\xe9"), "café"),
    ("koi8r", single("text/plain; charset=koi8-r", b"\xf0\xd2\xc9\xd7\xc5\xd4"), "Привет"),
    ("unknown-charset-utf8-bytes", single("text/plain; charset=x-unknown", b"caf\xc3\xa9"), "café"),
    ("unknown-charset-cp1252-bytes", single("text/plain; charset=x-unknown", b"caf\xe9"), "café"),
    ("no-charset-8bit", single("text/plain", b"caf\xe9"), "café"),
    ("utf8-label-latin1-bytes", single("text/plain; charset=utf-8", b"caf\xe9"), "café"),
    ("utf8-label-cp1252-bytes", single("text/plain; charset=UTF-8", b"\x93caf\xe9\x94 \x80"), "\u201ccafé\u201d €"),
    ("cp1252-undefined-byte-as-latin1", single("text/plain; charset=utf-8", b"\x80 \x81"), "€ \x81"),
    ("ascii-label-latin1-bytes", single("text/plain; charset=us-ascii", b"caf\xe9"), "café"),
    ("shift-jis-strict", single("text/plain; charset=shift_jis", b"\x93\xfa\x96\x7b"), "日本"),
    ("base64", single("text/plain; charset=utf-8", b"Y2Fmw6k=", "base64"), "café"),
    ("quoted-printable", single("text/plain; charset=utf-8", b"caf=C3=A9", "quoted-printable"), "café"),
    ("html-as-text", single("text/html; charset=utf-8", b"<p>Hello <b>there</b></p>"), "Hello there"),
]


@PARSERS
@pytest.mark.parametrize(("raw", "body"), [(r, b) for _, r, b in BODIES], ids=[i for i, _, _ in BODIES])
def test_bodies_decode_with_their_charset_falling_back_to_utf8_then_cp1252(raw: bytes, body: str, fast: bool) -> None:
    assert decode(parse_bytes(raw, fast=fast)).body == body


def with_part(headers: str, body: bytes) -> bytes:
    """A multipart/mixed message: a text body, then one part with `headers` and `body`."""
    return (
        b"From: a@example.org\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=BB\r\n\r\n"
        b"--BB\r\nContent-Type: text/plain\r\n\r\nbody\r\n"
        b"--BB\r\n" + headers.encode("latin-1") + b"\r\n\r\n" + body + b"\r\n--BB--\r\n"
    )


ATTACHMENTS: list[tuple[str, bytes, tuple[str, str, int]]] = [
    (
        "filename",
        with_part(
            "Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=report.pdf\r\n"
            "Content-Transfer-Encoding: base64",
            b"JVBERi0=",
        ),
        ("report.pdf", "application/pdf", 5),
    ),
    (
        "rfc2231",
        with_part(
            "Content-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf",
            b"x",
        ),
        ("résumé.pdf", "application/pdf", 1),
    ),
    (
        "rfc2231-continued",
        with_part(
            "Content-Type: application/pdf\r\nContent-Disposition: attachment;\r\n"
            " filename*0*=UTF-8''long%C3%A9;\r\n filename*1=name.pdf",
            b"x",
        ),
        ("longéname.pdf", "application/pdf", 1),
    ),
    (
        "rfc2047-in-filename",
        with_part(
            "Content-Type: application/pdf\r\n"
            'Content-Disposition: attachment; filename="=?UTF-8?Q?r=C3=A9sum=C3=A9.pdf?="',
            b"x",
        ),
        ("résumé.pdf", "application/pdf", 1),
    ),
    (
        "raw-utf8-filename",
        with_part('Content-Type: application/pdf\r\nContent-Disposition: attachment; filename="caf\xc3\xa9.pdf"', b"x"),
        ("café.pdf", "application/pdf", 1),
    ),
    (
        "raw-latin1-filename",
        with_part('Content-Type: application/pdf\r\nContent-Disposition: attachment; filename="caf\xe9.pdf"', b"x"),
        ("café.pdf", "application/pdf", 1),
    ),
    (
        "raw-latin1-filename-unquoted",
        with_part("Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=caf\xe9.pdf", b"x"),
        ("café.pdf", "application/pdf", 1),
    ),
    (
        "raw-latin1-name-on-content-type",
        with_part('Content-Type: application/pdf; name="r\xe9sum\xe9.pdf"', b"x"),
        ("résumé.pdf", "application/pdf", 1),
    ),
    (
        "name-on-content-type",
        with_part('Content-Type: application/pdf; name="invoice.pdf"', b"x"),
        ("invoice.pdf", "application/pdf", 1),
    ),
    ("unnamed", with_part("Content-Type: application/octet-stream", b"xyz"), ("part-1", "application/octet-stream", 3)),
    (
        "forwarded-message",
        with_part("Content-Type: message/rfc822", b"Subject: Inner note\r\n\r\ninner"),
        ("Inner note.eml", "message/rfc822", 56),
    ),
    (
        "forwarded-message-no-subject",
        with_part("Content-Type: message/rfc822", b"From: z@example.org\r\n\r\ninner"),
        ("message.eml", "message/rfc822", 56),
    ),
    (
        "named-inline-image",
        with_part("Content-Type: image/png\r\nContent-Disposition: inline; filename=logo.png", b"png"),
        ("logo.png", "image/png", 3),
    ),
    (
        "text-attachment",
        with_part("Content-Type: text/csv\r\nContent-Disposition: attachment; filename=data.csv", b"a,b"),
        ("data.csv", "text/csv", 3),
    ),
]


@PARSERS
@pytest.mark.parametrize(("raw", "expected"), [(r, e) for _, r, e in ATTACHMENTS], ids=[i for i, _, _ in ATTACHMENTS])
def test_attachments_are_named_typed_and_sized_and_stay_out_of_the_body(
    raw: bytes, expected: tuple[str, str, int], fast: bool
) -> None:
    parsed = decode(parse_bytes(raw, fast=fast))
    assert parsed.body == "body"
    assert [(a.index, a.filename, a.content_type, a.size) for a in parsed.attachments] == [(0, *expected)]
