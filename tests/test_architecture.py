"""The dependency rules of the layout, checked on the imports of src/deskmcp (parsed with `ast`,
nothing imported):

- `core` imports no server package;
- the orchestrator imports nothing from `deskmcp.mail` (it reaches mail over MCP only);
- only the MCP adapters and the entry points import the SDK (`mcp`): every `*/server.py`,
  `cli.py`, `gateway.py`, `connect.py`, `httpapi.py`, `demo/tour.py`, `orchestrator/mcp_client.py`
  and `core/server.py` (the error taxonomy, `core/errors.py`, is a plain exception tree);
- only `deskmcp.google` and the two Google backends (`mail/backends/gmail.py`,
  `sheets/backends/google.py`) import the Google client libraries (googleapiclient, google.auth,
  google.oauth2, google_auth_oauthlib, google_auth_httplib2): one place signs in and maps errors.

Every import counts: at the top, inside a function, under `if TYPE_CHECKING:`, relative ones, and
`importlib.import_module("...")` with a literal name. The checker is tested on small trees built
in tmp_path, so a broken rule is known to be reported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "deskmcp"

MCP_ALLOWED = {"cli.py", "gateway.py", "connect.py", "httpapi.py", "demo/tour.py", "orchestrator/mcp_client.py"}
MCP_ALLOWED |= {"core/server.py"}

GOOGLE_LIBRARIES = ("googleapiclient", "google.auth", "google.oauth2", "google_auth_oauthlib", "google_auth_httplib2")
GOOGLE_ALLOWED = {"mail/backends/gmail.py", "sheets/backends/google.py"}


@dataclass(frozen=True)
class Import:
    """One import statement (or import_module call) and the modules it may load."""

    file: str  # relative to the package folder, e.g. "orchestrator/service.py"
    line: int
    text: str  # as written, relative imports resolved: "from deskmcp import mail"
    targets: tuple[str, ...]  # "deskmcp", "deskmcp.mail": a name imported from a package may be a module


def _module_parts(rel: Path) -> list[str]:
    parts = ["deskmcp", *rel.with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports(package: Path) -> Iterator[Import]:
    """Every import in every module under `package` (the `deskmcp` folder)."""
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        module = _module_parts(rel)
        is_package = rel.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
                yield Import(rel.as_posix(), node.lineno, f"import {', '.join(names)}", tuple(names))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module if is_package else module[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                names = [alias.name for alias in node.names]
                targets = (source, *(f"{source}.{name}" for name in names if name != "*"))
                yield Import(rel.as_posix(), node.lineno, f"from {source} import {', '.join(names)}", targets)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                name = node.args[0].value
                yield Import(rel.as_posix(), node.lineno, f"import_module({name!r})", (name,))


def _within(imp: Import, package: str) -> bool:
    return any(target == package or target.startswith(package + ".") for target in imp.targets)


def violations(package: Path) -> list[str]:
    """One line per import that breaks a rule: `file:line imports target: the rule`."""
    servers = {d.name for d in package.iterdir() if d.is_dir() and (d / "server.py").exists()} - {"core"}
    found: list[str] = []
    for imp in imports(package):
        top = imp.file.split("/", 1)[0]
        rule = None
        if top == "core" and any(_within(imp, f"deskmcp.{name}") for name in servers):
            rule = "core imports no server package"
        elif top == "orchestrator" and _within(imp, "deskmcp.mail"):
            rule = "the orchestrator reaches mail over MCP only"
        elif (
            _within(imp, "mcp")
            and imp.file not in MCP_ALLOWED
            and not (imp.file.endswith("/server.py") or imp.file == "server.py")
        ):
            rule = "only the MCP adapters and entry points import the SDK"
        elif (
            any(_within(imp, library) for library in GOOGLE_LIBRARIES)
            and top != "google"
            and imp.file not in GOOGLE_ALLOWED
        ):
            rule = "only deskmcp.google and the Google backends import the Google libraries"
        if rule is not None:
            found.append(f"{imp.file}:{imp.line} {imp.text}: {rule}")
    return sorted(set(found))


def write_tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "deskmcp"
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return package


CLEAN = {
    "core/errors.py": "import orjson\n",
    "core/server.py": "import mcp\n",
    "core/index.py": "from deskmcp.core import errors\nfrom . import errors as e\n",
    "vault/server.py": "from mcp.types import TextContent\nfrom .service import VaultService\n",
    "vault/service.py": "from deskmcp.core.index import SearchIndex\n",
    "mail/server.py": "from deskmcp.mail.service import MailService\n",
    "mail/service.py": "import os\n",
    "orchestrator/server.py": "import mcp\n",
    "orchestrator/mcp_client.py": "from mcp import Client\n",
    "orchestrator/service.py": "from deskmcp.vault.models import NoteContent\nfrom .mcp_client import MCPClient\n",
    "cli.py": "import mcp\nfrom deskmcp.mail import server\n",
    "gateway.py": "from mcp.server import Server\n",
    "demo/tour.py": "from mcp import Client\n",
    "google/auth.py": "def later():\n    import google.auth\n    from google_auth_oauthlib import flow\n",
    "google/errors.py": "def later():\n    from googleapiclient.errors import HttpError\n",
    "mail/backends/gmail.py": "from deskmcp.google.errors import map_error\n",
    "sheets/backends/google.py": "def later():\n    from googleapiclient.http import HttpRequest\n",
}


def test_the_source_tree_keeps_the_architecture_rules() -> None:
    found = list(imports(SRC))
    # the walk sees the real tree (a wrong path would find nothing and pass)
    assert any(i.file == "orchestrator/mcp_client.py" and _within(i, "mcp") for i in found)
    assert any(i.file == "orchestrator/vault_port.py" and _within(i, "deskmcp.vault") for i in found)
    assert any(i.file == "google/auth.py" and _within(i, "google.oauth2") for i in found)
    assert violations(SRC) == []


def test_the_architecture_check_passes_a_small_tree_that_keeps_the_rules(tmp_path: Path) -> None:
    assert violations(write_tree(tmp_path, CLEAN)) == []


def test_the_architecture_check_reports_each_broken_rule_in_a_small_tree(tmp_path: Path) -> None:
    broken = {
        **CLEAN,
        "core/index.py": "from deskmcp.vault import service\n",
        "core/paths.py": "def later():\n    from ..mail.models import Email\n",
        "core/dates.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from deskmcp import sheets\n",
        "sheets/server.py": "import mcp\n",
        "orchestrator/service.py": "def send():\n    from deskmcp import mail\n",
        "orchestrator/triage.py": "import deskmcp.mail.backends.maildir\n",
        "orchestrator/access.py": "import importlib\nimportlib.import_module('deskmcp.mail.service')\n",
        "orchestrator/cli.py": "from mcp import Client\n",  # only the top-level cli.py may
        "vault/service.py": "import mcp.types\n",
        "mail/models.py": "from mcp.types import TextContent as T\n",
        "mail/service.py": "def later():\n    from googleapiclient.errors import HttpError\n",
        "sheets/service.py": "from google.auth.exceptions import RefreshError\n",
        "core/retry.py": "import google_auth_httplib2\n",
    }
    found = violations(write_tree(tmp_path, broken))
    sdk = "only the MCP adapters and entry points import the SDK"
    google = "only deskmcp.google and the Google backends import the Google libraries"
    assert found == [
        "core/dates.py:3 from deskmcp import sheets: core imports no server package",
        "core/index.py:1 from deskmcp.vault import service: core imports no server package",
        "core/paths.py:2 from deskmcp.mail.models import Email: core imports no server package",
        f"core/retry.py:1 import google_auth_httplib2: {google}",
        f"mail/models.py:1 from mcp.types import TextContent: {sdk}",
        f"mail/service.py:2 from googleapiclient.errors import HttpError: {google}",
        "orchestrator/access.py:2 import_module('deskmcp.mail.service'): the orchestrator reaches mail over MCP only",
        f"orchestrator/cli.py:1 from mcp import Client: {sdk}",
        "orchestrator/service.py:2 from deskmcp import mail: the orchestrator reaches mail over MCP only",
        "orchestrator/triage.py:1 import deskmcp.mail.backends.maildir: the orchestrator reaches mail over MCP only",
        f"sheets/service.py:1 from google.auth.exceptions import RefreshError: {google}",
        f"vault/service.py:1 import mcp.types: {sdk}",
    ]
