"""Granola's notes (ProseMirror JSON) as Markdown: nothing written is left out."""

from __future__ import annotations

from deskmcp.meetings.prosemirror import to_markdown


def doc(*blocks: dict) -> dict:
    return {"type": "doc", "content": list(blocks)}


def text(value: str, *marks: str) -> dict:
    node: dict = {"type": "text", "text": value}
    if marks:
        node["marks"] = [{"type": m} for m in marks]
    return node


def test_a_paragraph_holding_an_emoji_or_an_image_keeps_its_text() -> None:
    notes = doc(
        {
            "type": "paragraph",
            "content": [text("Ship the pelican "), {"type": "emoji", "attrs": {"name": "rocket"}}, text(" on Friday")],
        },
        {"type": "paragraph", "content": [text("See "), {"type": "image", "attrs": {"src": "https://x/y.png"}}]},
        {"type": "paragraph", "content": [text("Done "), {"type": "emoji", "attrs": {"emoji": "✅"}}]},
    )
    assert to_markdown(notes) == "Ship the pelican :rocket: on Friday\n\nSee ![](https://x/y.png)\n\nDone ✅"


def test_unknown_inline_nodes_keep_their_text_and_unknown_wrappers_their_blocks() -> None:
    notes = doc(
        {
            "type": "paragraph",
            "content": [text("Call "), {"type": "hashtag", "text": "#ops"}, text(" "), text("today", "bold")],
        },
        {"type": "details", "content": [{"type": "paragraph", "content": [text("Inside a wrapper")]}]},
        text("A text node where a block would be"),
    )
    assert to_markdown(notes) == "Call #ops **today**\n\nInside a wrapper\n\nA text node where a block would be"
