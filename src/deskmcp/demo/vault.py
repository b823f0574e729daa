"""A generated Obsidian-style vault: projects, people, daily notes, meetings and an inbox.

`generate` writes about 150 linked notes (frontmatter, nested tags, `[[wikilinks]]`
with aliases and headings, times like `09:30`); `write_vault` writes any number of
them, which is what the vault benchmark uses for its 10,000 and 50,000-note vaults.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

FIRST = ["Maya", "Tomás", "Priya", "Jonas", "Amara", "Lena", "Sam", "Ines", "Kofi", "Yuki", "Omar", "Hanna"]
LAST = ["Chen", "Rivera", "Nair", "Berg", "Okafor", "Fischer", "Patel", "Moreau", "Mensah", "Sato", "Haddad"]
TEAMS = ["design", "platform", "growth", "research", "finance"]
PROJECT_WORDS = ["Harbor", "Atlas", "Juniper", "Orchard", "Beacon", "Tidepool", "Lantern", "Meridian", "Quarry"]
PROJECT_KINDS = ["Redesign", "Migration", "Launch", "Audit", "Analytics", "App", "Website", "Pilot"]
THEMES = {
    "budget": "The budget is tight; travel is cut and the contractor line moves to next quarter.",
    "hiring": "We agreed to open a backend role and to interview two designers next week.",
    "launch": "The launch slips one week so that the accessibility fixes can land first.",
    "research": "Five user interviews show that onboarding is the main source of confusion.",
    "security": "A dependency audit and rotated API keys are needed before the external review.",
    "revenue": "Revenue grew twelve percent against plan, mostly from annual renewals.",
    "latency": "Search latency regressed after the index change; a rollback is on the table.",
    "pricing": "The pricing page test favours the annual plan; the monthly plan loses trial users.",
}
FILLER = [
    "follow",
    "up",
    "roadmap",
    "draft",
    "review",
    "metrics",
    "customer",
    "feedback",
    "sprint",
    "backlog",
    "estimate",
    "risk",
    "owner",
    "deadline",
    "scope",
    "decision",
    "prototype",
    "release",
    "checklist",
    "dashboard",
    "survey",
    "interview",
    "vendor",
    "contract",
    "migration",
    "schema",
    "rollout",
    "incident",
    "postmortem",
    "retro",
    "quarterly",
    "planning",
    "offsite",
    "workshop",
]
TIMES = ["08:30", "09:00", "09:30", "10:15", "11:00", "13:30", "14:00", "15:45", "16:30"]


def _slug(text: str) -> str:
    return text.lower().replace(" ", "-")


def _sentence(rng: random.Random, extra: list[str]) -> str:
    words = rng.sample(FILLER, 6) + rng.sample(extra, min(2, len(extra)))
    rng.shuffle(words)
    return " ".join(words).capitalize() + "."


def _paragraphs(rng: random.Random, extra: list[str], words: int) -> str:
    """About `words` words of sentences, five to a paragraph."""
    sentences = [_sentence(rng, extra) for _ in range(max(1, words // 8))]
    return "".join(" ".join(sentences[i : i + 5]) + "\n\n" for i in range(0, len(sentences), 5))


def _people(rng: random.Random, count: int) -> list[tuple[str, str]]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name in seen:
            name = f"{name} {len(names)}"
        seen.add(name)
        names.append(name)
    return [(name, rng.choice(TEAMS)) for name in names]


def _projects(rng: random.Random, count: int) -> list[str]:
    out: list[str] = []
    for i in range(count):
        name = (
            f"{PROJECT_WORDS[i % len(PROJECT_WORDS)]} {PROJECT_KINDS[(i // len(PROJECT_WORDS)) % len(PROJECT_KINDS)]}"
        )
        out.append(name if i < len(PROJECT_WORDS) * len(PROJECT_KINDS) else f"{name} {i}")
    rng.shuffle(out)
    return out


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_vault(root: Path, rng: random.Random, notes: int = 150, extra_words: int = 0) -> None:
    """Write about `notes` linked notes under `root`: 10% people, 10% projects, the rest dated notes.

    `extra_words` adds a `## Notes` section of about that many words to every dated note
    (benchmarks use it for vaults of long notes)."""
    people = _people(rng, max(4, notes // 10))
    projects = _projects(rng, max(3, notes // 10))
    statuses = ["active", "planning", "on-hold", "done"]
    for name, team in people:
        _write(
            root,
            f"People/{name}.md",
            f"---\nrole: {team} lead\nteam: {team}\nemail: {_slug(name).replace('-', '.')}@example.com\n"
            f"tags: [person, team/{team}]\n---\n# {name}\n\nWorks on the {team} team. "
            f"{_sentence(rng, [team])}\n",
        )
    for i, project in enumerate(projects):
        owner, team = people[i % len(people)]
        theme = rng.choice(list(THEMES))
        due = date(2026, 1, 1) + timedelta(days=rng.randrange(0, 300))
        _write(
            root,
            f"Projects/{project}.md",
            f'---\ntitle: {project}\nstatus: {statuses[i % len(statuses)]}\nowner: "[[{owner}]]"\n'
            f"due: {due.isoformat()}\ntags:\n  - project/{_slug(project)}\n  - team/{team}\n---\n"
            f"# {project}\n\nOwner: [[{owner}]]. {THEMES[theme]}\n\n## Goals\n\n- {_sentence(rng, [theme])}\n"
            f"- {_sentence(rng, [theme])}\n\n## Risks\n\n{_sentence(rng, [theme, 'risk'])} #{theme}\n",
        )
    start = date(2026, 1, 5)
    dated = max(0, notes - len(people) - len(projects))
    for i in range(dated):
        day = start + timedelta(days=i // 3)
        project = rng.choice(projects)
        who = rng.sample(people, 2)
        theme = rng.choice(list(THEMES))
        kind = i % 3
        if kind == 0:
            rel = f"Daily/{day.isoformat()}.md" if i // 3 < 3650 else f"Daily/{day.isoformat()}-{i}.md"
            text = (
                f"---\ndate: {day.isoformat()}\ntags: [daily]\nmood: {rng.choice(['calm', 'busy', 'focused'])}\n"
                f"---\n# {day.strftime('%A %d %B %Y')}\n\n- {rng.choice(TIMES)} stand-up with [[{who[0][0]}]]\n"
                f"- Worked on [[{project}#Goals|{project} goals]]. {_sentence(rng, [theme])}\n"
                f"- {THEMES[theme]} #{theme}\n"
            )
        elif kind == 1:
            rel = f"Meetings/{day.isoformat()} {project} sync {i}.md"
            text = (
                f"---\ntitle: {project} sync\ndate: {day.isoformat()}\nstart: {rng.choice(TIMES)}\n"
                f'attendees:\n  - "[[{who[0][0]}]]"\n  - "[[{who[1][0]}]]"\n'
                f"tags: [meeting, project/{_slug(project)}]\n---\n# {project} sync\n\n"
                f"Attendees: [[{who[0][0]}]], [[{who[1][0]}]]\n\n## Discussion\n\n- {THEMES[theme]}\n"
                f"- {_sentence(rng, [theme])}\n\n## Action items\n\n- [ ] [[{who[1][0]}]]: follow up on {theme}\n"
            )
        else:
            status = rng.choice(["pending", "pending", "done", "needs_info"])
            rel = f"Inbox/{day.isoformat()} {theme} request {i}.md"
            text = (
                f"---\nstatus: {status}\nfrom: {who[0][0]}\nreceived: {day.isoformat()}T{rng.choice(TIMES)}:00Z\n"
                f"priority: {rng.choice(['low', 'normal', 'urgent'])}\n---\n{who[0][0]} asks about {theme} on "
                f"[[{project}]]. {_sentence(rng, [theme])}\n"
            )
        if extra_words > 0:
            text += "\n## Notes\n\n" + _paragraphs(rng, [theme, project.split()[0].lower()], extra_words)
        _write(root, rel, text)
    _write(
        root,
        "Home.md",
        "---\ntitle: Home\ntags: [index]\n---\n# Home\n\nStart here. Projects: "
        + ", ".join(f"[[{p}]]" for p in projects[:8])
        + ".\n",
    )


def generate(root: Path, rng: random.Random) -> None:
    """The demo vault: about 150 notes."""
    write_vault(root, rng, notes=150)


def environment(workspace: Path) -> dict[str, str]:
    return {"VAULT_PATH": str(workspace / "vault")}


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "Search every note for 'latency': titles, headings, tags, frontmatter and text, best first",
        "search_notes",
        {"query": "latency", "limit": 5},
    ),
    (
        "List the inbox items still waiting for an answer (frontmatter filter status:pending)",
        "list_notes",
        {"directory": "Inbox", "filter": "status:pending", "limit": 5},
    ),
    (
        "Read the first of them: frontmatter as JSON, body, and a hash for safe edits",
        "read_note",
        {"path": "$last.notes.0.path"},
    ),
    (
        "Mark it done: only the status line changes, every other line stays as written",
        "patch_frontmatter",
        {"path": "$last.path", "key": "status", "value": "done", "expected_hash": "$last.content_hash"},
    ),
    ("The Home note's [[wikilinks]], each resolved to the note it points at", "get_links", {"path": "Home"}),
    (
        "Backlinks of the first project: every note linking to it, with the line of the link",
        "get_backlinks",
        {"path": "$last.links.0.resolved_path"},
    ),
]
