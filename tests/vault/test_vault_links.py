"""What counts as a link, a tag or a heading in a note's Markdown."""

from __future__ import annotations

from deskmcp.vault import links as md

BODY = """# Plan

See [[Alpha]], [[Projects/Beta|the beta]] and [[Gamma#Risks]] and ![[chart.png]].
A [markdown link](../People/Ann%20Lee.md#Contact) and a [web page](https://example.com/a.md).
Tags: #work #project/alpha #123 https://example.com/#anchor [[Doc#Heading]]

```python
# not a heading
x = "[[NotALink]] #not-a-tag"
```

Inline `[[AlsoNot]]` and `#nope`.
## Next steps ##
"""


def test_wikilinks_keep_alias_heading_and_embed_and_skip_code() -> None:
    found = md.links(md.blank_code(BODY), "Notes/Sub")
    targets = [(link.target, link.target_key, link.heading, link.alias, link.embed) for link in found]
    assert targets == [
        ("Alpha", "alpha", None, None, False),
        ("Projects/Beta", "projects/beta", None, "the beta", False),
        ("Gamma", "gamma", "Risks", None, False),
        ("chart.png", "chart.png", None, None, True),
        ("../People/Ann Lee.md", "notes/people/ann lee", "Contact", "markdown link", False),
        ("Doc", "doc", "Heading", None, False),
    ]
    assert [link.line for link in found] == [3, 3, 3, 3, 4, 5]


def test_inline_tags_skip_numbers_anchors_headings_and_code() -> None:
    assert md.inline_tags(md.blank_code(BODY)) == ["work", "project/alpha"]


def test_frontmatter_tags_accept_lists_strings_and_hashes() -> None:
    assert md.frontmatter_tags({"tags": ["#a", "b/c", 7, True]}) == ["a", "b/c", "7"]
    assert md.frontmatter_tags({"tags": "x, #y z"}) == ["x", "y", "z"]
    assert md.frontmatter_tags({"tag": "solo"}) == ["solo"]
    assert md.unique_tags(["A", "a", "b"]) == ["A", "b"]


def test_headings_ignore_code_and_closing_hashes() -> None:
    assert md.headings(md.blank_code(BODY)) == ["Plan", "Next steps"]


def test_title_prefers_frontmatter_then_file_name() -> None:
    assert md.title({"title": " Weekly "}, "a/b.md") == "Weekly"
    assert md.title({"title": 3}, "a/Note name.md") == "Note name"
