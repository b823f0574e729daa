"""A generated project folder laid out like deskmcp itself, and a tour that draws its architecture.

`generate` writes a small Python project (the core, seven server packages, the gateway and CLI,
tests and docs, a .gitignore'd build folder) with a Mermaid description of its architecture in
`docs/architecture.mmd`; the steps list and read it, then render the PNG and say where it is.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

SERVERS = {
    "meetings": "Granola meetings from the local cache",
    "vault": "Markdown notes vault",
    "documents": "documents folder with a tag index",
    "mail": "Gmail, Maildir or IMAP mailbox",
    "sheets": "Google Sheets or local spreadsheets",
    "diagrams": "project files and Mermaid rendering",
    "orchestrator": "approval-then-send loop over mail and vault",
}
CORE = {
    "errors": "One error taxonomy for every server.",
    "config": "Workspace settings shared by every server.",
    "paths": "safe_join: user paths resolved under a root.",
    "policies": "Bounded reads, TTL cache, throttling and retries.",
    "index": "SQLite records with tantivy top-k bm25 ranking.",
    "server": "DeskServer: the SDK server with the error contract.",
}

ARCHITECTURE = """flowchart LR
  client([MCP client: Claude, Cursor, VS Code]) -->|stdio or HTTP| gateway[gateway / cli]
  subgraph servers[Servers]
    meetings[meetings]
    vault[vault]
    documents[documents]
    mail[mail]
    sheets[sheets]
    diagrams[diagrams]
    orchestrator[orchestrator]
  end
  gateway --> servers
  orchestrator -->|MCP| mail
  orchestrator -->|MCP| vault
  subgraph core[deskmcp.core]
    errors[errors]
    paths[paths.safe_join]
    policies[policies]
    index[(SQLite + tantivy index)]
  end
  servers --> core
  diagrams --> sources{{local / git / GitHub}}
  diagrams --> render[[offline Mermaid worker]]
  mail -.-> gmail[(Gmail / IMAP)]
  sheets -.-> google[(Google Sheets)]
"""


def _module(doc: str, imports: list[str], rng: random.Random) -> str:
    lines = [f'"""{doc}"""', "", "from __future__ import annotations", ""]
    lines += [f"from {name} import *  # noqa: F403" for name in imports]
    for i in range(rng.randint(2, 4)):
        lines += ["", "", f"def step_{i}(value: int) -> int:", f"    return value * {rng.randint(2, 9)}"]
    return "\n".join(lines) + "\n"


def generate(root: Path, rng: random.Random) -> None:
    """About 45 files: a project shaped like deskmcp, with its architecture in docs/architecture.mmd."""
    files: dict[str, str] = {
        "README.md": "# deskmcp (demo copy)\n\nSeven MCP servers over one core.\n",
        "pyproject.toml": '[project]\nname = "deskmcp-demo"\nversion = "0.1.0"\n',
        ".gitignore": "build/\n*.pyc\n",
        "build/wheel.txt": "build output, ignored by git and by list_files\n",
        "docs/architecture.mmd": ARCHITECTURE,
        "src/deskmcp/__init__.py": '"""deskmcp."""\n',
        "src/deskmcp/cli.py": _module("The deskmcp command.", ["deskmcp.gateway"], rng),
        "src/deskmcp/gateway.py": _module("All servers in one process.", ["deskmcp.servers"], rng),
        "src/deskmcp/servers.py": '"""The registry of servers."""\n\nSERVERS = {\n'
        + "".join(f'    "{name}": "{what}",\n' for name, what in SERVERS.items())
        + "}\n",
    }
    for name, doc in CORE.items():
        files[f"src/deskmcp/core/{name}.py"] = _module(doc, ["deskmcp.core.errors"], rng)
    for name, what in SERVERS.items():
        base = f"src/deskmcp/{name}"
        files[f"{base}/__init__.py"] = f'"""The {name} server: {what}."""\n'
        files[f"{base}/service.py"] = _module(f"The {name} service.", ["deskmcp.core.policies"], rng)
        files[f"{base}/server.py"] = _module(f"The {name} MCP adapter.", [f"deskmcp.{name}.service"], rng)
        files[f"tests/{name}/test_{name}_tools.py"] = _module(f"Tests of {name}.", [f"deskmcp.{name}.server"], rng)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def environment(workspace: Path) -> dict[str, str]:
    return {"DIAGRAMS_PROJECT_ROOT": str(workspace / "project")}


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "Every server.py of the project: seven servers and the core (build/ is .gitignore'd)",
        "list_files",
        {"root": "src/deskmcp", "glob": "*/server.py", "limit": 10},
    ),
    ("Read the registry: the first lines only", "read_file", {"path": "src/deskmcp/servers.py", "end_line": 6}),
    (
        "A diagram with a typo: the parser's message and the line to fix",
        "validate_mermaid",
        {"code": "flowchart LR\n  A[client] --> B[server]\n  B --< C[core]\n"},
    ),
    ("Read the architecture written in Mermaid", "read_file", {"path": "docs/architecture.mmd"}),
    (
        "Render it offline: the PNG comes back to the client and is saved; `path` says where",
        "render_mermaid",
        {"code": "$last.content", "title": "deskmcp architecture", "overwrite": True},
    ),
]
