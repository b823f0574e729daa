"""Colours as the format tools take them: `#RRGGBB`, `#RGB` or a common name, to `RRGGBB`."""

from __future__ import annotations

import re

from deskmcp.core.errors import BadRequest

NAMED = {
    "black": "000000",
    "white": "FFFFFF",
    "red": "FF0000",
    "dark_red": "C00000",
    "green": "00B050",
    "dark_green": "006100",
    "blue": "0070C0",
    "dark_blue": "1F4E79",
    "navy": "000080",
    "yellow": "FFFF00",
    "orange": "FFA500",
    "purple": "7030A0",
    "pink": "FFC0CB",
    "brown": "A52A2A",
    "teal": "008080",
    "gray": "808080",
    "grey": "808080",
    "dark_gray": "404040",
    "dark_grey": "404040",
    "light_gray": "D9D9D9",
    "light_grey": "D9D9D9",
    "light_blue": "DDEBF7",
    "light_green": "E2EFDA",
    "light_yellow": "FFF2CC",
    "light_red": "FFC7CE",
}


def parse_color(text: str, field: str) -> str:
    """`RRGGBB` (upper case) for `#RRGGBB`, `RRGGBB`, `#RGB` or a name in `NAMED`; `bad_request` else."""
    value = text.strip()
    name = re.sub(r"[\s-]+", "_", value.lower())
    if name in NAMED:
        return NAMED[name]
    hexa = value.removeprefix("#")
    if re.fullmatch(r"[0-9A-Fa-f]{6}", hexa):
        return hexa.upper()
    if re.fullmatch(r"[0-9A-Fa-f]{3}", hexa):
        return "".join(ch * 2 for ch in hexa).upper()
    raise BadRequest(
        f"{field}: {text!r} is not a colour. Give '#RRGGBB' (e.g. '#1F4E79') or one of: {', '.join(NAMED)}.",
        {"field": field, "value": text},
    )
