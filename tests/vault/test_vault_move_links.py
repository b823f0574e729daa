"""move_note with update_links: every link to the moved note follows it, all or nothing."""

from pathlib import Path
from typing import Any

import pytest

from deskmcp.core.errors import Conflict
from deskmcp.vault.service import VaultService
from tests.helpers.files import write
from tests.helpers.tool_calls import call

pytestmark = pytest.mark.anyio

HOME = """---
related: "[[Alpha]]"
---
# Home

See [[Alpha]], [[Alpha|the alpha]], [[Alpha#Goals]] and [[Alpha#Goals|its goals]].
Embedded: ![[Alpha]] and by path [[Projects/Alpha]] or [[Projects/Alpha.md]].
Code stays as written: `[[Alpha]]`.

```
[[Alpha]] in a fence
```
Unrelated: [[Beta]], [[Alphabet]].
"""


async def test_moving_a_note_rewrites_wikilinks_with_aliases_headings_and_embeds(vault: Path, connect: Any):
    write(vault, "Projects/Alpha.md", "# Alpha\n\n## Goals\n")
    write(vault, "Projects/Beta.md", "# Beta\n")
    write(vault, "Alphabet.md", "letters\n")
    home = write(vault, "Home.md", HOME)
    async with connect(vault, watch=False) as client:
        moved = await call(
            client, "move_note", {"source": "Projects/Alpha", "destination": "Archive/Alpha 2024", "update_links": True}
        )
        backlinks = await call(client, "get_backlinks", {"path": "Archive/Alpha 2024"})
    assert moved == {
        "moved": True,
        "source": "Projects/Alpha.md",
        "destination": "Archive/Alpha 2024.md",
        "updated": ["Home.md"],
    }
    assert home.read_text(encoding="utf-8") == (
        HOME.replace("See [[Alpha]], [[Alpha|", "See [[Alpha 2024]], [[Alpha 2024|")
        .replace("[[Alpha#Goals]] and [[Alpha#Goals|", "[[Alpha 2024#Goals]] and [[Alpha 2024#Goals|")
        .replace(
            "![[Alpha]] and by path [[Projects/Alpha]] or [[Projects/Alpha.md]]",
            "![[Alpha 2024]] and by path [[Archive/Alpha 2024]] or [[Archive/Alpha 2024.md]]",
        )
    )
    assert {b["source"] for b in backlinks["backlinks"]} == {"Home.md"}
    assert len(backlinks["backlinks"]) == 7


async def test_a_bare_link_becomes_a_path_when_the_new_name_is_not_unique(vault: Path, connect: Any):
    write(vault, "Projects/Alpha.md", "# Alpha\n")
    write(vault, "Notes/Beta.md", "another Beta\n")
    home = write(vault, "Home.md", "[[Alpha]] and [[Alpha|a]]\n")
    async with connect(vault, watch=False) as client:
        await call(
            client, "move_note", {"source": "Projects/Alpha", "destination": "Archive/Beta", "update_links": True}
        )
    assert home.read_text(encoding="utf-8") == "[[Archive/Beta]] and [[Archive/Beta|a]]\n"


async def test_moving_a_note_rewrites_relative_markdown_links_and_rebases_its_own(vault: Path, connect: Any):
    alpha = "# Alpha\n\nOwner: [Ann](../People/Ann.md), site [web](https://example.com/x.md).\n"
    write(vault, "Projects/Alpha.md", alpha)
    ann = write(
        vault, "People/Ann.md", "Works on [alpha](../Projects/Alpha.md#Goals) and [it](./../Projects/Alpha.md).\n"
    )
    index = write(vault, "Index.md", "- [Alpha](Projects/Alpha.md)\n- [Alpha root](/Projects/Alpha.md)\n")
    async with connect(vault, watch=False) as client:
        moved = await call(
            client,
            "move_note",
            {"source": "Projects/Alpha", "destination": "Archive/Old/Alpha Done", "update_links": True},
        )
        links = await call(client, "get_links", {"path": "Archive/Old/Alpha Done"})
    assert moved["updated"] == ["Archive/Old/Alpha Done.md", "Index.md", "People/Ann.md"]
    assert ann.read_text(encoding="utf-8") == (
        "Works on [alpha](../Archive/Old/Alpha%20Done.md#Goals) and [it](../Archive/Old/Alpha%20Done.md).\n"
    )
    assert index.read_text(encoding="utf-8") == (
        "- [Alpha](Archive/Old/Alpha%20Done.md)\n- [Alpha root](/Archive/Old/Alpha%20Done.md)\n"
    )
    moved_text = (vault / "Archive/Old/Alpha Done.md").read_text(encoding="utf-8")
    assert moved_text == alpha.replace("(../People/Ann.md)", "(../../People/Ann.md)")
    assert [link["resolved_path"] for link in links["links"]] == ["People/Ann.md"]


async def test_moving_without_update_links_leaves_other_notes_alone(vault: Path, connect: Any):
    write(vault, "Projects/Alpha.md", "# Alpha\n")
    home = write(vault, "Home.md", "[[Alpha]]\n")
    async with connect(vault, watch=False) as client:
        moved = await call(client, "move_note", {"source": "Projects/Alpha", "destination": "Archive/Alpha2"})
    assert moved["updated"] == []
    assert home.read_text(encoding="utf-8") == "[[Alpha]]\n"


def test_a_linking_note_changed_concurrently_is_a_conflict_and_nothing_is_half_written(vault: Path, settings_for: Any):
    alpha = write(vault, "Projects/Alpha.md", "# Alpha\n")
    first = write(vault, "A.md", "first links [[Alpha]]\n")
    second = write(vault, "B.md", "second links [[Alpha]]\n")
    service = VaultService(settings_for(vault, watch=False))
    try:
        plan = service.plan_move("Projects/Alpha", "Archive/Alpha Old", update_links=True)
        assert [r.rel for r in plan.rewrites] == ["A.md", "B.md"]
        second.write_text("second links [[Alpha]], edited by someone else\n", encoding="utf-8")
        with pytest.raises(Conflict, match=r"B\.md"):
            service.apply_move(plan)
        assert first.read_text(encoding="utf-8") == "first links [[Alpha]]\n"  # rewritten, then restored
        assert second.read_text(encoding="utf-8") == "second links [[Alpha]], edited by someone else\n"
        assert alpha.is_file() and not (vault / "Archive/Alpha Old.md").exists()
        assert sorted(p.name for p in vault.iterdir()) == ["A.md", "B.md", "Projects"]  # no temp files left
        assert {b.source for b in service.get_backlinks("Projects/Alpha").backlinks} == {"A.md", "B.md"}
        # Planned again on what is there now, the move goes through.
        result = service.move_note("Projects/Alpha", "Archive/Alpha Old", update_links=True)
        assert result.updated == ["A.md", "B.md"]
        assert second.read_text(encoding="utf-8") == "second links [[Alpha Old]], edited by someone else\n"
    finally:
        service.close()
