"""A sheet's layout in its worksheet part: column widths (`<cols>`), row heights (`ht` of `<row>`),
frozen rows and columns (the `<pane>` of the first `<sheetView>`) and merged cells
(`<mergeCells>`)."""

from __future__ import annotations

import re

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.a1 import A1Range, cell_name, column_letters
from deskmcp.sheets.models import Layout
from deskmcp.sheets.xlsx.cellxml import number_text
from deskmcp.sheets.xlsx.package_edit import WorksheetEdit, not_patchable

_ATTRS = re.compile(rb'([\w:]+)="([^"]*)"')
_MERGE = re.compile(rb'<mergeCell\b[^>]*?\bref="([^"]*)"[^>]*/>')
Box = tuple[int, int, int, int]


def _span_text(first: int, last: int, name: str) -> str:
    return name if first == last else f"{name}s"


def set_column_widths(ws: WorksheetEdit, spans: list[tuple[int, int, float]]) -> list[str]:
    """Give columns a width (in characters, as Excel counts them), keeping the other attributes of
    their `<col>` entries; entries are split where a width covers part of one."""
    cols = ws.find("cols")
    entries: list[tuple[int, int, dict[bytes, bytes]]] = []
    if cols is not None:
        for m in re.finditer(rb"<col\b([^>]*?)/?>", cols):
            attrs = dict(_ATTRS.findall(m.group(1)))
            try:
                low, high = int(attrs.pop(b"min")), int(attrs.pop(b"max"))
            except (KeyError, ValueError) as exc:
                raise not_patchable(ws.part, "a <col> without min and max") from exc
            entries.append((low, high, attrs))
    for first, last, width in spans:
        pieces: list[tuple[int, int, dict[bytes, bytes]]] = []
        covered: list[tuple[int, int]] = []
        for low, high, attrs in entries:
            if high < first or low > last:
                pieces.append((low, high, attrs))
                continue
            if low < first:
                pieces.append((low, first - 1, attrs))
            if high > last:
                pieces.append((last + 1, high, attrs))
            a, b = max(low, first), min(high, last)
            pieces.append((a, b, {**attrs, b"width": number_text(width).encode(), b"customWidth": b"1"}))
            covered.append((a, b))
        at = first
        for a, b in sorted(covered):
            if a > at:
                pieces.append((at, a - 1, {b"width": number_text(width).encode(), b"customWidth": b"1"}))
            at = b + 1
        if at <= last:
            pieces.append((at, last, {b"width": number_text(width).encode(), b"customWidth": b"1"}))
        entries = sorted(pieces, key=lambda e: e[0])
    body = b"".join(
        b'<col min="%d" max="%d"' % (low, high)
        + b"".join(b" " + k + b'="' + v + b'"' for k, v in attrs.items())
        + b"/>"
        for low, high, attrs in entries
    )
    ws.put("cols", b"<cols>" + body + b"</cols>")
    return [
        f"{_span_text(first, last, 'column')} {column_letters(first)}"
        + (f":{column_letters(last)}" if last != first else "")
        + f" width {width:g}"
        for first, last, width in spans
    ]


def set_row_heights(ws: WorksheetEdit, spans: list[tuple[int, int, float]]) -> list[str]:
    """Give rows a height in points (`ht` with `customHeight`); rows not in the file are added empty."""
    for first, last, height in spans:
        for row in range(first, last + 1):
            ws.set_row_attribute(row, b"ht", number_text(height).encode())
            ws.set_row_attribute(row, b"customHeight", b"1")
    return [
        f"{_span_text(first, last, 'row')} {first}" + (f":{last}" if last != first else "") + f" height {height:g}"
        for first, last, height in spans
    ]


def freeze(ws: WorksheetEdit, rows: int, columns: int) -> str:
    """Freeze the first `rows` rows and `columns` columns (0 and 0 unfreezes) in the first sheet view."""
    views = ws.find("sheetViews")
    if views is None:
        views = b'<sheetViews><sheetView workbookViewId="0"/></sheetViews>'
    view = re.search(rb"<sheetView\b[^>]*?(?:/>|>.*?</sheetView>)", views, re.S)
    if view is None:
        raise not_patchable(ws.part, "a <sheetViews> without a <sheetView>")
    element = view.group(0)
    opening = re.match(rb"<sheetView\b[^>]*?(/?)>", element)
    assert opening is not None
    if opening.group(1):
        start, inner = opening.group(0)[:-2] + b">", b""
    else:
        start, inner = opening.group(0), element[opening.end() : -len(b"</sheetView>")]
    # the old pane and the selections in panes go: they describe the old split
    inner = re.sub(rb"<pane\b[^>]*/>", b"", inner)
    inner = re.sub(rb"<selection\b[^>]*/>", b"", inner)
    pane = b""
    if rows or columns:
        active = b"bottomRight" if rows and columns else (b"bottomLeft" if rows else b"topRight")
        attrs = b""
        if columns:
            attrs += b' xSplit="%d"' % columns
        if rows:
            attrs += b' ySplit="%d"' % rows
        top_left = cell_name(rows + 1, columns + 1).encode()
        pane = b"<pane" + attrs + b' topLeftCell="' + top_left + b'" activePane="' + active + b'" state="frozen"/>'
        pane += b'<selection pane="' + active + b'" activeCell="' + top_left + b'" sqref="' + top_left + b'"/>'
    new_view = start + pane + inner + b"</sheetView>"
    ws.put("sheetViews", views[: view.start()] + new_view + views[view.end() :])
    if not rows and not columns:
        return "unfroze rows and columns"
    return f"froze {rows} row{'s' if rows != 1 else ''} and {columns} column{'s' if columns != 1 else ''}"


def _box(ref: str) -> Box | None:
    m = re.fullmatch(r"\$?([A-Z]{1,3})\$?([0-9]+)(?::\$?([A-Z]{1,3})\$?([0-9]+))?", ref)
    if m is None:
        return None
    from deskmcp.sheets.a1 import column_index

    c0, r0 = column_index(m.group(1)), int(m.group(2))
    c1, r1 = (column_index(m.group(3)), int(m.group(4))) if m.group(3) else (c0, r0)
    return min(r0, r1), min(c0, c1), max(r0, r1), max(c0, c1)


def overlaps(a: Box, b: Box) -> bool:
    return not (a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1])


def box_a1(box: Box) -> str:
    return A1Range(None, *box).cells()


def merges(ws: WorksheetEdit) -> list[tuple[str, Box | None]]:
    element = ws.find("mergeCells")
    if element is None:
        return []
    return [(m.group(1).decode("utf-8"), _box(m.group(1).decode("utf-8"))) for m in _MERGE.finditer(element)]


def merge_and_unmerge(ws: WorksheetEdit, merge: list[Box], unmerge: list[Box]) -> list[str]:
    """Unmerge every merged range overlapping a box of `unmerge`, then merge each box of `merge`;
    `bad_request` when a merge overlaps a merged range (kept or new) or nothing is there to unmerge."""
    kept = merges(ws)
    done: list[str] = []
    for box in unmerge:
        hit = [ref for ref, b in kept if b is not None and overlaps(b, box)]
        if not hit:
            raise BadRequest(
                f"No merged cells overlap {box_a1(box)} on {ws.title}; nothing to unmerge.",
                {"range": box_a1(box), "merged": [ref for ref, _b in kept]},
            )
        kept = [(ref, b) for ref, b in kept if ref not in hit]
        done.extend(f"unmerged {ref}" for ref in hit)
    for box in merge:
        clash = [ref for ref, b in kept if b is not None and overlaps(b, box)]
        if clash:
            raise BadRequest(
                f"{box_a1(box)} overlaps the merged cells {', '.join(clash)} on {ws.title}: unmerge them first "
                "(set_layout unmerge), or merge a range that does not overlap.",
                {"range": box_a1(box), "overlaps": clash},
            )
        kept.append((box_a1(box), box))
        done.append(f"merged {box_a1(box)}")
    if kept:
        body = b"".join(b'<mergeCell ref="' + ref.encode() + b'"/>' for ref, _b in kept)
        ws.put("mergeCells", b'<mergeCells count="%d">' % len(kept) + body + b"</mergeCells>")
    else:
        ws.put("mergeCells", None)
    return done


def apply_layout(ws: WorksheetEdit, layout: Layout) -> list[str]:
    changed: list[str] = []
    if layout.columns:
        changed += set_column_widths(ws, layout.columns)
    if layout.rows:
        changed += set_row_heights(ws, layout.rows)
    if layout.freeze_rows is not None or layout.freeze_columns is not None:
        rows, columns = current_freeze(ws)
        rows = layout.freeze_rows if layout.freeze_rows is not None else rows
        columns = layout.freeze_columns if layout.freeze_columns is not None else columns
        changed.append(freeze(ws, rows, columns))
    if layout.merge or layout.unmerge:
        changed += merge_and_unmerge(ws, layout.merge, layout.unmerge)
    return changed


def current_freeze(ws: WorksheetEdit) -> tuple[int, int]:
    """The frozen rows and columns of the first sheet view."""
    views = ws.find("sheetViews") or b""
    pane = re.search(rb"<pane\b([^>]*)/>", views)
    if pane is None:
        return 0, 0
    attrs = dict(_ATTRS.findall(pane.group(1)))
    if attrs.get(b"state") not in (b"frozen", b"frozenSplit"):
        return 0, 0
    try:
        return int(float(attrs.get(b"ySplit", b"0"))), int(float(attrs.get(b"xSplit", b"0")))
    except ValueError:
        return 0, 0
