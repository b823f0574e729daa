"""Timestamps and time zones: normalising what sources store, and the user's calendar days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from deskmcp.core.errors import BadRequest
from deskmcp.core.settings import variable

_MS_THRESHOLD = 1e11  # epoch values above this are milliseconds (year 5138 in seconds)


def parse_timestamp(value: object) -> datetime | None:
    """Turn ISO 8601 text, epoch seconds or epoch milliseconds into an aware UTC datetime.

    Returns None for missing or unreadable values: sources are untrusted, and a meeting
    with an odd timestamp is still a meeting.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if abs(value) > _MS_THRESHOLD else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.lstrip("-").replace(".", "", 1).isdigit():
            return parse_timestamp(float(text))
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    return None


def iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def utc_stamp(when: datetime | None = None) -> str:
    """`when` (default now) in UTC to the second: the one form of every timestamp deskmcp writes
    into logs and notes, e.g. 2026-11-25T09:30:00Z."""
    moment = datetime.now(UTC) if when is None else when.astimezone(UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_user_time(value: str | None, field: str, zone: tzinfo, *, end_of_day: bool = False) -> datetime | None:
    """Parse a bound given by a user: ISO date or datetime; a bare date is a day in `zone`."""
    if value is None or value == "":
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=zone)
            return (start + timedelta(days=1) if end_of_day else start).astimezone(UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadRequest(
            f"{field} {value!r} is not an ISO 8601 date or datetime (e.g. 2024-05-01 or 2024-05-01T09:30:00Z).",
            {"field": field, "value": value},
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    return parsed.astimezone(UTC)


# Where POSIX systems name their zone; module-level so that tests can point them elsewhere.
LOCALTIME = Path("/etc/localtime")
TIMEZONE_FILE = Path("/etc/timezone")


def _posix_zone_name() -> str | None:
    try:
        target = LOCALTIME.resolve()
    except OSError:
        return None
    marker = "zoneinfo/"
    text = target.as_posix()
    if marker in text:
        return text.split(marker, 1)[1]
    try:
        return TIMEZONE_FILE.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _system_zone_name() -> str | None:
    """The IANA name of the system's zone: $TZ, the POSIX files, else tzlocal (Windows' registry)."""
    name = variable("TZ")
    if name:
        return name.lstrip(":")
    name = _posix_zone_name()
    if name:
        return name
    # Windows keeps its zone in the registry under Windows names; tzlocal maps them to IANA names,
    # so that daylight saving follows the zone's rules rather than today's fixed offset.
    import tzlocal

    try:
        return tzlocal.get_localzone_name()
    except (LookupError, ValueError, OSError):
        return None


def resolve_zone(name: str | None) -> tzinfo:
    """The named IANA zone, else the system's zone, else the system's current UTC offset."""
    candidate = name or _system_zone_name()
    if candidate:
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            if name:
                raise BadRequest(
                    f"Unknown time zone {name!r}; use an IANA name such as 'Europe/Paris'.",
                    {"timezone": name},
                ) from exc
    local = datetime.now().astimezone().tzinfo
    return local or UTC


def zone_label(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or str(zone)
