"""YAML frontmatter that survives being read and written back.

The one frontmatter reader: the vault's notes and the documents server's Markdown files are
read by `split` and `parse`, so a value means the same thing in both. Values are parsed with
PyYAML under YAML 1.2 core rules (Obsidian's): `09:30` and `12:30` stay strings (no YAML 1.1
sexagesimal numbers), `yes`/`no` stay strings, `0755` is 755, and dates come back as ISO
strings, so every value is plain JSON (a whole number beyond 64 bits comes back as its digits).
Strings are written quoted wherever either YAML 1.2 or 1.1 would read them as something else.

Edits never re-dump the whole block. The text is cut into one segment per top-level key
(with its continuation lines) plus comment and blank lines between them; a changed key's
segment is re-rendered, every other line is kept exactly as written. If the result does
not parse back to the wanted values (an exotic layout we could not cut), the block is
rendered afresh instead: correct values come before preserved formatting.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from deskmcp.core.errors import ParseError

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MAX_VALUES = 100_000  # alias bombs expand exponentially when turned into JSON
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_KEY_LINE = re.compile(r"^[^\s#\-]")


# libyaml's parser when PyYAML was built with it (about 10x faster); the same safe constructor.
_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeBase):
    """SafeLoader with YAML 1.2 core scalars instead of YAML 1.1's."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Loader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _construct_int(loader: _Loader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if digits.startswith("0x"):
        return sign * int(digits[2:], 16)
    if digits.startswith("0o"):
        return sign * int(digits[2:], 8)
    return sign * int(digits, 10)


def _construct_timestamp(loader: _Loader, node: yaml.Node) -> str:
    value = loader.construct_yaml_timestamp(node)  # type: ignore[arg-type]
    return value.isoformat()


_Loader.add_constructor(_INT, _construct_int)
_Loader.add_constructor(_TIMESTAMP, _construct_timestamp)


class _Core(yaml.resolver.Resolver):
    """What `_Loader` reads a plain scalar as (its YAML 1.2 core resolvers, without a parser)."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


_CORE = _Core()
_STR = "tag:yaml.org,2002:str"


class SafeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper with strings quoted wherever either reading of them, YAML 1.1 (the
    dumper's own) or YAML 1.2 core (`_Loader`'s, Obsidian's), would take them for something else:
    `1e3`, `0o17` or `12e45` are plain strings to YAML 1.1 but numbers to 1.2, and `yes` or
    `09:30` the other way round. Multi-line strings are written as literal blocks."""


_BREAKS = re.compile("[\r\x85\u2028\u2029]")
"""Line breaks to YAML besides LF: only a double-quoted string keeps them (escaped)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if _BREAKS.search(value):
        return dumper.represent_scalar(_STR, value, style='"')
    if "\n" in value:
        return dumper.represent_scalar(_STR, value, style="|")
    if _CORE.resolve(yaml.ScalarNode, value, (True, False)) != _STR:
        return dumper.represent_scalar(_STR, value, style="'")
    return dumper.represent_str(value)


SafeDumper.add_representer(str, _represent_str)


class _Dumper(SafeDumper):
    """Renders new values the way Obsidian writes them: indented lists, plain dates."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


@dataclass(frozen=True)
class Split:
    """A note's text cut into BOM, frontmatter fences, YAML text and body."""

    bom: str
    opening: str
    yaml_text: str
    closing: str
    body: str

    @property
    def has_block(self) -> bool:
        return bool(self.opening)

    @property
    def newline(self) -> str:
        return "\r\n" if self.opening.endswith("\r\n") else "\n"

    def text(self) -> str:
        return self.bom + self.opening + self.yaml_text + self.closing + self.body

    def with_yaml(self, yaml_text: str) -> Split:
        """The same note with new frontmatter text (the block is dropped when it is empty)."""
        if not yaml_text.strip():
            return Split(self.bom, "", "", "", self.body)
        opening = self.opening or "---\n"
        closing = self.closing or "---" + self.newline
        if not closing.endswith(("\n", "\r")):  # a note that ended right after its frontmatter
            closing += self.newline
        return Split(self.bom, opening, yaml_text, closing, self.body)

    def with_body(self, body: str) -> Split:
        """The same note with a new body (after the closing fence's line break, which a note
        that ended right after its frontmatter gets now, so the body stays out of the block)."""
        closing = self.closing
        if body and closing and not closing.endswith(("\n", "\r")):
            closing += self.newline
        return Split(self.bom, self.opening, self.yaml_text, closing, body)


def split(text: str) -> Split:
    """Cut a note into frontmatter and body. An unclosed block is body, as in Obsidian."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    rest = text[len(bom) :]
    lines = rest.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---" or not lines[0].endswith("\n"):
        return Split(bom, "", "", "", rest)
    offset = len(lines[0])
    for line in lines[1:]:
        if line.rstrip("\r\n").rstrip() in ("---", "..."):
            yaml_text = rest[len(lines[0]) : offset]
            return Split(bom, lines[0], yaml_text, line, rest[offset + len(line) :])
        offset += len(line)
    return Split(bom, "", "", "", rest)


def jsonable(value: Any, budget: list[int] | None = None) -> Any:
    """Turn what YAML produced into plain JSON values (string keys, no bytes or sets)."""
    budget = budget if budget is not None else [_MAX_VALUES]
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("too many values")
    if isinstance(value, dict):
        return {("" if k is None else str(k)): jsonable(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, budget) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v, budget) for v in value), key=str)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):
        return _json_int(value)
    if value is None or isinstance(value, str | float | bool):
        return value
    return str(value)


_INT_RANGE = range(-(2**63), 2**64)
"""The whole numbers JSON libraries (orjson among them) and most clients take as numbers."""


def _json_int(value: int) -> int | str:
    """`value`, or its digits as a string beyond 64 bits (an id, a phone number written long)."""
    return value if value in _INT_RANGE else str(value)


# The common shape of frontmatter, read without the YAML machinery: top-level `key: value`
# lines, `key: [a, b]` and `key:` followed by `- item` lines, every value a single-line
# scalar that is quoted without escapes, a plain word-led string, a whole number, a date or
# a time of day. Anything else (comments, tabs, nesting, multi-line scalars, a leading
# indicator, `: ` or ` #` inside a value...) returns None and goes to the YAML parser. The
# scalar rules are the YAML 1.2 core ones `_Loader` applies; tests check that both agree.
_NOT_PRINTABLE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
_LEAD = rf"(?![{_NOT_PRINTABLE}])[A-Za-z\u00a0-\U0010ffff]"
_QUOTED = rf"\"[^\"\\\t{_NOT_PRINTABLE}]*\"|'[^'\t{_NOT_PRINTABLE}]*'"
_NUMERIC = r"[0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{1,2}(?::[0-9]{2}){1,2}"
_PLAIN = rf"{_LEAD}(?:[^:#\t{_NOT_PRINTABLE}]|:(?=[^\s]))*"
_SCALAR = re.compile(rf"{_PLAIN}|{_QUOTED}|{_NUMERIC}")
_FLOW_ITEM = re.compile(rf" *({_LEAD}[^:#,\[\]{{}}\t{_NOT_PRINTABLE}]*|{_QUOTED}|{_NUMERIC}) *(,|\Z)")
_ENTRY = re.compile(rf"({_PLAIN}):(?: +(.*?))? *")
_ITEM = re.compile(r"( *)- +(.*?) *")
_WORDS: dict[str, Any] = {
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys(("null", "Null", "NULL"), None),
}


class _NotSimple(Exception):
    """The frontmatter is not in the common shape: the YAML parser reads it."""


def _scalar(text: str) -> Any:
    """A scalar `_SCALAR` matched, as `_Loader` constructs it."""
    first = text[0]
    if first in "\"'":
        return text[1:-1]
    if "0" <= first <= "9":
        if ":" in text:
            return text  # a time of day stays a string under YAML 1.2
        try:
            if len(text) == 10 and text[4] == "-":
                return dt.date(int(text[:4]), int(text[5:7]), int(text[8:])).isoformat()
            return _json_int(int(text))
        except ValueError:  # an impossible date, a number too long to convert: YAML's error
            raise _NotSimple from None
    text = text.rstrip(" ")
    return _WORDS.get(text, text)


def _value(text: str) -> Any:
    """The value after `key: ` or `- `: one scalar, or a one-line list of scalars."""
    if not text.startswith("["):
        if _SCALAR.fullmatch(text) is None:
            raise _NotSimple
        return _scalar(text)
    if not text.endswith("]"):
        raise _NotSimple
    inner = text[1:-1]
    items: list[Any] = []
    at = 0
    while inner.strip(" "):
        found = _FLOW_ITEM.match(inner, at)
        if found is None:
            raise _NotSimple
        items.append(_scalar(found.group(1)))
        at = found.end()
        if not found.group(2):
            break
        if not inner[at:].strip(" "):
            raise _NotSimple  # a trailing comma
    return items


def _parse_simple(yaml_text: str) -> dict[str, Any] | None:
    """The values of frontmatter in the common shape, None when it is not (see above)."""
    if "\t" in yaml_text or "\r" in yaml_text:
        return None
    values: dict[str, Any] = {}
    items: list[Any] | None = None  # the list of the last `key:` written without a value
    opened: list[str] = []
    indent = -1
    try:
        for line in yaml_text.split("\n"):
            if not line.strip(" "):
                continue
            if line[0] in " -":
                item = _ITEM.fullmatch(line) if items is not None else None
                if item is None or indent not in (-1, len(item.group(1))):
                    return None
                indent = len(item.group(1))
                items.append(_value(item.group(2)))  # type: ignore[union-attr]
                continue
            entry = _ENTRY.fullmatch(line)
            if entry is None:
                return None
            key = entry.group(1).rstrip(" ")
            if key in _WORDS or key in values or len(key) > 1000:
                return None
            items, indent = None, -1
            if not entry.group(2):
                items = values[key] = []
                opened.append(key)
            else:
                values[key] = _value(entry.group(2))
    except _NotSimple:
        return None
    for key in opened:
        if not values[key]:
            values[key] = None  # `key:` with no item under it
    return values


def parse(yaml_text: str, label: str) -> dict[str, Any]:
    """The frontmatter's values. Corrupt YAML is a ParseError naming `label` and the file line."""
    simple = _parse_simple(yaml_text)
    return simple if simple is not None else _parse_yaml(yaml_text, label)


def _parse_yaml(yaml_text: str, label: str) -> dict[str, Any]:
    try:
        loaded = yaml.load(yaml_text, Loader=_Loader)  # a SafeLoader subclass
        values = jsonable(loaded)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else None  # +1 for 1-based, +1 for the opening ---
        problem = exc.problem or exc.context or "invalid YAML"
        where = f" line {line}" if line else ""
        raise ParseError(
            f"The frontmatter of {label} is not valid YAML ({problem}) at{where or ' an unknown line'}. "
            "Fix it in the note; its body is still readable.",
            {"path": label, "line": line, "problem": problem},
        ) from exc
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise ParseError(
            f"The frontmatter of {label} could not be read ({exc.__class__.__name__}). Fix it in the note.",
            {"path": label, "line": None},
        ) from exc
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ParseError(
            f"The frontmatter of {label} is not a set of key: value pairs (line 2).",
            {"path": label, "line": 2},
        )
    return values


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: `true` is not `1`, and key order inside maps does not matter. A
    whole number beyond 64 bits compares as the string it is read as (`jsonable`)."""
    try:
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return orjson.dumps(jsonable(a), option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            jsonable(b), option=orjson.OPT_SORT_KEYS
        )


def _as_yaml_value(value: Any) -> Any:
    """ISO date strings become dates again, so they are written plain (`2024-01-05`), not quoted."""
    if isinstance(value, str) and _ISO_DATE.match(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [_as_yaml_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_yaml_value(v) for k, v in value.items()}
    return value


def render(values: dict[str, Any], newline: str = "\n") -> str:
    """Fresh YAML for `values`, keys in the given order."""
    if not values:
        return ""
    text = yaml.dump(
        _as_yaml_value(values),
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=10_000,
    )
    return text.replace("\n", newline) if newline != "\n" else text


@dataclass
class _Segment:
    key: str | None
    text: str


def _segments(yaml_text: str) -> list[_Segment] | None:
    """One segment per top-level key (with its continuation lines), trivia between them.

    None when the text cannot be cut reliably (each key segment must parse to one key).
    """
    raw: list[list[str]] = [[]]
    for line in yaml_text.splitlines(keepends=True):
        if _KEY_LINE.match(line):
            raw.append([line])
        else:
            raw[-1].append(line)
    out: list[_Segment] = []
    for index, lines in enumerate(raw):
        if index == 0:
            if lines:
                out.append(_Segment(None, "".join(lines)))
            continue
        # Trailing blank lines and column-0 comments belong to what follows, not to this key.
        cut = len(lines)
        while cut > 1 and (not lines[cut - 1].strip() or lines[cut - 1].startswith("#")):
            cut -= 1
        text = "".join(lines[:cut])
        try:
            parsed = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
        except yaml.YAMLError:
            return None
        if not isinstance(parsed, dict) or len(parsed) != 1:
            return None
        out.append(_Segment(str(next(iter(parsed))), text))
        if cut < len(lines):
            out.append(_Segment(None, "".join(lines[cut:])))
    return out


def update(yaml_text: str, current: dict[str, Any], wanted: dict[str, Any], label: str) -> str:
    """YAML text holding `wanted`, changing only the lines of keys whose value changed.

    `current` is what `yaml_text` parses to. Unchanged keys keep their lines byte for byte
    (order, quoting, comments); removed keys lose theirs; new keys are added at the end.
    """
    if same(current, wanted):
        return yaml_text
    newline = "\r\n" if "\r\n" in yaml_text else "\n"
    segments = _segments(yaml_text)
    if segments is None:
        return render(wanted, newline)
    out: list[str] = []
    seen: set[str] = set()
    for segment in segments:
        if segment.key is None:
            out.append(segment.text)
            continue
        if segment.key not in wanted or segment.key in seen:
            continue
        seen.add(segment.key)
        if segment.key in current and same(current[segment.key], wanted[segment.key]):
            out.append(segment.text if segment.text.endswith("\n") else segment.text + newline)
        else:
            out.append(render({segment.key: wanted[segment.key]}, newline))
    for key, value in wanted.items():
        if key not in seen:
            if out and not out[-1].endswith("\n"):
                out.append(newline)
            out.append(render({key: value}, newline))
    result = "".join(out)
    try:
        check = parse(result, label)
    except ParseError:
        return render(wanted, newline)
    return result if same(check, wanted) else render(wanted, newline)
