"""Where the flow lives in the vault, and what its notes hold.

```
Needs_Action/<received>-<subject>-<id>.md   one note per ingested mail
Drafts/Re-<same name>.md                    a reply waiting for a person's approval
Approved/Re-<same name>.md                  a reply the person approved (moved here)
Done/                                       finished: sent replies, archived mail
Logs/                                       state file, lock, event log, send audit log
```

A mail's note name is derived from the mail's id, so ingesting the same mail twice (after a
crash) finds the note it already wrote instead of writing a second one.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from deskmcp.core.dates import parse_timestamp
from deskmcp.core.errors import BadRequest
from deskmcp.orchestrator.models import ApprovedDraft, TriageItem
from deskmcp.vault.models import NoteContent

NEEDS_ACTION = "Needs_Action"
DRAFTS = "Drafts"
APPROVED = "Approved"
DONE = "Done"
LOGS = "Logs"
FOLDERS = (NEEDS_ACTION, DRAFTS, APPROVED, DONE, LOGS)

_UNSAFE = re.compile(r"[^\w\- ]+")
MAX_SLUG = 60


def slug(text: str) -> str:
    """A file-name-safe, readable form of a subject."""
    text = unicodedata.normalize("NFKC", text)
    text = _UNSAFE.sub(" ", text)
    words = "-".join(text.split())
    return words[:MAX_SLUG].strip("-") or "no-subject"


def short_id(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:10]


def note_name(message_id: str, subject: str, received: str) -> str:
    when = parse_timestamp(received)
    day = when.strftime("%Y-%m-%d") if when else "undated"
    return f"{day}-{slug(subject)}-{short_id(message_id)}.md"


def draft_id_for(message_id: str, revision: int = 0) -> str:
    """The stable id of the reply drafted for a mail (also the send's idempotency key)."""
    base = f"draft-{short_id(message_id)}"
    return base if revision == 0 else f"{base}-r{revision}"


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines()) or ">"


def sender_name(sender: str) -> str:
    name, address = parseaddr(sender)
    return name or address.split("@")[0] or sender


def reply_subject(subject: str) -> str:
    return subject if subject.lower().startswith("re:") else f"Re: {subject}"


def email_note(email: dict[str, Any], *, ingested_at: str, max_chars: int) -> tuple[dict[str, Any], str]:
    """Frontmatter and body of the Needs_Action note for one mail (get_email's answer)."""
    subject = str(email.get("subject") or "(no subject)")
    body_text = str(email.get("body") or "")
    cut = len(body_text) > max_chars or bool(email.get("body_truncated"))
    if len(body_text) > max_chars:
        body_text = body_text[:max_chars]
    front = {
        "type": "email",
        "status": "pending",
        "priority": "normal",
        "message_id": email.get("id", ""),
        "thread_id": email.get("thread_id", ""),
        "rfc_message_id": email.get("rfc_message_id", ""),
        "from": email.get("sender", ""),
        "to": email.get("to", ""),
        "cc": email.get("cc", ""),
        "subject": subject,
        "received": email.get("date", ""),
        "labels": list(email.get("labels") or []),
        "attachments": list(email.get("attachment_names") or []),
        "decision": None,
        "reason": None,
        "ingested": ingested_at,
    }
    lines = [f"# {subject}", "", f"**From:** {front['from']}  ", f"**To:** {front['to']}  "]
    if front["cc"]:
        lines.append(f"**Cc:** {front['cc']}  ")
    lines.append(f"**Received:** {front['received']}")
    if front["attachments"]:
        lines.append("**Attachments:** " + ", ".join(front["attachments"]))
    lines += ["", quote(body_text)]
    if cut:
        lines += ["", "*(The mail is longer; open it in your mail client for the rest.)*"]
    return front, "\n".join(lines) + "\n"


def failed_email_note(summary: dict[str, Any], error: str, *, ingested_at: str) -> tuple[dict[str, Any], str]:
    """A note saying a mail could not be read, so a person looks at it in the mail client."""
    subject = str(summary.get("subject") or "(no subject)")
    front = {
        "type": "email",
        "status": "needs_info",
        "priority": "normal",
        "message_id": summary.get("id", ""),
        "thread_id": summary.get("thread_id", ""),
        "from": summary.get("sender", ""),
        "subject": subject,
        "received": summary.get("date", ""),
        "decision": "needs_info",
        "reason": "The mail could not be read",
        "ingest_error": error,
        "ingested": ingested_at,
    }
    body = (
        f"# {subject}\n\n**From:** {front['from']}\n\n"
        f"This mail could not be read: {error}\n\n"
        "Open it in your mail client; it was labelled so that it is not fetched again.\n"
    )
    return front, body


def triage_item(path: str, note: NoteContent) -> TriageItem:
    front = note.frontmatter
    body = note.body
    text = "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">") for line in body.splitlines())
    labels = front.get("labels")
    return TriageItem(
        note=path,
        message_id=str(front.get("message_id") or ""),
        thread_id=str(front.get("thread_id") or ""),
        sender=str(front.get("from") or ""),
        to=str(front.get("to") or ""),
        cc=str(front.get("cc") or ""),
        subject=str(front.get("subject") or ""),
        received=str(front.get("received") or ""),
        labels=[str(x) for x in labels] if isinstance(labels, list) else [],
        body=text,
        status=str(front.get("status") or ""),
    )


def approved_draft(root: Path, path: str, note: NoteContent) -> ApprovedDraft:
    """Read an approved draft: recipients and subject from frontmatter, the reply from the body."""
    front = note.frontmatter
    to = str(front.get("to") or "").strip()
    subject = str(front.get("subject") or "").strip()
    body = note.body.strip()
    missing = [name for name, value in (("to", to), ("subject", subject), ("body", body)) if not value]
    if missing:
        raise BadRequest(
            f"The approved draft {path} has no {', '.join(missing)}; fill it in and it is sent on the next pass.",
            {"path": path, "missing": missing},
        )
    reply_to = front.get("reply_to_message_id")
    cc = front.get("cc")
    source = front.get("source_note")
    return ApprovedDraft(
        filepath=root / path,
        path=path,
        draft_id=str(front.get("draft_id") or ""),
        to=to,
        subject=subject,
        body=body + "\n",
        reply_to_message_id=str(reply_to) if reply_to else None,
        cc=str(cc) if cc else None,
        source_note=str(source) if source else None,
    )


def folder_of(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[-1]
