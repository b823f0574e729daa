"""render_mermaid and validate_mermaid: the offline worker, its limits, the output folder, Kroki."""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest

from deskmcp.core.errors import BadRequest, Timeout
from deskmcp.core.retry import RetryPolicy
from deskmcp.diagrams.models import MermaidCheck
from deskmcp.diagrams.output import filename_stem
from deskmcp.diagrams.render import KrokiRenderer, OfflineRenderer
from deskmcp.diagrams.server import Settings
from deskmcp.diagrams.service import DiagramsService
from tests.helpers.clock import ManualClock
from tests.helpers.corpora import shared_corpus
from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

FLOW = "flowchart LR\n  A[Client] --> B[Server]\n  B --> C[(Database)]\n"
BROKEN = "flowchart TD\n  A --> B\n  B --< C\n"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def renderer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OfflineRenderer]:
    """One offline renderer (one worker process) for the whole session: starting mermaid.js costs a second."""
    settings = Settings(workspace=tmp_path_factory.mktemp("ws"), render_timeout=300)
    shared = OfflineRenderer(settings)
    yield shared
    shared.close()


@pytest.fixture
def service_for(settings_for: Any, renderer: OfflineRenderer) -> Any:
    def build(root: Path, **overrides: Any) -> DiagramsService:
        return DiagramsService(settings_for(root, **overrides), renderer=renderer)

    return build


@pytest.mark.anyio
async def test_render_mermaid_returns_png_image_content_and_saves_it(
    connect: Connect, project: Path, service_for: Any
) -> None:
    async with connect(service=service_for(project)) as client:
        result = await client.call_tool("render_mermaid", {"code": FLOW, "title": "System Overview"})
    assert not result.is_error, result.content
    image = result.content[0]
    assert image.type == "image"
    assert image.mime_type == "image/png"  # type: ignore[union-attr]
    data = base64.b64decode(image.data)  # type: ignore[union-attr]
    assert data.startswith(PNG_MAGIC)
    summary = result.structured_content
    assert summary is not None
    assert summary["path"] == "diagrams/system-overview.png"
    assert summary["diagram_type"] == "flowchart-v2"
    assert summary["width"] > 0 and summary["height"] > 0
    assert (project / "diagrams" / "system-overview.png").read_bytes() == data


@pytest.mark.anyio
async def test_render_mermaid_saves_svg_when_asked(connect: Connect, project: Path, service_for: Any) -> None:
    async with connect(service=service_for(project)) as client:
        result = await client.call_tool("render_mermaid", {"code": FLOW, "title": "flow", "format": "svg"})
    assert not result.is_error
    assert result.content[0].mime_type == "image/svg+xml"  # type: ignore[union-attr]
    assert (project / "diagrams" / "flow.svg").read_text(encoding="utf-8").lstrip().startswith("<svg")


@pytest.mark.anyio
async def test_render_mermaid_never_clobbers_an_existing_file_unless_asked(
    connect: Connect, project: Path, service_for: Any
) -> None:
    existing = write(project, "diagrams/overview.png", b"precious")
    async with connect(service=service_for(project)) as client:
        error = await fail(client, "render_mermaid", {"code": FLOW, "title": "Overview"})
        assert error["error"] == "conflict"
        assert "overwrite" in error["message"]
        assert existing.read_bytes() == b"precious"
        replaced = await call(client, "render_mermaid", {"code": FLOW, "title": "Overview", "overwrite": True})
    assert replaced["path"] == "diagrams/overview.png"
    assert existing.read_bytes().startswith(PNG_MAGIC)


def test_title_becomes_a_safe_file_name() -> None:
    assert filename_stem("../../etc/passwd") == "etc-passwd"
    assert filename_stem("Café – Überblick: v2!") == "cafe-uberblick-v2"
    assert filename_stem("///") == "diagram"
    assert filename_stem("CON") == "con-diagram"
    assert len(filename_stem("x" * 500)) == 80


@pytest.mark.anyio
async def test_render_mermaid_keeps_hostile_titles_inside_the_diagrams_folder(
    connect: Connect, project: Path, service_for: Any
) -> None:
    async with connect(service=service_for(project)) as client:
        saved = await call(client, "render_mermaid", {"code": FLOW, "title": "../../outside\x00evil"})
    assert saved["path"] == "diagrams/outside-evil.png"
    assert (project / "diagrams" / "outside-evil.png").is_file()


@pytest.mark.anyio
async def test_render_mermaid_refuses_an_output_folder_outside_the_project(
    connect: Connect, project: Path, tmp_path: Path, service_for: Any
) -> None:
    async with connect(service=service_for(project, out_dir=tmp_path / "elsewhere")) as client:
        error = await fail(client, "render_mermaid", {"code": FLOW, "title": "x"})
    assert error["error"] == "permission_denied"
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.anyio
async def test_render_mermaid_reports_a_syntax_error_with_mermaids_message_and_line(
    connect: Connect, project: Path, service_for: Any
) -> None:
    async with connect(service=service_for(project)) as client:
        error = await fail(client, "render_mermaid", {"code": BROKEN, "title": "broken"})
        check = await call(client, "validate_mermaid", {"code": BROKEN})
        good = await call(client, "validate_mermaid", {"code": FLOW})
    assert error["error"] == "bad_request"
    assert error["details"]["line"] == 3
    assert "Parse error on line" in error["details"]["mermaid_message"]
    assert not (project / "diagrams" / "broken.png").exists()
    assert check == {"valid": False, "diagram_type": None, "message": error["details"]["mermaid_message"], "line": 3}
    assert good == {"valid": True, "diagram_type": "flowchart-v2", "message": None, "line": None}


@pytest.mark.e2e
def test_png_is_scaled_down_to_the_pixel_cap(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path, max_png_pixels=20_000)
    small = OfflineRenderer(settings)
    try:
        image = small.render(FLOW, "png")
    finally:
        small.close()
    assert image.scaled is True
    assert image.width is not None and image.height is not None
    assert image.width * image.height <= 20_000
    assert image.data.startswith(PNG_MAGIC)


# -- limits, with stand-in workers -------------------------------------------------------------


def _fake_worker(script: str) -> list[str]:
    prelude = "import sys, json\nprint(json.dumps({'ready': True}), flush=True)\n"
    return [sys.executable, "-c", prelude + script]


@pytest.mark.e2e
def test_a_render_past_the_time_limit_is_stopped_with_a_timeout(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path, render_timeout=0.5)
    hanging = OfflineRenderer(settings, command=_fake_worker("sys.stdin.readline()\nsys.stdin.read()\n"))
    with pytest.raises(Timeout) as info:
        hanging.render(FLOW, "png")
    assert "DIAGRAMS_RENDER_TIMEOUT" in info.value.message
    assert hanging._worker is None  # the stuck worker was killed, not left running


@pytest.mark.anyio
@pytest.mark.e2e
async def test_validate_mermaid_past_the_time_limit_says_the_validation_timed_out_and_how_to_recover(
    connect: Connect, project: Path, settings_for: Any
) -> None:
    settings = settings_for(project, render_timeout=0.5)
    hanging = OfflineRenderer(settings, command=_fake_worker("sys.stdin.readline()\nsys.stdin.read()\n"))
    try:
        async with connect(service=DiagramsService(settings, renderer=hanging)) as client:
            error = await fail(client, "validate_mermaid", {"code": FLOW})
    finally:
        hanging.close()
    assert error["error"] == "timeout"
    assert error["message"].startswith("Validating the diagram")
    assert "Rendering" not in error["message"]
    assert "DIAGRAMS_RENDER_TIMEOUT" in error["message"]
    assert error["details"] == {"operation": "validate", "timeout_seconds": 0.5}


@pytest.mark.e2e
def test_a_worker_that_dies_mid_render_is_a_clear_bad_request_and_is_replaced(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path, render_memory_mb=512)
    dying = OfflineRenderer(settings, command=_fake_worker("sys.stdin.readline()\nimport os\nos._exit(137)\n"))
    for _ in range(2):  # the second call starts a fresh worker, and fails the same clear way
        with pytest.raises(BadRequest) as info:
            dying.render(FLOW, "png")
        assert "512 MiB" in info.value.message
        assert "DIAGRAMS_RENDER_MEMORY_MB" in info.value.message


@pytest.mark.e2e
def test_a_worker_out_of_memory_is_a_clear_bad_request(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path)
    answer = "{'ok': False, 'kind': 'memory', 'message': 'out of memory', 'rss_mb': 1}"
    oom = OfflineRenderer(
        settings, command=_fake_worker(f"sys.stdin.readline()\nprint(json.dumps({answer}), flush=True)\n")
    )
    try:
        with pytest.raises(BadRequest, match="more memory"):
            oom.render(FLOW, "png")
    finally:
        oom.close()


@pytest.mark.anyio
@pytest.mark.e2e
async def test_other_tools_answer_while_a_render_is_running(
    connect: Connect, project: Path, settings_for: Any, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    png = base64.b64encode(PNG_MAGIC + b"\x00" * 16).decode()
    reply = f"{{'ok': True, 'data': '{png}', 'width': 1, 'height': 1, 'rss_mb': 1}}"
    # the stand-in worker answers only once the test opens the gate
    script = f"sys.stdin.readline()\nopen({str(gate)!r}).read()\nprint(json.dumps({reply}), flush=True)\n"
    settings = settings_for(project, render_timeout=60)
    slow = OfflineRenderer(settings, command=_fake_worker(script))
    write(project, "a.txt", "x")
    rendered: dict[str, Any] = {}
    async with connect(service=DiagramsService(settings, renderer=slow)) as client:

        async def render() -> None:
            rendered.update(await call(client, "render_mermaid", {"code": FLOW, "title": "slow"}))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(render)
                listed = await call(client, "list_files")
                assert [f["path"] for f in listed["files"]] == ["a.txt"]
                assert rendered == {}  # the render is still waiting at the gate
                await anyio.to_thread.run_sync(gate.write_text, "go")
    slow.close()
    assert rendered["path"] == "diagrams/slow.png"


class _GatedRenderer:
    """A renderer whose validations hold their thread until the test opens the gate."""

    name = "gated"
    concurrency = 1

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = anyio.Event()
        self.token = anyio.lowlevel.current_token()
        self.finished = 0

    def validate(self, code: str) -> MermaidCheck:
        anyio.from_thread.run_sync(self.started.set, token=self.token)
        self.gate.wait(60)
        self.finished += 1
        return MermaidCheck(valid=True, diagram_type="flowchart-v2")

    def render(self, code: str, fmt: str) -> Any:
        raise AssertionError("not rendered in this test")

    def close(self) -> None:
        self.gate.set()


@pytest.mark.anyio
async def test_a_cheap_call_answers_while_45_validations_hold_the_renderer_and_the_overflow_is_rate_limited(
    connect: Connect, project: Path, settings_for: Any
) -> None:
    write(project, "a.txt", "x")
    settings = settings_for(project, render_queue=8)
    gated = _GatedRenderer()
    answers: list[Any] = []
    async with connect(service=DiagramsService(settings, renderer=gated)) as client:

        async def validate() -> None:
            answers.append(await client.call_tool("validate_mermaid", {"code": FLOW}))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for _ in range(45):
                    tg.start_soon(validate)
                await gated.started.wait()
                # the renderer is busy and the queue is full: other tools still answer
                listed = await call(client, "list_files")
                assert [f["path"] for f in listed["files"]] == ["a.txt"]
                assert gated.finished == 0
                await anyio.to_thread.run_sync(gated.gate.set)
    refused = [json.loads(a.content[0].text) for a in answers if a.is_error]
    assert {e["error"] for e in refused} == {"rate_limited"}
    assert "DIAGRAMS_RENDER_QUEUE" in refused[0]["message"]
    assert len(refused) == 45 - 1 - 8  # one running, eight waiting
    assert gated.finished == 9
    assert all(a.structured_content["valid"] for a in answers if not a.is_error)


# -- the corpus --------------------------------------------------------------------------------

# The line of the file where the error is (Mermaid's flowchart parser says "line 4" for all three
# flowchart files: it counts after the frontmatter and reports errors at the end of the input).
INVALID_LINES = {
    "flowchart--bad-edge-label-syntax.mmd": 2,
    "er--dangling-relationships.mmd": 5,
    "flowchart--lt-arrow.mmd": 2,
    "flowchart--lt-arrow-with-frontmatter.mmd": 6,
    "sequence--destroy-unknown-participant.mmd": None,  # a semantic error: Mermaid names no line
    "block--incorrect-linking.mmd": 2,
}
RENDERED_SAMPLE = (
    "examples/flowchart-v2--ci-cd-pipeline-with-subgraphs.mmd",
    "examples/sequence--online-payment-flow.mmd",
    "examples/classDiagram--basic-class-inheritance.mmd",
    "examples/pie--basic-pie-chart.mmd",
)


def test_every_example_diagram_validates_or_names_its_unsupported_type(renderer: OfflineRenderer) -> None:
    corpus = shared_corpus("mermaid")
    files = sorted(corpus.glob("examples/*.mmd"))  # the 3 large repo-docs diagrams are in the full sweep
    assert len(files) == 59
    unsupported = {}
    for path in files:
        check = renderer.validate(path.read_text(encoding="utf-8"))
        if not check.valid:
            unsupported[path.name] = check
    assert list(unsupported) == ["usecase--basic-use-cases.mmd"]
    check = unsupported["usecase--basic-use-cases.mmd"]
    assert check.diagram_type == "usecase-beta"
    assert check.message is not None and "DIAGRAMS_KROKI_URL" in check.message


def test_an_unsupported_diagram_type_is_a_bad_request_suggesting_kroki(renderer: OfflineRenderer) -> None:
    code = (shared_corpus("mermaid") / "examples" / "usecase--basic-use-cases.mmd").read_text(encoding="utf-8")
    with pytest.raises(BadRequest) as info:
        renderer.render(code, "png")
    assert "usecase" in info.value.message
    assert "DIAGRAMS_KROKI_URL" in info.value.message


def test_every_invalid_corpus_diagram_is_a_bad_request_with_message_and_line(renderer: OfflineRenderer) -> None:
    folder = shared_corpus("mermaid") / "invalid"
    assert sorted(p.name for p in folder.glob("*.mmd")) == sorted(INVALID_LINES)
    for name, line in INVALID_LINES.items():
        with pytest.raises(BadRequest) as info:
            renderer.render((folder / name).read_text(encoding="utf-8"), "png")
        details = info.value.details
        assert details["line"] == line, name
        assert details["mermaid_message"], name
        assert details["mermaid_message"] in info.value.message


@pytest.mark.anyio
async def test_validate_mermaid_message_and_line_field_name_the_same_line_of_the_invalid_corpus(
    connect: Connect, project: Path, service_for: Any
) -> None:
    folder = shared_corpus("mermaid") / "invalid"
    checks: dict[str, dict[str, Any]] = {}
    async with connect(service=service_for(project)) as client:
        for name in INVALID_LINES:
            checks[name] = await call(client, "validate_mermaid", {"code": (folder / name).read_text(encoding="utf-8")})
    for name, line in INVALID_LINES.items():
        check = checks[name]
        assert check["valid"] is False, name
        assert check["line"] == line, name  # 1-based, a line of the file as an editor shows it
        said = [int(n) for n in re.findall(r"\bline (\d+)", check["message"], re.IGNORECASE)]
        assert said == ([] if line is None else [line]), (name, check["message"])


@pytest.mark.parametrize("name", RENDERED_SAMPLE)
def test_a_sample_of_corpus_diagrams_renders_to_png(renderer: OfflineRenderer, name: str) -> None:
    image = renderer.render((shared_corpus("mermaid") / name).read_text(encoding="utf-8"), "png")
    assert image.data.startswith(PNG_MAGIC)
    assert image.width and image.height


@pytest.mark.skipif(not os.environ.get("DESKMCP_RENDER_SWEEP"), reason="full render sweep: set DESKMCP_RENDER_SWEEP=1")
def test_every_valid_corpus_diagram_renders(renderer: OfflineRenderer) -> None:
    corpus = shared_corpus("mermaid")
    files = sorted([*corpus.glob("examples/*.mmd"), *corpus.glob("repo-docs/*.mmd")])
    assert len(files) == 62
    for path in files:
        if path.name.startswith("usecase--"):
            continue
        assert renderer.validate(path.read_text(encoding="utf-8")).valid, path.name
        image = renderer.render(path.read_text(encoding="utf-8"), "png")
        assert image.data.startswith(PNG_MAGIC), path.name


# -- Kroki -------------------------------------------------------------------------------------


class _Kroki(BaseHTTPRequestHandler):
    calls: list[tuple[str, str]] = []  # noqa: RUF012 (one stub server per session)
    fail_next: list[int] = []  # noqa: RUF012

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        type(self).calls.append((self.path, body))
        if type(self).fail_next:
            self._send(type(self).fail_next.pop(0), b"upstream trouble", "text/plain")
        elif "--<" in body:
            self._send(400, b"Error 400: Parse error on line 3:\n...B --< C\nExpecting 'LINK'", "text/plain")
        elif self.path == "/mermaid/png":
            self._send(200, PNG_MAGIC + b"\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x08", "image/png")
        elif self.path == "/mermaid/svg":
            self._send(200, b'<svg viewBox="0 0 120 40"></svg>', "image/svg+xml")
        else:
            self._send(404, b"no such diagram type", "text/plain")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def kroki_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Kroki)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.anyio
async def test_kroki_base_url_renders_through_kroki(connect: Connect, project: Path, kroki_url: str) -> None:
    _Kroki.calls.clear()
    async with connect(kroki_base_url=kroki_url + "/") as client:
        saved = await call(client, "render_mermaid", {"code": FLOW, "title": "via kroki"})
        svg = await call(client, "render_mermaid", {"code": FLOW, "title": "via kroki", "format": "svg"})
        error = await fail(client, "render_mermaid", {"code": BROKEN, "title": "bad"})
        check = await call(client, "validate_mermaid", {"code": BROKEN})
    assert saved["renderer"] == "kroki"
    assert (saved["width"], saved["height"]) == (16, 8)
    assert (svg["width"], svg["height"]) == (120, 40)
    assert (project / "diagrams" / "via-kroki.png").read_bytes().startswith(PNG_MAGIC)
    assert _Kroki.calls[0] == ("/mermaid/png", FLOW)
    assert error["error"] == "bad_request"
    assert error["details"]["line"] == 3
    assert check["valid"] is False and check["line"] == 3


def test_kroki_server_errors_are_retried_then_reported_without_a_status_code(tmp_path: Path, kroki_url: str) -> None:
    renderer = KrokiRenderer(Settings(workspace=tmp_path, kroki_base_url=kroki_url))
    renderer.retry = RetryPolicy(attempts=3, clock=ManualClock())
    try:
        _Kroki.fail_next[:] = [503]
        assert renderer.render(FLOW, "png").data.startswith(PNG_MAGIC)
        _Kroki.fail_next[:] = [500, 502, 503]
        with pytest.raises(Exception) as info:
            renderer.render(FLOW, "png")
    finally:
        _Kroki.fail_next.clear()
        renderer.close()
    assert getattr(info.value, "code", None) == "external_service_error"
