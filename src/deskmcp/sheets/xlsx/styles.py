"""Cell formats added to a workbook's style sheet (`xl/styles.xml`), never rewritten.

A format applied to cells starts from each cell's own cell format (`<xf>` of `cellXfs`) and
changes only what was asked: the font, fill and border it points at are copied with the change
and appended to `fonts`, `fills` and `borders`, a number format to `numFmts`, and the new `<xf>`
to `cellXfs`. An entry equal to one the sheet already holds (compared as XML, not as text) is
reused instead of added. Every entry already there keeps its index and its bytes, so every cell
not formatted looks as it did.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from xml.etree import ElementTree

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.models import CellFormat

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
SECTIONS = ("numFmts", "fonts", "fills", "borders", "cellXfs")
# Number formats every application knows by id (those whose text does not depend on the locale).
BUILTIN_FORMATS = {
    "General": 0,
    "0": 1,
    "0.00": 2,
    "#,##0": 3,
    "#,##0.00": 4,
    "0%": 9,
    "0.00%": 10,
    "0.00E+00": 11,
    "@": 49,
}
FIRST_CUSTOM_FORMAT = 164
# The order Excel writes a font's elements in (the schema allows any order; some readers do not).
FONT_ORDER = (
    "b",
    "i",
    "strike",
    "condense",
    "extend",
    "outline",
    "shadow",
    "u",
    "vertAlign",
    "sz",
    "color",
    "name",
    "family",
    "charset",
    "scheme",
)
BORDER_ORDER = ("start", "left", "end", "right", "top", "bottom", "diagonal", "vertical", "horizontal")
XF_ORDER = ("alignment", "protection", "extLst")
BORDER_STYLES = {
    "thin": "thin",
    "medium": "medium",
    "thick": "thick",
    "dashed": "dashed",
    "dotted": "dotted",
    "double": "double",
}

MINIMAL_STYLES = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    b'<fonts count="1"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
    b'<fills count="2"><fill><patternFill patternType="none"/></fill>'
    b'<fill><patternFill patternType="gray125"/></fill></fills>'
    b'<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    b'<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    b'<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
    b'<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    b"</styleSheet>"
)
"""The style sheet given to a package that has none (one default font, fill, border and format)."""

Edge = tuple[str, str]
"""A border line of one side: (style, RRGGBB colour); style `none` removes the line."""


def _unreadable(why: str) -> BadRequest:
    return BadRequest(
        f"The workbook's style sheet cannot be extended here: {why}. Re-save the file from Excel or "
        "LibreOffice and try again.",
        {"part": "xl/styles.xml"},
    )


@dataclass
class _Section:
    entries: list[bytes]  # as the file holds them
    added: list[bytes]
    keys: dict[object, int]  # canonical form -> index (existing entries first, then added)


class StyleSheet:
    """The style sheet of one package, with the entries a change appends."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        root = re.search(rb"<styleSheet\b[^>]*>", data)
        if root is None:
            raise _unreadable("no <styleSheet> element without a prefix")
        self._namespaces = {
            (m.group(1) or b"").decode(): m.group(2).decode()
            for m in re.finditer(rb'\sxmlns(?::([\w.-]+))?="([^"]*)"', root.group(0))
        }
        self._prefixes = {uri: prefix for prefix, uri in self._namespaces.items()}
        if self._namespaces.get("") != MAIN_NS:
            raise _unreadable("the style sheet is not in SpreadsheetML's main namespace")
        self._sections: dict[str, _Section] = {}
        for name in SECTIONS:
            entries = self._entries(name)
            section = _Section(entries, [], {})
            for i, raw in enumerate(entries):
                section.keys.setdefault(self._key(name, raw), i)
            self._sections[name] = section
        self.formats = self._number_formats()

    # -- reading the sheet ------------------------------------------------------------------------

    def _entries(self, section: str) -> list[bytes]:
        item = {"numFmts": b"numFmt", "fonts": b"font", "fills": b"fill", "borders": b"border", "cellXfs": b"xf"}
        m = re.search(
            rb"<" + section.encode() + rb"\b[^>]*?(?:/>|>(.*?)</" + section.encode() + rb">)", self.data, re.S
        )
        if m is None:
            if section == "numFmts":
                return []
            raise _unreadable(f"it has no <{section}>")
        tag = item[section]
        return re.findall(rb"<" + tag + rb"\b[^>]*?(?:/>|>.*?</" + tag + rb">)", m.group(1) or b"", re.S)

    def _parse(self, raw: bytes) -> ElementTree.Element:
        declarations = "".join(
            f' xmlns{":" + p if p else ""}="{html.escape(uri)}"' for p, uri in self._namespaces.items()
        )
        try:
            wrapper = ElementTree.fromstring(f"<wrap{declarations}>".encode() + raw + b"</wrap>")
        except ElementTree.ParseError as exc:
            raise _unreadable(f"an entry is not well-formed XML ({exc})") from exc
        return wrapper[0]

    def _key(self, section: str, raw: bytes) -> object:
        try:
            element = self._parse(raw)
        except BadRequest:
            return raw  # compared as bytes only
        return _canonical(element, unordered=section == "fonts")

    def _number_formats(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for raw in self._sections["numFmts"].entries:
            element = self._parse(raw)
            code, ident = element.get("formatCode"), element.get("numFmtId")
            if code is not None and ident is not None and ident.isdigit():
                found.setdefault(code, int(ident))
        return found

    def _element(self, section: str, index: int) -> ElementTree.Element | None:
        s = self._sections[section]
        every = s.entries + s.added
        return self._parse(every[index]) if 0 <= index < len(every) else None

    def _element_or_first(self, section: str, index: int) -> ElementTree.Element | None:
        """The entry at `index`, or the first (the default) when the index points past the list."""
        found = self._element(section, index)
        return found if found is not None else self._element(section, 0)

    # -- adding ----------------------------------------------------------------------------------

    @property
    def added(self) -> int:
        """Cell formats added so far."""
        return len(self._sections["cellXfs"].added)

    def _add(self, section: str, element: ElementTree.Element) -> int:
        s = self._sections[section]
        key = _canonical(element, unordered=section == "fonts")
        if key in s.keys:
            return s.keys[key]
        index = len(s.entries) + len(s.added)
        s.added.append(self._xml(element))
        s.keys[key] = index
        return index

    def number_format(self, code: str) -> int:
        """The id of the number format `code`: a built-in one, one the sheet holds, or one added."""
        if code in BUILTIN_FORMATS:
            return BUILTIN_FORMATS[code]
        if code in self.formats:
            return self.formats[code]
        ids = [*self.formats.values(), FIRST_CUSTOM_FORMAT - 1]
        for raw in self._sections["numFmts"].entries:
            m = re.search(rb'numFmtId="([0-9]+)"', raw)
            if m:
                ids.append(int(m.group(1)))
        ident = max(ids) + 1
        element = ElementTree.Element(f"{{{MAIN_NS}}}numFmt", {"numFmtId": str(ident), "formatCode": code})
        self._sections["numFmts"].added.append(self._xml(element))
        self.formats[code] = ident
        return ident

    def restyle(self, xf_index: int, fmt: CellFormat, edges: dict[str, Edge] | None = None) -> int:
        """The index of the cell format that is `xf_index`'s with `fmt` (and these border `edges`,
        side -> line) applied: an existing one when equal, else one appended."""
        old = self._element_or_first("cellXfs", xf_index)
        xf = _copy(old) if old is not None else ElementTree.Element(f"{{{MAIN_NS}}}xf")
        attrs = xf.attrib
        for name in ("numFmtId", "fontId", "fillId", "borderId"):
            attrs.setdefault(name, "0")
        attrs.setdefault("xfId", "0")
        if any(v is not None for v in (fmt.bold, fmt.italic, fmt.underline, fmt.font_size, fmt.font_color)):
            attrs["fontId"] = str(self._font(int(attrs["fontId"]), fmt))
            attrs["applyFont"] = "1"
        if fmt.fill_color is not None:
            attrs["fillId"] = str(self._fill(fmt.fill_color))
            attrs["applyFill"] = "1"
        if edges:
            attrs["borderId"] = str(self._border(int(attrs["borderId"]), edges))
            attrs["applyBorder"] = "1"
        if fmt.number_format is not None:
            attrs["numFmtId"] = str(self.number_format(fmt.number_format))
            attrs["applyNumberFormat"] = "1"
        if fmt.horizontal is not None or fmt.vertical is not None or fmt.wrap is not None:
            _align(xf, fmt)
            attrs["applyAlignment"] = "1"
        return self._add("cellXfs", xf)

    def _font(self, index: int, fmt: CellFormat) -> int:
        old = self._element_or_first("fonts", index)
        font = _copy(old) if old is not None else ElementTree.Element(f"{{{MAIN_NS}}}font")
        for name, on in (("b", fmt.bold), ("i", fmt.italic), ("u", fmt.underline)):
            if on is not None:
                _drop(font, name)
                if on:
                    ElementTree.SubElement(font, f"{{{MAIN_NS}}}{name}")
        if fmt.font_size is not None:
            _drop(font, "sz")
            size = f"{fmt.font_size:g}"
            ElementTree.SubElement(font, f"{{{MAIN_NS}}}sz", {"val": size})
        if fmt.font_color is not None:
            _drop(font, "color")
            ElementTree.SubElement(font, f"{{{MAIN_NS}}}color", {"rgb": "FF" + fmt.font_color})
        _order(font, FONT_ORDER)
        return self._add("fonts", font)

    def _fill(self, color: str) -> int:
        fill = ElementTree.Element(f"{{{MAIN_NS}}}fill")
        pattern = ElementTree.SubElement(fill, f"{{{MAIN_NS}}}patternFill", {"patternType": "solid"})
        ElementTree.SubElement(pattern, f"{{{MAIN_NS}}}fgColor", {"rgb": "FF" + color})
        ElementTree.SubElement(pattern, f"{{{MAIN_NS}}}bgColor", {"indexed": "64"})
        return self._add("fills", fill)

    def _border(self, index: int, edges: dict[str, Edge]) -> int:
        old = self._element_or_first("borders", index)
        border = _copy(old) if old is not None else ElementTree.Element(f"{{{MAIN_NS}}}border")
        for side, (style, color) in edges.items():
            _drop(border, side)
            _drop(border, {"left": "start", "right": "end"}.get(side, side))
            line = ElementTree.SubElement(border, f"{{{MAIN_NS}}}{side}")
            if style != "none":
                line.set("style", BORDER_STYLES[style])
                ElementTree.SubElement(line, f"{{{MAIN_NS}}}color", {"rgb": "FF" + color})
        for side in ("left", "right", "top", "bottom", "diagonal"):  # the schema's required order
            twin = {"left": "start", "right": "end"}.get(side, side)
            if border.find(f"{{{MAIN_NS}}}{side}") is None and border.find(f"{{{MAIN_NS}}}{twin}") is None:
                ElementTree.SubElement(border, f"{{{MAIN_NS}}}{side}")
        _order(border, BORDER_ORDER)
        return self._add("borders", border)

    # -- writing ---------------------------------------------------------------------------------

    def _xml(self, element: ElementTree.Element) -> bytes:
        return _serialize(element, self._prefixes).encode("utf-8")

    def to_bytes(self) -> bytes:
        """The style sheet with what was added (the original bytes when nothing was)."""
        data = self.data
        for name in SECTIONS:
            added = self._sections[name].added
            if not added:
                continue
            total = len(self._sections[name].entries) + len(added)
            body = b"".join(added)
            tag = name.encode()
            m = re.search(rb"<" + tag + rb"\b([^>]*?)(/?)>", data)
            if m is None:  # only numFmts may be missing: it comes first in the style sheet
                root = re.search(rb"<styleSheet\b[^>]*>", data)
                assert root is not None
                element = b'<numFmts count="%d">' % total + body + b"</numFmts>"
                data = data[: root.end()] + element + data[root.end() :]
                continue
            attrs = _with_count(m.group(1), total)
            if m.group(2):  # `<fonts count="0"/>`: opened to hold the entries
                data = data[: m.start()] + b"<" + tag + attrs + b">" + body + b"</" + tag + b">" + data[m.end() :]
                continue
            close = data.index(b"</" + tag + b">", m.end())
            data = data[: m.start()] + b"<" + tag + attrs + b">" + data[m.end() : close] + body + data[close:]
        return data


def _with_count(attrs: bytes, total: int) -> bytes:
    if re.search(rb'\scount="[^"]*"', attrs):
        return re.sub(rb'(\scount=")[^"]*"', lambda m: m.group(1) + b'%d"' % total, attrs, count=1)
    return attrs + b' count="%d"' % total


def _canonical(element: ElementTree.Element, *, unordered: bool = False) -> object:
    children = [_canonical(child) for child in element]
    return (
        element.tag,
        tuple(sorted(element.attrib.items())),
        (element.text or "").strip(),
        tuple(sorted(children, key=repr)) if unordered else tuple(children),
    )


def _copy(element: ElementTree.Element) -> ElementTree.Element:
    out = ElementTree.Element(element.tag, dict(element.attrib))
    out.text = element.text
    for child in element:
        out.append(_copy(child))
    return out


def _drop(parent: ElementTree.Element, name: str) -> None:
    for child in [c for c in parent if c.tag == f"{{{MAIN_NS}}}{name}"]:
        parent.remove(child)


def _order(parent: ElementTree.Element, order: Iterable[str]) -> None:
    rank = {f"{{{MAIN_NS}}}{name}": i for i, name in enumerate(order)}
    children = list(parent)
    children.sort(key=lambda c: rank.get(c.tag, len(rank)))  # stable: unknown ones keep their order, last
    for child in list(parent):
        parent.remove(child)
    parent.extend(children)


def _align(xf: ElementTree.Element, fmt: CellFormat) -> None:
    alignment = xf.find(f"{{{MAIN_NS}}}alignment")
    if alignment is None:
        alignment = ElementTree.Element(f"{{{MAIN_NS}}}alignment")
        xf.insert(0, alignment)
    if fmt.horizontal is not None:
        alignment.set("horizontal", fmt.horizontal)
    if fmt.vertical is not None:
        alignment.set("vertical", "center" if fmt.vertical == "middle" else fmt.vertical)
    if fmt.wrap is not None:
        if fmt.wrap:
            alignment.set("wrapText", "1")
        else:
            alignment.attrib.pop("wrapText", None)
    _order(xf, XF_ORDER)


def _name(tag: str, prefixes: dict[str, str]) -> str:
    if not tag.startswith("{"):
        return tag
    uri, local = tag[1:].split("}", 1)
    prefix = prefixes.get(uri)
    if prefix is None:
        raise _unreadable(f"an entry uses the namespace {uri} the style sheet does not declare")
    return f"{prefix}:{local}" if prefix else local


def _serialize(element: ElementTree.Element, prefixes: dict[str, str]) -> str:
    attrs = "".join(f' {_name(k, prefixes)}="{html.escape(v)}"' for k, v in element.attrib.items())
    name = _name(element.tag, prefixes)
    inner = html.escape(element.text or "", quote=False) + "".join(
        _serialize(child, prefixes) + html.escape(child.tail or "", quote=False) for child in element
    )
    return f"<{name}{attrs}>{inner}</{name}>" if inner else f"<{name}{attrs}/>"
