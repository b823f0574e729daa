"""The meetings index: its schema and every query the service runs on it beyond the core index's own.

The service and the filters never hold SQL statements; they call these typed functions. The
filters only build the WHERE clause (over `docs d`) that is passed in here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, NamedTuple

from deskmcp.core.search.index import IndexSchema, SearchIndex
from deskmcp.meetings.filters import time_bucket

SCHEMA = IndexSchema(
    name="meetings",
    version=4,
    text_fields=("title", "participants", "folders", "notes", "transcript"),
    weights=(10.0, 5.0, 3.0, 2.0, 1.0),
    columns=(
        ("start_ts", "TEXT"),
        ("platform", "TEXT"),
        ("minutes", "REAL"),
        ("summary", "BLOB"),
        ("transcript_json", "BLOB"),
    ),
    side_tables=(
        "CREATE TABLE people (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,"
        " name TEXT, name_lc TEXT, email TEXT)",
        "CREATE INDEX people_doc ON people(doc_id)",
        "CREATE TABLE folder_members (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,"
        " folder_id TEXT NOT NULL, folder_name TEXT NOT NULL, folder_lc TEXT NOT NULL)",
        "CREATE INDEX folder_members_doc ON folder_members(doc_id)",
        "CREATE INDEX folder_members_folder ON folder_members(folder_id)",
        "CREATE INDEX docs_start ON docs(start_ts)",
        "CREATE INDEX docs_platform ON docs(platform, start_ts)",
    ),
)

TIME_GROUPS = ("day", "week")
"""Groups computed from each meeting's start in the caller's time zone (not by SQL)."""

_GROUP_QUERIES = {
    "participant": (
        "SELECT coalesce(max(p.name), p.email, '(unknown)'), count(DISTINCT d.id), total(d.minutes)"
        " FROM docs d JOIN people p ON p.doc_id = d.id {clause} GROUP BY coalesce(p.email, p.name_lc)"
    ),
    "platform": "SELECT coalesce(d.platform, 'unknown'), count(*), total(d.minutes) FROM docs d {clause}"
    " GROUP BY coalesce(d.platform, 'unknown')",
    "folder": (
        "SELECT max(f.folder_name), count(DISTINCT d.id), total(d.minutes)"
        " FROM docs d JOIN folder_members f ON f.doc_id = d.id {clause} GROUP BY f.folder_id"
    ),
}

GROUP_BY: tuple[str, ...] = (*TIME_GROUPS, *_GROUP_QUERIES)
"""Every value stats accepts for group_by, in the order the error message lists them."""


@dataclass(frozen=True, slots=True)
class Bucket:
    count: int
    minutes: float


class Participant(NamedTuple):
    name: str | None
    email: str | None
    meetings: int
    last_meeting: str | None


def stats(
    index: SearchIndex, where: str, params: Sequence[Any], group_by: str, zone: tzinfo
) -> tuple[int, dict[str, Bucket]]:
    """The meetings matching `where` (a clause over `docs d`) and, per key of `group_by`, how many
    and their minutes. Both come from one read, so the total and the buckets agree."""
    clause = f"WHERE {where}" if where else ""
    buckets: dict[str, Bucket] = {}
    with index.reader() as conn:
        total = int(conn.execute(f"SELECT count(*) FROM docs d {clause}", params).fetchone()[0])
        if group_by in TIME_GROUPS:
            for start_ts, mins in conn.execute(f"SELECT d.start_ts, d.minutes FROM docs d {clause}", params):
                key = time_bucket(start_ts, group_by, zone)
                seen = buckets.get(key)
                buckets[key] = (
                    Bucket(1, mins or 0.0) if seen is None else Bucket(seen.count + 1, seen.minutes + (mins or 0.0))
                )
        else:
            for key, count, mins in conn.execute(_GROUP_QUERIES[group_by].format(clause=clause), params):
                buckets[key] = Bucket(int(count), mins or 0.0)
    return total, buckets


def participants(index: SearchIndex, needle: str, limit: int) -> list[Participant]:
    """People by the meetings they attended (most first, then most recent); with `needle`
    (lowercased), only those whose name or email contains it."""
    where = "instr(coalesce(p.name_lc, '') || ' ' || coalesce(p.email, ''), ?) > 0" if needle else "1=1"
    sql = (
        "SELECT max(p.name), p.email, count(DISTINCT p.doc_id), max(d.start_ts)"
        " FROM people p JOIN docs d ON d.id = p.doc_id"
        f" WHERE {where} GROUP BY coalesce(p.email, p.name_lc) ORDER BY count(DISTINCT p.doc_id) DESC,"
        " max(d.start_ts) DESC LIMIT ?"
    )
    with index.reader() as conn:
        rows = conn.execute(sql, ((needle, limit) if needle else (limit,))).fetchall()
    return [Participant(name, email, int(count), last) for name, email, count, last in rows]


def folder_listing(index: SearchIndex) -> list[dict[str, Any]]:
    """The folders the indexed meetings are in, as the service keeps them (`id`, `name`,
    `description`, `meetings`: their keys), by name: for a source that names folders only on
    the meetings in them (Granola's API)."""
    sql = (
        "SELECT f.folder_id, max(f.folder_name), d.key FROM folder_members f JOIN docs d ON d.id = f.doc_id"
        " GROUP BY f.folder_id, d.key ORDER BY f.folder_id, d.key"
    )
    folders: dict[str, dict[str, Any]] = {}
    with index.reader() as conn:
        for folder_id, name, key in conn.execute(sql):
            entry = folders.setdefault(folder_id, {"id": folder_id, "name": name, "description": None, "meetings": []})
            entry["meetings"].append(key)
    return sorted(folders.values(), key=lambda f: f["name"].lower())


def transcript_count(index: SearchIndex) -> int:
    return index.count(where="d.transcript_json IS NOT NULL")
