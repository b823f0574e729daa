"""A generated documents folder for the tour: notes, reports, saved web pages, a PDF and a DOCX.

`generate` writes about forty files of a small design studio's working life and leaves the
folder un-indexed: the first step of `STEPS` indexes it, as a new user would.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

PROJECTS = ["Harbor Lights", "Atlas Redesign", "Juniper App", "Orchard CRM", "Beacon Website", "Tidepool Analytics"]
PEOPLE = ["Maya Chen", "Tomás Rivera", "Priya Nair", "Jonas Berg", "Amara Okafor", "Lena Fischer", "Sam Patel"]
TOPICS = [
    ("budget", "The budget for {p} is tight; travel is cut and the contractor line moves to Q4."),
    ("hiring", "We agreed to open a backend role for {p} and to interview two designers next week."),
    ("launch", "The {p} launch slips one week so that accessibility fixes can land first."),
    ("research", "Five user interviews for {p} show that onboarding is the main source of confusion."),
    ("security", "{p} needs a dependency audit and rotated API keys before the external review."),
    ("revenue", "Revenue from {p} grew 12% against plan, mostly from annual renewals."),
]
RECIPES = [
    ("Lemon risotto", ["arborio rice", "lemon", "parmesan", "stock", "butter"]),
    ("Chickpea curry", ["chickpeas", "coconut milk", "tomatoes", "garam masala", "spinach"]),
    ("Buckwheat pancakes", ["buckwheat flour", "buttermilk", "egg", "maple syrup"]),
]
ARTICLES = [
    ("Writing design docs that get read", "Lead with the decision, then the alternatives you rejected and why."),
    ("A field guide to estimating", "Estimate in ranges, track the actuals, and revisit the ranges monthly."),
    ("Remote retrospectives", "Rotate the facilitator and keep the action items to three at most."),
    ("Accessible colour palettes", "Check contrast ratios early; a palette fixed late costs a redesign."),
]


def _meeting_note(rng: random.Random, day: date) -> tuple[str, str]:
    project = rng.choice(PROJECTS)
    people = rng.sample(PEOPLE, 3)
    topics = rng.sample(TOPICS, 2)
    slug = project.lower().replace(" ", "-")
    lines = [
        "---",
        f"title: {project} sync {day.isoformat()}",
        f"tags: [meeting, {slug}, {topics[0][0]}]",
        f"date: {day.isoformat()}",
        "---",
        f"# {project} sync",
        "",
        f"Attendees: {', '.join(people)}",
        "",
        "## Discussion",
        *(f"- {text.format(p=project)}" for _, text in topics),
        "",
        "## Action items",
        f"- [ ] {people[0]}: follow up on {topics[0][0]}",
        f"- [ ] {people[1]}: share the notes with the {project} channel",
    ]
    return f"meetings/{day.isoformat()}-{slug}.md", "\n".join(lines) + "\n"


def _project_brief(project: str, rng: random.Random) -> tuple[str, str]:
    owner = rng.choice(PEOPLE)
    _topic, text = rng.choice(TOPICS)
    body = (
        f"# {project}: project brief\n\nOwner: {owner}\n\n## Goal\n\nShip a calmer, faster {project} for our "
        f"customers.\n\n## Risks\n\n{text.format(p=project)}\n\n## Milestones\n\n"
        + "".join(f"{i}. Milestone {i} for {project}\n" for i in range(1, 4))
    )
    return f"projects/{project.lower().replace(' ', '-')}/brief.md", body


def _plain_text(rng: random.Random, i: int) -> tuple[str, str]:
    kind = i % 3
    if kind == 0:
        name, items = rng.choice(RECIPES)
        text = f"{name}\n\nIngredients:\n" + "".join(f"- {x}\n" for x in items) + "\nCook slowly and taste often.\n"
        return f"personal/recipes/{name.lower().replace(' ', '-')}-{i}.txt", text
    if kind == 1:
        amount = rng.randint(800, 9_000)
        client = rng.choice(PROJECTS)
        text = (
            f"INVOICE {2025_000 + i}\nClient: {client}\nAmount due: EUR {amount:,}.00\n"
            "Terms: 30 days. Budget code: OPS-7.\n"
        )
        return f"finance/invoices/invoice-{2025_000 + i}.txt", text
    city = rng.choice(["Lisbon", "Tallinn", "Kyoto", "Montreal"])
    text = f"Trip to {city}\n\nFlights booked, hotel near the old town.\nTo do: travel insurance, adapter, budget.\n"
    return f"personal/travel/{city.lower()}-{i}.txt", text


def _html_page(title: str, summary: str, rng: random.Random) -> str:
    author = rng.choice(PEOPLE)
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>'
        f'<meta name="author" content="{author}"><style>body {{ font-family: serif; }}</style>'
        '<script>window.analytics = "tracking-pixel";</script></head><body>'
        f"<nav><a href='/'>Home</a></nav><article><h1>{title}</h1><p>{summary}</p>"
        f"<p>Saved for the team reading list by {author}.</p></article></body></html>\n"
    )


def write_pdf(path: Path, title: str, pages: list[list[str]]) -> None:
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        escaped = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines]
        content = DecodedStreamObject()
        ops = "BT /F1 12 Tf 16 TL 72 720 Td " + " ".join(f"({line}) Tj T*" for line in escaped) + " ET"
        content.set_data(ops.encode("latin-1"))
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
        page[NameObject("/Contents")] = writer._add_object(content)
    writer.add_metadata({"/Title": title, "/Author": "Finance team"})
    with path.open("wb") as handle:
        writer.write(handle)


def _docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Hiring plan 2025"
    document.core_properties.author = "Amara Okafor"
    document.add_heading("Hiring plan 2025", level=1)
    document.add_paragraph("We grow from 14 to 19 people, keeping the budget flat by ending two contracts.")
    document.add_paragraph("Priorities: a backend engineer for Juniper App and a researcher for Orchard CRM.")
    table = document.add_table(rows=4, cols=3)
    for r, row in enumerate(
        [
            ("Role", "Team", "Quarter"),
            ("Backend engineer", "Juniper App", "Q1"),
            ("UX researcher", "Orchard CRM", "Q2"),
            ("Designer", "Beacon Website", "Q3"),
        ]
    ):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.save(str(path))


def generate(root: Path, rng: random.Random) -> None:
    """Write the demo documents folder under `root` (not indexed)."""
    files: dict[str, str] = {}
    start = date(2025, 3, 3)
    for i in range(14):
        name, text = _meeting_note(rng, start + timedelta(days=3 * i + rng.randint(0, 2)))
        files[name] = text
    for project in PROJECTS:
        name, text = _project_brief(project, rng)
        files[name] = text
    for i in range(12):
        name, text = _plain_text(rng, i)
        files[name] = text
    for title, summary in ARTICLES:
        files[f"reading/{title.lower().replace(' ', '-')}.html"] = _html_page(title, summary, rng)
    files["README.md"] = "# Studio documents\n\nMeetings, projects, finance and reading notes.\n"
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / "reports").mkdir(parents=True, exist_ok=True)
    write_pdf(
        root / "reports" / "quarterly-report-q3.pdf",
        "Quarterly report Q3 2025",
        [
            ["Quarterly report, Q3 2025", "Revenue: EUR 1.2M, up 12% on plan.", "Budget: operating costs flat."],
            ["Outlook", "Renewals remain strong; the Orchard CRM launch lands in Q4."],
        ],
    )
    (root / "plans").mkdir(parents=True, exist_ok=True)
    _docx(root / "plans" / "hiring-plan-2025.docx")


def environment(workspace: Path) -> dict[str, str]:
    """What the tour sets for `deskmcp serve documents` (the default folder, said explicitly)."""
    return {"DOCUMENTS_PATH": str(workspace / "documents")}


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "Index the whole documents folder (Markdown, text, HTML, PDF and DOCX) so it can be searched",
        "index_folder",
        {"path": ""},
    ),
    (
        "Tag the quarterly report PDF so it can be filtered later",
        "index_document",
        {"path": "reports/quarterly-report-q3.pdf", "tags": ["finance", "q3"]},
    ),
    ("Search every document for 'budget', best matches first with snippets", "search_documents", {"query": "budget"}),
    (
        "Search only documents tagged 'finance' for 'revenue'",
        "search_documents",
        {"query": "revenue", "tags": ["finance"]},
    ),
    (
        "Read the metadata of a Word document: title, author, pages, word count",
        "extract_metadata",
        {"path": "plans/hiring-plan-2025.docx"},
    ),
    (
        "Write a new Markdown note with frontmatter; it is indexed at once",
        "create_note",
        {
            "title": "Budget follow-ups",
            "content": "- Check Q3 revenue against the hiring plan\n- Ask finance about contractor costs\n",
            "tags": ["finance", "todo"],
        },
    ),
]
