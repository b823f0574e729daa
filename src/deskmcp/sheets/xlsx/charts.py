"""Charts added to an .xlsx: a DrawingML chart part (`xl/charts/chartN.xml`: line, bar, column,
pie, scatter or area over ranges of a sheet, with the values read as its cache) placed by a
two-cell anchor in the sheet's drawing (`xl/drawings/drawingN.xml`, the sheet's own when it has
one, else a new one named by `<drawing>`)."""

from __future__ import annotations

import html
import re
from typing import Any

from deskmcp.sheets.a1 import column_letters, quote_sheet
from deskmcp.sheets.models import ChartSpec
from deskmcp.sheets.xlsx.cellxml import number_text
from deskmcp.sheets.xlsx.package_edit import REL_NS, PackageEdit, WorksheetEdit, not_patchable

CHART_NS = "http://schemas.openxmlformats.org/drawingml/2006/chart"
DRAWING_NS = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
CHART_TYPE = "application/vnd.openxmlformats-officedocument.drawingml.chart+xml"
DRAWING_TYPE = "application/vnd.openxmlformats-officedocument.drawing+xml"
CHART_REL = f"{REL_NS}/chart"
DRAWING_REL = f"{REL_NS}/drawing"
CAT_AXIS, VAL_AXIS = 500000001, 500000002


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _ref(sheet: str, c0: int, r0: int, c1: int, r1: int) -> str:
    start = f"${column_letters(c0)}${r0}"
    end = f"${column_letters(c1)}${r1}"
    return f"{quote_sheet(sheet)}!{start}" + (f":{end}" if (c0, r0) != (c1, r1) else "")


def _str_ref(ref: str, values: list[Any]) -> str:
    points = "".join(
        f'<c:pt idx="{i}"><c:v>{_esc(_label(v))}</c:v></c:pt>' for i, v in enumerate(values) if v not in (None, "")
    )
    return (
        f'<c:strRef><c:f>{_esc(ref)}</c:f><c:strCache><c:ptCount val="{len(values)}"/>{points}</c:strCache></c:strRef>'
    )


def _num_ref(ref: str, values: list[float | None]) -> str:
    points = "".join(
        f'<c:pt idx="{i}"><c:v>{number_text(v)}</c:v></c:pt>' for i, v in enumerate(values) if v is not None
    )
    return (
        f"<c:numRef><c:f>{_esc(ref)}</c:f><c:numCache><c:formatCode>General</c:formatCode>"
        f'<c:ptCount val="{len(values)}"/>{points}</c:numCache></c:numRef>'
    )


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _numbers(values: list[Any]) -> list[float | None]:
    return [float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None for v in values]


def chart_xml(spec: ChartSpec) -> bytes:
    """The chart part of `spec`: references to its cells, with the values read as their cache."""
    r0, c0, r1, c1 = spec.box
    first_row = r0 + 1
    has_categories = c1 > c0
    first_series = c0 + 1 if has_categories else c0
    cat_ref = _ref(spec.sheet, c0, first_row, c0, r1) if has_categories else None
    series_xml: list[str] = []
    count = 1 if spec.kind == "pie" else len(spec.series)
    for i in range(count):
        col = first_series + i
        tx = f"<c:tx>{_str_ref(_ref(spec.sheet, col, r0, col, r0), [spec.names[i]])}</c:tx>"
        values = _num_ref(_ref(spec.sheet, col, first_row, col, r1), spec.series[i])
        head = f'<c:idx val="{i}"/><c:order val="{i}"/>{tx}'
        if spec.kind == "scatter":
            x = f"<c:xVal>{_num_ref(cat_ref, _numbers(spec.categories))}</c:xVal>" if cat_ref is not None else ""
            series_xml.append(
                f'<c:ser>{head}<c:marker><c:symbol val="circle"/></c:marker>{x}<c:yVal>{values}</c:yVal>'
                '<c:smooth val="0"/></c:ser>'
            )
            continue
        cat = f"<c:cat>{_str_ref(cat_ref, spec.categories)}</c:cat>" if cat_ref is not None else ""
        if spec.kind == "line":
            marker = '<c:marker><c:symbol val="none"/></c:marker>'
            series_xml.append(f'<c:ser>{head}{marker}{cat}<c:val>{values}</c:val><c:smooth val="0"/></c:ser>')
        elif spec.kind in ("bar", "column"):
            series_xml.append(f'<c:ser>{head}<c:invertIfNegative val="0"/>{cat}<c:val>{values}</c:val></c:ser>')
        else:  # area, pie
            series_xml.append(f"<c:ser>{head}{cat}<c:val>{values}</c:val></c:ser>")
    body = "".join(series_xml)
    axes_ids = f'<c:axId val="{CAT_AXIS}"/><c:axId val="{VAL_AXIS}"/>'
    if spec.kind == "pie":
        plot = f'<c:pieChart><c:varyColors val="1"/>{body}<c:firstSliceAng val="0"/></c:pieChart>'
        axes = ""
    elif spec.kind == "scatter":
        plot = (
            f'<c:scatterChart><c:scatterStyle val="lineMarker"/><c:varyColors val="0"/>{body}{axes_ids}'
            "</c:scatterChart>"
        )
        axes = _val_axis(CAT_AXIS, VAL_AXIS, "b", "midCat", gridlines=False) + _val_axis(
            VAL_AXIS, CAT_AXIS, "l", "midCat", gridlines=True
        )
    else:
        if spec.kind in ("bar", "column"):
            direction = "bar" if spec.kind == "bar" else "col"
            plot = (
                f'<c:barChart><c:barDir val="{direction}"/><c:grouping val="clustered"/><c:varyColors val="0"/>'
                f'{body}<c:gapWidth val="150"/>{axes_ids}</c:barChart>'
            )
        elif spec.kind == "line":
            plot = (
                f'<c:lineChart><c:grouping val="standard"/><c:varyColors val="0"/>{body}<c:marker val="1"/>'
                f"{axes_ids}</c:lineChart>"
            )
        else:
            plot = f'<c:areaChart><c:grouping val="standard"/><c:varyColors val="0"/>{body}{axes_ids}</c:areaChart>'
        bar = spec.kind == "bar"
        axes = _cat_axis("l" if bar else "b") + _val_axis(
            VAL_AXIS, CAT_AXIS, "b" if bar else "l", "between", gridlines=True
        )
    title = (
        f"<c:title><c:tx><c:rich><a:bodyPr/><a:lstStyle/><a:p><a:r><a:t>{_esc(spec.title)}</a:t></a:r></a:p>"
        '</c:rich></c:tx><c:overlay val="0"/></c:title><c:autoTitleDeleted val="0"/>'
        if spec.title
        else '<c:autoTitleDeleted val="1"/>'
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<c:chartSpace xmlns:c="{CHART_NS}" xmlns:a="{A_NS}" xmlns:r="{REL_NS}">'
        '<c:roundedCorners val="0"/><c:chart>'
        f"{title}<c:plotArea><c:layout/>{plot}{axes}</c:plotArea>"
        '<c:legend><c:legendPos val="r"/><c:overlay val="0"/></c:legend>'
        '<c:plotVisOnly val="1"/><c:dispBlanksAs val="gap"/></c:chart></c:chartSpace>'
    ).encode()


def _cat_axis(position: str) -> str:
    return (
        f'<c:catAx><c:axId val="{CAT_AXIS}"/><c:scaling><c:orientation val="minMax"/></c:scaling>'
        f'<c:delete val="0"/><c:axPos val="{position}"/><c:numFmt formatCode="General" sourceLinked="1"/>'
        f'<c:tickLblPos val="nextTo"/><c:crossAx val="{VAL_AXIS}"/><c:crosses val="autoZero"/>'
        '<c:auto val="1"/><c:lblAlgn val="ctr"/><c:lblOffset val="100"/></c:catAx>'
    )


def _val_axis(axis: int, cross: int, position: str, between: str, *, gridlines: bool) -> str:
    return (
        f'<c:valAx><c:axId val="{axis}"/><c:scaling><c:orientation val="minMax"/></c:scaling>'
        f'<c:delete val="0"/><c:axPos val="{position}"/>' + ("<c:majorGridlines/>" if gridlines else "") + ""
        '<c:numFmt formatCode="General" sourceLinked="1"/><c:tickLblPos val="nextTo"/>'
        f'<c:crossAx val="{cross}"/><c:crosses val="autoZero"/><c:crossBetween val="{between}"/></c:valAx>'
    )


def _anchor(prefix: str, spec: ChartSpec, shape_id: int, rel_id: str) -> bytes:
    p = f"{prefix}:" if prefix else ""
    row, col = spec.anchor

    def corner(tag: str, r: int, c: int) -> str:
        return (
            f"<{p}{tag}><{p}col>{c - 1}</{p}col><{p}colOff>0</{p}colOff><{p}row>{r - 1}</{p}row>"
            f"<{p}rowOff>0</{p}rowOff></{p}{tag}>"
        )

    return (
        f'<{p}twoCellAnchor editAs="oneCell">'
        + corner("from", row, col)
        + corner("to", row + spec.rows, col + spec.columns)
        + f'<{p}graphicFrame macro=""><{p}nvGraphicFramePr><{p}cNvPr id="{shape_id}" name="Chart {shape_id - 1}"/>'
        f"<{p}cNvGraphicFramePr/></{p}nvGraphicFramePr>"
        f'<{p}xfrm><a:off xmlns:a="{A_NS}" x="0" y="0"/><a:ext xmlns:a="{A_NS}" cx="0" cy="0"/></{p}xfrm>'
        f'<a:graphic xmlns:a="{A_NS}"><a:graphicData uri="{CHART_NS}">'
        f'<c:chart xmlns:c="{CHART_NS}" xmlns:r="{REL_NS}" r:id="{rel_id}"/></a:graphicData></a:graphic>'
        f"</{p}graphicFrame><{p}clientData/></{p}twoCellAnchor>"
    ).encode("utf-8")


def add_chart(edit: PackageEdit, ws: WorksheetEdit, spec: ChartSpec) -> str:
    """Add the chart of `spec` to the sheet `ws`; the chart part's name."""
    chart_part = edit.free_name("xl/charts/chart{}.xml")
    edit.set(chart_part, chart_xml(spec))
    edit.content_override(chart_part, CHART_TYPE)
    existing = ws.find("drawing")
    if existing is not None:
        rid = re.search(rb'\b[\w.-]+:id="([^"]*)"', existing)
        rels = edit.relationships(ws.part)
        drawing_part = next((t for i, _k, t in rels if rid is not None and i == rid.group(1).decode()), None)
        if drawing_part is None or not edit.exists(drawing_part):
            raise not_patchable(ws.part, "its <drawing> names no drawing of the package")
        drawing = edit.read(drawing_part)
    else:
        drawing_part = edit.free_name("xl/drawings/drawing{}.xml")
        drawing = (
            b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            b'<xdr:wsDr xmlns:xdr="' + DRAWING_NS.encode() + b'" xmlns:a="' + A_NS.encode() + b'"></xdr:wsDr>'
        )
    root = re.search(rb"<(?:([\w.-]+):)?wsDr\b[^>]*?(/?)>", drawing)
    if root is None:
        raise not_patchable(drawing_part, "no <wsDr> element")
    prefix = (root.group(1) or b"").decode()
    if root.group(2):  # an empty drawing written `<xdr:wsDr .../>`
        tag = f"{prefix}:wsDr" if prefix else "wsDr"
        drawing = drawing[: root.end() - 2] + b">" + f"</{tag}>".encode() + drawing[root.end() :]
    ids = [int(x) for x in re.findall(rb'<(?:[\w.-]+:)?cNvPr\b[^>]*?\bid="([0-9]+)"', drawing)]
    shape_id = max([1, *ids]) + 1
    rel_id = edit.relate(drawing_part, CHART_REL, chart_part)
    close = f"</{prefix}:wsDr>" if prefix else "</wsDr>"
    end = drawing.rfind(close.encode())
    if end < 0:
        raise not_patchable(drawing_part, "no end of the drawing")
    drawing = drawing[:end] + _anchor(prefix, spec, shape_id, rel_id) + drawing[end:]
    edit.set(drawing_part, drawing)
    if existing is None:
        edit.content_override(drawing_part, DRAWING_TYPE)
        sheet_rel = edit.relate(ws.part, DRAWING_REL, drawing_part)
        ns = ws.namespace_prefix(REL_NS)
        ws.put("drawing", b"<drawing " + ns + b':id="' + sheet_rel.encode() + b'"/>')
    return chart_part
