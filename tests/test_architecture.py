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
`importlib.import_module("...")` with a literal name.

And no raw SQL outside the index and catalog modules (`SQL_ALLOWED`, listed one by one): a module
that holds SQL text (a string, or the literal part of an f-string, starting with SELECT, INSERT,
UPDATE, DELETE, CREATE, PRAGMA or WITH, in capitals as the code writes SQL) or calls
`.execute(`, `.executemany(` or `.executescript(` must be one of them. The two Google backends
call googleapiclient's `request.execute()`, which is not SQL: they are allowed `.execute(` by name
(`GOOGLE_EXECUTE`), and only in the form googleapiclient has, so SQL cannot pass there silently:
`executemany`/`executescript`, an `.execute(` whose first argument is a string, an import of
`sqlite3` or any SQL text is still reported in them.

The checkers are tested on small trees built in tmp_path, so a broken rule is known to be reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "deskmcp"

MCP_ALLOWED = {"cli.py", "gateway.py", "connect.py", "httpapi.py", "demo/tour.py", "orchestrator/mcp_client.py"}
MCP_ALLOWED |= {"core/server.py"}

GOOGLE_LIBRARIES = ("googleapiclient", "google.auth", "google.oauth2", "google_auth_oauthlib", "google_auth_httplib2")
GOOGLE_ALLOWED = {"mail/backends/gmail.py", "sheets/backends/google.py"}


SQL_ALLOWED = {
    "core/index.py",
    "core/index_codec.py",
    "core/index_query.py",
    "core/index_sqlite.py",
    "core/textindex.py",
    "vault/catalog.py",
    "meetings/catalog.py",
    "documents/catalog.py",
    "mail/journal.py",
    "mail/backends/maildir_store.py",
}
GOOGLE_EXECUTE = {"mail/backends/gmail.py", "sheets/backends/google.py"}
SQL_METHODS = ("execute", "executemany", "executescript")
SQL_START = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|PRAGMA|WITH)\s+\S")
"""A statement: the keyword and more after it (a lone "DELETE" is an HTTP method, not SQL)."""


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


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def sql_violations(package: Path) -> list[str]:
    """One line per SQL text or SQL call outside the allowed modules: `file:line what: the rule`."""
    rule = "raw SQL only in the index and catalog modules"
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in SQL_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                # the literal parts of an f-string are Constant nodes too, so f"SELECT {x}" counts
                start = SQL_START.match(node.value)
                if start:
                    found.append(f"{rel}:{node.lineno} {start.group(1)} text: {rule}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_METHODS
                and not (
                    rel in GOOGLE_EXECUTE and node.func.attr == "execute" and not (node.args and _is_text(node.args[0]))
                )
            ):
                found.append(f"{rel}:{node.lineno} .{node.func.attr}(: {rule}")
            elif isinstance(node, ast.Import | ast.ImportFrom) and rel in GOOGLE_EXECUTE:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(name == "sqlite3" or name.startswith("sqlite3.") for name in names):
                    found.append(f"{rel}:{node.lineno} import sqlite3: {rule}")
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


SQL_CLEAN = {
    "core/index.py": 'def get(conn):\n    return conn.execute("SELECT data FROM docs WHERE key=?", ("k",))\n',
    "core/textindex.py": "def later(conn):\n    conn.executescript('PRAGMA journal_mode=WAL;')\n",
    "vault/catalog.py": "SIDE = ('CREATE TABLE tags (doc_id INTEGER)',)\n",
    "mail/backends/maildir_store.py": "def mark(conn, rows):\n    conn.executemany('UPDATE docs SET x=?', rows)\n",
    "mail/backends/gmail.py": "def page(api):\n    return api.users().list(userId='me').execute(num_retries=0)\n",
    "sheets/backends/google.py": "class C:\n    def run(self, request):\n        return request.execute()\n",
    "vault/service.py": (
        '"""Select a note; update its links, delete nothing. WITH care."""\n'
        "def move(catalog):\n    return catalog.notes_named('x')\n"
    ),
    "meetings/filters.py": "CLAUSE = 'd.start_ts >= ? AND EXISTS (SELECT 1 FROM people p)'\n",
}


def test_the_source_tree_keeps_sql_in_the_index_and_catalog_modules() -> None:
    # the allowed list names real modules, each holding SQL (a stale name would allow nothing)
    assert all((SRC / rel).is_file() for rel in SQL_ALLOWED)
    assert sql_violations(SRC) == []


def test_the_sql_check_sees_the_sql_of_the_real_tree_when_nothing_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    # a checker that matched nothing would pass the tree too: with no module allowed, the SQL of
    # the index, the catalogs and the Maildir store is reported, and still no Google .execute()
    monkeypatch.setattr(f"{__name__}.SQL_ALLOWED", set())
    found = sql_violations(SRC)
    for rel in ("core/index.py", "vault/catalog.py", "meetings/catalog.py", "mail/backends/maildir_store.py"):
        assert any(line.startswith(f"{rel}:") and ".execute(" in line for line in found), rel
        assert any(line.startswith(f"{rel}:") and " text: " in line for line in found), rel
    assert not [line for line in found if line.split(":", 1)[0] in GOOGLE_EXECUTE]


def test_the_sql_check_passes_a_small_tree_that_keeps_sql_in_its_modules(tmp_path: Path) -> None:
    assert sql_violations(write_tree(tmp_path, SQL_CLEAN)) == []


def test_the_sql_check_reports_sql_text_and_calls_outside_the_allowed_modules(tmp_path: Path) -> None:
    broken = {
        **SQL_CLEAN,
        "vault/service.py": 'def names(conn, n):\n    return conn.execute("SELECT key FROM docs WHERE x=?", (n,))\n',
        "meetings/service.py": "def stats(index, clause):\n    sql = f'SELECT count(*) FROM docs d {clause}'\n",
        "meetings/filters.py": "GROUPS = {'platform': '  SELECT platform FROM docs'}\n",
        "mail/backends/maildir.py": "def mark(conn, rows):\n    conn.executemany(QUERY, rows)\n",
        "documents/service.py": "SIDE = (\n    'CREATE INDEX tags_tag ON tags(tag)',\n)\n",
        "orchestrator/state.py": "def setup(conn):\n    conn.executescript(SCRIPT)\n",
        "sheets/service.py": "RECENT = 'WITH r AS (SELECT 1) SELECT * FROM r'\nMETHODS = ('GET', 'DELETE')\n",
        "core/dates.py": "def later(db):\n    db.execute('pragma user_version')\n",
        "mail/backends/gmail.py": (
            "import sqlite3\n"
            "def page(api, conn):\n    api.users().labels().list(userId='me').execute()\n"
            "    conn.execute('select key from docs')\n"
        ),
        "sheets/backends/google.py": "def copy(conn, rows):\n    conn.executemany('insert into t values (?)', rows)\n",
    }
    rule = "raw SQL only in the index and catalog modules"
    assert sql_violations(write_tree(tmp_path, broken)) == [
        f"core/dates.py:2 .execute(: {rule}",
        f"documents/service.py:2 CREATE text: {rule}",
        f"mail/backends/gmail.py:1 import sqlite3: {rule}",
        f"mail/backends/gmail.py:4 .execute(: {rule}",
        f"mail/backends/maildir.py:2 .executemany(: {rule}",
        f"meetings/filters.py:1 SELECT text: {rule}",
        f"meetings/service.py:2 SELECT text: {rule}",
        f"orchestrator/state.py:2 .executescript(: {rule}",
        f"sheets/backends/google.py:2 .executemany(: {rule}",
        f"sheets/service.py:1 WITH text: {rule}",
        f"vault/service.py:2 .execute(: {rule}",
        f"vault/service.py:2 SELECT text: {rule}",
    ]
