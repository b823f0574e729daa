"""The tokens of a formula's text (strings, references, spill references such as `D1#`, function
calls, names, numbers, errors, operators), read by the engine, the dependency index and the
prefixes alike."""

from __future__ import annotations

import re

from deskmcp.sheets.formulas.values import Uncomputable

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"]|"")*")
  | (?P<array>\{(?:"(?:[^"]|"")*"|[^{}"])*\})
  | (?P<spill>(?:(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?\$?[A-Za-z]{1,3}\$?\d+\#)
  | (?P<ref>(?:(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?
        (?:\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}))(?![\w(.!])
  | (?P<func>[A-Za-z_][\w.]*)\s*\(
  | (?P<bool>TRUE|FALSE)(?![\w(.])
  | (?P<name>[A-Za-z_\\][\w.]*)(?![\w(!])
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<error>\#(?:DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A|NULL!|SPILL!|CALC!))
  | (?P<op><>|<=|>=|[-+*/^&=<>%(),;])
    )""",
    re.VERBOSE | re.IGNORECASE,
)


def tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Uncomputable(f"cannot read the formula near {text[pos : pos + 12]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out
