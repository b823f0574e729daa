"""Sheets renamed, copied and deleted in an .xlsx package in place, whatever else the workbook holds.

A rename rewrites, as text, every reference naming the sheet: formulas of every sheet (and in
conditional formats, validations and the sheets' extensions), hyperlink locations, defined names,
chart series, pivot cache sources, table formulas, and the sheet titles listed in
`docProps/app.xml`. A deletion refuses, naming them, what elsewhere points into the sheet (a
formula of another sheet, a defined name, a chart on another sheet, a pivot cache built on it, a
table of it used by name); otherwise it removes the sheet's part and every part only it used (its
drawing, charts and pictures, notes, tables, pivot tables), their content types and
relationships, its local defined names (the others' sheet indexes moved down) and the calculation
chain (Excel builds it again). A copy takes the sheet's part (its formulas naming the sheet itself
name the copy, as in Excel) and, under fresh names, its drawing, charts (their series moved to the
copy), notes and printer settings; it refuses a part whose name
must stay unique (a table, a pivot table) or that it does not know. Every other part is copied
unchanged.
"""

from __future__ import annotations

import html
import posixpath
import re
import zipfile
from collections.abc import Callable

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.a1 import quote_sheet
from deskmcp.sheets.xlsx.parts import MAX_CELLS_PART_BYTES, PackageMap, read_part
from deskmcp.sheets.xlsx.patch_sheets import Fallback
from deskmcp.sheets.xlsx.structure import REL_NS, Parts, rels_of, titles_in_app

_SHEET_PREFIX = re.compile(r"""(?P<string>"(?:[^"]|"")*")|(?<![\w.'$\]])(?P<sheet>'(?:[^']|'')+'|[^\W\d][\w.]*)!""")
_FORMULA_TEXT = re.compile(
    r"<((?:\w+:)?(?:f|formula[12]?|calculatedColumnFormula|totalsRowFormula|definedName))\b([^>]*)>([^<]*)</\1>"
)
_REF_ATTRIBUTE = re.compile(r'(\s(?:location|textlink)=")([^"]*)(")')
_CELL_OPEN = re.compile(r'<c\b[^>]*?\sr="([A-Z]+[0-9]+)"')


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def renamed(formula: str, old: str, new: str) -> str:
    """`formula` with its references to sheet `old` (any case, quoted or not) naming `new`; text in
    quotes and other workbooks' sheets (`[1]Old!A1`) left alone."""

    def swap(m: re.Match[str]) -> str:
        sheet = m.group("sheet")
        if sheet is None:
            return m.group(0)
        name = sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet
        return quote_sheet(new) + "!" if name.casefold() == old.casefold() else m.group(0)

    return _SHEET_PREFIX.sub(swap, formula)


def _mentions(text: str, title: str) -> bool:
    """Whether `text` (XML) may name the sheet in a reference (a cheap test before parsing)."""
    folded = text.casefold()
    forms = {title, quote_sheet(title), "'" + title.replace("'", "''") + "'"}
    return any(_escape(f).casefold() + "!" in folded or html.escape(f).casefold() + "!" in folded for f in forms)


def _rewrite_formulas(text: str, change: Callable[[str], str]) -> str:
    def element(m: re.Match[str]) -> str:
        raw = html.unescape(m.group(3))
        new = change(raw)
        return m.group(0) if new == raw else f"<{m.group(1)}{m.group(2)}>{_escape(new)}</{m.group(1)}>"

    def attribute(m: re.Match[str]) -> str:
        raw = html.unescape(m.group(2))
        new = change(raw)
        return m.group(0) if new == raw else m.group(1) + html.escape(new) + m.group(3)

    return _REF_ATTRIBUTE.sub(attribute, _FORMULA_TEXT.sub(element, text))


def _formulas_renamed(text: str, old: str, new: str) -> str:
    """A part's formulas (not its hyperlinks) with their references to sheet `old` naming `new`."""

    def element(m: re.Match[str]) -> str:
        raw = html.unescape(m.group(3))
        changed = renamed(raw, old, new)
        return m.group(0) if changed == raw else f"<{m.group(1)}{m.group(2)}>{_escape(changed)}</{m.group(1)}>"

    return _FORMULA_TEXT.sub(element, text)


def _text(zf: zipfile.ZipFile, name: str) -> str:
    limit = MAX_CELLS_PART_BYTES if name.startswith("xl/worksheets/") else None
    data = read_part(zf, name, limit) if limit is not None else read_part(zf, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Fallback(f"{name} is not UTF-8") from exc


def _xml_parts(zf: zipfile.ZipFile) -> list[str]:
    return [n for n in zf.namelist() if n.endswith(".xml") and "/_rels/" not in n and not n.startswith("[")]


def _sheet_elements(workbook: str) -> list[re.Match[str]]:
    return list(re.finditer(r"<(?:\w+:)?sheet\b[^>]*?/>", workbook))


def _attr(element: str, name: str) -> str | None:
    m = re.search(r"\s" + name + r'="([^"]*)"', element)
    return html.unescape(m.group(1)) if m else None


def rename_sheet(zf: zipfile.ZipFile, where: PackageMap, old: str, new: str) -> Parts:
    """The parts a rename of sheet `old` to `new` changes."""
    out: Parts = {}
    workbook = _text(zf, "xl/workbook.xml")
    element = next((m for m in _sheet_elements(workbook) if _attr(m.group(0), "name") == old), None)
    if element is None:
        raise KeyError(old)
    tag = re.sub(r'(\sname=")[^"]*(")', lambda m: m.group(1) + html.escape(new) + m.group(2), element.group(0))
    workbook = workbook[: element.start()] + tag + workbook[element.end() :]
    workbook = _rewrite_formulas(workbook, lambda f: renamed(f, old, new))
    out["xl/workbook.xml"] = workbook.encode("utf-8")
    for name in _xml_parts(zf):
        if name == "xl/workbook.xml" or not name.startswith("xl/"):
            continue
        text = _text(zf, name)
        changed = text
        if name.startswith("xl/pivotCache/pivotCacheDefinition"):
            changed = re.sub(
                r'(<(?:\w+:)?worksheetSource\b[^>]*?\ssheet=")([^"]*)(")',
                lambda m: (
                    m.group(1) + html.escape(new) + m.group(3)
                    if html.unescape(m.group(2)).casefold() == old.casefold()
                    else m.group(0)
                ),
                changed,
            )
        if _mentions(text, old):
            changed = _rewrite_formulas(changed, lambda f: renamed(f, old, new))
        if changed != text:
            out[name] = changed.encode("utf-8")

    def retitle(titles: list[str]) -> list[str]:
        return [new if t == old else t for t in titles]

    titles_in_app(zf, out, retitle)
    return out


def _reachable(zf: zipfile.ZipFile, start: str) -> set[str]:
    """`start` and the parts it uses that nothing else in the package uses."""
    names = set(zf.namelist())
    targets: dict[str, list[str]] = {}  # part -> the parts its relationships name
    for rels in (n for n in names if "/_rels/" in n or n.startswith("_rels/")):
        folder = posixpath.dirname(posixpath.dirname(rels))
        source = posixpath.join(folder, posixpath.basename(rels)[: -len(".rels")])
        found = []
        for m in re.finditer(r"<(?:\w+:)?Relationship\b([^>]*)/?>", _text(zf, rels)):
            attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if attrs.get("TargetMode") == "External":
                continue
            target = html.unescape(attrs.get("Target", ""))
            found.append(
                target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
            )
        targets[source] = found
    gone = {start}
    while True:
        more = {
            t
            for part in gone
            for t in targets.get(part, [])
            if t in names
            and t not in gone
            and not any(t in used for source, used in targets.items() if source not in gone and source != t)
        }
        if not more:
            return gone
        gone |= more


def delete_sheet(zf: zipfile.ZipFile, where: PackageMap, title: str) -> Parts:
    """The parts a deletion of sheet `title` changes or removes (None); `BadRequest` naming what
    points into it from elsewhere."""
    part = where.sheets.get(title)
    if part is None:
        raise KeyError(title)
    workbook = _text(zf, "xl/workbook.xml")
    elements = _sheet_elements(workbook)
    index = next(i for i, m in enumerate(elements) if _attr(m.group(0), "name") == title)
    visible = [m for m in elements if _attr(m.group(0), "state") in (None, "visible")]
    if len(elements) == 1 or (len(visible) == 1 and _attr(elements[index].group(0), "name") == title):
        raise BadRequest("A workbook keeps at least one visible sheet; add or show another first.", {"sheet": title})
    gone = _reachable(zf, part)
    sentinel = "\u0000deleted"

    def reads(formula: str) -> bool:
        return renamed(formula, title, sentinel) != formula

    users: list[str] = []
    for name in _xml_parts(zf):
        if name in gone or name == "xl/workbook.xml" or not name.startswith("xl/"):
            continue
        text = _text(zf, name)
        if name.startswith("xl/pivotCache/pivotCacheDefinition") and any(
            html.unescape(s).casefold() == title.casefold()
            for s in re.findall(r'<(?:\w+:)?worksheetSource\b[^>]*?\ssheet="([^"]*)"', text)
        ):
            users.append(f"the pivot table data in {name}")
            continue
        if not _mentions(text, title):
            continue
        for m in _FORMULA_TEXT.finditer(text):
            if reads(html.unescape(m.group(3))):
                cell = None
                if name in where.sheets.values():
                    cell = next(iter(_CELL_OPEN.findall(text[max(0, m.start() - 400) : m.start()])[-1:]), None)
                    sheet = next(t for t, p in where.sheets.items() if p == name)
                    users.append(f"{quote_sheet(sheet)}!{cell}" if cell else f"a formula of sheet {sheet!r}")
                else:
                    users.append(f"the chart {name}" if name.startswith("xl/charts/") else f"a formula in {name}")
                break
    for m in re.finditer(r"<((?:\w+:)?)definedName\b([^>]*)>([^<]*)</\1definedName>", workbook):
        local = _attr(m.group(2), "localSheetId")
        if local is not None and local.isdigit() and int(local) == index:
            continue
        if reads(html.unescape(m.group(3))):
            users.append(f"the defined name {_attr(m.group(2), 'name')}")
    tables = [
        _attr(t.group(0), "displayName") or _attr(t.group(0), "name") or ""
        for n in gone
        if n.startswith("xl/tables/")
        for t in [re.search(r"<(?:\w+:)?table\b[^>]*>", _text(zf, n))]
        if t is not None
    ]
    for table in filter(None, tables):
        for name in where.sheets.values():
            if name in gone or name not in zf.namelist():
                continue
            if re.search(r"[>(,=&+\-*/ ]" + re.escape(table) + r"\[", html.unescape(_text(zf, name)), re.I):
                users.append(f"formulas using the table {table}")
                break
    if users:
        raise BadRequest(
            f"Sheet {title!r} is used elsewhere: {', '.join(dict.fromkeys(users))}. Deleting it would leave "
            "them pointing at nothing. Nothing was written: change or remove them first.",
            {"sheet": title, "used_by": list(dict.fromkeys(users))},
        )
    out: Parts = dict.fromkeys(gone)
    for n in gone:
        if rels_of(n) in zf.namelist():
            out[rels_of(n)] = None
    rid = _attr(elements[index].group(0), "r:id") or next(
        (v for k, v in re.findall(r'\s(\w+:id)="([^"]*)"', elements[index].group(0))), None
    )
    workbook = workbook[: elements[index].start()] + workbook[elements[index].end() :]

    def name_scope(m: re.Match[str]) -> str:
        attrs = m.group(2)
        local = _attr(attrs, "localSheetId")
        if local is None or not local.isdigit():
            return m.group(0)
        n = int(local)
        if n == index:
            return ""
        if n < index:
            return m.group(0)
        attrs = re.sub(r'(\slocalSheetId=")[0-9]+(")', lambda a: a.group(1) + str(n - 1) + a.group(2), attrs)
        return f"<{m.group(1)}definedName{attrs}>{m.group(3)}</{m.group(1)}definedName>"

    workbook = re.sub(r"<((?:\w+:)?)definedName\b([^>]*)>([^<]*)</\1definedName>", name_scope, workbook)
    workbook = re.sub(r"<((?:\w+:)?)definedNames\b[^>]*>\s*</\1definedNames>", "", workbook)

    def view(m: re.Match[str]) -> str:
        tag = m.group(0)
        for attr in ("activeTab", "firstSheet"):
            value = _attr(tag, attr)
            if value is not None and value.isdigit() and int(value) > 0 and int(value) >= index:
                moved = f' {attr}="{int(value) - 1}"'
                tag = re.sub(r"\s" + attr + r'="[0-9]+"', moved, tag)
        return tag

    workbook = re.sub(r"<(?:\w+:)?workbookView\b[^>]*>", view, workbook)
    out["xl/workbook.xml"] = workbook.encode("utf-8")
    rels = _text(zf, "xl/_rels/workbook.xml.rels")
    rels = re.sub(r"<(?:\w+:)?Relationship\b[^>]*?\sId=\"" + re.escape(rid or "\u0000") + r"\"[^>]*/>", "", rels)
    chain = next((n for n in zf.namelist() if n.lower() == "xl/calcchain.xml"), None)
    if chain is not None:
        out[chain] = None
        rels = re.sub(r"<(?:\w+:)?Relationship\b[^>]*?Target=\"[^\"]*calcChain\.xml\"[^>]*/>", "", rels)
    out["xl/_rels/workbook.xml.rels"] = rels.encode("utf-8")
    types = _text(zf, "[Content_Types].xml")
    for n in [*gone, *([chain] if chain else [])]:
        types = re.sub(r"<Override\b[^>]*?PartName=\"/" + re.escape(n) + r"\"[^>]*/>", "", types)
    out["[Content_Types].xml"] = types.encode("utf-8")
    titles_in_app(zf, out, lambda titles: [t for t in titles if t != title])
    return out


# -- duplicating a sheet ------------------------------------------------------------------------------

_COPIED = {"drawing", "chart", "comments", "vmlDrawing", "printerSettings", "chartStyle", "chartColorStyle"}
"""Relationship types whose parts a duplicate copies under fresh names (pictures are shared)."""
_SHARED = {"image", "hyperlink"}


class _Copier:
    """The parts a duplicate adds: each part the sheet uses copied under a fresh name, recursively."""

    def __init__(self, zf: zipfile.ZipFile, old: str, new: str) -> None:
        self.zf = zf
        self.names = set(zf.namelist())
        self.old = old
        self.new = new
        self.out: Parts = {}
        self.types = _text(zf, "[Content_Types].xml")

    def fresh(self, part: str) -> str:
        folder, name = posixpath.split(part)
        m = re.fullmatch(r"(.*?)([0-9]*)(\.\w+)", name)
        stem, ext = (m.group(1), m.group(3)) if m else (name, "")
        n = 1
        while (candidate := posixpath.join(folder, f"{stem}{n}{ext}")) in self.names or candidate in self.out:
            n += 1
        return candidate

    def copy(self, part: str, kind: str) -> str:
        target = self.fresh(part)
        self.out[target] = b""  # (reserved before its own parts are named)
        data = read_part(self.zf, part, MAX_CELLS_PART_BYTES)
        if kind == "chart":
            text = data.decode("utf-8")
            data = _rewrite_formulas(text, lambda f: renamed(f, self.old, self.new)).encode("utf-8")
        elif kind == "worksheet":
            data = re.sub(rb'(<sheetView\b[^>]*?)\s+tabSelected="(?:1|true)"', rb"\1", data, count=1)
            text = data.decode("utf-8")
            if _mentions(text, self.old):  # the copy's formulas naming their own sheet name the copy, as in Excel
                data = _formulas_renamed(text, self.old, self.new).encode("utf-8")
        self.out[target] = data
        override = re.search(
            r"<Override\b[^>]*?PartName=\"/" + re.escape(part) + r"\"[^>]*?ContentType=\"([^\"]*)\"", self.types
        )
        if override is not None:
            element = f'<Override PartName="/{target}" ContentType="{override.group(1)}"/>'
            self.types = self.types.replace("</Types>", element + "</Types>", 1)
        rels = rels_of(part)
        if rels in self.names:
            text = _text(self.zf, rels)

            def retarget(m: re.Match[str]) -> str:
                attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
                kind_of = attrs.get("Type", "").rsplit("/", 1)[-1]
                if attrs.get("TargetMode") == "External" or kind_of in _SHARED:
                    return m.group(0)
                if kind_of not in _COPIED:
                    raise BadRequest(
                        f"Sheet {self.old!r} uses {html.unescape(attrs.get('Target', ''))} ({kind_of}), which cannot "
                        "be copied safely (its name is unique in the workbook, or deskmcp does not know it). "
                        "Nothing was written: duplicate the sheet in Excel or LibreOffice.",
                        {"sheet": self.old, "part": attrs.get("Target", ""), "kind": kind_of},
                    )
                written = html.unescape(attrs["Target"])
                source = (
                    written.lstrip("/")
                    if written.startswith("/")
                    else posixpath.normpath(posixpath.join(posixpath.dirname(part), written))
                )
                copied = self.copy(source, kind_of)
                relative = posixpath.relpath(copied, posixpath.dirname(target))
                return m.group(0).replace(f'Target="{attrs["Target"]}"', f'Target="{html.escape(relative)}"')

            self.out[rels_of(target)] = re.sub(r"<(?:\w+:)?Relationship\b([^>]*)/?>", retarget, text).encode("utf-8")
        return target


def duplicate_sheet(zf: zipfile.ZipFile, where: PackageMap, title: str, new: str) -> Parts:
    """The parts a copy of sheet `title` named `new` adds or changes (placed last); `BadRequest`
    naming a part of the sheet that cannot be copied safely (a table, a pivot table...)."""
    part = where.sheets.get(title)
    if part is None:
        raise KeyError(title)
    copier = _Copier(zf, title, new)
    target = copier.copy(part, "worksheet")
    out = copier.out
    workbook = _text(zf, "xl/workbook.xml")
    elements = _sheet_elements(workbook)
    index = next(i for i, m in enumerate(elements) if _attr(m.group(0), "name") == title)
    rels = _text(zf, "xl/_rels/workbook.xml.rels")
    taken = {int(x) for x in re.findall(r'\sId="rId([0-9]+)"', rels)}
    rid = f"rId{max(taken, default=0) + 1}"
    rels = rels.replace(
        "</Relationships>",
        f'<Relationship Id="{rid}" Type="{REL_NS}/worksheet" Target="{posixpath.relpath(target, "xl")}"/>'
        "</Relationships>",
        1,
    )
    source = elements[index].group(0)
    prefix = re.match(r"<((?:\w+:)?)sheet\b", source)
    rel_attr = re.search(r"\s(\w+):id=\"", source)
    if prefix is None or rel_attr is None:
        raise Fallback("the sheets of workbook.xml name no relationship")
    ids = [int(x) for x in re.findall(r'\ssheetId="([0-9]+)"', workbook)]
    element = (
        f'<{prefix.group(1)}sheet xmlns:{rel_attr.group(1)}="{REL_NS}" name="{html.escape(new)}" '
        f'sheetId="{max([0, *ids]) + 1}" '
        f'{rel_attr.group(1)}:id="{rid}"/>'
    )
    last = elements[-1]
    workbook = workbook[: last.end()] + element + workbook[last.end() :]
    new_index = len(elements)

    def local_copies(m: re.Match[str]) -> str:
        local = _attr(m.group(2), "localSheetId")
        if local != str(index):
            return m.group(0)
        attrs = re.sub(r'(\slocalSheetId=")[0-9]+(")', lambda a: a.group(1) + str(new_index) + a.group(2), m.group(2))
        text = _escape(renamed(html.unescape(m.group(3)), title, new))
        return m.group(0) + f"<{m.group(1)}definedName{attrs}>{text}</{m.group(1)}definedName>"

    workbook = re.sub(r"<((?:\w+:)?)definedName\b([^>]*)>([^<]*)</\1definedName>", local_copies, workbook)
    out["xl/workbook.xml"] = workbook.encode("utf-8")
    out["xl/_rels/workbook.xml.rels"] = rels.encode("utf-8")
    if f'PartName="/{target}"' not in copier.types:
        copier.types = copier.types.replace(
            "</Types>",
            f'<Override PartName="/{target}" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.worksheet+xml"/></Types>',
            1,
        )
    out["[Content_Types].xml"] = copier.types.encode("utf-8")
    titles_in_app(zf, out, lambda titles: [*titles, new])
    return out
