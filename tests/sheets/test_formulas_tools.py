"""Formulas written through the tools read back with Excel's values, or listed as uncomputed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tool_calls import Connect, call
from tests.helpers.workbooks import make_xlsx

pytestmark = pytest.mark.anyio


async def test_formulas_written_with_update_values_read_back_as_excel_computes_them(
    root: Path, connect: Connect
) -> None:
    make_xlsx(root / "team.xlsx", {"People": [["name", "hours"], ["Fiona", 10], ["Frank", "42"], ["bob", 5]]})
    formulas = [
        ['=COUNTIF(A:A,"F*")', "=SUM(B3)", '=COUNTIF(B:B,">4")', "=ROUND(1.005,2)"],
        [
            '=VLOOKUP("frank",A2:B4,2,FALSE)',
            '=TEXT(DATE(2024,3,15),"d mmm yyyy")',
            "=0.1+0.2=0.3",
            '=CONVERT(1,"m","cm")',
        ],
    ]
    async with connect() as c:
        await call(c, "update_values", {"spreadsheet_id": "team.xlsx", "range": "People!D1", "values": formulas})
        out = await call(c, "read_values", {"spreadsheet_id": "team.xlsx", "ranges": ["People!D1:G2"]})
    assert out["ranges"][0]["values"] == [[2, 0, 2, 1.01], ["42", "15 Mar 2024", True]]
    assert out["ranges"][0]["uncomputed"] == ["People!G2"]
