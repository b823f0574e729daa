"""Cell notes of an .xlsx: Excel's legacy comments, a comments part (`xl/commentsN.xml`, the text
of each note by cell) and the VML drawing that shows each note as a box (`xl/drawings/
vmlDrawingN.vml`, one shape per note), both related from the sheet (`<legacyDrawing>` names the
drawing). Notes are added to the parts a sheet already has, or both parts are made."""

from __future__ import annotations

import html
import re
import zipfile
from xml.etree import ElementTree

from deskmcp.sheets.a1 import A1Range, cell_name, column_index
from deskmcp.sheets.xlsx.package_edit import REL_NS, PackageEdit, WorksheetEdit, not_patchable, relationships_of
from deskmcp.sheets.xlsx.parts import MAX_PART_BYTES, read_part

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
COMMENTS_REL = f"{REL_NS}/comments"
VML_REL = f"{REL_NS}/vmlDrawing"
COMMENTS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.comments+xml"
VML_TYPE = "application/vnd.openxmlformats-officedocument.vmlDrawing"
AUTHOR = "deskmcp"
MAX_NOTE_CHARS = 32_767  # what Excel lets a cell's text hold

_REF = re.compile(r"([A-Z]{1,3})([0-9]+)")
_COMMENT = re.compile(rb'<comment\b[^>]*?\bref="([A-Z]{1,3}[0-9]+)"[^>]*?(?:/>|>.*?</comment>)', re.S)
_SHAPE = re.compile(rb"<v:shape\b(?:(?!<v:shape\b).)*?</v:shape>", re.S)
_SHAPE_TYPE = (
    b'<v:shapetype id="_x0000_t202" coordsize="21600,21600" o:spt="202" path="m,l,21600r21600,l21600,xe">'
    b'<v:stroke joinstyle="miter"/><v:path gradientshapeok="t" o:connecttype="rect"/></v:shapetype>'
)


def _parts_of(zf_rels: list[tuple[str, str, str]], kind: str) -> list[tuple[str, str]]:
    return [(rid, target) for rid, rtype, target in zf_rels if rtype == kind]


def _text(comment: ElementTree.Element) -> str:
    """A note's text: its `<t>`, or the `<t>` of each of its rich-text runs (phonetic runs left out)."""
    text = comment.find(f"{{{MAIN_NS}}}text")
    if text is None:
        return ""
    direct = [t.text or "" for t in text.findall(f"{{{MAIN_NS}}}t")]
    runs = [t.text or "" for r in text.findall(f"{{{MAIN_NS}}}r") for t in r.findall(f"{{{MAIN_NS}}}t")]
    return "".join(direct + runs)


def read_notes(zf: zipfile.ZipFile, sheet_part: str) -> dict[str, str]:
    """The notes of a worksheet part, by cell (`B2`)."""
    edit_rels = PackageEdit.rels_name(sheet_part)
    if edit_rels not in zf.namelist():
        return {}
    rels = relationships_of(read_part(zf, edit_rels), sheet_part)
    notes: dict[str, str] = {}
    for _rid, target in _parts_of(rels, COMMENTS_REL):
        if target not in zf.namelist():
            continue
        try:
            root = ElementTree.fromstring(read_part(zf, target, MAX_PART_BYTES))
        except ElementTree.ParseError:
            continue  # a damaged comments part: its notes are not shown, the values still are
        for comment in root.iter(f"{{{MAIN_NS}}}comment"):
            ref = comment.get("ref", "")
            if _REF.fullmatch(ref):
                notes[ref] = _text(comment)
    return notes


def notes_in(notes: dict[str, str], rng: A1Range) -> dict[str, str]:
    """The notes of the cells of `rng` (open ends unbounded), in row then column order."""
    r0, c0 = rng.start_row or 1, rng.start_col or 1
    r1, c1 = rng.end_row or 1 << 30, rng.end_col or 1 << 30
    found: list[tuple[int, int, str, str]] = []
    for ref, text in notes.items():
        m = _REF.fullmatch(ref)
        if m is None:
            continue
        row, col = int(m.group(2)), column_index(m.group(1))
        if r0 <= row <= r1 and c0 <= col <= c1:
            found.append((row, col, ref, text))
    return {ref: text for _r, _c, ref, text in sorted(found)}


# -- writing ---------------------------------------------------------------------------------------


def _comment_xml(ref: str, text: str, author: int) -> bytes:
    body = html.escape(text, quote=False).replace("\r\n", "\n")
    return (
        f'<comment ref="{ref}" authorId="{author}"><text><t xml:space="preserve">{body}</t></text></comment>'
    ).encode()


def _shape_xml(shape_id: int, row: int, col: int) -> bytes:
    # the box to the right of the cell, 2 columns wide and 4 rows high, hidden until hovered
    anchor = f"{col}, 15, {max(row - 2, 0)}, 10, {col + 2}, 15, {max(row - 2, 0) + 4}, 4"
    return (
        f'<v:shape id="_x0000_s{shape_id}" type="#_x0000_t202" style="position:absolute;margin-left:59.25pt;'
        f'margin-top:1.5pt;width:108pt;height:59.25pt;z-index:{shape_id};visibility:hidden" fillcolor="#ffffe1" '
        'o:insetmode="auto"><v:fill color2="#ffffe1"/><v:shadow on="t" color="black" obscured="t"/>'
        '<v:path o:connecttype="none"/><v:textbox style="mso-direction-alt:auto"><div style="text-align:left"></div>'
        '</v:textbox><x:ClientData ObjectType="Note"><x:MoveWithCells/><x:SizeWithCells/>'
        f"<x:Anchor>{anchor}</x:Anchor><x:AutoFill>False</x:AutoFill><x:Row>{row - 1}</x:Row>"
        f"<x:Column>{col - 1}</x:Column></x:ClientData></v:shape>"
    ).encode()


def _new_vml(block: int) -> bytes:
    return (
        b'<xml xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" '
        b'xmlns:x="urn:schemas-microsoft-com:office:excel"><o:shapelayout v:ext="edit">'
        b'<o:idmap v:ext="edit" data="%d"/></o:shapelayout>' % block + _SHAPE_TYPE + b"</xml>"
    )


def _vml_block(edit: PackageEdit) -> int:
    """A block of shape ids (1,024 each) no other VML drawing of the package uses."""
    used = {0}
    for name in [*edit.names, *edit.parts]:
        if name.endswith(".vml"):
            m = re.search(rb'<o:idmap\b[^>]*data="([0-9,]+)"', edit.read(name))
            if m:
                used.update(int(x) for x in m.group(1).split(b",") if x)
    return max(used) + 1


def _shape_cell(shape: bytes) -> tuple[int, int] | None:
    row = re.search(rb"<x:Row>\s*([0-9]+)\s*</x:Row>", shape)
    col = re.search(rb"<x:Column>\s*([0-9]+)\s*</x:Column>", shape)
    if row is None or col is None or b'ObjectType="Note"' not in shape:
        return None
    return int(row.group(1)) + 1, int(col.group(1)) + 1


def set_notes(edit: PackageEdit, ws: WorksheetEdit, notes: dict[tuple[int, int], str]) -> tuple[list[str], list[str]]:
    """Write notes (cell -> text; empty text removes the cell's note); the cells written and removed."""
    rels = edit.relationships(ws.part)
    comments = _parts_of(rels, COMMENTS_REL)
    legacy = ws.find("legacyDrawing")
    vml_part: str | None = None
    if legacy is not None:
        rid = re.search(rb'\b[\w.-]+:id="([^"]*)"', legacy)
        vml_part = next((t for i, _k, t in rels if rid is not None and i == rid.group(1).decode()), None)
        if vml_part is None or not edit.exists(vml_part):
            raise not_patchable(ws.part, "its <legacyDrawing> names no drawing of the package")
    # the comments part: the sheet's own, or a new one
    if comments:
        comments_part = comments[0][1]
        data = edit.read(comments_part)
    else:
        comments_part = edit.free_name("xl/comments{}.xml")
        data = (
            b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            b'<comments xmlns="' + MAIN_NS.encode() + b'"><authors><author>' + AUTHOR.encode() + b"</author></authors>"
            b"<commentList></commentList></comments>"
        )
    if not re.search(rb"<comments\b", data) or (b"<commentList" not in data):
        raise not_patchable(comments_part, "the comments part is not in the usual form")
    data = re.sub(rb"<commentList\s*/>", b"<commentList></commentList>", data, count=1)
    authors = re.findall(rb"<author>(.*?)</author>", data, re.S)
    if AUTHOR.encode() in authors:
        author = authors.index(AUTHOR.encode())
    else:
        author = len(authors)
        data = re.sub(rb"<authors\s*/>", b"<authors></authors>", data, count=1)
        data = data.replace(b"</authors>", b"<author>" + AUTHOR.encode() + b"</author></authors>", 1)
    vml = edit.read(vml_part) if vml_part is not None else _new_vml(_vml_block(edit))
    if b"_x0000_t202" not in vml:
        vml = re.sub(rb"(</o:shapelayout>)", rb"\1" + _SHAPE_TYPE.replace(b"\\", b"\\\\"), vml, count=1)
    ids = [int(x) for x in re.findall(rb'id="_x0000_s([0-9]+)"', vml)]
    block = re.search(rb'<o:idmap\b[^>]*data="([0-9]+)', vml)
    next_id = max([*ids, (int(block.group(1)) if block else 1) * 1024]) + 1
    written: list[str] = []
    removed: list[str] = []
    for (row, col), text in sorted(notes.items()):
        ref = cell_name(row, col)
        existing = [m for m in _COMMENT.finditer(data) if m.group(1) == ref.encode()]
        for m in reversed(existing):
            data = data[: m.start()] + data[m.end() :]
        shapes = [m for m in _SHAPE.finditer(vml) if _shape_cell(m.group(0)) == (row, col)]
        for m in reversed(shapes):
            vml = vml[: m.start()] + vml[m.end() :]
        if not text:
            if existing:
                removed.append(ref)
            continue
        data = data.replace(b"</commentList>", _comment_xml(ref, text, author) + b"</commentList>", 1)
        end = vml.rfind(b"</xml>")
        if end < 0:
            raise not_patchable(vml_part or "the VML drawing", "the drawing is not in the usual form")
        vml = vml[:end] + _shape_xml(next_id, row, col) + vml[end:]
        next_id += 1
        written.append(ref)
    edit.set(comments_part, data)
    if vml_part is None:
        vml_part = edit.free_name("xl/drawings/vmlDrawing{}.vml")
        edit.content_default("vml", VML_TYPE)
        rid = edit.relate(ws.part, VML_REL, vml_part)
        prefix = ws.namespace_prefix(REL_NS)
        ws.put("legacyDrawing", b"<legacyDrawing " + prefix + b':id="' + rid.encode() + b'"/>')
    edit.set(vml_part, vml)
    if not comments:
        edit.content_override(comments_part, COMMENTS_TYPE)
        edit.relate(ws.part, COMMENTS_REL, comments_part)
    return written, removed
