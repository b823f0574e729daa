"""Rendering Mermaid: offline in a worker process (default), or through Kroki (`DIAGRAMS_KROKI_URL`).

The offline renderer runs mermaid.js in a child process (`render_worker`) that is reused between
renders, limited in address space, stopped when a render runs past the time limit and replaced
when it has grown, so the server itself never blocks on, or grows with, a diagram.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import re
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Protocol

from deskmcp.core.errors import BadRequest, DeskError, ExternalServiceError, Timeout
from deskmcp.diagrams.models import MermaidCheck

if TYPE_CHECKING:
    import httpx2

    from deskmcp.diagrams.settings import DiagramsSettings

log = logging.getLogger("deskmcp.diagrams")

STARTUP_TIMEOUT = 120.0
"""Loading mermaid.js takes about a second; a loaded machine may need far more."""
MAX_RENDERS_PER_WORKER = 200


@dataclass(frozen=True)
class Image:
    data: bytes
    width: int | None
    height: int | None
    diagram_type: str | None
    scaled: bool = False


class Renderer(Protocol):
    name: str
    concurrency: int
    """How many renders it can usefully run at once."""

    def render(self, code: str, fmt: str) -> Image: ...

    def validate(self, code: str) -> MermaidCheck: ...

    def close(self) -> None: ...


def make_renderer(settings: DiagramsSettings) -> Renderer:
    if settings.kroki_base_url:
        return KrokiRenderer(settings)
    return OfflineRenderer(settings)


def syntax_error(message: str, line: int | None) -> BadRequest:
    """`line` counts from the first line of the code given (frontmatter included)."""
    where = f" at line {line} of the code" if line else ""
    return BadRequest(
        f"The Mermaid diagram is not valid{where}. Mermaid says: {message}\nFix it and call render_mermaid again.",
        {"line": line, "mermaid_message": message},
    )


def unsupported_type(keyword: str | None) -> BadRequest:
    return BadRequest(
        f"The offline renderer does not support the diagram type {keyword!r}. "
        "Use another diagram type, or set DIAGRAMS_KROKI_URL to render through Kroki.",
        {"diagram_type": keyword, "renderer": "offline"},
    )


# -- offline -----------------------------------------------------------------------------------


class WorkerCrashed(Exception):
    def __init__(self, returncode: int | None, reason: str = "") -> None:
        super().__init__(reason or f"worker exited with {returncode}")
        self.returncode = returncode
        self.reason = reason


class RenderWorker:
    """One child process speaking the worker's JSON-lines protocol."""

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.renders = 0
        self.rss_mb = 0.0
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self._out: IO[bytes] = self.process.stdout
        self._in: IO[bytes] = self.process.stdin
        hello = self._read(STARTUP_TIMEOUT)
        if not hello.get("ready"):
            self.stop()
            raise WorkerCrashed(self.process.returncode, str(hello.get("kind", "not ready")))

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._out], [], [], remaining)
            if ready:
                break
        line = self._out.readline()
        if not line:
            self.process.wait()
            raise WorkerCrashed(self.process.returncode)
        return json.loads(line)

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            self._in.write(json.dumps(request).encode() + b"\n")
            self._in.flush()
        except (BrokenPipeError, OSError) as exc:
            self.process.wait()
            raise WorkerCrashed(self.process.returncode) from exc
        answer = self._read(timeout)
        self.renders += 1
        self.rss_mb = float(answer.get("rss_mb") or 0.0)
        return answer

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self._in, self._out):
            with contextlib.suppress(OSError):
                stream.close()


class OfflineRenderer:
    """mermaid.js in a reusable worker process, one diagram at a time, within time and memory limits."""

    name = "offline"
    concurrency = 1  # one worker process, one diagram at a time

    def __init__(self, settings: DiagramsSettings, command: list[str] | None = None) -> None:
        self.timeout = settings.render_timeout
        self.memory_mb = settings.render_memory_mb
        self.max_pixels = settings.max_png_pixels
        self.command = command or [
            sys.executable,
            "-m",
            "deskmcp.diagrams.render_worker",
            "--memory-mb",
            str(self.memory_mb),
        ]
        self._worker: RenderWorker | None = None
        self._lock = threading.Lock()

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            worker = self._worker
            if worker is None or not worker.alive:
                try:
                    worker = self._worker = RenderWorker(self.command)
                except (WorkerCrashed, TimeoutError, OSError) as exc:
                    self._worker = None
                    raise ExternalServiceError(
                        "The Mermaid renderer could not start "
                        f"({exc}); check DIAGRAMS_RENDER_MEMORY_MB (now {self.memory_mb}) or set DIAGRAMS_KROKI_URL.",
                        {"renderer": "offline"},
                    ) from exc
            try:
                answer = worker.ask(request, self.timeout)
            except TimeoutError as exc:
                worker.stop()
                self._worker = None
                raise self._too_slow(str(request["op"])) from exc
            except WorkerCrashed as exc:
                worker.stop()
                self._worker = None
                raise self._too_big() from exc
            if worker.renders >= MAX_RENDERS_PER_WORKER or worker.rss_mb > self.memory_mb / 2:
                worker.stop()  # memory goes back to the OS; the next call starts afresh
                self._worker = None
        if not answer.get("ok"):
            kind = answer.get("kind")
            if kind == "memory":
                raise self._too_big()
            if kind == "unsupported":
                raise unsupported_type(answer.get("diagram_type"))
            if kind == "syntax":
                raise syntax_error(str(answer.get("message")), answer.get("line"))
            raise ExternalServiceError(f"The Mermaid renderer failed: {answer.get('message')}", {"renderer": "offline"})
        return answer

    def _too_slow(self, op: str) -> Timeout:
        """The timeout of a render or a validation, naming which one ran out of time."""
        details = {"operation": op, "timeout_seconds": self.timeout}
        if op == "validate":
            return Timeout(
                f"Validating the diagram (a syntax check, no image) took longer than {self.timeout:g} s and "
                "was stopped: Mermaid parses the whole diagram to check it, so a very large one is slow. "
                "Split it into smaller diagrams and validate each, or raise DIAGRAMS_RENDER_TIMEOUT "
                "(it limits validations too).",
                details,
            )
        return Timeout(
            f"Rendering took longer than {self.timeout:g} s and was stopped. Simplify or split the "
            "diagram, or raise DIAGRAMS_RENDER_TIMEOUT.",
            details,
        )

    def _too_big(self) -> BadRequest:
        return BadRequest(
            f"The diagram needs more memory than the renderer may use ({self.memory_mb} MiB). "
            "Split or simplify it, or raise DIAGRAMS_RENDER_MEMORY_MB.",
            {"memory_mb": self.memory_mb},
        )

    def render(self, code: str, fmt: str) -> Image:
        answer = self._ask({"op": "render", "code": code, "format": fmt, "max_pixels": self.max_pixels})
        return Image(
            data=base64.b64decode(answer["data"]),
            width=answer.get("width"),
            height=answer.get("height"),
            diagram_type=answer.get("diagram_type"),
            scaled=bool(answer.get("scaled")),
        )

    def validate(self, code: str) -> MermaidCheck:
        try:
            answer = self._ask({"op": "validate", "code": code})
        except BadRequest as exc:
            if "line" in exc.details or "diagram_type" in exc.details:
                return MermaidCheck(
                    valid=False,
                    diagram_type=exc.details.get("diagram_type"),
                    message=exc.details.get("mermaid_message") or exc.message,
                    line=exc.details.get("line"),
                )
            raise
        return MermaidCheck(valid=True, diagram_type=answer.get("diagram_type"))

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.stop()
                self._worker = None


# -- Kroki -------------------------------------------------------------------------------------

_LINE = re.compile(r"\bline (\d+)", re.IGNORECASE)
_VIEWBOX = re.compile(rb'viewBox="\s*[-\d.eE]+[\s,]+[-\d.eE]+[\s,]+([\d.eE]+)[\s,]+([\d.eE]+)\s*"')


def image_size(data: bytes, fmt: str) -> tuple[int | None, int | None]:
    if fmt == "png" and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    match = _VIEWBOX.search(data[:4000])
    if match:
        return round(float(match.group(1))), round(float(match.group(2)))
    return None, None


class KrokiRenderer:
    """Renders through a Kroki server (POST /mermaid/{format}), with the core retry and throttle policies."""

    name = "kroki"
    concurrency = 2  # the throttle below lets this many through

    def __init__(self, settings: DiagramsSettings, transport: httpx2.BaseTransport | None = None) -> None:
        from deskmcp.core.http import new_client
        from deskmcp.core.retry import RetryPolicy
        from deskmcp.core.throttle import Throttle

        assert settings.kroki_base_url
        self.base = settings.kroki_base_url.rstrip("/")
        self.client = new_client(
            timeout=settings.http_timeout, transport=transport, headers={"User-Agent": "deskmcp-diagrams"}
        )
        self.retry = RetryPolicy(attempts=3, max_wait=settings.max_wait)
        self.throttle = Throttle(concurrency=self.concurrency)

    def _post(self, code: str, fmt: str) -> bytes:
        from deskmcp.core.http import request

        try:
            response = request(
                self.client,
                "POST",
                f"{self.base}/mermaid/{fmt}",
                service="Kroki",
                retry=self.retry,
                throttle=self.throttle,
                idempotent=True,
                content=code.encode("utf-8"),
                headers={"Content-Type": "text/plain"},
            )
        except BadRequest as exc:
            message = str(exc.details.get("upstream_message") or exc.message)
            from deskmcp.diagrams.render_worker import code_line, with_line

            match = _LINE.search(message)
            line = code_line(code, int(match.group(1)) if match else None)
            raise syntax_error(with_line(message, line), line) from exc
        except DeskError:
            raise
        return response.content

    def render(self, code: str, fmt: str) -> Image:
        data = self._post(code, fmt)
        width, height = image_size(data, fmt)
        from deskmcp.diagrams.render_worker import diagram_keyword

        return Image(data=data, width=width, height=height, diagram_type=diagram_keyword(code))

    def validate(self, code: str) -> MermaidCheck:
        from deskmcp.diagrams.render_worker import diagram_keyword

        try:
            self._post(code, "svg")
        except BadRequest as exc:
            return MermaidCheck(
                valid=False,
                diagram_type=diagram_keyword(code),
                message=exc.details.get("mermaid_message") or exc.message,
                line=exc.details.get("line"),
            )
        return MermaidCheck(valid=True, diagram_type=diagram_keyword(code))

    def close(self) -> None:
        self.client.close()
