"""The render worker: a child process running mermaid.js (via mermaidx) under a memory limit.

It reads one JSON request per line on stdin and answers one JSON line on stdout:

- `{"op": "validate", "code": ...}` -> `{"ok": true, "diagram_type": ...}`
- `{"op": "render", "code": ..., "format": "png"|"svg", "max_pixels": N}`
  -> `{"ok": true, "data": base64, "width": w, "height": h, "scaled": bool, "diagram_type": ...}`

A failure is `{"ok": false, "kind": "syntax"|"unsupported"|"memory"|"error", "message": ..., "line": n}`.
Every answer carries `rss_mb` so the parent can retire a worker that has grown. Anything the
renderer prints goes to stderr: stdout belongs to the protocol.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import resource
import struct
import sys
from pathlib import Path
from typing import Any

PARSE_JS = """
globalThis.__parseResult = null; globalThis.__parseError = null;
mermaid.parse(%s).then(r => { globalThis.__parseResult = JSON.stringify(r); }).catch(e => {
  globalThis.__parseError = JSON.stringify({name: e && e.name, message: String((e && e.message) || e),
                                             hash: (e && e.hash) || null});
});
"""
_LINE = re.compile(r"\bline (\d+)", re.IGNORECASE)
_VIEWBOX = re.compile(r'viewBox="\s*[-\d.eE]+[\s,]+[-\d.eE]+[\s,]+([\d.eE]+)[\s,]+([\d.eE]+)\s*"')


def diagram_keyword(code: str) -> str | None:
    """The first word of the diagram (after frontmatter, directives and comments)."""
    lines = code.splitlines()
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].strip() == "---":
        i += 1
        while i < len(lines) and lines[i].strip() != "---":
            i += 1
        i += 1
    for line in lines[i:]:
        text = line.strip()
        if not text or text.startswith("%%"):
            continue
        return text.split()[0].rstrip(":;")
    return None


def _line_of(message: str, hash_: Any) -> int | None:
    match = _LINE.search(message)
    if match:
        return int(match.group(1))
    if isinstance(hash_, dict):
        loc = hash_.get("loc")
        if isinstance(loc, dict) and isinstance(loc.get("first_line"), int):
            return loc["first_line"]
    return None


def _syntax_error(code: str, message: str, mermaid_line: int | None) -> dict[str, Any]:
    """The failure for a diagram mermaid.js could not parse, with the line in the user's code."""
    line = code_line(code, mermaid_line)
    return {
        "ok": False,
        "kind": "syntax",
        "message": with_line(message, line),
        "line": line,
        "mermaid_line": mermaid_line,
    }


def with_line(message: str, line: int | None) -> str:
    """Mermaid's message with its "line N" made the line of the code given, so the message and
    the `line` field say the same (Mermaid counts after the frontmatter, and its flowchart
    parser points past the last line)."""
    if line is None:
        return message
    return _LINE.sub(lambda match: f"{match.group(0)[: -len(match.group(1))]}{line}", message, count=1)


def _frontmatter_lines(lines: list[str]) -> int:
    """How many lines a leading `---` frontmatter block takes (Mermaid numbers lines after it)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return i + 1
    return 0


def code_line(code: str, mermaid_line: int | None) -> int | None:
    """Mermaid's line as a line of `code`: counted after the frontmatter, as Mermaid does, and
    kept within the diagram (its flowchart parser reports errors found at the end of the input
    on a line past the last one)."""
    if mermaid_line is None:
        return None
    lines = code.splitlines()
    offset = _frontmatter_lines(lines)
    body = lines[offset:]
    while body and not body[-1].strip():
        body.pop()
    return offset + max(1, min(mermaid_line, len(body) or 1))


def _rss_mb() -> float:
    try:
        with Path("/proc/self/status").open(encoding="utf-8") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Worker:
    def __init__(self) -> None:
        from mermaidx.engines.quickjs_engine import Engine

        self.engine = Engine()
        self.engine.start()

    def parse(self, code: str) -> dict[str, Any]:
        engine = self.engine

        def run() -> tuple[Any, Any]:
            engine._ensure_fresh_context()
            ctx = engine._ctx
            assert ctx is not None
            ctx.eval(PARSE_JS % json.dumps(code))
            while engine._run_job():
                pass
            return ctx.eval("__flat(globalThis.__parseResult)"), ctx.eval("__flat(globalThis.__parseError)")

        executor = engine._executor
        assert executor is not None
        result, error = executor.submit(run).result()
        if error:
            failure = json.loads(error)
            message = str(failure.get("message") or "Mermaid could not parse the diagram.")
            if failure.get("name") == "UnknownDiagramError" or message.startswith("No diagram type detected"):
                keyword = diagram_keyword(code)
                return {
                    "ok": False,
                    "kind": "unsupported",
                    "diagram_type": keyword,
                    "message": f"The offline renderer (mermaid.js 11) does not know the diagram type {keyword!r}.",
                }
            return _syntax_error(code, message, _line_of(message, failure.get("hash")))
        parsed = json.loads(result) if result else {}
        return {"ok": True, "diagram_type": parsed.get("diagramType")}

    def render(self, code: str, fmt: str, max_pixels: int) -> dict[str, Any]:
        from mermaidx.engines._common import MermaidRenderError
        from mermaidx.raster import render_png

        checked = self.parse(code)
        if not checked["ok"]:
            return checked
        try:
            svg = self.engine.render_svg(code, "default", None, None)
        except MermaidRenderError as exc:
            message = str(exc).removeprefix("Error: ")
            return _syntax_error(code, message, _line_of(message, None))
        width, height = _svg_size(svg)
        scaled = False
        if fmt == "svg":
            data = svg.encode("utf-8")
        else:
            target_width: float | None = None
            if width and height and width * height > max_pixels:
                factor = math.sqrt(max_pixels / (width * height))
                target_width = max(1.0, math.floor(width * factor))
                # the rasteriser rounds the height up: keep the product under the cap all the same
                while target_width > 1 and target_width * math.ceil(height * target_width / width + 1) > max_pixels:
                    target_width -= 1
                scaled = True
            data = render_png(svg, background="white", width=target_width)
            width, height = _png_size(data) or (width, height)
        return {
            "ok": True,
            "data": base64.b64encode(data).decode(),
            "width": round(width) if width else None,
            "height": round(height) if height else None,
            "scaled": scaled,
            "diagram_type": checked.get("diagram_type"),
        }


def _svg_size(svg: str) -> tuple[float | None, float | None]:
    match = _VIEWBOX.search(svg[:4000])
    if not match:
        return None, None
    return float(match.group(1)), float(match.group(2))


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def handle(worker: Worker, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    code = str(request.get("code", ""))
    if op == "validate":
        return worker.parse(code)
    if op == "render":
        return worker.render(code, str(request.get("format", "png")), int(request.get("max_pixels", 16_000_000)))
    return {"ok": False, "kind": "error", "message": f"unknown op {op!r}"}


def main(argv: list[str]) -> int:
    memory_mb = int(argv[argv.index("--memory-mb") + 1]) if "--memory-mb" in argv else 0
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the renderer prints lands on stderr
    try:
        worker = Worker()
    except MemoryError:
        protocol.write(json.dumps({"ready": False, "kind": "memory"}) + "\n")
        protocol.flush()
        return 1
    protocol.write(json.dumps({"ready": True}) + "\n")
    protocol.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(worker, json.loads(line))
        except MemoryError:
            answer = {"ok": False, "kind": "memory", "message": "out of memory"}
        except Exception as exc:  # outermost handler: report, keep serving
            answer = {"ok": False, "kind": "error", "message": f"{type(exc).__name__}: {exc}"}
        answer["rss_mb"] = round(_rss_mb(), 1)
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
