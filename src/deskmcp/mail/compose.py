"""Outgoing mail: checking what the caller asked for, and building the message to send.

Every header value is checked for CR/LF (header injection), every address parsed, the
recipient count and allowlist enforced, and the body size bounded, before anything leaves.
Replies carry `In-Reply-To` and `References` and a single `Re: ` so they thread in every client.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage, Message
from email.utils import format_datetime, formataddr, getaddresses, make_msgid
from pathlib import Path, PurePosixPath

from deskmcp.core.errors import BadRequest, NotFound, PermissionDenied
from deskmcp.core.paths import visible_join
from deskmcp.mail.mime import ParsedMail, parse_bytes
from deskmcp.mail.models import OutgoingAttachment

_ADDR = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*$")
_MSGID = re.compile(r"<[^<>\s]+>")
# Only these of a saved draft's headers are kept when it is sent: they describe the body. Every
# other header is written afresh from checked values, so a draft cannot carry a Resent-To, a second
# To or somebody else's From past the checks.
_CONTENT_HEADERS = ("content-", "mime-version")
_RE = re.compile(r"^\s*(re|aw|sv)\s*(\[\d+\])?\s*:", re.IGNORECASE)
_FWD = re.compile(r"^\s*(fwd?|wg|tr)\s*:", re.IGNORECASE)
MAX_REFERENCES = 20


MAX_ATTACHMENTS = 20


@dataclass(frozen=True)
class Attachment:
    """A file to attach, read and checked."""

    filename: str
    content_type: str
    data: bytes


def load_attachments(
    specs: Sequence[OutgoingAttachment], roots: Mapping[str, Path], max_bytes: int
) -> list[Attachment]:
    """Read each attachment: a file under one of `roots` (`documents/report.pdf`), resolved with
    `visible_join` so nothing outside the root, and nothing hidden in it (`.obsidian/`, `.git/`,
    `.env`: the rule the vault's reads follow), can be sent; or base64 content with a filename.
    Together they stay within `max_bytes`; the type is guessed from the file name."""
    if len(specs) > MAX_ATTACHMENTS:
        raise BadRequest(f"At most {MAX_ATTACHMENTS} attachments per message.", {"count": len(specs)})
    out: list[Attachment] = []
    total = 0
    for number, spec in enumerate(specs):
        if (spec.path is None) == (spec.content_base64 is None):
            raise BadRequest(
                f"Attachment {number} needs either path (documents/... or vault/...) or content_base64 with a"
                " filename, not both.",
                {"attachment": number},
            )
        if spec.path is not None:
            data, name = _read_attached_file(spec.path, roots, max_bytes - total)
        else:
            data, name = _decode_attached(spec, number, max_bytes - total)
        filename = _HEADER_FORBIDDEN.sub("_", spec.filename or name).strip()
        if not filename:
            raise BadRequest(f"Attachment {number} needs a filename.", {"attachment": number})
        total += len(data)
        content_type = mimetypes.guess_type(filename, strict=False)[0] or "application/octet-stream"
        out.append(Attachment(filename, content_type, data))
    return out


def _too_big(what: str, size: int, room: int) -> BadRequest:
    return BadRequest(
        f"{what} ({size:,} bytes) would take the attachments over the limit (MAIL_MAX_ATTACHMENT_BYTES);"
        f" {max(room, 0):,} bytes remain. Share a link instead, or send fewer files.",
        {"size": size, "room": max(room, 0)},
    )


def _read_attached_file(path: str, roots: Mapping[str, Path], room: int) -> tuple[bytes, str]:
    head, _, rest = path.replace("\\", "/").partition("/")
    root = roots.get(head)
    if root is None or not rest:
        raise BadRequest(
            f"Attachment path {path!r} must start with {' or '.join(f'{r}/' for r in roots)} and name a file.",
            {"path": path, "roots": list(roots)},
        )
    target = visible_join(root, rest)
    if not target.is_file():
        raise NotFound(f"No file {path!r} to attach; the {head} folder is {root}.", {"path": path})
    size = target.stat().st_size
    if size > room:
        raise _too_big(path, size, room)
    with target.open("rb") as handle:
        data = handle.read(room + 1)  # the file may have grown since stat
    if len(data) > room:
        raise _too_big(path, len(data), room)
    return data, PurePosixPath(rest).name


def _decode_attached(spec: OutgoingAttachment, number: int, room: int) -> tuple[bytes, str]:
    encoded = spec.content_base64 or ""
    if len(encoded) // 4 * 3 > room + 3:  # refused before decoding a huge string
        raise _too_big(spec.filename or f"attachment {number}", len(encoded) // 4 * 3, room)
    if not spec.filename:
        raise BadRequest(f"Attachment {number} has content_base64 but no filename.", {"attachment": number})
    try:
        data = base64.b64decode("".join(encoded.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(
            f"Attachment {number} ({spec.filename}): content_base64 is not valid base64.", {"attachment": number}
        ) from exc
    if len(data) > room:
        raise _too_big(spec.filename, len(data), room)
    return data, PurePosixPath(spec.filename.replace("\\", "/")).name


def attach(message: EmailMessage, attachments: Sequence[Attachment]) -> None:
    for item in attachments:
        maintype, _, subtype = item.content_type.partition("/")
        if maintype in ("multipart", "message") or not subtype:
            # Bytes cannot be a multipart body, and an .eml is sent as a file, not parsed.
            maintype, subtype = "application", "octet-stream"
        message.add_attachment(item.data, maintype=maintype, subtype=subtype, filename=item.filename)


@dataclass
class Draft:
    """What the caller asked to send, checked."""

    to: list[tuple[str, str]]
    cc: list[tuple[str, str]] = field(default_factory=list)
    bcc: list[tuple[str, str]] = field(default_factory=list)
    subject: str = ""
    body: str = ""
    html_body: str | None = None

    @property
    def recipients(self) -> list[str]:
        return [addr for _, addr in (*self.to, *self.cc, *self.bcc)]


# Every character `str.splitlines` breaks on (\v, \f, \x1c-\x1e, \x85, U+2028, U+2029 as well as
# CR and LF) would end a header line or make the email package refuse the header; the other
# control characters have no business in a header either. Tab is ordinary whitespace.
_HEADER_FORBIDDEN = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def no_line_breaks(name: str, value: str | None) -> None:
    """Refuse a header value holding a line break or another control character (`bad_request`)."""
    found = _HEADER_FORBIDDEN.search(value) if value is not None else None
    if found is not None:
        char = f"U+{ord(found.group()):04X}"
        raise BadRequest(
            f"{name} contains a line break or control character ({char}), which would inject or break mail"
            f" headers; remove it and call again. Nothing was sent or saved.",
            {"field": name, "character": char},
        )


def parse_addresses(name: str, value: str | None) -> list[tuple[str, str]]:
    """`a@x.org, "Bo" <bo@y.org>` as (display name, address) pairs, or `bad_request`."""
    if value is None or not value.strip():
        return []
    no_line_breaks(name, value)
    pairs = getaddresses([value])
    chunks = [c for c in re.split(r",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", value) if c.strip()]
    bad = [addr or chunk.strip() for (_, addr), chunk in zip(pairs, chunks, strict=False) if not _ADDR.match(addr)]
    if len(pairs) != len(chunks) or bad or not pairs:
        raise BadRequest(
            f"{name} holds an invalid address: {', '.join(bad) or value!r}. Write name@domain, comma-separated.",
            {"field": name, "invalid": bad or [value]},
        )
    return [(display, addr) for display, addr in pairs]


def check_draft(
    *,
    to: str,
    subject: str,
    body: str,
    cc: str | None,
    bcc: str | None,
    html_body: str | None,
    max_recipients: int,
    max_body_chars: int,
    allowlist: tuple[str, ...],
    require_to: bool = True,
) -> Draft:
    no_line_breaks("subject", subject)
    if len(subject) > 900:
        raise BadRequest("The subject is longer than 900 characters.", {"field": "subject"})
    draft = Draft(
        to=parse_addresses("to", to),
        cc=parse_addresses("cc", cc),
        bcc=parse_addresses("bcc", bcc),
        subject=subject,
        body=body,
        html_body=html_body,
    )
    if require_to and not draft.to:
        raise BadRequest("`to` needs at least one address.", {"field": "to"})
    count = len(draft.recipients)
    if count > max_recipients:
        raise BadRequest(
            f"{count} recipients is over the limit of {max_recipients} per message (MAIL_MAX_RECIPIENTS).",
            {"recipients": count, "limit": max_recipients},
        )
    for label, text in (("body", body), ("html_body", html_body or "")):
        if len(text) > max_body_chars:
            raise BadRequest(
                f"{label} has {len(text):,} characters, over the {max_body_chars:,} limit (MAIL_MAX_BODY_CHARS).",
                {"field": label, "chars": len(text), "limit": max_body_chars},
            )
    if allowlist:
        refused = [a for a in draft.recipients if not allowed(a, allowlist)]
        if refused:
            raise PermissionDenied(
                f"Not on the recipient allowlist (MAIL_ALLOWED_RECIPIENTS): {', '.join(refused)}. Nothing was sent.",
                {"refused": refused},
            )
    return draft


def allowed(address: str, allowlist: tuple[str, ...]) -> bool:
    lower = address.lower()
    domain = "@" + lower.rpartition("@")[2]
    return any(entry in (lower, domain) for entry in allowlist)


def reply_subject(subject: str) -> str:
    return subject if _RE.match(subject) else f"Re: {subject}"


def _headed(draft: Draft, subject: str, sender: str, display_name: str, now: datetime | None) -> EmailMessage:
    """A new message with its From, recipients, Subject and Date; the caller adds the Message-ID."""
    message = EmailMessage(policy=policy.SMTP)
    message["From"] = formataddr((display_name, sender)) if display_name else sender
    if draft.to:
        message["To"] = ", ".join(formataddr(p) for p in draft.to)
    if draft.cc:
        message["Cc"] = ", ".join(formataddr(p) for p in draft.cc)
    if draft.bcc:
        message["Bcc"] = ", ".join(formataddr(p) for p in draft.bcc)
    message["Subject"] = subject
    message["Date"] = format_datetime(now or datetime.now(UTC))
    return message


def _new_message_id(sender: str) -> str:
    return make_msgid(domain=sender.rpartition("@")[2] or "localhost")


def single_header(saved: Message, name: str) -> str | None:
    """A saved draft's header, refused when it appears more than once (which copy would count?)."""
    values = saved.get_all(name) or []
    if len(values) > 1:
        raise BadRequest(
            f"The draft has {len(values)} {name}: headers; a message carries one. Recreate it with create_draft."
            " Nothing was sent.",
            {"field": name.lower(), "count": len(values)},
        )
    return str(values[0]) if values else None


def draft_to_send(
    saved: Message,
    *,
    sender: str,
    display_name: str = "",
    max_recipients: int,
    max_body_chars: int,
    allowlist: tuple[str, ...],
    now: datetime | None = None,
) -> EmailMessage:
    """The message that sends a saved draft: its recipients and subject checked like `send_email`'s,
    From set to the user's own address, its body and threading ids kept, nothing else."""
    draft = check_draft(
        to=single_header(saved, "To") or "",
        subject=single_header(saved, "Subject") or "",
        body="",
        cc=single_header(saved, "Cc"),
        bcc=single_header(saved, "Bcc"),
        html_body=None,
        max_recipients=max_recipients,
        max_body_chars=max_body_chars,
        allowlist=allowlist,
    )
    message = _headed(draft, draft.subject, sender, display_name, now)
    own = _MSGID.findall(single_header(saved, "Message-ID") or "")
    # The draft's own Message-ID is kept so create_draft's rfc_message_id is what goes out.
    message["Message-ID"] = own[0] if len(own) == 1 else _new_message_id(sender)
    for name in ("In-Reply-To", "References"):
        ids = _MSGID.findall(single_header(saved, name) or "")
        if ids:
            message[name] = " ".join(ids)
    for name, value in saved.items():
        if name.lower().startswith(_CONTENT_HEADERS):
            message[name] = value
    message.set_payload(saved.get_payload())  # type: ignore[arg-type]
    return message


def envelope_recipients(message: Message) -> list[str]:
    """Everyone an outgoing message goes to: its To, Cc and Bcc, never a Resent-* header."""
    values = [str(v) for name in ("To", "Cc", "Bcc") for v in (message.get_all(name) or [])]
    seen: dict[str, None] = {}
    for _, addr in getaddresses(values):
        if addr:
            seen.setdefault(addr, None)
    return list(seen)


def forward_subject(subject: str) -> str:
    """`Fwd: ` added once, the original's control characters blanked (it was not the caller's
    to check) and the whole kept within the subject limit."""
    clean = " ".join(_HEADER_FORBIDDEN.sub(" ", subject).split())
    return (clean if _FWD.match(clean) else f"Fwd: {clean}")[:900]


def build_forward(
    draft: Draft,
    original: ParsedMail,
    *,
    sender: str,
    display_name: str = "",
    now: datetime | None = None,
) -> EmailMessage:
    """A forward: the caller's note, the original's headers and text, its attachments re-attached."""
    message = _headed(draft, draft.subject, sender, display_name, now)
    message["Message-ID"] = _new_message_id(sender)
    quoted = [
        "---------- Forwarded message ---------",
        f"From: {original.sender}",
        f"Date: {original.date}",
        f"Subject: {original.subject}",
        f"To: {original.to}",
        *([f"Cc: {original.cc}"] if original.cc else []),
        "",
        original.body,
    ]
    note = draft.body.rstrip()
    message.set_content((note + "\n\n" if note else "") + "\n".join(quoted) + "\n")
    for item in original.attachments:
        filename = _HEADER_FORBIDDEN.sub("_", item.filename)
        if item.content_type.partition("/")[0] == "message":
            inner = item.part.get_payload()
            enclosed = inner[0] if isinstance(inner, list) and inner else parse_bytes(item.payload())
            message.add_attachment(enclosed, filename=filename)
        else:
            attach(message, [Attachment(filename, item.content_type, item.payload())])
    return message


def build_message(
    draft: Draft,
    *,
    sender: str,
    display_name: str = "",
    parent: ParsedMail | None = None,
    now: datetime | None = None,
    attachments: Sequence[Attachment] = (),
) -> EmailMessage:
    """The message to send, with its Message-ID already assigned."""
    subject = draft.subject
    if parent is not None:
        subject = reply_subject(subject or parent.subject)
    message = _headed(draft, subject, sender, display_name, now)
    message["Message-ID"] = _new_message_id(sender)
    if parent is not None and parent.rfc_message_id:
        message["In-Reply-To"] = parent.rfc_message_id
        chain = [r for r in parent.references if r != parent.rfc_message_id]
        chain.append(parent.rfc_message_id)
        if len(chain) > MAX_REFERENCES:  # keep the root and the most recent
            chain = [chain[0], *chain[-(MAX_REFERENCES - 1) :]]
        message["References"] = " ".join(chain)
    message.set_content(draft.body)
    if draft.html_body:
        message.add_alternative(draft.html_body, subtype="html")
    attach(message, attachments)
    return message
