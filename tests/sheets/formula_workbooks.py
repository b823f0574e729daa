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
    "SUM": ["SUM({x})", "SUM({x},1)"],
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
    "SUMPRODUCT": ["SUMPRODUCT({x},Inputs!B1)"],
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
    "MATCH": ["MATCH({x},Inputs!A1:A5,0)", "MATCH(3,Inputs!B1:B5,{x})"],
    "INDEX": ["INDEX(Inputs!B1:C5,{x},1)", "INDEX(Inputs!B1:C5,2,{x})"],
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
}
# LibreOffice 7 lacks XLOOKUP (it came in 24.8): its cases are in the sales report with Excel's values.
EDGE_EXEMPT = {"XLOOKUP"}


def functions() -> dict[str, Sheet]:
    """`EDGE_CALLS`, one row per call and one column per edge input."""
    from deskmcp.sheets.formulas.prefixes import excel_prefixes

    inputs: Sheet = {"A1": -2.5, "A2": 0, "A3": "abc", "A5": "=1/0"}
    _rows(inputs, "B1", [[1, "a"], [2, "b"], [3, "c"], [4, "d"], [5, "e"]])
    _rows(inputs, "E1", [[1, 2, 3, 4, 5], ["a", "b", "c", "d", "e"]])
    _rows(inputs, "D1", [[D(2024, 3, 15)], [D(2024, 4, 2)]])
    calls: Sheet = {"A1": "call", **{f"{_letters(2 + i)}1": kind for i, kind in enumerate(EDGE_INPUTS)}}
    row = 2
    for name in sorted(EDGE_CALLS):
        for template in EDGE_CALLS[name]:
            calls[f"A{row}"] = template
            if "{x}" not in template:
                calls[f"B{row}"] = excel_prefixes("=" + template)
            else:
                for i, ref in enumerate(EDGE_INPUTS.values()):
                    calls[f"{_letters(2 + i)}{row}"] = excel_prefixes("=" + template.replace("{x}", ref))
            row += 1
    return {"Calls": calls, "Inputs": inputs}


WORKBOOKS = {
    "budget.xlsx": budget,
    "invoice.xlsx": invoice,
    "sales.xlsx": sales,
    "timesheet.xlsx": timesheet,
    "edges.xlsx": edges,
    "functions.xlsx": functions,
}

NAMES = {"budget.xlsx": {"Q1Total": "Costs!$E$9", "TaxRate": "Plan!$B$4"}, "timesheet.xlsx": {"Rate": "Settings!$B$1"}}

# Cells whose expected value is Excel's, not LibreOffice 7's: XLOOKUP came to LibreOffice in 24.8,
# and LibreOffice has no boolean type (TRUE is the number 1 to it), where Excel documents that
# SUM, COUNT and AVERAGE skip booleans in references, count typed "3" and TRUE, order booleans
# after numbers and write TRUE as text. Excel also gives #REF! for a VLOOKUP column past the
# table and writes exponents with two digits.
EXCEL_VALUES: dict[str, dict[str, Any]] = {
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
    names = {n.upper().removeprefix("_XLFN.") for n in re.findall(r"([A-Za-z_][\w.]*)\s*\(", formula)}
    return sorted(names) or ["(operators)"]


def load_expected() -> dict[str, dict[str, Any]]:
    return json.loads(EXPECTED.read_text(encoding="utf-8"))


def expected_from(libreoffice: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """LibreOffice's values with Excel's where LibreOffice lacks the function."""
    out = {name: dict(cells) for name, cells in libreoffice.items()}
    for name, cells in EXCEL_VALUES.items():
        out[name].update(cells)
    return out
