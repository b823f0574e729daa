"""The filters shared by list, search and stats, as a WHERE clause over the index's `docs d`
(run by the index and meetings/catalog.py), and the time buckets of stats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from deskmcp.core.dates import iso, parse_timestamp, parse_user_time
from deskmcp.core.errors import BadRequest
from deskmcp.core.search.index import TEXT_MATCH, fts_any_prefix
from deskmcp.core.search.terms import fold


class Filters:
    """The filters shared by list, search and stats, resolved to SQL over `docs d`."""

    def __init__(
        self,
        *,
        zone: tzinfo,
        from_ts: str | None = None,
        to_ts: str | None = None,
        days: int | None = None,
        participants: list[str] | None = None,
        platform: str | None = None,
        folder: str | None = None,
        now: datetime | None = None,
    ) -> None:
        self.start = parse_user_time(from_ts, "from_ts", zone)
        self.end = parse_user_time(to_ts, "to_ts", zone, end_of_day=True)
        if days is not None:
            if days < 1:
                raise BadRequest("days must be 1 or more.", {"days": days})
            today = (now or datetime.now(UTC)).astimezone(zone).date()
            first = today - timedelta(days=days - 1)
            since = datetime(first.year, first.month, first.day, tzinfo=zone).astimezone(UTC)
            self.start = max(self.start, since) if self.start else since
        if self.start and self.end and self.start >= self.end:
            raise BadRequest("from_ts must be before to_ts.", {"from_ts": from_ts, "to_ts": to_ts})
        self.participants = [fold(p.strip()) for p in participants or [] if p and p.strip()]
        self.platform = platform.strip().lower() if platform else None
        self.folder = folder.strip() if folder else None

    def sql(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.start:
            clauses.append("d.start_ts >= ?")
            params.append(iso(self.start))
        if self.end:
            clauses.append("d.start_ts < ?")
            params.append(iso(self.end))
        if self.participants:
            # Through the text index's participants field: a word-prefix match on names and
            # emails ("ali" finds Alice, alice@x.com), without scanning every attendee row.
            clauses.append(TEXT_MATCH)
            params.append(fts_any_prefix("participants", self.participants))
        if self.platform:
            clauses.append("d.platform = ?")
            params.append(self.platform)
        if self.folder:
            clauses.append(
                "EXISTS (SELECT 1 FROM folder_members f WHERE f.doc_id = d.id AND (f.folder_id = ? OR f.folder_lc = ?))"
            )
            params.extend([self.folder, fold(self.folder)])
        return " AND ".join(clauses), params

    def key(self) -> tuple[Any, ...]:
        return (iso(self.start), iso(self.end), self.participants, self.platform, self.folder)


def time_bucket(start_ts: str | None, group_by: str, zone: tzinfo) -> str:
    start = parse_timestamp(start_ts)
    if start is None:
        return "unknown"
    local = start.astimezone(zone).date()
    if group_by == "day":
        return local.isoformat()
    year, week, _ = local.isocalendar()
    return f"{year}-W{week:02d}"
