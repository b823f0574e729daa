"""A generated Granola cache: realistic meetings with attendees, notes, transcripts and folders.

The shape is that of a current desktop cache (`cache-v6.json`, `cache` as an object, `people`
as an object, ProseMirror notes, transcripts keyed by document id).
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.files import atomic_write_bytes

FIRST = [
    "Alice",
    "Bilal",
    "Chen",
    "Dana",
    "Emeka",
    "Fatima",
    "Giulia",
    "Hiro",
    "Ines",
    "Jonas",
    "Kavya",
    "Liam",
    "Maya",
    "Noor",
    "Oskar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tomás",
    "Uma",
    "Viktor",
    "Wen",
    "Yara",
]
LAST = [
    "Okafor",
    "Schmidt",
    "Nakamura",
    "Garcia",
    "Haddad",
    "Kowalski",
    "Rossi",
    "Silva",
    "Johansson",
    "Patel",
    "Moreau",
    "Novak",
    "Fischer",
    "Kim",
    "Dubois",
    "Ahmed",
]
COMPANIES = ["northwind.io", "acme.dev", "globex.com", "initech.co", "umbrella.org"]
TOPICS = [
    ("Q3 roadmap review", ["roadmap", "priorities", "hiring plan", "mobile app", "pricing page"]),
    ("Weekly product sync", ["release notes", "bug triage", "onboarding flow", "analytics dashboard"]),
    ("Customer interview", ["pain points", "export to CSV", "SSO", "invoice workflow", "renewal"]),
    ("1:1", ["career growth", "feedback", "workload", "conference budget", "offsite"]),
    ("Incident postmortem", ["database failover", "alerting gaps", "runbook", "on-call rotation"]),
    ("Design critique", ["navigation", "empty states", "accessibility", "dark mode", "typography"]),
    ("Budget planning", ["cloud costs", "vendor contracts", "headcount", "travel"]),
    ("Sales pipeline review", ["enterprise deal", "procurement", "security questionnaire", "pilot"]),
    ("Engineering all-hands", ["migration to Postgres 17", "test flakiness", "build times", "API versioning"]),
    ("Partner call", ["integration timeline", "co-marketing", "API limits", "data sharing agreement"]),
]
FOLDERS = [
    ("Product", "Roadmap, syncs and critiques"),
    ("Customers", "Interviews and partner calls"),
    ("Engineering", "Incidents, all-hands, architecture"),
    ("1:1s", "Private one-to-ones"),
    ("Finance", "Budgets and planning"),
]
FOLDER_OF_TOPIC = {0: 0, 1: 0, 2: 1, 3: 3, 4: 2, 5: 0, 6: 4, 7: 1, 8: 2, 9: 1}
PLATFORMS = [
    ("zoom", "https://zoom.us/j/{n}"),
    ("google_meet", "https://meet.google.com/{a}-{b}-{c}"),
    ("teams", "https://teams.microsoft.com/l/meetup-join/{n}"),
]
LINES_ME = [
    "Thanks everyone for joining, let's start with {k}.",
    "Can we make sure {k} is owned by someone this week?",
    "I'll write up the decision on {k} and share it by Friday.",
    "What's blocking us on {k} right now?",
    "Let's timebox {k} to fifteen minutes.",
    "I agree, and I think {k} affects the launch date.",
]
LINES_THEM = [
    "The main risk with {k} is that we haven't tested it with real customers.",
    "We looked at the numbers for {k}; usage is up about twelve percent.",
    "I can take {k}, but I'll need help from design.",
    "Last quarter {k} slipped twice, so I'd rather be conservative.",
    "Customers keep asking about {k} in every call.",
    "My suggestion is to split {k} into two smaller pieces.",
    "I'll follow up with legal about {k} before we commit.",
]


def _person(rng: random.Random) -> dict[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return {"name": f"{first} {last}", "email": f"{first.lower()}.{last.lower()}@{rng.choice(COMPANIES)}"}


def _prosemirror(title: str, keywords: list[str], owners: list[str], rng: random.Random) -> dict[str, Any]:
    def text(t: str, bold: bool = False) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "text", "text": t}
        if bold:
            node["marks"] = [{"type": "bold"}]
        return node

    def para(*parts: dict[str, Any]) -> dict[str, Any]:
        return {"type": "paragraph", "content": list(parts)}

    items = [
        {
            "type": "listItem",
            "content": [para(text(f"Discussed {k}: "), text(rng.choice(["agreed", "open", "parked"]), True))],
        }
        for k in keywords
    ]
    actions = [
        {"type": "listItem", "content": [para(text(f"{owner}: follow up on {rng.choice(keywords)}"))]}
        for owner in owners
    ]
    return {
        "type": "doc",
        "content": [
            {"type": "heading", "attrs": {"level": 2}, "content": [text("Discussion")]},
            {"type": "bulletList", "content": items},
            {"type": "heading", "attrs": {"level": 2}, "content": [text("Action items")]},
            {"type": "bulletList", "content": actions},
            para(text(f"Next {title.lower()} in two weeks.")),
        ],
    }


def _transcript(
    doc_id: str, start: datetime, keywords: list[str], rng: random.Random, segments: int
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    t = start
    for _ in range(segments):
        mine = rng.random() < 0.4
        line = rng.choice(LINES_ME if mine else LINES_THEM).format(k=rng.choice(keywords))
        length = timedelta(seconds=rng.randint(4, 20))
        out.append(
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "document_id": doc_id,
                "start_timestamp": t.isoformat().replace("+00:00", "Z"),
                "end_timestamp": (t + length).isoformat().replace("+00:00", "Z"),
                "text": line,
                "source": "microphone" if mine else "system",
                "is_final": True,
            }
        )
        t += length + timedelta(seconds=rng.randint(0, 3))
    return out


def build_state(
    count: int,
    *,
    seed: int = 7,
    now: datetime | None = None,
    transcript_segments: tuple[int, int] = (20, 60),
) -> dict[str, Any]:
    """Granola's `state` object with `count` meetings spread over the past months."""
    rng = random.Random(seed)
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    me = {"name": "Sam Rivera", "email": "sam.rivera@northwind.io"}
    documents: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    transcripts: dict[str, Any] = {}
    folder_ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in FOLDERS]
    lists: dict[str, list[str]] = {fid: [] for fid in folder_ids}
    span_days = max(30, count // 3)
    for i in range(count):
        doc_id = str(uuid.UUID(int=rng.getrandbits(128)))
        topic_index = rng.randrange(len(TOPICS))
        topic, pool = TOPICS[topic_index]
        keywords = rng.sample(pool, k=min(3, len(pool)))
        start = now - timedelta(days=rng.uniform(0, span_days), hours=rng.randint(0, 8))
        start = start.replace(minute=rng.choice([0, 15, 30, 45]), second=0, microsecond=0)
        duration = rng.choice([15, 25, 30, 45, 60])
        attendees = [_person(rng) for _ in range(rng.randint(1, 5))]
        title = (
            f"{topic}: {keywords[0]}"
            if topic != "1:1"
            else f"1:1 {me['name'].split()[0]} / {attendees[0]['name'].split()[0]}"
        )
        platform, url = rng.choice(PLATFORMS)
        link = url.format(n=rng.randint(10**9, 10**10), a="abc", b="defg", c="hij")
        documents[doc_id] = {
            "id": doc_id,
            "title": title,
            "type": "meeting",
            "created_at": start.isoformat().replace("+00:00", "Z"),
            "updated_at": (start + timedelta(minutes=duration + 5)).isoformat().replace("+00:00", "Z"),
            "deleted_at": None,
            "notes": _prosemirror(topic, keywords, [a["name"].split()[0] for a in attendees[:2]], rng),
            "notes_markdown": None,
            "people": {
                "creator": {"name": me["name"], "email": me["email"]},
                "attendees": [
                    {"email": a["email"], "details": {"person": {"name": {"fullName": a["name"]}}}}
                    if rng.random() < 0.3
                    else {"name": a["name"], "email": a["email"]}
                    for a in attendees
                ],
            },
            "google_calendar_event": {
                "summary": title,
                "start": {"dateTime": start.isoformat()},
                "end": {"dateTime": (start + timedelta(minutes=duration)).isoformat()},
                "attendees": [{"email": a["email"], "displayName": a["name"]} for a in attendees],
                "location": link,
                "hangoutLink": link if platform == "google_meet" else None,
            },
        }
        metadata[doc_id] = {"conference": {"provider": platform, "url": link}}
        if rng.random() < 0.85:
            segs = _transcript(doc_id, start, keywords, rng, rng.randint(*transcript_segments))
            # Real caches key some transcripts by ids without dashes.
            transcripts[doc_id if i % 5 else doc_id.replace("-", "")] = segs
        lists[folder_ids[FOLDER_OF_TOPIC[topic_index]]].append(doc_id)
    return {
        "documents": documents,
        "meetingsMetadata": metadata,
        "transcripts": transcripts,
        "documentLists": lists,
        "documentListsMetadata": {
            fid: {"id": fid, "title": name, "description": desc}
            for fid, (name, desc) in zip(folder_ids, FOLDERS, strict=True)
        },
    }


def write_cache(path: Path, state: dict[str, Any], *, version: int = 6) -> Path:
    """Write `state` as Granola does: v3 double-encodes the cache as a string, v4+ nest an object."""
    cache: Any = {"state": state, "version": version}
    if version <= 3:
        cache = orjson.dumps(cache).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, orjson.dumps({"cache": cache}))
    return path


def generate(root: Path, rng: random.Random, *, count: int = 300) -> Path:
    """Write a demo cache to `root/cache-v6.json`."""
    return write_cache(root / "cache-v6.json", build_state(count, seed=rng.randrange(1 << 30)))


def environment(workspace: Path) -> dict[str, str]:
    """Point the server at the demo cache, even on a machine that has Granola installed."""
    return {"GRANOLA_CACHE_PATH": str(workspace / "granola")}


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    ("Where the data comes from: the cache file, its format and what was indexed.", "granola.cache.status", {}),
    (
        "Meetings of the last 7 days, newest first (days count in your time zone).",
        "granola.meetings.list",
        {"days": 7, "limit": 5},
    ),
    (
        "Full-text search over notes and transcripts, ranked, with snippets.",
        "granola.meetings.search",
        {"q": "database failover", "limit": 3},
    ),
    (
        "The transcript of the best hit, first minute only, with who spoke.",
        "granola.meetings.transcript",
        {"id": "$last.items.0.id", "end_seconds": 60},
    ),
    (
        "Time spent in meetings per week over the last month.",
        "granola.meetings.stats",
        {"group_by": "week", "days": 28},
    ),
    ("Folders, as Granola organises them.", "granola.folders.list", {}),
]
