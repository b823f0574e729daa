"""The rules file and the LLM decider (against an OpenAI-compatible stub server on loopback)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from deskmcp.orchestrator.llm import LLMDecider
from deskmcp.orchestrator.models import Deferred, TriageDecision, TriageItem
from deskmcp.orchestrator.rules import RULES_FILE, RulesDecider

ITEM = TriageItem(
    note="Needs_Action/x.md", sender="Ana <ana@example.org>", subject="Can we meet?", body="Tuesday at 10?"
)


class Stub:
    """A chat-completions endpoint whose next answer the test chooses."""

    def __init__(self) -> None:
        self.answer: Any = None
        self.hang = False
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()


@pytest.fixture(scope="module")
def llm() -> Iterator[tuple[str, Stub]]:
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            stub.requests.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), **json.loads(self.rfile.read(length))}
            )
            if stub.hang:
                stub.release.wait(10)
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": stub.answer}}]}).encode()
            # After a timeout the client has gone: the late answer has nowhere to go.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", stub
    stub.release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.anyio
async def test_llm_decider_returns_a_validated_decision(llm: tuple[str, Stub]) -> None:
    url, stub = llm
    stub.hang = False
    stub.answer = json.dumps({"decision": "draft_reply", "reason": "A meeting request", "reply": "Tuesday works."})
    result = await LLMDecider(url, "tiny", api_key="k-123", timeout=10).decide(ITEM)
    assert result == TriageDecision(decision="draft_reply", reason="A meeting request", reply="Tuesday works.")
    request = stub.requests[-1]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer k-123"
    assert request["model"] == "tiny"
    assert "Tuesday at 10?" in request["messages"][1]["content"]


@pytest.mark.anyio
async def test_llm_decider_accepts_an_answer_in_a_code_fence(llm: tuple[str, Stub]) -> None:
    url, stub = llm
    stub.hang = False
    stub.answer = '```json\n{"decision": "archive", "reason": "FYI"}\n```'
    result = await LLMDecider(url, "tiny", timeout=10).decide(ITEM)
    assert isinstance(result, TriageDecision) and result.decision == "archive"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I think you should reply.", "not JSON"),
        (json.dumps({"decision": "reply_all", "reason": "x"}), "invalid"),
        (json.dumps({"decision": "urgent", "reason": "x"}), "without a reply"),
        (json.dumps(["archive"]), "not a JSON object"),
    ],
)
async def test_llm_decider_leaves_a_malformed_answer_pending_with_the_reason(
    llm: tuple[str, Stub], answer: str, reason: str
) -> None:
    url, stub = llm
    stub.hang = False
    stub.answer = answer
    result = await LLMDecider(url, "tiny", timeout=10).decide(ITEM)
    assert isinstance(result, Deferred)
    assert reason in result.reason


@pytest.mark.anyio
async def test_llm_decider_leaves_the_item_pending_when_the_model_times_out(llm: tuple[str, Stub]) -> None:
    url, stub = llm
    stub.hang = True
    stub.release.clear()
    stub.answer = json.dumps({"decision": "archive", "reason": "late"})
    try:
        result = await LLMDecider(url, "tiny", timeout=0.3).decide(ITEM)
    finally:
        stub.release.set()
    assert isinstance(result, Deferred)
    assert "did not answer within" in result.reason


@pytest.mark.anyio
async def test_llm_decider_leaves_the_item_pending_when_nothing_listens() -> None:
    result = await LLMDecider("http://127.0.0.1:9/v1", "tiny", timeout=5).decide(ITEM)
    assert isinstance(result, Deferred)
    assert "could not be reached" in result.reason


@pytest.mark.anyio
async def test_rules_file_is_written_with_a_commented_example_on_first_use(tmp_path: Path) -> None:
    decider = RulesDecider(tmp_path)
    assert not (tmp_path / RULES_FILE).exists()  # made by a real pass, not by creating the decider
    result = await decider.decide(ITEM)
    text = (tmp_path / RULES_FILE).read_text(encoding="utf-8")
    assert text.startswith("# Triage rules")
    assert isinstance(result, TriageDecision)
    assert result.decision == "draft_reply"
    assert result.reply is not None and result.reply.startswith("Hi Ana,")


@pytest.mark.anyio
async def test_a_dry_run_decides_with_the_example_rules_in_memory_and_writes_nothing(tmp_path: Path) -> None:
    decider = RulesDecider(tmp_path, write_example=False)
    decider.prepare()
    result = await decider.decide(ITEM)
    assert isinstance(result, TriageDecision)
    assert result.decision == "draft_reply"
    assert not (tmp_path / RULES_FILE).exists()


@pytest.mark.anyio
async def test_an_edited_rules_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / RULES_FILE).write_text("rules: []\ndefault: {decision: archive, reason: all}\n", encoding="utf-8")
    result = await RulesDecider(tmp_path).decide(ITEM)
    assert result == TriageDecision(decision="archive", reason="all")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("rules: [unclosed\n", "not valid YAML"),
        ("rules:\n  - match: {sender: x}\n    decision: archive\n", "unknown field"),
        ("rules:\n  - match: {subject: '('}\n    decision: archive\n", "bad regular expression"),
        ("rules:\n  - decision: shout\n", "rules.0.decision"),
    ],
)
async def test_a_broken_rules_file_leaves_items_pending_with_the_reason(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / RULES_FILE).write_text(text, encoding="utf-8")
    result = await RulesDecider(tmp_path).decide(ITEM)
    assert isinstance(result, Deferred)
    assert reason in result.reason
