"""A meeting as a Markdown document, section by section."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from deskmcp.core.dates import parse_timestamp, zone_label
from deskmcp.meetings.models import Meeting, Section

DEFAULT_SECTIONS: tuple[Section, ...] = ("header", "attendees", "notes", "links")


def render_markdown(meeting: Meeting, sections: list[Section], segments: list[dict[str, Any]], zone: tzinfo) -> str:
    """The meeting as Markdown, one block per requested section, in the order requested."""
    blocks = [_SECTIONS[name](meeting, segments, zone) for name in sections]
    return "\n\n".join(b for b in blocks if b).strip() + "\n"


def _header(meeting: Meeting, _segments: list[dict[str, Any]], zone: tzinfo) -> str:
    facts = []
    start = parse_timestamp(meeting.start_ts)
    if start:
        facts.append(f"**Date**: {start.astimezone(zone):%Y-%m-%d %H:%M} ({zone_label(zone)})")
    if meeting.duration_minutes:
        facts.append(f"**Duration**: {meeting.duration_minutes:g} min")
    if meeting.platform:
        facts.append(f"**Platform**: {meeting.platform.capitalize()}")
    if meeting.folders:
        facts.append(f"**Folders**: {', '.join(f.name for f in meeting.folders)}")
    return f"# {meeting.title}" + ("\n\n" + "  \n".join(facts) if facts else "")


def _attendees(meeting: Meeting, _segments: list[dict[str, Any]], _zone: tzinfo) -> str:
    if not meeting.participants:
        return ""
    lines = ["## Attendees", ""]
    for p in meeting.participants:
        label = f"{p.name} <{p.email}>" if p.name and p.email else p.name or p.email or "unknown"
        lines.append(f"- {label}{' (organiser)' if p.role == 'creator' else ''}")
    return "\n".join(lines)


def _notes_block(meeting: Meeting, _segments: list[dict[str, Any]], _zone: tzinfo) -> str:
    return "## Notes\n\n" + (meeting.notes or "_No notes._")


def _links_block(meeting: Meeting, _segments: list[dict[str, Any]], _zone: tzinfo) -> str:
    return "## Links\n\n" + "\n".join(f"- <{link}>" for link in meeting.links) if meeting.links else ""


def _transcript_block(_meeting: Meeting, segments: list[dict[str, Any]], _zone: tzinfo) -> str:
    lines = ["## Transcript", ""]
    for seg in segments:
        who = {"me": "Me", "them": "Them"}.get(seg.get("speaker") or "", seg.get("speaker") or "?")
        lines.append(f"**{who}** [{_clock(seg.get('offset_seconds'))}]: {seg['text']}")
    if not segments:
        lines.append("_No transcript._")
    return "\n".join(lines)


_SECTIONS = {
    "header": _header,
    "attendees": _attendees,
    "notes": _notes_block,
    "links": _links_block,
    "transcript": _transcript_block,
}


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
