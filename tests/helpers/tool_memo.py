"""Tools built once per test session, not once per server a test builds.

Registering a tool makes the MCP SDK derive its input and output schemas from the function's
signature and return type (`Tool.from_function`: pydantic models and their JSON schemas, about
0.1 CPU-second for a server's tools). A server's tools are closures over its service, so every
server a test builds registers functions with the same code and signature again, and the suite
builds thousands. `remember_tools` makes later registrations of the same code, signature and
registration arguments a copy of the first tool bound to their own function: the schemas are
the ones the SDK derived, and the call still reaches this server's own closure.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver.tools import Tool

_built: dict[tuple[Any, ...], Tool] = {}


def _key(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    code = getattr(fn, "__code__", None)
    if code is None or args:
        return None  # a callable object or a positional call: not worth guessing, build it
    try:
        signature = repr(inspect.signature(fn))
    except (TypeError, ValueError):
        return None
    # Defaults shown by identity (`<object at 0x...>`) never match another build: no false hit.
    return (code, getattr(fn, "__module__", None), signature, repr(sorted(kwargs.items())))


@contextmanager
def remember_tools() -> Iterator[None]:
    """While active, `Tool.from_function` builds each distinct tool once (see the module)."""
    original = Tool.__dict__["from_function"]
    build = original.__func__

    def from_function(cls: type[Tool], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Tool:
        key = _key(fn, args, kwargs)
        if key is None:
            return build(cls, fn, *args, **kwargs)
        first = _built.get(key)
        if first is None:
            first = _built[key] = build(cls, fn, *args, **kwargs)
        return first.model_copy(update={"fn": fn, "parameters": copy.deepcopy(first.parameters)})

    Tool.from_function = classmethod(from_function)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Tool.from_function = original  # type: ignore[method-assign]
