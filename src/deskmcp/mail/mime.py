"""Decoding real mail: headers, bodies and attachments, never crashing on malformed input.

Built on the stdlib `email` package with the modern policy. Every header access and every
payload decode has a fallback, because real mail carries raw 8-bit headers, unknown charsets,
garbled dates and broken MIME structure.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.errors import HeaderParseError, MessageDefect, MessageError
from email.header import decode_header, make_header
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime

from deskmcp.core.html_text import html_to_text
from deskmcp.mail.models import DateSource

_PARSER = BytesParser(policy=policy.default)
# The index reads every message once; compat32 parses several times faster than the modern
# policy because it leaves header values raw. Headers are then decoded here (RFC 2047,
# raw 8-bit), the same way `header_text` falls back for the modern policy.
_FAST_PARSER = BytesParser(policy=policy.compat32)
_MSGID = re.compile(r"<[^<>\s]+>")
_WS = re.compile(r"\s+")
_SURROGATE = re.compile("[\udc80-\udcff]")
_HEADER_ERRORS = (HeaderParseError, MessageError, ValueError, IndexError, TypeError, AttributeError, LookupError)
SNIPPET_CHARS = 140
# Real mail nests a few levels (mixed > alternative > related); past this the walker stops
# descending, so a hostile message cannot exhaust the stack.
MAX_DEPTH = 64
_LONG_HEADER = 8192
# An encoded word the modern parser left as written (an unknown charset, bytes its charset cannot
# read): the raw decoding below reads it, so get_email and the listings show the same text.
_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[QqBb]\?[^?\s]*\?=")


def _latin1_gaps(error: UnicodeError) -> tuple[str, int]:
    # The five bytes cp1252 leaves undefined read as their Latin-1 control characters, as the
    # WHATWG "windows-1252" decoder does, so one stray byte never costs the rest of the text.
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start : error.end].decode("latin-1"), error.end


codecs.register_error("deskmcp-latin1", _latin1_gaps)


def decode_fallback(data: bytes, charset: str | None = None) -> str:
    """Bytes as text without losing any: the declared charset if it reads them strictly, else
    UTF-8, else cp1252 (undefined bytes as Latin-1), the way mature mail clients recover mail
    whose declared charset is wrong (Latin-1 bytes labelled utf-8 are common)."""
    if charset:
        try:
            return data.decode(charset)
        except (UnicodeDecodeError, LookupError):  # wrong or unknown label: fall back
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "deskmcp-latin1")


class NestingTooDeep(MessageDefect):
    """The MIME structure nests deeper than the parser can follow: only the headers were read."""


@dataclass
class Attachment:
    index: int
    filename: str
    content_type: str
    size: int
    part: Message = field(repr=False)

    def payload(self) -> bytes:
        return payload_bytes(self.part)


@dataclass
class ParsedMail:
    subject: str
    sender: str
    to: str
    cc: str
    bcc: str
    date: str
    timestamp: float | None
    rfc_message_id: str
    in_reply_to: str | None
    references: list[str]
    body: str
    attachments: list[Attachment]
    addresses: dict[str, list[str]]
    unreadable: str | None = None  # why the body could not be read (the headers could)
    header_dated: bool = True  # `date` is the Date header's time (else the raw header, '' when absent)

    @property
    def snippet(self) -> str:
        return _WS.sub(" ", self.body).strip()[:SNIPPET_CHARS]


PARSE_DEPTH = 800
"""Multipart levels beyond which a message is read headers only without trying the parser,
which recurses per level and would fail at Python's recursion limit after seconds of work."""
_BOUNDARY_PARAM = re.compile(rb'boundary\s*=\s*(?:"([^"\r\n]*)"|([^\s;"]+))', re.IGNORECASE)


def nesting_depth(raw: bytes) -> int:
    """How deep multiparts nest in `raw`, read from its boundary declarations and closing
    delimiter lines in one pass (a declared part whose closing line never comes stays open, so
    a message cut short counts as deep as it was declared)."""
    opened: dict[bytes, int] = {}
    depth = deepest = 0
    for line in raw.splitlines():
        if line.startswith(b"--"):
            closing = line.rstrip()
            if closing.endswith(b"--") and (level := opened.get(closing[2:-2])) is not None:
                depth = level
                opened = {b: lv for b, lv in opened.items() if lv < level}
                continue
        for found in _BOUNDARY_PARAM.finditer(line):
            boundary = found.group(1) if found.group(1) is not None else found.group(2)
            if boundary not in opened:
                opened[boundary] = depth
                depth += 1
                deepest = max(deepest, depth)
    return deepest


def parse_bytes(raw: bytes, *, fast: bool = False) -> EmailMessage:
    """Parse with the modern policy, or (`fast`) with compat32 for bulk indexing.

    A structure too deep for the parser (it recurses per level) is read headers only, with a
    `NestingTooDeep` defect, so one hostile message never makes a whole listing fail; one that
    declares over PARSE_DEPTH nested boundaries is read so without trying."""
    parser = _FAST_PARSER if fast else _PARSER
    try:
        declared = raw.count(b"oundary") + raw.count(b"OUNDARY")  # a cheap bound on the declarations
        if declared <= PARSE_DEPTH or nesting_depth(raw) <= PARSE_DEPTH:
            return parser.parsebytes(raw)  # type: ignore[return-value]
    except RecursionError:
        pass
    msg = parser.parsebytes(raw, headersonly=True)
    msg.defects.append(NestingTooDeep())
    return msg  # type: ignore[return-value]


def crlf(raw: bytes) -> bytes:
    """A message with every line ending in CRLF, the form IMAP servers and Gmail hand out (a
    Maildir file often has bare LF): attachment sizes and saved bytes of text sent as 7bit, 8bit
    or quoted-printable are then the same from every backend."""
    if raw.count(b"\n") == raw.count(b"\r\n"):
        return raw
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def fix_text(text: str) -> str:
    """Undo the parser's surrogate escapes: raw 8-bit bytes as UTF-8, else cp1252."""
    if _SURROGATE.search(text) is None:
        return text
    return decode_fallback(text.encode("utf-8", "surrogateescape"))


def header_text(msg: Message, name: str) -> str:
    """A header's decoded value on one line; '' when absent or unreadable."""
    if name.lower() in _ADDRESS_HEADERS:
        # Read from the raw value in both policies: the modern one puts a space between encoded
        # words folded across lines ("José D íaz") and drops comment-form names ("jose@x (José)").
        found = _addresses_text(_WS.sub(" ", fix_text(_raw_value(msg, name))).strip())
        if found is not None:
            return found
    # The modern policy's header parser takes seconds on a value of a few hundred kilobytes; the
    # raw decoding reads such a value in milliseconds.
    if msg.policy is policy.compat32 or len(_raw_value(msg, name)) > _LONG_HEADER:
        return _WS.sub(" ", _raw_header(msg, name)).strip()
    try:
        value = msg.get(name)
        text = "" if value is None else str(value)
    except _HEADER_ERRORS:
        text = _raw_header(msg, name)
    if "\ufffd" in text or _ENCODED_WORD.search(text):  # what the parser gave up on: decode it ourselves
        text = _raw_header(msg, name) or text
    return _WS.sub(" ", fix_text(text)).strip()


_ADDRESS_HEADERS = ("from", "to", "cc", "bcc", "reply-to", "sender")


_SPECIALS = re.compile(r'[()<>@,;:\\".\[\]]')


def _addresses_text(value: str) -> str | None:
    """An address header as `Name <addr>, ...`, display names decoded (encoded words, comments);
    None when it is not a plain list of addresses (then it is shown decoded as it stands)."""
    if not value:
        return ""
    try:
        pairs = getaddresses([value])
    except _HEADER_ERRORS:
        return None
    if not pairs or not all(addr for _, addr in pairs):
        return None
    return ", ".join(f"{_display_name(name)} <{addr}>" if name else addr for name, addr in pairs)


def _display_name(name: str) -> str:
    text = _WS.sub(" ", decode_words(name) if "=?" in name else name).strip()
    if _SPECIALS.search(text):  # quoted, so the list can be parsed again (a reply's To)
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def _raw_value(msg: Message, name: str) -> str:
    for key, value in msg.raw_items():  # type: ignore[attr-defined]
        if key.lower() == name.lower():
            return str(value)
    return ""


def _raw_header(msg: Message, name: str) -> str:
    return decode_words(fix_text(_raw_value(msg, name)))


def address_list(value: str) -> list[str]:
    """Lower-case addresses found in a header value."""
    try:
        pairs = getaddresses([value])
    except _HEADER_ERRORS:
        return []
    return [addr.lower() for _, addr in pairs if "@" in addr]


def parse_date(value: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


_ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def shown_date(date: str, header_dated: bool, arrived: float | None) -> tuple[str, DateSource]:
    """The date a summary shows and its `date_source`: the Date header's time, else (missing or
    unreadable) `arrived`, when the mail server received the message; both ISO 8601 UTC."""
    if header_dated and _ISO_UTC.fullmatch(date):
        return date, "header"
    if arrived is None:
        return "", "received"
    return iso_utc(datetime.fromtimestamp(arrived, UTC)), "received"


def _received_date(msg: Message) -> datetime | None:
    """The newest Received: stamp, for mail whose Date: is missing or garbled."""
    try:
        received = msg.get_all("Received") or []
    except _HEADER_ERRORS:
        return None
    for value in received:
        text = str(value)
        if ";" in text:
            found = parse_date(text.rsplit(";", 1)[1].strip())
            if found is not None:
                return found
    return None


def _charset(part: Message) -> str | None:
    try:
        name = part.get_content_charset()
    except _HEADER_ERRORS:
        return None
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def payload_bytes(part: Message) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except _HEADER_ERRORS:
        data = None
    if isinstance(data, bytes):
        return data
    raw = part.get_payload()
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogateescape")
    return b""


def part_text(part: Message) -> str:
    """A text part's content decoded with its charset, falling back to UTF-8 then cp1252."""
    return decode_fallback(payload_bytes(part), _charset(part))


def _filename(part: Message) -> str | None:
    if part.policy is policy.compat32:
        return _fast_filename(part)
    try:
        name = part.get_filename()
    except _HEADER_ERRORS:
        name = None
    if name is None:
        try:
            name = part.get_param("name")  # type: ignore[assignment]
        except _HEADER_ERRORS:
            name = None
        if isinstance(name, tuple):  # RFC 2231 triple
            name = str(name[2])
    if name is None:
        return None
    text = fix_text(str(name))
    if "\ufffd" in text:  # raw 8-bit bytes the modern parser replaced: read the raw header instead
        text = _fast_filename(part) or text
    if "=?" in text:  # RFC 2047 inside a filename: not standard, but common
        text = decode_words(text)
    return _WS.sub(" ", text).strip()


def decode_words(text: str) -> str:
    """RFC 2047 encoded words decoded; a word in an unknown charset, or with bytes its charset
    cannot read, is read like a body (`decode_fallback`); a broken one stays as written."""
    try:
        chunks = decode_header(text)
    except _HEADER_ERRORS:
        return text
    decoded: list[tuple[str | bytes, str | None]] = []
    for data, charset in chunks:
        if isinstance(data, str):
            decoded.append((data, charset))
        elif charset is None:  # text between encoded words, escaped by decode_header
            decoded.append((data.decode("raw-unicode-escape"), None))
        else:  # "utf-8*en": RFC 2231 puts a language after the charset
            decoded.append((decode_fallback(data, charset.split("*", 1)[0]), "utf-8"))
    try:
        return str(make_header(decoded))
    except _HEADER_ERRORS:
        return text


def _fast_filename(part: Message) -> str | None:
    """The filename of a compat32 part, read with the modern header parser (RFC 2231, 8-bit)."""
    for header, param in (("content-disposition", "filename"), ("content-type", "name")):
        raw = next((str(v) for k, v in part.raw_items() if k.lower() == header), None)  # type: ignore[attr-defined]
        if raw is None:
            continue
        try:
            # Raw 8-bit bytes decoded first (UTF-8, else cp1252): the header parser would
            # replace them with U+FFFD.
            unfolded = fix_text(re.sub(r"\r?\n(?=[ \t])", "", raw))
            parsed = policy.default.header_factory(header, unfolded)
            value = parsed.params.get(param)  # type: ignore[attr-defined]
        except _HEADER_ERRORS:
            value = None
        if value:
            text = fix_text(str(value))
            if "=?" in text:
                text = decode_words(text)
            return _WS.sub(" ", text).strip()
    return None


def _disposition(part: Message) -> str | None:
    try:
        return part.get_content_disposition()
    except _HEADER_ERRORS:
        return None


class _Walker:
    def __init__(self) -> None:
        self.attachments: list[Attachment] = []

    def attach(self, part: Message, name: str | None) -> None:
        ctype = part.get_content_type()
        if name is None:
            if ctype == "message/rfc822":
                inner = part.get_payload()
                first = inner[0] if isinstance(inner, list) and inner else None
                subject = header_text(first, "Subject") if isinstance(first, Message) else ""
                name = (subject or "message") + ".eml"
            else:
                name = f"part-{len(self.attachments) + 1}"
        size = len(payload_bytes(part)) if not part.is_multipart() else len(part.as_bytes(policy=policy.compat32))
        self.attachments.append(Attachment(len(self.attachments), name, ctype, size, part))

    def body(self, part: Message, depth: int = 0) -> str:
        if depth > MAX_DEPTH:
            return ""
        ctype = part.get_content_type()
        maintype = part.get_content_maintype()
        name = _filename(part)
        disposition = _disposition(part)
        if maintype == "message":
            self.attach(part, name)
            return ""
        if maintype == "multipart" and not part.is_multipart():
            return part_text(part)  # a broken boundary: the raw text is all there is
        if part.is_multipart():
            children = [p for p in part.get_payload() if isinstance(p, Message)]  # type: ignore[union-attr]
            if ctype == "multipart/alternative":
                return self._alternative(children, depth + 1)
            if ctype == "multipart/related" and children:
                text = self.body(children[0], depth + 1)
                for child in children[1:]:
                    self._collect(child, depth + 1)
                return text
            texts = [self.body(child, depth + 1) for child in children]
            return "\n\n".join(t for t in texts if t.strip())
        if disposition == "attachment" or (name and maintype != "text") or (name and disposition != "inline"):
            self.attach(part, name)
            return ""
        if ctype == "text/html":
            return html_to_text(part_text(part))
        if maintype == "text":
            return part_text(part)
        self.attach(part, name)
        return ""

    def _alternative(self, children: list[Message], depth: int) -> str:
        plain = [c for c in children if c.get_content_type() == "text/plain" and _disposition(c) != "attachment"]
        for child in plain:
            text = part_text(child)
            if text.strip():
                for other in children:
                    if other is not child and other.get_content_maintype() not in ("text", "multipart"):
                        self._collect(other, depth)
                return text
        # No usable plain part: the richest alternative (last) that yields text.
        for child in reversed(children):
            text = self.body(child, depth) if child.get_content_type() != "text/plain" else ""
            if text.strip():
                return text
        return ""

    def _collect(self, part: Message, depth: int) -> None:
        """Record attachments under `part` without using its text."""
        if depth > MAX_DEPTH:
            return
        if part.is_multipart() and part.get_content_maintype() != "message":
            for child in part.get_payload():  # type: ignore[union-attr]
                if isinstance(child, Message):
                    self._collect(child, depth + 1)
        elif part.get_content_maintype() != "text" or _filename(part):
            self.attach(part, _filename(part))


def decode(msg: Message, *, fallback_time: float | None = None, text: bool = True) -> ParsedMail:
    """Everything the tools show about a message; with `text` False its headers only (no body,
    attachments or address lists: what a summary with the server's own preview shows)."""
    walker = _Walker()
    unreadable = None
    if not text:
        body = ""
    elif any(isinstance(d, NestingTooDeep) for d in msg.defects):
        unreadable = f"its MIME structure nests deeper than {MAX_DEPTH} levels"
        body = ""
    else:
        try:
            body = walker.body(msg)
        # RecursionError: flattening a deep enclosure to measure it (the walk itself is bounded).
        except (*_HEADER_ERRORS, UnicodeError, KeyError, RecursionError):  # a structure the walker cannot follow
            body = part_text(msg) if not msg.is_multipart() else ""
    raw_date = header_text(msg, "Date")
    moment = parse_date(raw_date) or None
    date = iso_utc(moment) if moment else raw_date
    header_dated = moment is not None
    if moment is None:
        moment = _received_date(msg)
    timestamp = moment.timestamp() if moment else fallback_time
    message_id = _MSGID.findall(header_text(msg, "Message-ID"))
    in_reply_to = _MSGID.findall(header_text(msg, "In-Reply-To"))
    to, cc, bcc = header_text(msg, "To"), header_text(msg, "Cc"), header_text(msg, "Bcc")
    sender = header_text(msg, "From")
    return ParsedMail(
        subject=header_text(msg, "Subject"),
        sender=sender,
        to=to,
        cc=cc,
        bcc=bcc,
        date=date,
        timestamp=timestamp,
        rfc_message_id=message_id[0] if message_id else "",
        in_reply_to=in_reply_to[0] if in_reply_to else None,
        references=_MSGID.findall(header_text(msg, "References")),
        body=body.replace("\r\n", "\n").strip(),
        attachments=walker.attachments,
        addresses={"from": address_list(sender), "to": address_list(to), "cc": address_list(cc)} if text else {},
        unreadable=unreadable,
        header_dated=header_dated,
    )


def thread_root(parsed: ParsedMail) -> str:
    """The Message-ID a conversation is keyed by: the first reference, else the parent, else itself."""
    if parsed.references:
        return parsed.references[0]
    if parsed.in_reply_to:
        return parsed.in_reply_to
    return parsed.rfc_message_id
