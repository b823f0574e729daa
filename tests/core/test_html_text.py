"""The one HTML reader of mail bodies and HTML documents, checked case by case."""

from __future__ import annotations

import pytest

from deskmcp.core.html_text import html_to_text, read_html

CASES = [
    (
        "headings and paragraphs",
        "<h1>Plan</h1><p>First.</p><h2>Next</h2><p>Second.</p>",
        "Plan\n\nFirst.\n\nNext\n\nSecond.",
    ),
    ("source line breaks are spaces", "<p>one\n   two\tthree</p>", "one two three"),
    ("br and div are lines", "<div>a</div><div>b<br>c</div>", "a\nb\nc"),
    ("bullets", "<ul>\n <li>milk</li>\n <li>eggs</li>\n</ul>", "- milk\n- eggs"),
    ("numbered list", "<ol><li>first</li><li>second</li></ol>", "1. first\n2. second"),
    ("nested lists", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "- a\n- b\n- c"),
    ("unclosed items", "<ul><li>x<li>y</ul>", "- x\n- y"),
    ("link", '<p>See <a href="https://x.test/plan">the plan</a>.</p>', "See the plan (https://x.test/plan)."),
    ("link whose text is its address", '<a href="https://x.test/">https://x.test/</a>', "https://x.test/"),
    ("non-web link", '<a href="mailto:a@x.test">write</a> <a href="#top">top</a>', "write top"),
    (
        "table",
        "<table><tr><th>Name</th><th>Qty</th></tr><tr><td>pen</td> <td>3</td></tr></table>",
        "Name | Qty\npen | 3",
    ),
    ("script and style dropped", "<style>p{}</style><p>kept</p><script>var x = '<p>no</p>';</script>", "kept"),
    ("head dropped", "<html><head><title>T</title><meta name=x></head><body>body</body></html>", "body"),
    ("entities", "<p>caf&eacute; &amp; cr&#232;me &lt;3&nbsp;&nbsp;x</p>", "café & crème <3 x"),
    ("nested inline tags", "<p>a <b>bold <i>and italic</i></b> word</p>", "a bold and italic word"),
    ("comments dropped", "<p>a<!-- hidden -->b</p>", "ab"),
    ("unclosed tags", "<p>one <b>two <p>three", "one two\n\nthree"),
    ("stray end tags", "</div></p>text</b></script>more", "textmore"),
    ("broken markup keeps its text", "<p>a</p><<>> <div", "a\n\n<<>> <div"),
    ("unclosed script hides the rest", "<p>a</p><script>b", "a"),
    ("self-closed svg", "<p>x<svg/>y</p>", "xy"),
    ("svg text dropped", "<p>x</p><svg><text>label</text><g><p>no</p></g></svg><ul><li>y</li></ul>", "x\n\n- y"),
    ("pre keeps its lines", "<pre>line one\nline two</pre>", "line one\nline two"),
    ("empty", "", ""),
]


@pytest.mark.parametrize(("html", "text"), [(h, t) for _, h, t in CASES], ids=[name for name, _, _ in CASES])
def test_html_to_text_keeps_the_readable_structure(html: str, text: str) -> None:
    assert html_to_text(html) == text


def test_read_html_takes_the_title_element_and_meta_properties() -> None:
    page = read_html(
        "<html><head><title> Team &amp; Roadmap </title>"
        '<meta name="Author" content="Grace"><meta name="robots" content="none"></head>'
        "<body><h1>Other</h1></body></html>"
    )
    assert page.title == "Team & Roadmap"
    assert page.properties == {"author": "Grace"}
    assert page.text == "Other"


def test_read_html_falls_back_to_the_first_h1_for_a_title() -> None:
    assert read_html("<h1>Only <i>Heading</i></h1><h1>Second</h1>").title == "Only Heading"
    assert read_html("<p>no heading</p>").title is None
