"""A message's attachments read from its IMAP BODYSTRUCTURE, without downloading the message.

The rules follow the MIME walker in `mail/mime.py` (what `get_email` lists), so a summary's
`has_attachments` and `has:attachment` / `filename:` agree with the full message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

from deskmcp.mail.mime import decode_words, fix_text


@dataclass(frozen=True)
class Attachment:
    filename: str
    content_type: str
    size: int


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return fix_text(value.decode("utf-8", "surrogateescape"))
    return "" if value is None else str(value)


def _params(value: Any) -> dict[str, str]:
    """A BODYSTRUCTURE parameter list as a dict (lower-case keys, RFC 2231 values decoded)."""
    if not isinstance(value, tuple | list):
        return {}
    items = list(value)
    out: dict[str, str] = {}
    for key, raw in zip(items[0::2], items[1::2], strict=False):
        name = _text(key).lower()
        if name.endswith("*"):
            out[name[:-1]] = _rfc2231(raw)
        elif name not in out:
            out[name] = _text(raw)
    return out


def _rfc2231(raw: Any) -> str:
    data = raw if isinstance(raw, bytes) else _text(raw).encode("utf-8")
    charset, _, rest = data.partition(b"'")
    if not rest:
        return _text(data)
    _language, _, encoded = rest.partition(b"'")
    decoded = unquote_to_bytes(encoded)
    try:
        return decoded.decode(charset.decode("ascii", "replace") or "utf-8")
    except (LookupError, UnicodeDecodeError):
        return decoded.decode("utf-8", "replace")


def _clean(name: str | None) -> str | None:
    if not name:
        return None
    text = decode_words(name) if "=?" in name else name
    return " ".join(text.split())


class _Walk:
    def __init__(self) -> None:
        self.found: list[Attachment] = []

    def add(self, name: str | None, ctype: str, size: int) -> None:
        self.found.append(Attachment(name or f"part-{len(self.found) + 1}", ctype, size))

    def body(self, part: Any) -> None:
        if getattr(part, "is_multipart", False):
            children = list(part[0]) if isinstance(part[0], list | tuple) else []
            subtype = _text(part[1]).lower()
            if subtype == "alternative":
                for child in children:
                    self.collect(child, skip_text=True)
            elif subtype == "related" and children:
                self.body(children[0])
                for child in children[1:]:
                    self.collect(child, skip_text=False)
            else:
                for child in children:
                    self.body(child)
            return
        maintype, ctype, name, disposition, size = _leaf(part)
        if maintype == "message":
            self.add(name or _enclosed_name(part), ctype, size)
        elif maintype != "text" or disposition == "attachment" or (name and disposition != "inline"):
            self.add(name, ctype, size)

    def collect(self, part: Any, *, skip_text: bool) -> None:
        """Attachments under a part whose text is not the body (alternatives, related parts)."""
        if getattr(part, "is_multipart", False):
            if skip_text:  # an alternative that is itself multipart: the walker reads it as body
                self.body(part)
                return
            for child in part[0] if isinstance(part[0], list | tuple) else []:
                self.collect(child, skip_text=False)
            return
        maintype, ctype, name, _disposition, size = _leaf(part)
        if maintype == "text" and (skip_text or not name):
            return
        if maintype == "message":
            name = name or _enclosed_name(part)
        self.add(name, ctype, size)


def _leaf(part: Any) -> tuple[str, str, str | None, str | None, int]:
    maintype, subtype = _text(part[0]).lower(), _text(part[1]).lower()
    params = _params(part[2]) if len(part) > 2 else {}
    size = int(part[6]) if len(part) > 6 and isinstance(part[6], int) else 0
    # The disposition follows the type-specific fields: lines for text/*, envelope, body and
    # lines for message/rfc822, nothing for the others; then MD5, then the disposition.
    index = 9 if maintype == "text" else 11 if (maintype, subtype) == ("message", "rfc822") else 8
    disposition: str | None = None
    dparams: dict[str, str] = {}
    value = part[index] if len(part) > index else None
    if isinstance(value, tuple | list) and value and isinstance(value[0], bytes):
        disposition = _text(value[0]).lower()
        dparams = _params(value[1]) if len(value) > 1 else {}
    name = _clean(dparams.get("filename") or params.get("name"))
    return maintype, f"{maintype}/{subtype}", name, disposition, size


def _enclosed_name(part: Any) -> str:
    envelope = part[7] if len(part) > 7 else None
    subject = ""
    if envelope is not None and getattr(envelope, "subject", None):
        subject = _clean(_text(envelope.subject)) or ""
    return (subject or "message") + ".eml"


def attachments(structure: Any) -> list[Attachment]:
    """The attachments a BODYSTRUCTURE describes ([] when it is missing)."""
    if structure is None:
        return []
    walk = _Walk()
    try:
        walk.body(structure)
    except (IndexError, TypeError, ValueError):  # a structure the server could not describe fully
        return walk.found
    return walk.found
