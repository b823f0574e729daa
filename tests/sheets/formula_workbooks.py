"""Realistic workbooks full of formulas, for checking the evaluator against LibreOffice.

`build(folder)` writes them as openpyxl does (formulas without cached values, full calculation
asked on load); `compute(path)` gives what deskmcp stores for each formula when it saves the
workbook; `recompute_with_libreoffice` has LibreOffice compute the same files; `compare` says,
cell by cell, whether deskmcp was right, wrong, or flagged the cell as uncomputed.

Where LibreOffice 7 and Excel disagree (XLOOKUP, booleans), `EXCEL_VALUES` holds Excel's value.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deskmcp.sheets.backends.book import Book
from deskmcp.sheets.backends.sheet_reader import SheetReader
from deskmcp.sheets.formulas.engine import CellError

EXPECTED = Path(__file__).parent / "data" / "formulas_expected.json"
EPOCH = dt.datetime(1899, 12, 30)

Sheet = dict[str, Any]

D = dt.date
T = dt.time


def _rows(sheet: Sheet, top_left: str, rows: list[list[Any]]) -> None:
    m = re.fullmatch(r"([A-Z]+)(\d+)", top_left)
    assert m
    col0 = _col(m.group(1))
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if value is not None:
                sheet[f"{_letters(col0 + j)}{int(m.group(2)) + i}"] = value


def _col(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def _letters(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out


def budget() -> dict[str, Sheet]:
    costs: Sheet = {}
    _rows(
        costs,
        "A1",
        [
            ["Category", "Jan", "Feb", "Mar", "Q1", "Share", "Avg", "Flag"],
            ["Rent", 1200, 1200, 1250],
            ["Food", 410.5, 385.25, 402.1],
            ["Transport", 95, None, 120],
            ["Utilities", 180.4, 175.9, "n/a"],
            ["Fun", 60, 45.5, 80],
            ["Savings", "42", 250, 300],
        ],
    )
    for r in range(2, 8):
        costs[f"E{r}"] = f"=SUM(B{r}:D{r})"
        costs[f"F{r}"] = f"=ROUND(E{r}/$E$9,4)"
        costs[f"G{r}"] = f"=AVERAGE(B{r}:D{r})"
        costs[f"H{r}"] = f'=IF(E{r}>500,"high",IF(E{r}>100,"mid","low"))'
    _rows(costs, "A9", [["Total", "=SUM(B2:B7)", "=SUM(C2:C7)", "=SUM(D2:D7)", "=SUM(E2:E7)"]])
    _rows(
        costs,
        "A11",
        [
            ["Max month", "=MAX(B9:D9)"],
            ["Min cost", "=MIN(B2:D7)"],
            ["Min Feb", "=MIN(C2:C7)"],
            ["Avg Feb", "=AVERAGE(C2:C7)"],
            ["Count", "=COUNT(B2:D7)"],
            ["CountA", "=COUNTA(A2:D7)"],
            ["Blanks", "=COUNTBLANK(B2:D7)"],
            ["Text 42", "=SUM(B7)"],
            ["Bool ref", "=SUM(C7)"],
            ["Typed", '=SUM("42",TRUE,1)'],
            ["Plus", "=B7+C7"],
            ["Rent share", '=TEXT(F2,"0.0%")'],
            ["Over budget", "=IF(E9>5000,E9-5000,0)"],
            ["Max of blank", "=MAX(C4)"],
            ["Avg with blank", "=AVERAGE(B4:D4)"],
            ["Product", "=PRODUCT(B2,1.1)"],
            ["Rank food", "=RANK(E3,E2:E7)"],
            ["Rank asc", "=RANK(E3,E2:E7,1)"],
            ["Median", "=MEDIAN(B2:B6)"],
            ["Large 2", "=LARGE(E2:E7,2)"],
            ["Small 1", "=SMALL(E2:E7,1)"],
            ["Sumproduct", "=SUMPRODUCT(B2:B6,C2:C6)"],
            ["Sumproduct cond", '=SUMPRODUCT((H2:H7="high")*E2:E7)'],
            ["Sumproduct count", "=SUMPRODUCT(--(E2:E7>100))"],
            ["Q1 named", "=SUM(Q1Total)"],
            ["Rate named", "=E9*TaxRate"],
            ["Whole column", "=SUM(E:E)"],
            ["Cross sheet", "=Plan!B2-E9"],
            ["Cross quoted", "='Plan'!B3*2"],
            ["Round", "=ROUND(1.005,2)"],
            ["Round neg", "=ROUND(1234.5678,-2)"],
            ["Round up", "=ROUNDUP(3.14159,3)"],
            ["Round down", "=ROUNDDOWN(-3.14159,1)"],
            ["Round half", "=ROUND(-2.5,0)"],
            ["Trunc", "=TRUNC(8.97)"],
            ["Int neg", "=INT(-3.2)"],
            ["Mod", "=MOD(-7,3)"],
            ["Mod frac", "=MOD(5.5,1.1)"],
            ["Abs", "=ABS(-4.25)"],
            ["Sqrt", "=SQRT(B2)"],
            ["Power", "=POWER(1.05,12)"],
            ["Pct", "=B2*15%"],
            ["Neg power", "=-2^2"],
            ["Ceiling", "=CEILING(B3,5)"],
            ["Floor", "=FLOOR(B3,5)"],
            ["Sign", "=SIGN(-0.5)"],
            ["Div0", "=B2/0"],
            ["Iferror", '=IFERROR(B2/0,"none")'],
            ["Float eq", "=0.1+0.2=0.3"],
            ["Float sub", "=0.3-0.1-0.2"],
            ["Float sum", "=SUM(0.1,0.2)"],
            ["Float join", '="x"&(0.1+0.2)'],
            ["Third join", '="x"&1/3'],
            ["Big join", '="n"&2^60'],
            ["Small join", '="n"&0.00001234'],
            ["Utilities avg", "=AVERAGE(B5:D5)"],
            ["Text in plus", "=D5+1"],
        ],
    )
    plan: Sheet = {}
    _rows(plan, "A1", [["Item", "Amount"], ["Budget", 6000], ["Reserve", 250.75], ["Tax", 0.2]])
    return {"Costs": costs, "Plan": plan}


def invoice() -> dict[str, Sheet]:
    inv: Sheet = {}
    _rows(
        inv,
        "A1",
        [
            ["Invoice", "INV-2024-007", None, "Date", D(2024, 3, 15)],
            ["Client", "  acme   corp  ", None, "Due", "=E1+30"],
            [],
            ["SKU", "Description", "Qty", "Unit", "Line", "Taxed"],
            ["P-100", "Widget", 3, 19.99],
            ["P-200", "Gadget, large", 1, 149.5],
            ["S-010", "Setup service", 2.5, 80],
            ["P-100", "Widget (spare)", 10, 1.995],
            ["D-001", "Discount", 1, -25],
        ],
    )
    for r in range(5, 10):
        inv[f"E{r}"] = f"=ROUND(C{r}*D{r},2)"
        inv[f"F{r}"] = f'=IF(LEFT(A{r},1)="S","no","yes")'
    _rows(
        inv,
        "D11",
        [
            ["Subtotal", "=SUM(E5:E9)"],
            ["Taxable", '=SUMIF(F5:F9,"yes",E5:E9)'],
            ["Tax", "=ROUND(E12*0.2,2)"],
            ["Total", "=E11+E13"],
            ["Total text", '=TEXT(E14,"$#,##0.00")'],
            ["Due text", '=TEXT(E2,"yyyy-mm-dd")'],
            ["Date long", '=TEXT(E1,"dddd, mmmm d, yyyy")'],
            ["Date short", '=TEXT(E1,"d mmm yy")'],
            ["Client", "=TRIM(B2)"],
            ["Client proper", "=PROPER(TRIM(B2))"],
            ["Client upper", "=UPPER(B2)"],
            ["Number", "=VALUE(RIGHT(B1,3))"],
            ["Year part", "=MID(B1,5,4)"],
            ["Dash at", '=FIND("-",B1)'],
            ["Dash 2", '=FIND("-",B1,5)'],
            ["Search", '=SEARCH("gad*",B6)'],
            ["Search miss", '=IFERROR(SEARCH("zzz",B6),0)'],
            ["Subst", '=SUBSTITUTE(B1,"-","/")'],
            ["Subst 2nd", '=SUBSTITUTE(B1,"-","/",2)'],
            ["Len", "=LEN(B6)"],
            ["Lines", "=COUNTA(A5:A9)"],
            ["Widgets", '=COUNTIF(A5:A9,"P-100")'],
            ["Products", '=COUNTIF(A5:A9,"P*")'],
            ["Qty P", '=SUMIF(A5:A9,"P-*",C5:C9)'],
            ["Neg lines", '=COUNTIF(E5:E9,"<0")'],
            ["Label", '="Total: "&TEXT(E14,"#,##0.00")&" EUR"'],
            ["Joined", '=_xlfn.TEXTJOIN(", ",TRUE,A5:A9)'],
            ["Concat", '=_xlfn.CONCAT(A5,"/",C5)'],
            ["Concatenate", '=CONCATENATE(B5," x",C5)'],
            ["Rept", '=REPT("*",C5)'],
            ["Exact", '=EXACT(A5,"p-100")'],
            ["Lower", "=LOWER(B6)"],
            ["Pct fmt", '=TEXT(0.2,"0%")'],
            ["Zero pad", '=TEXT(7,"000")'],
            ["Thousands", '=TEXT(1234567.891,"#,##0")'],
            ["Decimals", '=TEXT(3.14159,"0.00")'],
            ["Neg fmt", '=TEXT(-1234.5,"#,##0.00")'],
            ["Time fmt", '=TEXT(0.75,"h:mm AM/PM")'],
            ["Weekday", "=WEEKDAY(E1)"],
            ["Weekday 2", "=WEEKDAY(E1,2)"],
            ["Month end", "=EOMONTH(E1,0)"],
            ["Next month", "=EDATE(E1,1)"],
            ["Edate 31", "=EDATE(DATE(2024,1,31),1)"],
            ["Workdays", "=NETWORKDAYS(E1,E2)"],
            ["Pay by", "=WORKDAY(E1,10)"],
            ["Days", "=E2-E1"],
            ["Line ws", '=TRIM("a"&CHAR(10)&"  b")'],
            ["Len ws", '=LEN(TRIM("  a"&CHAR(10)&" b  "))'],
            ["Code", '=CODE("A")'],
            ["Char", "=CHAR(65)"],
            ["Replace", '=REPLACE(B1,1,3,"BILL")'],
        ],
    )
    return {"Invoice": inv}


def sales() -> dict[str, Sheet]:
    data: Sheet = {}
    rows = [
        ["Date", "Region", "Rep", "Product", "Units", "Price", "Revenue"],
        [D(2024, 1, 5), "North", "Fiona", "Widget", 12, 19.99],
        [D(2024, 1, 9), "South", "Bob", "Gadget", 3, 149.5],
        [D(2024, 1, 17), "North", "Frank", "Widget", 7, 19.99],
        [D(2024, 2, 2), "East", "Alice", "Gizmo", 20, 5.25],
        [D(2024, 2, 14), "South", "Fiona", "Gadget", 1, 149.5],
        [D(2024, 2, 28), "West", "Bob", "Widget", 15, 18.5],
        [D(2024, 3, 3), "North", "Alice", "Gizmo", 40, 5.0],
        [D(2024, 3, 19), "East", "Frank", "Gadget", 2, 155],
        [D(2024, 3, 30), "West", "fiona", "Widget", 9, 19.99],
        [D(2024, 4, 1), "South", "Bob", "Gizmo", "n/a", 5.25],
    ]
    _rows(data, "A1", rows)
    for r in range(2, 12):
        data[f"G{r}"] = f"=IFERROR(E{r}*F{r},0)"
    prices: Sheet = {}
    _rows(
        prices,
        "A1",
        [
            ["Product", "Price", "Category", "Stock"],
            ["Gadget", 149.5, "Hardware", 12],
            ["Gizmo", 5.25, "Toys", None],
            ["Widget", 19.99, "Hardware", 140],
            ["Whatsit", 2, "Misc", 0],
        ],
    )
    _rows(prices, "F1", [["Tier", "From", "Rate"], ["A", 0, 0.0], ["B", 100, 0.05], ["C", 500, 0.1], ["D", 1000, 0.15]])
    _rows(prices, "A8", [["Month", "Jan", "Feb", "Mar"], ["Target", 400, 450, 500]])
    report: Sheet = {}
    _rows(
        report,
        "A1",
        [
            ["Widget price", '=VLOOKUP("Widget",Prices!A2:D5,2,FALSE)'],
            ["Gizmo stock", '=VLOOKUP("gizmo",Prices!A2:D5,4,FALSE)'],
            ["Wild lookup", '=VLOOKUP("Wh*",Prices!A2:D5,3,FALSE)'],
            ["Missing", '=VLOOKUP("Sprocket",Prices!A2:D5,2,FALSE)'],
            ["Missing safe", '=_xlfn.IFNA(VLOOKUP("Sprocket",Prices!A2:D5,2,FALSE),"none")'],
            ["Col too far", '=VLOOKUP("Widget",Prices!A2:D5,9,FALSE)'],
            ["Tier 250", "=VLOOKUP(250,Prices!G2:H5,2,TRUE)"],
            ["Tier default", "=VLOOKUP(1000,Prices!G2:H5,2)"],
            ["Tier below", "=VLOOKUP(-1,Prices!G2:H5,2)"],
            ["Mar target", '=HLOOKUP("Mar",Prices!A8:D9,2,FALSE)'],
            ["Match", '=MATCH("Widget",Prices!A2:A5,0)'],
            ["Match wild", '=MATCH("G*o",Prices!A2:A5,0)'],
            ["Match approx", "=MATCH(600,Prices!G2:G5,1)"],
            ["Index", "=INDEX(Prices!A2:D5,3,2)"],
            ["Index match", '=INDEX(Prices!C2:C5,MATCH("Gizmo",Prices!A2:A5,0))'],
            ["Index row", "=INDEX(Prices!A9:D9,3)"],
            ["Index col sum", "=SUM(INDEX(Prices!A2:D5,0,4))"],
            ["Index blank", "=INDEX(Prices!D2:D5,2)"],
            ["Xlookup", '=_xlfn.XLOOKUP("Gizmo",Prices!A2:A5,Prices!B2:B5)'],
            ["Xlookup miss", '=_xlfn.XLOOKUP("Sprocket",Prices!A2:A5,Prices!B2:B5,"none")'],
            ["Xlookup next", "=_xlfn.XLOOKUP(260,Prices!G2:G5,Prices!F2:F5,,-1)"],
            ["Xlookup last", '=_xlfn.XLOOKUP("Bob",Data!C2:C11,Data!A2:A11,,0,-1)'],
            ["Revenue", "=SUM(Data!G:G)"],
            ["North rev", '=SUMIF(Data!B:B,"North",Data!G:G)'],
            ["North widgets", '=SUMIFS(Data!E:E,Data!B:B,"North",Data!D:D,"Widget")'],
            ["F reps", '=COUNTIF(Data!C:C,"F*")'],
            ["F rev", '=SUMIF(Data!C2:C11,"f*",Data!G2:G11)'],
            ["Big units", '=COUNTIF(Data!E:E,">15")'],
            ["Over 100", '=COUNTIF(Data!G:G,">100")'],
            ["Not 20", '=COUNTIF(Data!E2:E11,"<>20")'],
            ["Blank stock", '=COUNTIF(Prices!D2:D5,"")'],
            ["Zero stock", "=COUNTIF(Prices!D2:D5,0)"],
            ["Nonblank", '=COUNTIF(Prices!D2:D5,"<>")'],
            ["Q1 Feb", '=COUNTIFS(Data!A2:A11,">="&DATE(2024,2,1),Data!A2:A11,"<"&DATE(2024,3,1))'],
            ["Feb rev", '=SUMIFS(Data!G2:G11,Data!A2:A11,">="&DATE(2024,2,1),Data!A2:A11,"<="&DATE(2024,2,29))'],
            ["Avg South", '=AVERAGEIF(Data!B2:B11,"South",Data!G2:G11)'],
            ["Avg none", '=AVERAGEIF(Data!B2:B11,"Central",Data!G2:G11)'],
            ["Avg ifs", '=AVERAGEIFS(Data!E2:E11,Data!D2:D11,"Widget",Data!E2:E11,">8")'],
            ["Max widget", '=_xlfn.MAXIFS(Data!G2:G11,Data!D2:D11,"Widget")'],
            ["Min gadget", '=_xlfn.MINIFS(Data!G2:G11,Data!D2:D11,"Gadget")'],
            ["Text crit", '=COUNTIF(Data!B2:B11,">M")'],
            ["Exact crit", '=COUNTIF(Data!C2:C11,"=fiona")'],
            ["Tilde", '=COUNTIF(Data!D2:D11,"~*")'],
            ["Question", '=COUNTIF(Data!C2:C11,"???")'],
            ["Cell crit", "=COUNTIF(Data!D2:D11,Prices!A4)"],
            ["Num text crit", '=COUNTIF(Data!E2:E11,"12")'],
            ["Best rep", "=INDEX(Data!C2:C11,MATCH(MAX(Data!G2:G11),Data!G2:G11,0))"],
            ["Units total", "=SUM(Data!E2:E11)"],
            ["Units avg", "=AVERAGE(Data!E2:E11)"],
            ["Rev share N", "=ROUND(B24/B23,4)"],
            ["Regions", '=SUMPRODUCT((Data!B2:B11="North")*(Data!D2:D11="Widget")*Data!G2:G11)'],
            ["Rank Feb", "=RANK(Data!G5,Data!G2:G11)"],
            ["First date", "=MIN(Data!A2:A11)"],
            ["Last date", "=MAX(Data!A:A)"],
            ["Span", '=DATEDIF(B53,B54,"d")'],
            ["Span months", '=DATEDIF(B53,B54,"m")'],
            ["Label", '=_xlfn.IFS(B23>1000,"great",B23>500,"ok",TRUE,"low")'],
            ["Switch", '=_xlfn.SWITCH(Prices!C3,"Toys","T","Hardware","H","?")'],
            ["Switch miss", '=_xlfn.SWITCH("x","a",1)'],
            ["And", "=AND(B23>0,B24>0)"],
            ["Or", "=OR(B4=0,FALSE)"],
            ["Not", "=NOT(ISBLANK(Prices!D3))"],
            ["Xor", "=_xlfn.XOR(TRUE,FALSE,TRUE)"],
            ["Isnumber", "=ISNUMBER(Data!E11)"],
            ["Istext", "=ISTEXT(Data!E11)"],
            ["Iserror", "=ISERROR(B4)"],
            ["Isna", "=ISNA(B4)"],
            ["Choose", '=CHOOSE(2,"a","b","c")'],
            ["Rows", "=ROWS(Data!A2:G11)"],
            ["Columns", "=COLUMNS(Data!A2:G11)"],
            ["Row", "=ROW()"],
            ["Row of", "=ROW(Data!C7)"],
        ],
    )
    return {"Data": data, "Prices": prices, "Report": report}


def timesheet() -> dict[str, Sheet]:
    ts: Sheet = {}
    _rows(ts, "A1", [["Date", "In", "Out", "Break (min)", "Hours", "Day", "Weekend", "Overtime"]])
    days = [
        (D(2024, 5, 6), T(9, 0), T(17, 30), 30),
        (D(2024, 5, 7), T(8, 45), T(18, 15), 45),
        (D(2024, 5, 8), T(9, 15), T(16, 0), 30),
        (D(2024, 5, 9), T(10, 0), T(19, 0), 60),
        (D(2024, 5, 10), T(8, 0), T(12, 30), 0),
        (D(2024, 5, 11), T(11, 0), T(14, 0), 0),
    ]
    for i, (day, start, end, pause) in enumerate(days, start=2):
        _rows(ts, f"A{i}", [[day, start, end, pause]])
        ts[f"E{i}"] = f"=ROUND((C{i}-B{i})*24-D{i}/60,2)"
        ts[f"F{i}"] = f'=TEXT(A{i},"ddd")'
        ts[f"G{i}"] = f"=WEEKDAY(A{i},2)>5"
        ts[f"H{i}"] = f"=MAX(0,E{i}-8)"
    _rows(
        ts,
        "A9",
        [
            ["Total", None, None, "=SUM(D2:D7)", "=SUM(E2:E7)"],
            ["Weekday hours", None, None, None, "=SUMIF(G2:G7,FALSE,E2:E7)"],
            ["Overtime", None, None, None, "=SUM(H2:H7)"],
            ["Long days", None, None, None, '=COUNTIF(E2:E7,">=8")'],
            ["Average", None, None, None, "=ROUND(AVERAGE(E2:E7),2)"],
            ["Pay", None, None, None, "=E9*Rate"],
            ["Start hour", None, None, None, "=HOUR(B3)"],
            ["Start minute", None, None, None, "=MINUTE(B3)"],
            ["Shift text", None, None, None, '=TEXT(C3-B3,"h:mm")'],
            ["Clock", None, None, None, '=TEXT(B2,"hh:mm")'],
            ["Worked", None, None, None, "=SUM(C2:C7)-SUM(B2:B7)"],
            ["Week", None, None, None, '=TEXT(A2,"mmm d")&" - "&TEXT(A7,"mmm d, yyyy")'],
            ["Month", None, None, None, "=MONTH(A2)"],
            ["Year", None, None, None, "=YEAR(A2)"],
            ["Day", None, None, None, "=DAY(A7)"],
            ["Date", None, None, None, "=DATE(2024,5,6)"],
            ["Date overflow", None, None, None, "=DATE(2024,14,35)"],
            ["Text date", None, None, None, '="2024-05-06"+1'],
            ["Text date diff", None, None, None, '=A7-"2024-05-01"'],
            ["Datevalue", None, None, None, '=DATEVALUE("2024-05-06")'],
            ["Workdays", None, None, None, "=NETWORKDAYS(A2,A7)"],
            ["Holiday", None, None, None, "=NETWORKDAYS(A2,A7,A4)"],
            ["Next work", None, None, None, "=WORKDAY(A6,1)"],
            ["Back 3", None, None, None, "=WORKDAY(A2,-3)"],
            ["Years", None, None, None, '=DATEDIF(DATE(1990,7,15),A2,"y")'],
            ["Months rem", None, None, None, '=DATEDIF(DATE(1990,7,15),A2,"ym")'],
            ["Days rem", None, None, None, '=DATEDIF(DATE(1990,7,15),A2,"md")'],
            ["Eomonth back", None, None, None, "=EOMONTH(A2,-3)"],
            ["Today check", None, None, None, "=TODAY()-TODAY()"],
            ["Now check", None, None, None, "=INT(NOW())=TODAY()"],
            ["Recent", None, None, None, "=YEAR(TODAY())>=2024"],
            ["Time", None, None, None, "=TIME(9,30,0)"],
            ["Days fn", None, None, None, "=_xlfn.DAYS(A7,A2)"],
        ],
    )
    settings: Sheet = {"A1": "Rate", "B1": 32.5}
    return {"Week": ts, "Settings": settings}


def edges() -> dict[str, Sheet]:
    """The rules that decide between right and silently wrong: blanks, text, booleans, precision."""
    e: Sheet = {}
    _rows(
        e,
        "A1",
        [
            [10, "42", True, None, "", "apple"],
            [20, "abc", False, None, "Apple pie", "banana"],
            [30, "7", None, None, "x", "Cherry"],
        ],
    )
    e["E1"] = '=""'
    formulas = [
        "=SUM(A1:C3)",
        "=SUM(B1)",
        "=SUM(C1)",
        "=SUM(B1,C1)",
        '=SUM("3",TRUE)',
        "=B1+C1",
        "=COUNT(A1:C3)",
        '=COUNT(1,"2","x",TRUE)',
        "=COUNTA(A1:F3)",
        "=COUNTBLANK(A1:F3)",
        "=AVERAGE(A1:D3)",
        "=AVERAGE(D1:D3)",
        "=MIN(D1:D3)",
        "=MAX(B1:B3)",
        "=MIN(A1:A3,5)",
        '=D1=""',
        "=D1=0",
        "=D1=FALSE",
        "=E1=D1",
        '=E1=""',
        "=ISBLANK(E1)",
        "=ISBLANK(D1)",
        "=LEN(D1)",
        '=D1&"x"',
        "=D1+1",
        '="a"<"B"',
        '="10"<9',
        "=TRUE>100",
        '="Apple"="apple"',
        '=COUNTIF(F1:F3,"a*")',
        '=COUNTIF(E1:E3,"*pie")',
        '=COUNTIF(D1:D3,"")',
        '=COUNTIF(A1:F3,"<>")',
        '=COUNTIF(A1:A3,">15")',
        '=COUNTIF(B1:B3,">15")',
        '=COUNTIF(B1:B3,"42")',
        "=COUNTIF(B1:B3,42)",
        "=COUNTIF(C1:C3,TRUE)",
        '=COUNTIF(C1:C3,"TRUE")',
        '=COUNTIF(A1:A3,"<>10")',
        '=COUNTIF(A1:F1,"<>10")',
        '=SUMIF(A1:A3,"<>20")',
        "=AND(A1:C1)",
        "=OR(D1:D3,FALSE)",
        '=IF(D1,"y","n")',
        '=IF(B1="42","text","num")',
        "=ROUND(2.675,2)",
        "=ROUND(0.285,2)",
        "=ROUND(1.255,2)",
        "=1.1*3=3.3",
        "=(0.1+0.7)*10",
        "=INT((0.1+0.7)*10)",
        '="v"&1.1*3',
        '="v"&100000000000000000',
        '="v"&123456789.123456789',
        '="v"&-0.1',
        '=TRIM("  two   spaces  ")',
        '=LEN(TRIM(" a "&CHAR(9)&" b "))',
        "=VALUE(B1)+1",
        '=VALUE("1,234.5")',
        '=VALUE("12%")',
        '="3"*"4"',
        '=-"2"',
        '=""+1',
        "=1/0+1",
        "=IFERROR(1/0,)",
        "=IF(FALSE,1,)",
        "=IF(FALSE,1)",
        "=UPPER(TRUE)",
        '="x"&TRUE',
        "=A1&B1&C1",
        "=NA()",
        "=_xlfn.IFNA(NA(),-1)",
        "=ISERR(NA())",
        '=LEFT("abc",5)',
        '=RIGHT("abc",0)',
        '=MID("abcdef",3,2)',
        '=MID("abc",5,2)',
        '=SEARCH("?b","aab")',
        '=FIND("B","abc")',
        '=PROPER("hello wORLD o\'neil 2nd")',
        '=TEXT(1234.5,"0")',
        '=TEXT(0.5,"#.##")',
        '=TEXT(-5,"0.0;(0.0)")',
        '=TEXT("abc","0.00")',
        '=TEXT(45000.75,"yyyy-mm-dd hh:mm")',
        '=TEXT(45000,"mmmm")',
        '=TEXT(1234.567,"#,##0.0")',
        '=TEXT(0.125,"0.0%")',
        "=SUMPRODUCT(A1:A3*2)",
        "=MAX(A1:A3)-MIN(A1:A3)",
        "=2^0.5",
        "=10%%",
        "=(1+2)%",
        "=1E3+1",
        "=.5*2",
        '=SUM({1,2;3,4},{"a",TRUE})',
    ]
    for i, formula in enumerate(formulas, start=5):
        e[f"H{i}"] = formula
    return {"Edges": e}


# Every function the evaluator registers, called with each edge input in the argument marked {x}:
# a negative number, zero, text, a blank cell and an error (`EDGE_INPUTS`, cells of the Inputs
# sheet). Functions without arguments are called as they are. A function registered without a
# line here fails test_every_registered_function_has_libreoffice_edge_cases.
EDGE_INPUTS = {
    "negative": "Inputs!$A$1",
    "zero": "Inputs!$A$2",
    "text": "Inputs!$A$3",
    "blank": "Inputs!$A$4",
    "error": "Inputs!$A$5",
}
EDGE_CALLS: dict[str, list[str]] = {
    # math
    "AVERAGE": ["AVERAGE({x},1)"],
    "MIN": ["MIN({x},1)"],
    "MAX": ["MAX({x},-5)"],
    "MEDIAN": ["MEDIAN({x},1,2)"],
    "PRODUCT": ["PRODUCT({x},2)"],
    "LARGE": ["LARGE(Inputs!B1:B5,{x})", "LARGE({x},1)", "LARGE(Inputs!B1:B5,9)", "LARGE(Inputs!B1:B5,2.5)"],
    "SMALL": ["SMALL(Inputs!B1:B5,{x})", "SMALL({x},1)", "SMALL(Inputs!B1:B5,9)", "SMALL(Inputs!B1:B5,2.5)"],
    "COUNT": ["COUNT({x},1)"],
    "COUNTA": ["COUNTA({x},1)"],
    "COUNTBLANK": ["COUNTBLANK({x})"],
    "ROUND": ["ROUND({x},1)", "ROUND(2.567,{x})"],
    "ROUNDUP": ["ROUNDUP({x},0)", "ROUNDUP(-2.567,{x})"],
    "ROUNDDOWN": ["ROUNDDOWN({x},0)", "ROUNDDOWN(-2.567,{x})"],
    "TRUNC": ["TRUNC({x})", "TRUNC(-2.567,{x})"],
    "INT": ["INT({x})"],
    "ABS": ["ABS({x})"],
    "SIGN": ["SIGN({x})"],
    "MOD": ["MOD({x},3)", "MOD(7,{x})", "MOD(-7,{x})"],
    "POWER": ["POWER({x},2)", "POWER(2,{x})"],
    "SQRT": ["SQRT({x})"],
    "PI": ["PI()"],
    "CEILING": ["CEILING({x},2)", "CEILING(5.5,{x})", "CEILING(-5.5,{x})"],
    "FLOOR": ["FLOOR({x},2)", "FLOOR(5.5,{x})", "FLOOR(-5.5,{x})"],
    "CEILING.MATH": [
        "CEILING.MATH({x})",
        "CEILING.MATH({x},2,1)",
        "CEILING.MATH(5.5,{x})",
        "CEILING.MATH(-5.5,{x})",
        "CEILING.MATH(-5.5,2,{x})",
        "CEILING.MATH(-5.5,-2)",
        "CEILING.MATH(-5.5,-2,1)",
        "CEILING.MATH(6.7,0)",
        "CEILING.MATH(-6.3)",
        "CEILING.MATH(24.3,5)",
    ],
    "FLOOR.MATH": [
        "FLOOR.MATH({x})",
        "FLOOR.MATH({x},2,1)",
        "FLOOR.MATH(5.5,{x})",
        "FLOOR.MATH(-5.5,{x})",
        "FLOOR.MATH(-5.5,2,{x})",
        "FLOOR.MATH(7,0)",
        "FLOOR.MATH(-5.5,-2)",
        "FLOOR.MATH(-5.5,2,1)",
        "FLOOR.MATH(24.3,5)",
    ],
    "RANK": ["RANK({x},Inputs!B1:B5)", "RANK(3,Inputs!B1:B5,{x})"],
    "RANK.EQ": ["RANK.EQ({x},Inputs!A1:A5)", "RANK.EQ(3,Inputs!B1:B5,{x})"],
    # conditional aggregates
    "COUNTIF": ["COUNTIF(Inputs!A1:A5,{x})", 'COUNTIF({x},">-5")'],
    "COUNTIFS": ["COUNTIFS(Inputs!A1:A5,{x})"],
    "SUMIF": ["SUMIF(Inputs!A1:A5,{x},Inputs!B1:B5)"],
    "SUMIFS": ["SUMIFS(Inputs!B1:B5,Inputs!A1:A5,{x})"],
    "AVERAGEIF": ["AVERAGEIF(Inputs!A1:A5,{x},Inputs!B1:B5)"],
    "AVERAGEIFS": ["AVERAGEIFS(Inputs!B1:B5,Inputs!A1:A5,{x})"],
    "MAXIFS": ["MAXIFS(Inputs!B1:B5,Inputs!A1:A5,{x})"],
    "MINIFS": ["MINIFS(Inputs!B1:B5,Inputs!A1:A5,{x})"],
    # lookup
    "VLOOKUP": ["VLOOKUP({x},Inputs!A1:B5,2,FALSE)", "VLOOKUP(2,Inputs!B1:C5,{x},FALSE)"],
    "HLOOKUP": ["HLOOKUP({x},Inputs!E1:I2,2,FALSE)", "HLOOKUP(2,Inputs!E1:I2,{x},FALSE)"],
    "MATCH": ['MATCH("b",{"a","b","c"},0)', "MATCH({x},Inputs!A1:A5,0)", "MATCH(3,Inputs!B1:B5,{x})"],
    "INDEX": [
        "INDEX({1,2;3,4},2,1)",
        'INDEX({"a","b","c"},3)',
        "INDEX(Inputs!B1:C5,{x},1)",
        "INDEX(Inputs!B1:C5,2,{x})",
    ],
    "CHOOSE": ['CHOOSE({x},"a","b")', 'CHOOSE(1,{x},"b")'],
    "ROW": ["ROW({x})", "ROW()"],
    "COLUMN": ["COLUMN({x})", "COLUMN()"],
    "ROWS": ["ROWS({x})"],
    "COLUMNS": ["COLUMNS({x})"],
    # logic and information
    "IF": ['IF({x},"y","n")', 'IF(TRUE,{x},"n")'],
    "IFS": ['IFS({x},"y",TRUE,"n")'],
    "SWITCH": ['SWITCH({x},0,"zero","abc","text","other")'],
    "IFERROR": ['IFERROR({x},"e")'],
    "IFNA": ['IFNA({x},"na")'],
    "AND": ["AND({x},TRUE)"],
    "OR": ["OR({x},FALSE)"],
    "XOR": ["XOR({x},TRUE)"],
    "NOT": ["NOT({x})"],
    "TRUE": ["TRUE()"],
    "FALSE": ["FALSE()"],
    "ISBLANK": ["ISBLANK({x})"],
    "ISNUMBER": ["ISNUMBER({x})"],
    "ISTEXT": ["ISTEXT({x})"],
    "ISLOGICAL": ["ISLOGICAL({x})", "ISLOGICAL(TRUE)"],
    "ISERROR": ["ISERROR({x})"],
    "ISERR": ["ISERR({x})"],
    "ISNA": ["ISNA({x})"],
    "NA": ["NA()"],
    # text
    "TEXT": ['TEXT({x},"0.00")'],
    "CONCAT": ['CONCAT({x},"z")'],
    "CONCATENATE": ['CONCATENATE({x},"z")'],
    "TEXTJOIN": ['TEXTJOIN("-",TRUE,{x},"z")', 'TEXTJOIN({x},FALSE,"a","b")'],
    "LEFT": ["LEFT({x},2)", 'LEFT("hello",{x})'],
    "RIGHT": ["RIGHT({x},2)", 'RIGHT("hello",{x})'],
    "MID": ["MID({x},2,2)", 'MID("hello",{x},2)', 'MID("hello",2,{x})'],
    "LEN": ["LEN({x})"],
    "FIND": ['FIND("b",{x})', 'FIND({x},"xabc0-2.5")'],
    "SEARCH": ['SEARCH("B",{x})', 'SEARCH({x},"xABC0-2.5")'],
    "SUBSTITUTE": ['SUBSTITUTE({x},"a","z")', 'SUBSTITUTE("a-a","a","z",{x})'],
    "REPLACE": ['REPLACE({x},1,1,"z")', 'REPLACE("hello",{x},1,"z")'],
    "REPT": ["REPT({x},2)", 'REPT("ab",{x})'],
    "EXACT": ['EXACT({x},"abc")'],
    "UPPER": ["UPPER({x})"],
    "LOWER": ["LOWER({x})"],
    "PROPER": ["PROPER({x})"],
    "TRIM": ["TRIM({x})"],
    "CLEAN": ["CLEAN({x})", 'CLEAN("a"&CHAR(7)&"b")'],
    "VALUE": ["VALUE({x})"],
    "CHAR": ["CHAR({x})"],
    "CODE": ["CODE({x})"],
    # dates
    "DATE": ["DATE({x},1,1)", "DATE(2024,{x},15)", "DATE(2024,3,{x})"],
    "TODAY": ["TODAY()-TODAY()"],
    "NOW": ["INT(NOW())-TODAY()"],
    "YEAR": ["YEAR({x})"],
    "MONTH": ["MONTH({x})"],
    "DAY": ["DAY({x})"],
    "HOUR": ["HOUR({x})"],
    "MINUTE": ["MINUTE({x})"],
    "SECOND": ["SECOND({x})", "SECOND(0.5001)"],
    "TIME": ["TIME({x},0,0)", "TIME(1,{x},0)", "TIME(1,0,{x})"],
    "DATEVALUE": ["DATEVALUE({x})"],
    "DAYS": ["DAYS({x},Inputs!D1)", "DAYS(Inputs!D1,{x})"],
    "WEEKDAY": ["WEEKDAY({x})", "WEEKDAY(Inputs!D1,{x})"],
    "EDATE": ["EDATE({x},1)", "EDATE(Inputs!D1,{x})"],
    "EOMONTH": ["EOMONTH({x},1)", "EOMONTH(Inputs!D1,{x})"],
    "DATEDIF": ['DATEDIF({x},Inputs!D1,"d")', "DATEDIF(Inputs!D1,Inputs!D2,{x})"],
    "NETWORKDAYS": ["NETWORKDAYS({x},Inputs!D1)", "NETWORKDAYS(Inputs!D1,Inputs!D2,{x})"],
    "WORKDAY": ["WORKDAY({x},1)", "WORKDAY(Inputs!D1,{x})"],
    # subtotals (Inputs has no hidden rows; totals.xlsx has some)
    "SUBTOTAL": [
        "SUBTOTAL(9,{x})",
        "SUBTOTAL({x},Inputs!B1:B5)",
        "SUBTOTAL(1,Inputs!B1:B5)",
        "SUBTOTAL(2,Inputs!A1:C5)",
        "SUBTOTAL(3,Inputs!A1:C5)",
        "SUBTOTAL(4,Inputs!K1:K8)",
        "SUBTOTAL(5,Inputs!K1:K8)",
        "SUBTOTAL(6,Inputs!B1:B5)",
        "SUBTOTAL(7,Inputs!K1:K8)",
        "SUBTOTAL(8,Inputs!K1:K8)",
        "SUBTOTAL(10,Inputs!K1:K8)",
        "SUBTOTAL(11,Inputs!K1:K8)",
        "SUBTOTAL(109,Inputs!B1:B5,Inputs!K1:K8)",
        "SUBTOTAL(12,Inputs!B1:B5)",
    ],
    "AGGREGATE": [
        "AGGREGATE(9,6,{x})",
        "AGGREGATE({x},6,Inputs!B1:B5)",
        "AGGREGATE(9,{x},Inputs!B1:B5)",
        "AGGREGATE(9,6,Inputs!A1:A5)",
        "AGGREGATE(4,2,Inputs!A1:B5)",
        "AGGREGATE(14,6,Inputs!K1:K8,2)",
        "AGGREGATE(15,6,Inputs!K1:K8,3)",
        "AGGREGATE(16,6,Inputs!K1:K8,0.3)",
        "AGGREGATE(17,6,Inputs!K1:K8,1)",
        "AGGREGATE(18,6,Inputs!K1:K8,0.25)",
        "AGGREGATE(19,6,Inputs!K1:K8,3)",
        "AGGREGATE(12,4,Inputs!K1:K8)",
        "AGGREGATE(1,4,Inputs!K1:K8)",
        "AGGREGATE(3,0,Inputs!A1:C5)",
        "AGGREGATE(20,0,Inputs!B1:B5)",
    ],
    # array constants written in formulas
    "SUMPRODUCT": ["SUMPRODUCT({x},Inputs!B1)", "SUMPRODUCT({1,2,3},{4,5,6})", "SUMPRODUCT({1;2}*{3;4})"],
    "SUM": ["SUM({x})", "SUM({x},1)", 'SUM({1,2;3,4},{"a","b"})', "SUM({-1.5,2E2})"],
    # more dates
    "WEEKNUM": [
        "WEEKNUM({x})",
        "WEEKNUM(Inputs!D1,{x})",
        "WEEKNUM(DATE(2024,1,6))",
        "WEEKNUM(DATE(2024,1,7))",
        "WEEKNUM(DATE(2024,1,7),2)",
        "WEEKNUM(DATE(2023,1,1),21)",
        "WEEKNUM(DATE(2024,12,31),15)",
        "WEEKNUM(Inputs!D1,4)",
    ],
    "ISOWEEKNUM": [
        "ISOWEEKNUM({x})",
        "ISOWEEKNUM(DATE(2021,1,1))",
        "ISOWEEKNUM(DATE(2024,12,30))",
        "ISOWEEKNUM(Inputs!D1)",
    ],
    "DAYS360": [
        "DAYS360({x},Inputs!D1)",
        "DAYS360(Inputs!D1,Inputs!D2,{x})",
        "DAYS360(DATE(2024,1,30),DATE(2024,2,1))",
        "DAYS360(DATE(2024,1,31),DATE(2024,3,31))",
        "DAYS360(DATE(2024,1,31),DATE(2024,3,31),TRUE)",
        "DAYS360(DATE(2023,2,28),DATE(2023,3,31))",
        "DAYS360(DATE(2024,2,29),DATE(2025,2,28))",
        "DAYS360(DATE(2024,3,15),DATE(2024,1,1))",
    ],
    "YEARFRAC": [
        "YEARFRAC({x},Inputs!D1)",
        "YEARFRAC(Inputs!D1,Inputs!D2,{x})",
        "YEARFRAC(DATE(2012,1,1),DATE(2012,7,30))",
        "YEARFRAC(DATE(2012,1,1),DATE(2012,7,30),1)",
        "YEARFRAC(DATE(2012,1,1),DATE(2012,7,30),3)",
        "YEARFRAC(DATE(2023,3,1),DATE(2024,2,29),1)",
        "YEARFRAC(DATE(2021,6,15),DATE(2024,2,10),1)",
        "YEARFRAC(DATE(2024,1,31),DATE(2024,2,29),0)",
        "YEARFRAC(DATE(2024,1,31),DATE(2024,2,29),4)",
        "YEARFRAC(DATE(2024,5,1),DATE(2023,1,1),2)",
        "YEARFRAC(Inputs!D1,Inputs!D2,5)",
    ],
    "NETWORKDAYS.INTL": [
        "NETWORKDAYS.INTL({x},Inputs!D2)",
        "NETWORKDAYS.INTL(Inputs!D1,Inputs!D2,{x})",
        "NETWORKDAYS.INTL(Inputs!D1,Inputs!D2,7)",
        "NETWORKDAYS.INTL(Inputs!D1,Inputs!D2,11)",
        'NETWORKDAYS.INTL(Inputs!D1,Inputs!D2,"0000110")',
        "NETWORKDAYS.INTL(Inputs!D2,Inputs!D1,1,Inputs!D1)",
        "NETWORKDAYS.INTL(Inputs!D1,Inputs!D2,9)",
        'NETWORKDAYS.INTL(Inputs!D1,Inputs!D2,"111")',
    ],
    "WORKDAY.INTL": [
        "WORKDAY.INTL({x},5)",
        "WORKDAY.INTL(Inputs!D1,{x})",
        "WORKDAY.INTL(Inputs!D1,10,7)",
        'WORKDAY.INTL(Inputs!D1,-4,"1000001")',
        "WORKDAY.INTL(Inputs!D1,3,1,Inputs!D1:D2)",
        "WORKDAY.INTL(Inputs!D1,3,12)",
    ],
    "TIMEVALUE": [
        "TIMEVALUE({x})",
        'TIMEVALUE("18:45")',
        'TIMEVALUE("6:45 PM")',
        'TIMEVALUE("2024-03-15 06:30")',
        'TIMEVALUE("x")',
    ],
    # more text
    "UNICHAR": ["UNICHAR({x})", "UNICHAR(66)", "UNICHAR(8364)", "UNICHAR(128512)"],
    "UNICODE": ["UNICODE({x})", 'UNICODE("€uro")', 'UNICODE("B")'],
    "T": ["T({x})", "T(12)", 'T("x")'],
    "FIXED": [
        "FIXED({x})",
        "FIXED(1234.567,{x})",
        "FIXED(1234.567,1)",
        "FIXED(1234.567,-1)",
        "FIXED(-1234.567,-1,TRUE)",
        "FIXED(44.332)",
        "FIXED(0.005,2)",
    ],
    "DOLLAR": ["DOLLAR({x})", "DOLLAR(1234.567,{x})", "DOLLAR(1234.567)", "DOLLAR(1234.567,-2)", "DOLLAR(0.123,4)"],
    "NUMBERVALUE": [
        "NUMBERVALUE({x})",
        'NUMBERVALUE("2.500,27",",",".")',
        'NUMBERVALUE("3.5%")',
        'NUMBERVALUE(" 1 234 ")',
        'NUMBERVALUE("1,2,3",",",".")',
        'NUMBERVALUE("1.5",{x})',
    ],
    # more information
    "ISEVEN": ["ISEVEN({x})", "ISEVEN(3)", "ISEVEN(2.5)"],
    "ISODD": ["ISODD({x})", "ISODD(3)", "ISODD(-1)"],
    "ISNONTEXT": ["ISNONTEXT({x})", 'ISNONTEXT("x")'],
    "ISREF": ["ISREF({x})", "ISREF(1)", "ISREF(Inputs!B1:B3)"],
    "TYPE": ["TYPE({x})", "TYPE(TRUE)", 'TYPE("x")', "TYPE(Inputs!B1:B3)", "TYPE(1)"],
    "N": ["N({x})", "N(TRUE)", 'N("7")', "N(Inputs!D1)"],
    "ERROR.TYPE": [
        "ERROR.TYPE({x})",
        "ERROR.TYPE(NA())",
        "ERROR.TYPE(1/0)",
        'ERROR.TYPE("a"+1)',
        "ERROR.TYPE(SQRT(-1))",
    ],
    "ISFORMULA": ["ISFORMULA({x})", "ISFORMULA(Inputs!B1)", "ISFORMULA(Calls!B2)"],
    "FORMULATEXT": ["FORMULATEXT({x})", "FORMULATEXT(Inputs!B1)", "FORMULATEXT(Calls!B3)"],
    # more lookup
    "LOOKUP": [
        'LOOKUP(15,{0,10,20},{"a","b","c"})',
        'LOOKUP(25,{0,"x";10,"y";20,"z"})',
        "LOOKUP({x},Inputs!B1:B5,Inputs!C1:C5)",
        "LOOKUP(3.5,Inputs!B1:B5,Inputs!C1:C5)",
        "LOOKUP(9,Inputs!B1:B5)",
        "LOOKUP(0,Inputs!B1:B5)",
        "LOOKUP(3,Inputs!E1:I2)",
        "LOOKUP(4,Inputs!B1:C5)",
        'LOOKUP("c",Inputs!C1:C5,Inputs!B1:B5)',
        "LOOKUP(2,Inputs!B1:B5,Inputs!E2:I2)",
    ],
    "ADDRESS": [
        "ADDRESS({x},2)",
        "ADDRESS(2,{x})",
        "ADDRESS(2,3)",
        "ADDRESS(2,3,2)",
        "ADDRESS(2,3,3)",
        "ADDRESS(2,3,4)",
        "ADDRESS(2,3,1,FALSE)",
        "ADDRESS(2,3,4,FALSE)",
        'ADDRESS(2,3,1,TRUE,"Data")',
        'ADDRESS(2,3,1,TRUE,"My Sheet")',
        "ADDRESS(2,28)",
        "ADDRESS(1,16385)",
        "ADDRESS(2,3,5)",
    ],
    "HYPERLINK": [
        "HYPERLINK({x})",
        'HYPERLINK("https://example.com",{x})',
        'HYPERLINK("https://example.com")',
        'HYPERLINK("https://example.com","Example")',
    ],
    "OFFSET": [
        "OFFSET(Inputs!B1,{x},1)",
        "OFFSET(Inputs!B1,1,{x})",
        "SUM(OFFSET(Inputs!B1,1,0,3,1))",
        "OFFSET(Inputs!B1:C2,2,0,1,1)",
        "SUM(OFFSET(Inputs!B1,0,0,2,2))",
        "OFFSET(Inputs!B1,-1,0)",
        "OFFSET(Inputs!B1,0,0,0,1)",
        "ROWS(OFFSET(Inputs!B1,0,0,4,2))",
        "OFFSET(Inputs!B3,-2,1)",
    ],
    "INDIRECT": [
        "INDIRECT({x})",
        'INDIRECT("Inputs!B"&3)',
        'SUM(INDIRECT("Inputs!B1:B5"))',
        "INDIRECT(\"'Inputs'!C2\")",
        'INDIRECT("Inputs!"&ADDRESS(4,2))',
        'INDIRECT("")',
        'COLUMNS(INDIRECT("Inputs!E1:I2"))',
    ],
    "TRANSPOSE": [
        "SUMPRODUCT(TRANSPOSE({x}))",
        "SUMPRODUCT(TRANSPOSE(Inputs!B1:B5)*Inputs!E1:I1)",
        "INDEX(TRANSPOSE(Inputs!B1:C5),2,3)",
        "TRANSPOSE(7)",
    ],
    "AREAS": ["AREAS({x})", "AREAS(Inputs!B1:C5)"],
    # more math
    "EXP": ["EXP({x})", "EXP(710)"],
    "LN": ["LN({x})", "LN(2.5)"],
    "LOG": ["LOG({x})", "LOG(8,{x})", "LOG(100)", "LOG(8,2)", "LOG(8,1)"],
    "LOG10": ["LOG10({x})", "LOG10(0.001)"],
    "SQRTPI": ["SQRTPI({x})", "SQRTPI(2)"],
    "MROUND": [
        "MROUND({x},2)",
        "MROUND(7,{x})",
        "MROUND(-7,{x})",
        "MROUND(7.5,5)",
        "MROUND(-7.5,-5)",
        "MROUND(1.3,0.2)",
    ],
    "CEILING.PRECISE": ["CEILING.PRECISE({x})", "CEILING.PRECISE(4.3,{x})", "CEILING.PRECISE(-4.3,2)"],
    "ISO.CEILING": ["ISO.CEILING({x})", "ISO.CEILING(-4.3,{x})", "ISO.CEILING(4.3,-2)"],
    "FLOOR.PRECISE": ["FLOOR.PRECISE({x})", "FLOOR.PRECISE(4.3,{x})", "FLOOR.PRECISE(-3.2,-1)"],
    "EVEN": ["EVEN({x})", "EVEN(1.5)", "EVEN(2)", "EVEN(-1)"],
    "ODD": ["ODD({x})", "ODD(1.5)", "ODD(2)", "ODD(-2)"],
    "QUOTIENT": ["QUOTIENT({x},2)", "QUOTIENT(7,{x})", "QUOTIENT(-7,2)"],
    "GCD": ["GCD({x},6)", "GCD(12,18,24)", "GCD(7.9,3)"],
    "LCM": ["LCM({x},6)", "LCM(4,6,10)", "LCM(2.5,3)"],
    "FACT": ["FACT({x})", "FACT(5.9)", "FACT(171)"],
    "FACTDOUBLE": ["FACTDOUBLE({x})", "FACTDOUBLE(7)", "FACTDOUBLE(8)"],
    "COMBIN": ["COMBIN({x},2)", "COMBIN(8,{x})", "COMBIN(8,3)", "COMBIN(3,8)"],
    "COMBINA": ["COMBINA({x},2)", "COMBINA(4,{x})", "COMBINA(4,3)"],
    "PERMUT": ["PERMUT({x},2)", "PERMUT(8,{x})", "PERMUT(8,3)"],
    "PERMUTATIONA": ["PERMUTATIONA({x},2)", "PERMUTATIONA(3,{x})", "PERMUTATIONA(3,2)"],
    "MULTINOMIAL": ["MULTINOMIAL({x},2)", "MULTINOMIAL(2,3,4)"],
    "SUMSQ": ["SUMSQ({x},3)", "SUMSQ(Inputs!B1:B5)"],
    "SUMX2MY2": ["SUMX2MY2({x},Inputs!B1)", "SUMX2MY2(Inputs!K1:K8,Inputs!L1:L8)"],
    "SUMX2PY2": ["SUMX2PY2({x},Inputs!B1)", "SUMX2PY2(Inputs!K1:K8,Inputs!L1:L8)"],
    "SUMXMY2": ["SUMXMY2({x},Inputs!B1)", "SUMXMY2(Inputs!K1:K8,Inputs!L1:L8)", "SUMXMY2(Inputs!K1:K8,Inputs!B1:B5)"],
    "DEGREES": ["DEGREES({x})", "DEGREES(PI())"],
    "RADIANS": ["RADIANS({x})", "RADIANS(270)"],
    "SIN": ["SIN({x})", "SIN(PI()/6)"],
    "COS": ["COS({x})", "COS(1)"],
    "TAN": ["TAN({x})", "TAN(0.75)"],
    "COT": ["COT({x})", "COT(0.75)"],
    "CSC": ["CSC({x})", "CSC(0.75)"],
    "SEC": ["SEC({x})", "SEC(0.75)"],
    "ASIN": ["ASIN({x})", "ASIN(0.5)", "ASIN(2)"],
    "ACOS": ["ACOS({x})", "ACOS(0.5)", "ACOS(-2)"],
    "ATAN": ["ATAN({x})", "ATAN(1)"],
    "ATAN2": ["ATAN2({x},1)", "ATAN2(1,{x})", "ATAN2(-1,-1)", "ATAN2(0,0)"],
    "ACOT": ["ACOT({x})", "ACOT(2)"],
    "SINH": ["SINH({x})", "SINH(1)"],
    "COSH": ["COSH({x})", "COSH(1)"],
    "TANH": ["TANH({x})", "TANH(0.5)"],
    "COTH": ["COTH({x})", "COTH(0.5)"],
    "CSCH": ["CSCH({x})", "CSCH(0.5)"],
    "SECH": ["SECH({x})", "SECH(0.5)"],
    "ASINH": ["ASINH({x})", "ASINH(1)"],
    "ACOSH": ["ACOSH({x})", "ACOSH(2)"],
    "ATANH": ["ATANH({x})", "ATANH(0.5)", "ATANH(1)"],
    "ACOTH": ["ACOTH({x})", "ACOTH(2)", "ACOTH(0.5)"],
    "RAND": ["RAND()<1", "AND(RAND()>=0,RAND()<1)"],
    "RANDBETWEEN": ["RANDBETWEEN({x},3)<=3", "RANDBETWEEN(4,4)", "RANDBETWEEN(5,4)"],
    "BASE": ["BASE({x},2)", "BASE(255,{x})", "BASE(255,16,4)", "BASE(7,2)", "BASE(35,36)"],
    "DECIMAL": ["DECIMAL({x},16)", 'DECIMAL("FF",{x})', 'DECIMAL("ff",16)', 'DECIMAL("111",2)', 'DECIMAL("zz",36)'],
    "BIN2DEC": ["BIN2DEC({x})", "BIN2DEC(1100100)", 'BIN2DEC("1111111111")', "BIN2DEC(102)"],
    "BIN2HEX": ["BIN2HEX({x})", "BIN2HEX(11111011,4)", 'BIN2HEX("1110000000")'],
    "BIN2OCT": ["BIN2OCT({x})", "BIN2OCT(1001,3)", 'BIN2OCT("1111111111")'],
    "DEC2BIN": ["DEC2BIN({x})", "DEC2BIN(9,4)", "DEC2BIN(-100)", "DEC2BIN(512)", "DEC2BIN(9,2)"],
    "DEC2HEX": ["DEC2HEX({x})", "DEC2HEX(100,4)", "DEC2HEX(-54)", "DEC2HEX(255)"],
    "DEC2OCT": ["DEC2OCT({x})", "DEC2OCT(58,3)", "DEC2OCT(-100)"],
    "HEX2BIN": ["HEX2BIN({x})", 'HEX2BIN("F",8)', 'HEX2BIN("FFFFFFFE00")', 'HEX2BIN("1FF")'],
    "HEX2DEC": ["HEX2DEC({x})", 'HEX2DEC("A5")', 'HEX2DEC("FFFFFFFF5B")', 'HEX2DEC("3DA408B9")', 'HEX2DEC("G")'],
    "HEX2OCT": ["HEX2OCT({x})", 'HEX2OCT("F",3)', 'HEX2OCT("FFFFFFFF00")'],
    "OCT2BIN": ["OCT2BIN({x})", "OCT2BIN(3,3)", 'OCT2BIN("7777777000")'],
    "OCT2DEC": ["OCT2DEC({x})", "OCT2DEC(54)", 'OCT2DEC("7777777533")', "OCT2DEC(8)"],
    "OCT2HEX": ["OCT2HEX({x})", "OCT2HEX(100,4)", 'OCT2HEX("7777777533")'],
    "BITAND": ["BITAND({x},5)", "BITAND(13,25)", "BITAND(1.5,1)"],
    "BITOR": ["BITOR({x},5)", "BITOR(23,10)"],
    "BITXOR": ["BITXOR({x},5)", "BITXOR(5,3)"],
    "BITLSHIFT": ["BITLSHIFT({x},2)", "BITLSHIFT(4,{x})", "BITLSHIFT(4,2)", "BITLSHIFT(4,-1)"],
    "BITRSHIFT": ["BITRSHIFT({x},2)", "BITRSHIFT(13,{x})", "BITRSHIFT(13,2)", "BITRSHIFT(13,-2)"],
    "DELTA": ["DELTA({x},0)", "DELTA(5,{x})", "DELTA(5,5)", "DELTA(0.5)"],
    "GESTEP": ["GESTEP({x})", "GESTEP(5,{x})", "GESTEP(-4,-5)"],
    "ERF": ["ERF({x})", "ERF(0.745)", "ERF(1,2)", "ERF(0,{x})"],
    "ERF.PRECISE": ["ERF.PRECISE({x})", "ERF.PRECISE(1)"],
    "ERFC": ["ERFC({x})", "ERFC(1)"],
    "ERFC.PRECISE": ["ERFC.PRECISE({x})", "ERFC.PRECISE(1)"],
    "ROMAN": ["ROMAN({x})", "ROMAN(499)", "ROMAN(1999)", "ROMAN(4000)", "ROMAN(3999)"],
    "ARABIC": ["ARABIC({x})", 'ARABIC("MCMXCIX")', 'ARABIC("mxmvii")', 'ARABIC("-XIV")', 'ARABIC("ABC1")'],
    "SERIESSUM": [
        "SERIESSUM({x},0,1,Inputs!B1:B3)",
        "SERIESSUM(0.5,0,2,Inputs!B1:B5)",
        "SERIESSUM(2,1,1,Inputs!K1:K3)",
    ],
    # statistics
    "VAR": ["VAR({x},1,2)", "VAR(Inputs!K1:K8)", "VAR(5)"],
    "VAR.S": ["VAR.S({x},1,2)", "VAR.S(Inputs!K1:K8)", "VAR.S(Inputs!C1:C5)"],
    "VARP": ["VARP({x},1,2)", "VARP(Inputs!K1:K8)", "VARP(5)"],
    "VAR.P": ["VAR.P({x},1,2)", "VAR.P(Inputs!K1:K8)"],
    "STDEV": ["STDEV({x},1,2)", "STDEV(Inputs!K1:K8)"],
    "STDEV.S": ["STDEV.S({x},1,2)", "STDEV.S(Inputs!K1:K8)", "STDEV.S(7)"],
    "STDEVP": ["STDEVP({x},1,2)", "STDEVP(Inputs!K1:K8)"],
    "STDEV.P": ["STDEV.P({x},1,2)", "STDEV.P(Inputs!K1:K8)", "STDEV.P(7)"],
    "VARA": ["VARA({x},1,2)", "VARA(Inputs!A1:A4,Inputs!B1:C2)"],
    "VARPA": ["VARPA({x},1,2)", "VARPA(Inputs!A1:A4,Inputs!B1:C2)"],
    "STDEVA": ["STDEVA({x},1,2)", "STDEVA(Inputs!A1:A4,Inputs!B1:C2)"],
    "STDEVPA": ["STDEVPA({x},1,2)", "STDEVPA(Inputs!A1:A4,Inputs!B1:C2)"],
    "AVERAGEA": ["AVERAGEA({x},1)", "AVERAGEA(Inputs!A1:A4,Inputs!B1:C2)", "AVERAGEA(Inputs!A4)"],
    "MAXA": ["MAXA({x},-5)", "MAXA(Inputs!A1:A4)", "MAXA(Inputs!A4)"],
    "MINA": ["MINA({x},5)", "MINA(Inputs!A2:A4,Inputs!C1)"],
    "DEVSQ": ["DEVSQ({x},1,2)", "DEVSQ(Inputs!K1:K8)", "DEVSQ(Inputs!C1:C5)"],
    "AVEDEV": ["AVEDEV({x},1,2)", "AVEDEV(Inputs!K1:K8)"],
    "GEOMEAN": ["GEOMEAN({x},1,2)", "GEOMEAN(Inputs!K1:K8)"],
    "HARMEAN": ["HARMEAN({x},1,2)", "HARMEAN(Inputs!K1:K8)"],
    "KURT": ["KURT({x},1,2,4,7)", "KURT(Inputs!K1:K8)", "KURT(1,2,3)", "KURT(2,2,2,2)"],
    "SKEW": ["SKEW({x},1,2,4)", "SKEW(Inputs!K1:K8)", "SKEW(1,2)"],
    "SKEW.P": ["SKEW.P({x},1,2,4)", "SKEW.P(Inputs!K1:K8)", "SKEW.P(3,3)"],
    "MODE": ["MODE({x},1,1,2)", "MODE(Inputs!K1:K8)", "MODE(3,1,3,1)"],
    "MODE.SNGL": ["MODE.SNGL({x},4,4)", "MODE.SNGL(Inputs!L1:L8,2,2,3)"],
    "TRIMMEAN": [
        "TRIMMEAN(Inputs!K1:K8,{x})",
        "TRIMMEAN({x},0.2)",
        "TRIMMEAN(Inputs!K1:K8,0.25)",
        "TRIMMEAN(Inputs!K1:K8,0.3)",
        "TRIMMEAN(Inputs!K1:K8,1)",
    ],
    "PERCENTILE": [
        "PERCENTILE(Inputs!K1:K8,{x})",
        "PERCENTILE({x},0.5)",
        "PERCENTILE(Inputs!K1:K8,0.3)",
        "PERCENTILE(Inputs!K1:K8,1.1)",
    ],
    "PERCENTILE.INC": [
        "PERCENTILE.INC(Inputs!K1:K8,{x})",
        "PERCENTILE.INC(Inputs!K1:K8,0.9)",
        "PERCENTILE.INC(Inputs!K1:K8,1)",
    ],
    "PERCENTILE.EXC": [
        "PERCENTILE.EXC(Inputs!K1:K8,{x})",
        "PERCENTILE.EXC(Inputs!K1:K8,0.25)",
        "PERCENTILE.EXC(Inputs!K1:K8,0.1)",
        "PERCENTILE.EXC(Inputs!K1:K8,0.95)",
    ],
    "QUARTILE": [
        "QUARTILE(Inputs!K1:K8,{x})",
        "QUARTILE(Inputs!K1:K8,1)",
        "QUARTILE(Inputs!K1:K8,3.7)",
        "QUARTILE(Inputs!K1:K8,5)",
    ],
    "QUARTILE.INC": ["QUARTILE.INC(Inputs!K1:K8,{x})", "QUARTILE.INC(Inputs!K1:K8,2)", "QUARTILE.INC({x},1)"],
    "QUARTILE.EXC": [
        "QUARTILE.EXC(Inputs!K1:K8,{x})",
        "QUARTILE.EXC(Inputs!K1:K8,1)",
        "QUARTILE.EXC(Inputs!K1:K8,3)",
        "QUARTILE.EXC(Inputs!K1:K8,4)",
    ],
    "PERCENTRANK": [
        "PERCENTRANK(Inputs!K1:K8,{x})",
        "PERCENTRANK(Inputs!K1:K8,7)",
        "PERCENTRANK(Inputs!K1:K8,5)",
        "PERCENTRANK(Inputs!K1:K8,5,2)",
        "PERCENTRANK(Inputs!K1:K8,10)",
    ],
    "PERCENTRANK.INC": [
        "PERCENTRANK.INC(Inputs!K1:K8,{x})",
        "PERCENTRANK.INC(Inputs!K1:K8,2)",
        "PERCENTRANK.INC(Inputs!K1:K8,4,{x})",
    ],
    "PERCENTRANK.EXC": [
        "PERCENTRANK.EXC(Inputs!K1:K8,{x})",
        "PERCENTRANK.EXC(Inputs!K1:K8,7)",
        "PERCENTRANK.EXC(Inputs!K1:K8,5.2,4)",
    ],
    "RANK.AVG": [
        "RANK.AVG({x},Inputs!B1:B5)",
        "RANK.AVG(3,Inputs!B1:B5,{x})",
        "RANK.AVG(4,Inputs!M7:M12)",
        "RANK.AVG(3.5,Inputs!M7:M12,1)",
        "RANK.AVG(3.5,Inputs!M7:M12)",
    ],
    "COVAR": ["COVAR({x},Inputs!B1)", "COVAR(Inputs!K1:K8,Inputs!L1:L8)"],
    "COVARIANCE.P": [
        "COVARIANCE.P({x},Inputs!B1)",
        "COVARIANCE.P(Inputs!K1:K8,Inputs!L1:L8)",
        "COVARIANCE.P(Inputs!K1:K8,Inputs!B1:B5)",
    ],
    "COVARIANCE.S": ["COVARIANCE.S({x},Inputs!B1)", "COVARIANCE.S(Inputs!K1:K8,Inputs!L1:L8)"],
    "CORREL": ["CORREL({x},Inputs!B1)", "CORREL(Inputs!K1:K8,Inputs!L1:L8)", "CORREL(Inputs!K1:K5,Inputs!A1:A5)"],
    "PEARSON": ["PEARSON({x},Inputs!B1)", "PEARSON(Inputs!K1:K8,Inputs!L1:L8)"],
    "RSQ": ["RSQ({x},Inputs!B1)", "RSQ(Inputs!L1:L8,Inputs!K1:K8)"],
    "SLOPE": ["SLOPE({x},Inputs!B1)", "SLOPE(Inputs!L1:L8,Inputs!K1:K8)", "SLOPE(Inputs!L1:L3,Inputs!K1:K4)"],
    "INTERCEPT": ["INTERCEPT({x},Inputs!B1)", "INTERCEPT(Inputs!L1:L8,Inputs!K1:K8)"],
    "FORECAST": ["FORECAST({x},Inputs!L1:L8,Inputs!K1:K8)", "FORECAST(10,Inputs!L1:L8,Inputs!K1:K8)"],
    "FORECAST.LINEAR": [
        "FORECAST.LINEAR({x},Inputs!L1:L8,Inputs!K1:K8)",
        "FORECAST.LINEAR(5,Inputs!L1:L8,Inputs!K1:K8)",
    ],
    "STEYX": ["STEYX({x},Inputs!B1)", "STEYX(Inputs!L1:L8,Inputs!K1:K8)"],
    "NORM.DIST": [
        "NORM.DIST({x},0,1,TRUE)",
        "NORM.DIST(1,{x},1,FALSE)",
        "NORM.DIST(42,40,1.5,TRUE)",
        "NORM.DIST(42,40,1.5,FALSE)",
        "NORM.DIST(1,0,{x},TRUE)",
    ],
    "NORMDIST": ["NORMDIST({x},0,1,TRUE)", "NORMDIST(42,40,1.5,FALSE)"],
    "NORM.INV": ["NORM.INV({x},0,1)", "NORM.INV(0.908789,40,1.5)", "NORM.INV(0.5,0,{x})", "NORM.INV(0.01,3,2)"],
    "NORMINV": ["NORMINV({x},0,1)", "NORMINV(0.908789,40,1.5)"],
    "NORM.S.DIST": [
        "NORM.S.DIST({x},TRUE)",
        "NORM.S.DIST(1.333333,TRUE)",
        "NORM.S.DIST(1.333333,FALSE)",
        "NORM.S.DIST(-9,TRUE)",
    ],
    "NORMSDIST": ["NORMSDIST({x})", "NORMSDIST(1.333333)"],
    "NORM.S.INV": ["NORM.S.INV({x})", "NORM.S.INV(0.908789)", "NORM.S.INV(0.0001)", "NORM.S.INV(1)"],
    "NORMSINV": ["NORMSINV({x})", "NORMSINV(0.908789)"],
    "STANDARDIZE": ["STANDARDIZE({x},40,1.5)", "STANDARDIZE(42,40,{x})", "STANDARDIZE(42,40,1.5)"],
    "GAUSS": ["GAUSS({x})", "GAUSS(2)"],
    "PHI": ["PHI({x})", "PHI(0.75)"],
    "CONFIDENCE": ["CONFIDENCE({x},2.5,50)", "CONFIDENCE(0.05,2.5,50)"],
    "CONFIDENCE.NORM": [
        "CONFIDENCE.NORM({x},2.5,50)",
        "CONFIDENCE.NORM(0.05,{x},50)",
        "CONFIDENCE.NORM(0.05,2.5,{x})",
        "CONFIDENCE.NORM(0.05,2.5,50)",
    ],
    "CONFIDENCE.T": [
        "CONFIDENCE.T({x},1,50)",
        "CONFIDENCE.T(0.05,1,{x})",
        "CONFIDENCE.T(0.05,1,50)",
        "CONFIDENCE.T(0.05,1,1)",
    ],
    "LOGNORM.DIST": [
        "LOGNORM.DIST({x},3.5,1.2,TRUE)",
        "LOGNORM.DIST(4,3.5,1.2,TRUE)",
        "LOGNORM.DIST(4,3.5,1.2,FALSE)",
        "LOGNORM.DIST(4,{x},1.2,TRUE)",
    ],
    "LOGNORMDIST": ["LOGNORMDIST({x},3.5,1.2)", "LOGNORMDIST(4,3.5,1.2)"],
    "LOGNORM.INV": ["LOGNORM.INV({x},3.5,1.2)", "LOGNORM.INV(0.039084,3.5,1.2)"],
    "LOGINV": ["LOGINV({x},3.5,1.2)", "LOGINV(0.039084,3.5,1.2)"],
    "FISHER": ["FISHER({x})", "FISHER(0.75)", "FISHER(1)"],
    "FISHERINV": ["FISHERINV({x})", "FISHERINV(0.972955)"],
    "EXPON.DIST": [
        "EXPON.DIST({x},10,TRUE)",
        "EXPON.DIST(0.2,{x},TRUE)",
        "EXPON.DIST(0.2,10,TRUE)",
        "EXPON.DIST(0.2,10,FALSE)",
    ],
    "EXPONDIST": ["EXPONDIST({x},10,TRUE)", "EXPONDIST(0.2,10,FALSE)"],
    "WEIBULL.DIST": [
        "WEIBULL.DIST({x},20,100,TRUE)",
        "WEIBULL.DIST(105,20,100,TRUE)",
        "WEIBULL.DIST(105,20,100,FALSE)",
        "WEIBULL.DIST(105,{x},100,TRUE)",
    ],
    "WEIBULL": ["WEIBULL({x},20,100,TRUE)", "WEIBULL(105,20,100,FALSE)"],
    "GAMMA.DIST": [
        "GAMMA.DIST({x},9,2,TRUE)",
        "GAMMA.DIST(10.00001131,9,2,FALSE)",
        "GAMMA.DIST(10.00001131,9,2,TRUE)",
        "GAMMA.DIST(3,{x},2,TRUE)",
        "GAMMA.DIST(30,3,2,TRUE)",
    ],
    "GAMMADIST": ["GAMMADIST({x},9,2,TRUE)", "GAMMADIST(10.00001131,9,2,FALSE)"],
    "GAMMA.INV": ["GAMMA.INV({x},9,2)", "GAMMA.INV(0.068094,9,2)", "GAMMA.INV(0.5,{x},2)", "GAMMA.INV(0.99,0.5,3)"],
    "GAMMAINV": ["GAMMAINV({x},9,2)", "GAMMAINV(0.068094,9,2)"],
    "GAMMA": ["GAMMA({x})", "GAMMA(2.5)", "GAMMA(-3.75)", "GAMMA(-1)"],
    "GAMMALN": ["GAMMALN({x})", "GAMMALN(4)", "GAMMALN(0.5)"],
    "GAMMALN.PRECISE": ["GAMMALN.PRECISE({x})", "GAMMALN.PRECISE(4.5)"],
    "CHISQ.DIST": [
        "CHISQ.DIST({x},3,TRUE)",
        "CHISQ.DIST(0.5,1,TRUE)",
        "CHISQ.DIST(2,3,FALSE)",
        "CHISQ.DIST(2,{x},TRUE)",
    ],
    "CHISQ.DIST.RT": ["CHISQ.DIST.RT({x},10)", "CHISQ.DIST.RT(18.307,10)", "CHISQ.DIST.RT(3,{x})"],
    "CHIDIST": ["CHIDIST({x},10)", "CHIDIST(18.307,10)"],
    "CHISQ.INV": ["CHISQ.INV({x},2)", "CHISQ.INV(0.93,1)", "CHISQ.INV(0.6,2)", "CHISQ.INV(0.5,{x})"],
    "CHISQ.INV.RT": ["CHISQ.INV.RT({x},10)", "CHISQ.INV.RT(0.050001,10)", "CHISQ.INV.RT(0.5,{x})"],
    "CHIINV": ["CHIINV({x},10)", "CHIINV(0.050001,10)"],
    "T.DIST": [
        "T.DIST({x},4,TRUE)",
        "T.DIST(60,1,TRUE)",
        "T.DIST(8,3,FALSE)",
        "T.DIST(-1.5,{x},TRUE)",
        "T.DIST(1.2,30,TRUE)",
    ],
    "T.DIST.RT": ["T.DIST.RT({x},60)", "T.DIST.RT(1.959999998,60)", "T.DIST.RT(1,{x})"],
    "T.DIST.2T": ["T.DIST.2T({x},60)", "T.DIST.2T(1.959999998,60)", "T.DIST.2T(1,{x})"],
    "TDIST": ["TDIST({x},60,2)", "TDIST(1.959999998,60,1)", "TDIST(1.959999998,60,{x})", "TDIST(1.5,3,3)"],
    "T.INV": ["T.INV({x},2)", "T.INV(0.75,2)", "T.INV(0.1,10)", "T.INV(0.75,{x})"],
    "T.INV.2T": ["T.INV.2T({x},10)", "T.INV.2T(0.546449,60)", "T.INV.2T(0.05,{x})", "T.INV.2T(1,5)"],
    "TINV": ["TINV({x},10)", "TINV(0.546449,60)"],
    "F.DIST": [
        "F.DIST({x},6,4,TRUE)",
        "F.DIST(15.2069,6,4,TRUE)",
        "F.DIST(15.2069,6,4,FALSE)",
        "F.DIST(2,{x},4,TRUE)",
        "F.DIST(0.5,2,3,FALSE)",
    ],
    "F.DIST.RT": ["F.DIST.RT({x},6,4)", "F.DIST.RT(15.2069,6,4)", "F.DIST.RT(2,6,{x})"],
    "FDIST": ["FDIST({x},6,4)", "FDIST(15.2069,6,4)"],
    "F.INV": ["F.INV({x},6,4)", "F.INV(0.01,6,4)", "F.INV(0.5,{x},4)"],
    "F.INV.RT": ["F.INV.RT({x},6,4)", "F.INV.RT(0.01,6,4)", "F.INV.RT(0.5,6,{x})"],
    "FINV": ["FINV({x},6,4)", "FINV(0.01,6,4)"],
    "BETA.DIST": [
        "BETA.DIST({x},8,10,TRUE,1,3)",
        "BETA.DIST(2,8,10,TRUE,1,3)",
        "BETA.DIST(2,8,10,FALSE,1,3)",
        "BETA.DIST(0.4,{x},3,TRUE)",
        "BETA.DIST(0.3,2,3,FALSE)",
    ],
    "BETADIST": ["BETADIST({x},8,10,1,3)", "BETADIST(2,8,10,1,3)", "BETADIST(0.3,2,3)"],
    "BETA.INV": ["BETA.INV({x},8,10,1,3)", "BETA.INV(0.685470581,8,10,1,3)", "BETA.INV(0.5,{x},2)"],
    "BETAINV": ["BETAINV({x},8,10,1,3)", "BETAINV(0.685470581,8,10,1,3)"],
    "BINOM.DIST": [
        "BINOM.DIST({x},10,0.5,FALSE)",
        "BINOM.DIST(6,10,0.5,FALSE)",
        "BINOM.DIST(6,10,0.5,TRUE)",
        "BINOM.DIST(6,10,{x},TRUE)",
        "BINOM.DIST(11,10,0.5,TRUE)",
    ],
    "BINOMDIST": ["BINOMDIST({x},10,0.5,FALSE)", "BINOMDIST(6,10,0.3,TRUE)"],
    "BINOM.INV": ["BINOM.INV({x},0.5,0.75)", "BINOM.INV(6,0.5,0.75)", "BINOM.INV(6,0.5,{x})", "BINOM.INV(20,0.3,0.99)"],
    "CRITBINOM": ["CRITBINOM({x},0.5,0.75)", "CRITBINOM(6,0.5,0.75)"],
    "NEGBINOM.DIST": [
        "NEGBINOM.DIST({x},5,0.25,TRUE)",
        "NEGBINOM.DIST(10,5,0.25,TRUE)",
        "NEGBINOM.DIST(10,5,0.25,FALSE)",
        "NEGBINOM.DIST(10,{x},0.25,TRUE)",
    ],
    "NEGBINOMDIST": ["NEGBINOMDIST({x},5,0.25)", "NEGBINOMDIST(10,5,0.25)"],
    "HYPGEOM.DIST": [
        "HYPGEOM.DIST({x},4,8,20,TRUE)",
        "HYPGEOM.DIST(1,4,8,20,TRUE)",
        "HYPGEOM.DIST(1,4,8,20,FALSE)",
        "HYPGEOM.DIST(1,{x},8,20,TRUE)",
        "HYPGEOM.DIST(5,4,8,20,TRUE)",
    ],
    "HYPGEOMDIST": ["HYPGEOMDIST({x},4,8,20)", "HYPGEOMDIST(1,4,8,20)"],
    "POISSON.DIST": [
        "POISSON.DIST({x},5,TRUE)",
        "POISSON.DIST(2,5,TRUE)",
        "POISSON.DIST(2,5,FALSE)",
        "POISSON.DIST(2,{x},TRUE)",
        "POISSON.DIST(2.9,0,FALSE)",
    ],
    "POISSON": ["POISSON({x},5,TRUE)", "POISSON(2,5,FALSE)"],
    "Z.TEST": ["Z.TEST(Inputs!K1:K8,{x})", "Z.TEST(Inputs!K1:K8,4)", "Z.TEST(Inputs!K1:K8,6,1)", "Z.TEST({x},1)"],
    "ZTEST": ["ZTEST(Inputs!K1:K8,{x})", "ZTEST(Inputs!K1:K8,4,2)"],
    # financial
    "FV": [
        "FV({x},10,-200,-500,1)",
        "FV(0.06/12,10,{x},-500,1)",
        "FV(0.06/12,10,-200,{x})",
        "FV(0.005,10,-200,-500,{x})",
        "FV(0,12,-100)",
        "FV(0.11/12,35,-2000,,1)",
    ],
    "PV": [
        "PV({x},20*12,500)",
        "PV(0.08/12,{x},500)",
        "PV(0.08/12,240,500,{x},1)",
        "PV(0.08/12,240,500)",
        "PV(0,10,-100,50)",
    ],
    "PMT": [
        "PMT({x},10,10000)",
        "PMT(0.08/12,{x},10000)",
        "PMT(0.08/12,10,{x})",
        "PMT(0.08/12,10,10000,0,1)",
        "PMT(0.06/12,18*12,0,50000)",
        "PMT(0,12,1200)",
    ],
    "NPER": [
        "NPER({x},-100,-1000,10000,1)",
        "NPER(0.01,{x},-1000,10000)",
        "NPER(0.12/12,-100,-1000,10000,1)",
        "NPER(0.12/12,-100,-1000)",
        "NPER(0,-100,1000)",
        "NPER(0.01,100,1000)",
    ],
    "IPMT": [
        "IPMT({x},1,3,8000)",
        "IPMT(0.1/12,{x},3,8000)",
        "IPMT(0.1/12,3,3,8000)",
        "IPMT(0.1,3,3,8000)",
        "IPMT(0.1/12,2,24,8000,0,1)",
        "IPMT(0.1/12,1,24,8000,0,1)",
        "IPMT(0.1/12,25,24,8000)",
    ],
    "PPMT": [
        "PPMT({x},1,24,2000)",
        "PPMT(0.1/12,1,24,2000)",
        "PPMT(0.08,10,10,200000)",
        "PPMT(0.08,3,10,200000,1000,1)",
        "PPMT(0.08,{x},10,200000)",
    ],
    "CUMIPMT": [
        "CUMIPMT({x},360,125000,13,24,0)",
        "CUMIPMT(0.09/12,360,125000,13,24,0)",
        "CUMIPMT(0.09/12,360,125000,1,1,0)",
        "CUMIPMT(0.09/12,360,125000,1,1,1)",
        "CUMIPMT(0.09/12,360,{x},1,2,0)",
    ],
    "CUMPRINC": [
        "CUMPRINC({x},360,125000,13,24,0)",
        "CUMPRINC(0.09/12,360,125000,13,24,0)",
        "CUMPRINC(0.09/12,360,125000,1,1,1)",
        "CUMPRINC(0.09/12,360,125000,5,4,0)",
    ],
    "ISPMT": ["ISPMT({x},1,36,8000000)", "ISPMT(0.1/12,1,36,8000000)", "ISPMT(0.1,1,{x},8000000)"],
    "RATE": [
        "RATE({x},-200,8000)",
        "RATE(48,{x},8000)",
        "RATE(48,-200,8000)*12",
        "RATE(48,-200,8000,0,1)",
        "RATE(10,-100,1000,0,0,0.05)",
        "RATE(5,100,1000)",
    ],
    "NPV": [
        "NPV({x},-10000,3000,4200,6800)",
        "NPV(0.1,{x},3000,4200,6800)",
        "NPV(0.08,Inputs!M2:M6)+Inputs!M1",
        "NPV(-1,100)",
        "NPV(0.08,Inputs!M1:M6,-9000)",
    ],
    "XNPV": [
        "XNPV({x},Inputs!M1:M5,Inputs!N1:N5)",
        "XNPV(0.09,Inputs!M1:M5,Inputs!N1:N5)",
        "XNPV(0.09,Inputs!M1:M5,Inputs!N1:N4)",
        "XNPV(0.09,Inputs!M1:M2,Inputs!N2:N3)",
    ],
    "IRR": [
        "IRR(Inputs!M1:M5,{x})",
        "IRR({x})",
        "IRR(Inputs!M1:M5)",
        "IRR(Inputs!M1:M3)",
        "IRR(Inputs!M1:M5,-0.1)",
        "IRR(Inputs!M2:M5)",
    ],
    "XIRR": [
        "XIRR(Inputs!M1:M5,Inputs!N1:N5,{x})",
        "XIRR(Inputs!M1:M5,Inputs!N1:N5)",
        "XIRR(Inputs!M2:M5,Inputs!N2:N5)",
    ],
    "MIRR": [
        "MIRR(Inputs!M1:M5,{x},0.12)",
        "MIRR(Inputs!M1:M5,0.1,{x})",
        "MIRR(Inputs!M1:M5,0.1,0.12)",
        "MIRR({x},0.1,0.1)",
    ],
    "EFFECT": ["EFFECT({x},4)", "EFFECT(0.0525,{x})", "EFFECT(0.0525,4)", "EFFECT(0.0525,4.9)"],
    "NOMINAL": ["NOMINAL({x},4)", "NOMINAL(0.053543,{x})", "NOMINAL(0.053543,4)"],
    "RRI": ["RRI({x},10000,11000)", "RRI(96,{x},11000)", "RRI(96,10000,{x})", "RRI(96,10000,11000)"],
    "PDURATION": [
        "PDURATION({x},2000,2200)",
        "PDURATION(0.025,{x},2200)",
        "PDURATION(0.025,2000,2200)",
        "PDURATION(0.025/12,1000,1200)",
    ],
    "FVSCHEDULE": [
        "FVSCHEDULE({x},Inputs!O1:O3)",
        "FVSCHEDULE(1,{x})",
        "FVSCHEDULE(1000,Inputs!O1:O3)",
        "FVSCHEDULE(1000,Inputs!O1:O4)",
    ],
    "SLN": ["SLN({x},7500,10)", "SLN(30000,{x},10)", "SLN(30000,7500,{x})", "SLN(30000,7500,10)"],
    "SYD": [
        "SYD({x},7500,10,1)",
        "SYD(30000,7500,{x},1)",
        "SYD(30000,7500,10,{x})",
        "SYD(30000,7500,10,10)",
        "SYD(30000,7500,10,11)",
    ],
    "DB": [
        "DB({x},100000,6,1,7)",
        "DB(1000000,{x},6,1,7)",
        "DB(1000000,100000,6,{x},7)",
        "DB(1000000,100000,6,1,7)",
        "DB(1000000,100000,6,2,7)",
        "DB(1000000,100000,6,7,7)",
        "DB(1000000,100000,6,6)",
        "DB(1000000,100000,6,7)",
        "DB(1000000,100000,6,1,{x})",
    ],
    "DDB": [
        "DDB({x},500,10,1)",
        "DDB(2400,{x},10,1)",
        "DDB(2400,300,10*365,1)",
        "DDB(2400,300,10*12,1,2)",
        "DDB(2400,300,10,1,2)",
        "DDB(2400,300,10,2,1.5)",
        "DDB(2400,300,10,10)",
        "DDB(2400,300,10,{x})",
    ],
    "DOLLARDE": [
        "DOLLARDE({x},16)",
        "DOLLARDE(1.02,{x})",
        "DOLLARDE(1.02,16)",
        "DOLLARDE(1.1,32)",
        "DOLLARDE(-1.02,16)",
    ],
    "DOLLARFR": ["DOLLARFR({x},16)", "DOLLARFR(1.125,{x})", "DOLLARFR(1.125,16)", "DOLLARFR(1.125,32)"],
}
# LibreOffice 7 lacks XLOOKUP, XMATCH and the dynamic array functions (they came in 24.8 and
# 25.8): their cases are in the sales report and in arrays.xlsx, with Excel's values.
EDGE_EXEMPT = {
    "XLOOKUP",
    "XMATCH",
    "FILTER",
    "UNIQUE",
    "SORT",
    "SORTBY",
    "SEQUENCE",
    "RANDARRAY",
    "TOCOL",
    "TOROW",
    "CHOOSECOLS",
    "CHOOSEROWS",
    "VSTACK",
    "HSTACK",
    "TAKE",
    "DROP",
    "EXPAND",
    "WRAPROWS",
    "WRAPCOLS",
    "TEXTSPLIT",
    "TEXTBEFORE",
    "TEXTAFTER",
    "VALUETOTEXT",
}

# Dynamic arrays used inside other functions, as Excel stores them, with Excel's values
# (worked out from Microsoft's documentation of each function; LibreOffice 7 shows #NAME?).
ARRAY_CALLS: list[tuple[str, Any]] = [
    ('=SUM(_xlfn._xlws.FILTER(C2:C7,A2:A7="North"))', 19.0),
    ("=ROWS(_xlfn._xlws.FILTER(A2:D7,C2:C7>5))", 4.0),
    ('=_xlfn._xlws.FILTER(C2:C7,A2:A7="Central","none")', "none"),
    ('=INDEX(_xlfn._xlws.FILTER(B2:B7,A2:A7="South"),2)', "fiona"),
    ("=ROWS(_xlfn.UNIQUE(A2:A7))", 4.0),
    ("=ROWS(_xlfn.UNIQUE(B2:B7))", 4.0),
    ('=_xlfn.TEXTJOIN(",",TRUE,_xlfn.UNIQUE(A2:A7))', "North,South,East,West"),
    ("=ROWS(_xlfn.UNIQUE(A2:A7,FALSE,TRUE))", 2.0),
    ("=INDEX(_xlfn._xlws.SORT(C2:C7),1)", 1.0),
    ("=INDEX(_xlfn._xlws.SORT(C2:C7,1,-1),1)", 20.0),
    ("=INDEX(_xlfn._xlws.SORT(A2:D7,3,-1),1,2)", "Alice"),
    ("=INDEX(_xlfn.SORTBY(B2:B7,C2:C7,1),1)", "fiona"),
    ("=INDEX(_xlfn.SORTBY(B2:B7,A2:A7,1,C2:C7,-1),2)", "Fiona"),
    ("=SUM(_xlfn.SEQUENCE(4))", 10.0),
    ("=SUM(_xlfn.SEQUENCE(2,3,10,5))", 135.0),
    ("=INDEX(_xlfn.SEQUENCE(3,3,0,2),3,2)", 14.0),
    ('=_xlfn.XMATCH("East",A2:A7)', 4.0),
    ("=_xlfn.XMATCH(10,C2:C7,1)", 1.0),
    ("=_xlfn.XMATCH(10,C2:C7,-1)", 3.0),
    ('=_xlfn.XMATCH("Bob",B2:B7,0,-1)', 6.0),
    ('=_xlfn.XMATCH("Zed",A2:A7)', {"error": "#N/A"}),
    ("=_xlfn.LET(_xlpm.x,C2*2,_xlpm.x+1)", 25.0),
    (
        "=_xlfn.LET(_xlpm.big,_xlfn._xlws.FILTER(C2:C7,C2:C7>10),SUM(_xlpm.big)/COUNT(_xlpm.big))",
        47 / 3,
    ),
    ("=SUM(_xlfn.TAKE(C2:C7,2))", 15.0),
    ("=SUM(_xlfn.TAKE(C2:C7,-2))", 16.0),
    ("=SUM(_xlfn.DROP(C2:C7,4))", 16.0),
    ("=ROWS(_xlfn.VSTACK(A2:A3,A5:A7))", 5.0),
    ("=COLUMNS(_xlfn.HSTACK(A2:B7,C2:C7))", 3.0),
    ("=SUM(_xlfn.CHOOSECOLS(C2:D3,1))", 15.0),
    ("=INDEX(_xlfn.CHOOSEROWS(B2:B7,-1),1)", "Bob"),
    ("=COUNTA(_xlfn.TOCOL(A2:B3))", 4.0),
    ("=INDEX(_xlfn.TOROW(A2:B3),1,2)", "Fiona"),
    ("=INDEX(_xlfn.TOROW(A2:B3,0,TRUE),1,2)", "South"),
    ('=_xlfn.TEXTBEFORE("john.smith@example.com","@")', "john.smith"),
    ('=_xlfn.TEXTAFTER("john.smith@example.com",".",-1)', "com"),
    ('=_xlfn.TEXTAFTER("a-b-c","-",2)', "c"),
    ('=_xlfn.TEXTBEFORE("abc","x")', {"error": "#N/A"}),
    ('=_xlfn.TEXTBEFORE("abc","x",,,,"none")', "none"),
    ('=INDEX(_xlfn.TEXTSPLIT("a,b,c;d,e",",",";"),2,2)', "e"),
    ('=INDEX(_xlfn.TEXTSPLIT("a,b,c;d,e",",",";"),2,3)', {"error": "#N/A"}),
    ('=COLUMNS(_xlfn.TEXTSPLIT("a,,b",",",,TRUE))', 2.0),
    ('=_xlfn.VALUETOTEXT("x",1)', '"x"'),
    ("=_xlfn.VALUETOTEXT(12.5)", "12.5"),
    ("=SUM(_xlfn.EXPAND(C2:C3,3,1,0))", 15.0),
    ("=ROWS(_xlfn.WRAPROWS(C2:C7,4))", 2.0),
    ("=INDEX(_xlfn.WRAPCOLS(C2:C7,4),2,2)", 15.0),
    ("=SUM(_xlfn.RANDARRAY(3,1,5,5))", 15.0),
    ("=COUNT(_xlfn.RANDARRAY(2,2))", 4.0),
]


def totals() -> dict[str, Sheet]:
    """A list with subtotals in it and hidden rows (`HIDDEN_ROWS`): what SUBTOTAL and AGGREGATE leave out."""
    sales: Sheet = {}
    _rows(
        sales,
        "A1",
        [
            ["Item", "Amount"],
            ["a", 10],
            ["b", 20],
            ["Sub", "=SUBTOTAL(109,B2:B3)"],
            ["c", 5],
            ["d", "=1/0"],
            ["e", 7],
            ["Sub", "=_xlfn.AGGREGATE(9,6,B5:B7)"],
            ["f", 100],
        ],
    )
    _rows(
        sales,
        "D1",
        [
            ["=SUBTOTAL(109,B2:B9)"],
            ["=SUBTOTAL(102,B2:B9)"],
            ["=SUBTOTAL(103,A2:A9)"],
            ["=SUBTOTAL(104,B2:B5)"],
            ["=SUBTOTAL(101,B2:B5)"],
            ["=_xlfn.AGGREGATE(9,7,B2:B9)"],
            ["=_xlfn.AGGREGATE(9,3,B2:B9)"],
            ["=_xlfn.AGGREGATE(9,6,B2:B9)"],
            ["=_xlfn.AGGREGATE(2,5,B2:B9)"],
            ["=_xlfn.AGGREGATE(4,1,B2:B5)"],
            ["=_xlfn.AGGREGATE(14,7,B2:B9,1)"],
            ["=_xlfn.AGGREGATE(9,5,B2:B9)"],
            ["=SUBTOTAL(9,B2:B3)"],
            ["=SUBTOTAL(9,B5:B5)"],
        ],
    )
    return {"Sales": sales}


def arrays() -> dict[str, Sheet]:
    orders: Sheet = {}
    _rows(
        orders,
        "A1",
        [
            ["Region", "Rep", "Units", "Price"],
            ["North", "Fiona", 12, 19.99],
            ["South", "Bob", 3, 149.5],
            ["North", "Frank", 7, 19.99],
            ["East", "Alice", 20, 5.25],
            ["South", "fiona", 1, 149.5],
            ["West", "Bob", 15, 18.5],
        ],
    )
    for i, (formula, _value) in enumerate(ARRAY_CALLS, start=10):
        orders[f"F{i}"] = formula
    return {"Orders": orders}


# Excel stores these two with `_xlfn.`, which LibreOffice 7 does not read (#NAME?): the
# workbooks hold them as LibreOffice reads them, so it computes them.
LIBREOFFICE_UNPREFIXED = ("NETWORKDAYS.INTL", "WORKDAY.INTL")


def _as_stored(formula: str) -> str:
    from deskmcp.sheets.formulas.prefixes import excel_prefixes

    stored = excel_prefixes(formula)
    for name in LIBREOFFICE_UNPREFIXED:
        stored = stored.replace(f"_xlfn.{name}(", f"{name}(")
    return stored


def functions() -> dict[str, Sheet]:
    """`EDGE_CALLS`, one row per call and one column per edge input."""
    inputs: Sheet = {"A1": -2.5, "A2": 0, "A3": "abc", "A5": "=1/0"}
    _rows(inputs, "B1", [[1, "a"], [2, "b"], [3, "c"], [4, "d"], [5, "e"]])
    _rows(inputs, "E1", [[1, 2, 3, 4, 5], ["a", "b", "c", "d", "e"]])
    _rows(inputs, "D1", [[D(2024, 3, 15)], [D(2024, 4, 2)]])
    # two samples (K, L), cash flows and their dates (M, N), rates (O), ranks with ties (M7:M12)
    _rows(inputs, "K1", [[2, 3], [4.5, 5], [7, 8.5], [1, 2], [9, 11], [3.5, 4], [8, 9.5], [6, 7]])
    flows = [-10000, 2750, 4250, 3250, 2750]
    days = [D(2008, 1, 1), D(2008, 3, 1), D(2008, 10, 30), D(2009, 2, 15), D(2009, 4, 1)]
    _rows(inputs, "M1", [[v, d] for v, d in zip(flows, days, strict=True)])
    _rows(inputs, "O1", [[0.09], [0.11], [0.1], [None]])
    _rows(inputs, "M7", [[7], [3.5], [3.5], [1], [2], [4]])
    calls: Sheet = {"A1": "call", **{f"{_letters(2 + i)}1": kind for i, kind in enumerate(EDGE_INPUTS)}}
    row = 2
    for name in sorted(EDGE_CALLS):
        for template in EDGE_CALLS[name]:
            calls[f"A{row}"] = template
            if "{x}" not in template:
                calls[f"B{row}"] = _as_stored("=" + template)
            else:
                for i, ref in enumerate(EDGE_INPUTS.values()):
                    calls[f"{_letters(2 + i)}{row}"] = _as_stored("=" + template.replace("{x}", ref))
            row += 1
    return {"Calls": calls, "Inputs": inputs}


WORKBOOKS = {
    "budget.xlsx": budget,
    "invoice.xlsx": invoice,
    "sales.xlsx": sales,
    "timesheet.xlsx": timesheet,
    "edges.xlsx": edges,
    "functions.xlsx": functions,
    "arrays.xlsx": arrays,
    "totals.xlsx": totals,
}

HIDDEN_ROWS = {"totals.xlsx": {"Sales": [3, 9]}}

NAMES = {"budget.xlsx": {"Q1Total": "Costs!$E$9", "TaxRate": "Plan!$B$4"}, "timesheet.xlsx": {"Rate": "Settings!$B$1"}}

# Cells whose expected value is Excel's, not LibreOffice 7's: XLOOKUP came to LibreOffice in 24.8,
# and LibreOffice has no boolean type (TRUE is the number 1 to it), where Excel documents that
# SUM, COUNT and AVERAGE skip booleans in references, count typed "3" and TRUE, order booleans
# after numbers and write TRUE as text. Excel also gives #REF! for a VLOOKUP column past the
# table and writes exponents with two digits.
EXCEL_VALUES: dict[str, dict[str, Any]] = {
    "arrays.xlsx": {f"Orders!F{i}": value for i, (_formula, value) in enumerate(ARRAY_CALLS, start=10)},
    "sales.xlsx": {
        "Report!B6": {"error": "#REF!"},
        "Report!B19": 5.25,
        "Report!B20": "none",
        "Report!B21": "B",
        "Report!B22": 45383.0,
    },
    "budget.xlsx": {
        "Costs!B20": 44.0,
        "Costs!B64": "n1.15292150460685E+18",
    },
    "edges.xlsx": {
        "Edges!H5": 60.0,
        "Edges!H7": 0.0,
        "Edges!H8": 0.0,
        "Edges!H9": 4.0,
        "Edges!H11": 3.0,
        "Edges!H15": 20.0,
        "Edges!H32": True,
        "Edges!H58": "v1E+17",
        "Edges!H73": "TRUE",
        "Edges!H74": "xTRUE",
        "Edges!H75": "1042TRUE",
        "Edges!H101": 10.0,  # SUM skips booleans in an array constant
    },
}


def build(folder: Path) -> list[Path]:
    """Write every workbook into `folder`, as openpyxl writes them (no cached values)."""
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for filename, make in WORKBOOKS.items():
        wb = Workbook()
        first = True
        for title, cells in make().items():
            ws: Any = wb.active if first else wb.create_sheet()
            ws.title = title
            first = False
            for ref, value in cells.items():
                ws[ref] = value
                if isinstance(value, dt.date):
                    ws[ref].number_format = "yyyy-mm-dd"
                elif isinstance(value, dt.time):
                    ws[ref].number_format = "hh:mm"
        for title, hidden in HIDDEN_ROWS.get(filename, {}).items():
            for r in hidden:
                wb[title].row_dimensions[r].hidden = True
        for name, target in NAMES.get(filename, {}).items():
            wb.defined_names[name] = DefinedName(name, attr_text=target)
        wb.calculation.fullCalcOnLoad = True
        path = folder / filename
        wb.save(path)
        paths.append(path)
    return paths


def formulas(path: Path) -> dict[str, str]:
    """Every formula of a workbook, keyed "Sheet!A1"."""
    from openpyxl import load_workbook

    wb = load_workbook(path)
    out: dict[str, str] = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f" and isinstance(cell.value, str):
                    out[f"{ws.title}!{cell.coordinate}"] = cell.value
    return out


def compute(path: Path) -> tuple[dict[str, Any], set[str]]:
    """What deskmcp stores for each formula when it saves the workbook, and the cells it flags."""
    from openpyxl import load_workbook

    book = Book(load_workbook(path), path, "xlsx", SheetReader())
    values, uncomputed = book.compute()
    flat = {f"{sheet}!{ref}": value for sheet, cells in values.items() for ref, value in cells.items()}
    flagged = {f"{sheet}!{ref}" for sheet, refs in uncomputed.items() for ref in refs}
    return flat, flagged


def recompute_with_libreoffice(paths: list[Path], out: Path, profile: Path) -> dict[str, dict[str, Any]]:
    """The values LibreOffice computes for every formula of `paths` (one soffice run for all)."""
    from openpyxl import load_workbook

    soffice = shutil.which("soffice")
    assert soffice is not None
    subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(out),
            *map(str, paths),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    result: dict[str, dict[str, Any]] = {}
    for path in paths:
        wb = load_workbook(out / path.name, data_only=True)
        found: dict[str, Any] = {}
        for ref in formulas(path):
            sheet, _, cell = ref.partition("!")
            found[ref] = stored(wb[sheet][cell].value)
        result[path.name] = found
    return result


def stored(value: Any) -> Any:
    """A value as the expectations file keeps it: numbers, text, booleans, {"error": code}."""
    if isinstance(value, dt.datetime):
        return (value - EPOCH).total_seconds() / 86400
    if isinstance(value, dt.date):
        return float((value - EPOCH.date()).days)
    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) / 86400
    if isinstance(value, CellError):
        return {"error": value.code}
    if isinstance(value, str) and value.startswith("#") and value.upper() in ERRORS:
        return {"error": value.upper()}
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


ERRORS = ("#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#NULL!")


def same(expected: Any, actual: Any) -> bool:
    actual = stored(actual)
    if isinstance(expected, float) and isinstance(actual, float):
        return math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-9)
    return type(expected) is type(actual) and expected == actual


def compare(expected: dict[str, dict[str, Any]], folder: Path) -> Iterator[tuple[str, str, str, str, Any, Any]]:
    """(workbook, cell, formula, right|wrong|flagged, expected, deskmcp's value) for every formula."""
    for filename, cells in expected.items():
        path = folder / filename
        values, flagged = compute(path)
        texts = formulas(path)
        for ref, want in cells.items():
            if ref in flagged:
                status, got = "flagged", None
            else:
                got = values.get(ref)
                status = "right" if same(want, got) else "wrong"
            yield filename, ref, texts[ref], status, want, got


def functions_of(formula: str) -> list[str]:
    names = {
        n.upper().removeprefix("_XLFN.").removeprefix("_XLWS.") for n in re.findall(r"([A-Za-z_][\w.]*)\s*\(", formula)
    }
    return sorted(names) or ["(operators)"]


def load_expected() -> dict[str, dict[str, Any]]:
    return json.loads(EXPECTED.read_text(encoding="utf-8"))


def expected_from(libreoffice: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """LibreOffice's values with Excel's where LibreOffice lacks the function."""
    out = {name: dict(cells) for name, cells in libreoffice.items()}
    for name, cells in EXCEL_VALUES.items():
        out[name].update(cells)
    return out
