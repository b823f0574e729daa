"""Toolsets: each server's tools in named groups, chosen by configuration.

A toolset is named `server.set` (`vault.read`, `meetings.extra`). Each server module declares
`TOOLSETS` (set -> one line saying what it holds) and `DEFAULT_TOOLSETS`; every tool names its
set when it is registered. `DESKMCP_TOOLSETS` picks what a client sees, as comma-separated words:

- `default`: every server's default toolsets (the default value);
- `all`: everything;
- `vault`: every toolset of one server; `vault.links`: one toolset;
- `-vault.write`: leave one out (any of the forms above, after a minus);
- `dynamic`: the client first sees only `list_toolsets` and `enable_toolset` (plus whatever
  else is named) and enables what it needs; the server announces each change with
  `notifications/tools/list_changed`.

This module is plain data and parsing; `DeskServer` applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from deskmcp.core.errors import BadRequest

DYNAMIC = "dynamic"


@dataclass(frozen=True)
class Toolset:
    id: str
    """`server.set`, e.g. `vault.read`."""
    description: str
    default: bool


@dataclass(frozen=True)
class Selection:
    enabled: frozenset[str]
    dynamic: bool


def declare(server: str, toolsets: Mapping[str, str], defaults: Iterable[str]) -> list[Toolset]:
    """The toolsets of one server module, with ids qualified by the server's name."""
    wanted = set(defaults)
    unknown = wanted - set(toolsets)
    if unknown:
        raise ValueError(f"{server}: default toolsets {sorted(unknown)} are not declared in TOOLSETS")
    return [Toolset(f"{server}.{name}", text, name in wanted) for name, text in toolsets.items()]


def select(
    spec: str | None, toolsets: Iterable[Toolset], absent: Iterable[str] = (), source: str = "DESKMCP_TOOLSETS"
) -> Selection:
    """Parse a `DESKMCP_TOOLSETS` value against the declared toolsets.

    Words about the servers in `absent` (known, but not running in this process) are ignored,
    so one setting serves `serve all` and `serve NAME` alike. `source` is where `spec` came from
    (the variable, or the `--toolsets` flag), named in the error about an unknown word.
    """
    known = {t.id: t for t in toolsets}
    servers = {tid.split(".", 1)[0] for tid in known}
    skipped = set(absent) - servers
    words = [w.strip() for w in (spec or "default").split(",") if w.strip()]
    dynamic = DYNAMIC in words
    enabled: set[str] = set()
    removed: set[str] = set()
    for word in words:
        if word == DYNAMIC:
            continue
        target = removed if word.startswith("-") else enabled
        name = word.removeprefix("-")
        if name.split(".", 1)[0] in skipped:
            continue
        if name == "default":
            target.update(tid for tid, t in known.items() if t.default)
        elif name == "all":
            target.update(known)
        elif name in servers:
            target.update(tid for tid in known if tid.startswith(f"{name}."))
        elif name in known:
            target.add(name)
        else:
            raise BadRequest(
                f"Unknown toolset {name!r} in {source}. Use default, all, dynamic, a server name "
                f"({', '.join(sorted(servers))}) or one of: {', '.join(sorted(known))}.",
                {"toolset": name, "toolsets": sorted(known)},
            )
    if not dynamic and not any(w != DYNAMIC and not w.startswith("-") for w in words):
        enabled.update(tid for tid, t in known.items() if t.default)  # only removals: from the default
    return Selection(frozenset(enabled - removed), dynamic)
