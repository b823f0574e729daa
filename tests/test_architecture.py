"""The project's own rules that no import checker can state, and proof that the import rules hold.

The dependency rules of the layout are import-linter contracts in `.importlinter` (run by .ci/run as
`uv run lint-imports`; docs/architecture.md lists them). This file checks two things more:

- that those contracts refuse each kind of violation: each case below copies src/deskmcp to a
  temporary folder, breaks one rule there, and runs import-linter on the copy;
- the rules no import graph shows: every module and package directly under src/deskmcp sits in a
  layer of the `layers` contract (a new one outside them would escape the contracts); no raw SQL
  outside the index and catalog modules
  (`SQL_ALLOWED`, listed one by one): a module that holds SQL text (a string, or the literal part of an
  f-string, that reads as a statement: `select ... from`, `insert into`, `update ... set`,
  `delete from`, `create table|index|...`, `pragma`, `with x as (`, in any case) or calls `.execute(`,
  `.executemany(` or `.executescript(` must be one of them. The two Google backends call
  googleapiclient's `request.execute()`, which is not SQL: they are allowed `.execute(` by name
  (`GOOGLE_EXECUTE`), and only in the form googleapiclient has; no `__import__()` call, which
  would load a module past the contracts (`importlib` itself is a protected module there); and
  nothing above the servers (`serving/`, `gateway.py`) names a server or one of its settings:
  what differs per server is declared on the server's module (`servers.ServerModule`).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "deskmcp"

ROOT = SRC.parents[1]


SQL_ALLOWED = {
    "core/search/index.py",
    "core/search/codec.py",
    "core/search/query.py",
    "core/search/sqlite.py",
    "core/search/textindex.py",
    "core/search/vectors.py",
    "core/postgres.py",
    "core/once.py",
    "vault/catalog.py",
    "meetings/catalog.py",
    "documents/catalog.py",
    "mail/journal.py",
    "mail/journal_postgres.py",
    "meetings/sync_state.py",
    "google/sealed_tokens.py",
    "mail/backends/maildir_store.py",
    "mail/backends/imap_store.py",
}
ENVIRONMENT_ALLOWED = {"core/settings.py"}
ENVIRONMENT_READ = re.compile(
    r"\bos\s*\.\s*(?:environb?|getenv|putenv|unsetenv)\b|\bgetenv\s*\(|\bfrom\s+os\s+import\b[^\n]*\benviron"
)
GOOGLE_EXECUTE = {"mail/backends/gmail.py", "sheets/backends/google.py"}
SQL_METHODS = ("execute", "executemany", "executescript")
SQL_START = re.compile(
    r"\s*(?:(select)\s.*?\bfrom\s|(insert)\s+(?:or\s+\w+\s+)?into\s|(update)\s+\w+\s+set\s|(delete)\s+from\s"
    r"|(create)\s+(?:temp\w*\s+|unique\s+|virtual\s+)*(?:table|index|trigger|view)\s+(?:if\s+not\s+exists\s+)?[\w.]+"
    r"\s*(?:\(|on\b|using\b|as\b)|(pragma)\s+\w|(with)\s+(?:recursive\s+)?\w+(?:\s*\([^)]*\))?\s+as\s*\()",
    re.IGNORECASE | re.DOTALL,
)
"""A statement: a keyword with the words that make it SQL, the keyword in capitals or in lower case
as code writes SQL ("Select a note from the list" is a sentence, "select key from docs" is SQL)."""


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def sql_violations(package: Path) -> list[str]:
    """One line per SQL text or SQL call outside the allowed modules: `file:line what: the rule`."""
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in SQL_ALLOWED:
            continue
        stat = path.stat()
        found += _file_violations(path, stat.st_mtime_ns, stat.st_size, rel, rel in GOOGLE_EXECUTE)
    return sorted(set(found))


@functools.cache
def _file_violations(path: Path, _mtime_ns: int, _size: int, rel: str, google: bool) -> tuple[str, ...]:
    """`sql_violations` of one file, kept per version of the file (the tests check the real tree twice)."""
    rule = "raw SQL only in the index and catalog modules"
    found: list[str] = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            # the literal parts of an f-string are Constant nodes too, so f"SELECT {x}" counts
            start = SQL_START.match(node.value)
            keyword = next((g for g in start.groups() if g), "") if start else ""
            if keyword.isupper() or keyword.islower():
                found.append(f"{rel}:{node.lineno} {keyword.upper()} text: {rule}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_METHODS
            and not (google and node.func.attr == "execute" and not (node.args and _is_text(node.args[0])))
        ):
            found.append(f"{rel}:{node.lineno} .{node.func.attr}(: {rule}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            found.append(
                f"{rel}:{node.lineno} __import__(: a module loaded by a computed name escapes the import contracts"
            )
        elif isinstance(node, ast.Import | ast.ImportFrom) and google:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(name == "sqlite3" or name.startswith("sqlite3.") for name in names):
                found.append(f"{rel}:{node.lineno} import sqlite3: {rule}")
    return tuple(found)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "deskmcp"
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return package


SQL_CLEAN = {
    "core/search/index.py": 'def get(conn):\n    return conn.execute("SELECT data FROM docs WHERE key=?", ("k",))\n',
    "core/search/textindex.py": "def later(conn):\n    conn.executescript('PRAGMA journal_mode=WAL;')\n",
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
    for rel in ("core/search/index.py", "vault/catalog.py", "meetings/catalog.py", "mail/backends/maildir_store.py"):
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
        "core/clock.py": 'STALE = """\n  delete from docs where key = ?"""\nLOADER = __import__(\'deskmcp.mail\')\n',
        "mail/backends/gmail.py": (
            "import sqlite3\n"
            "def page(api, conn):\n    api.users().labels().list(userId='me').execute()\n"
            "    conn.execute('select key from docs')\n"
        ),
        "sheets/backends/google.py": "def copy(conn, rows):\n    conn.executemany('insert into t values (?)', rows)\n",
    }
    rule = "raw SQL only in the index and catalog modules"
    assert sql_violations(write_tree(tmp_path, broken)) == [
        f"core/clock.py:1 DELETE text: {rule}",
        "core/clock.py:3 __import__(: a module loaded by a computed name escapes the import contracts",
        f"core/dates.py:2 .execute(: {rule}",
        f"core/dates.py:2 PRAGMA text: {rule}",
        f"documents/service.py:2 CREATE text: {rule}",
        f"mail/backends/gmail.py:1 import sqlite3: {rule}",
        f"mail/backends/gmail.py:4 .execute(: {rule}",
        f"mail/backends/gmail.py:4 SELECT text: {rule}",
        f"mail/backends/maildir.py:2 .executemany(: {rule}",
        f"meetings/filters.py:1 SELECT text: {rule}",
        f"meetings/service.py:2 SELECT text: {rule}",
        f"orchestrator/state.py:2 .executescript(: {rule}",
        f"sheets/backends/google.py:2 .executemany(: {rule}",
        f"sheets/backends/google.py:2 INSERT text: {rule}",
        f"sheets/service.py:1 WITH text: {rule}",
        f"vault/service.py:2 .execute(: {rule}",
        f"vault/service.py:2 SELECT text: {rule}",
    ]


# -- the import contracts -------------------------------------------------------------------------

VIOLATIONS = {
    "a service imports the MCP adapter core (which loads the SDK)": (
        "vault/service.py",
        "from deskmcp.core.server import DeskServer\n",
        "Only the entry points and the adapters themselves import an MCP adapter",
    ),
    "core imports the composition": ("core/paths.py", "from deskmcp import gateway\n", "Entry points over composition"),
    "core imports the Google layer": (
        "core/dates.py",
        "def later():\n    import deskmcp.google.auth\n",
        "Entry points",
    ),
    "core imports a server package": (
        "core/search/index.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from deskmcp.vault import service\n",
        "Entry points over composition",
    ),
    "a module is loaded by name with importlib": (
        "orchestrator/access.py",
        "import importlib\nMAIL = importlib.import_module('deskmcp.mail.service')\n",
        "Modules are imported by name only",
    ),
    "the orchestrator reaches mail through the server registry": (
        "orchestrator/service.py",
        "def mail():\n    from deskmcp.servers import SERVERS\n    return SERVERS['mail'].load()\n",
        "Only the adapters and the entry points use the server registry",
    ),
    "the orchestrator imports mail": (
        "orchestrator/triage.py",
        "import deskmcp.mail.backends.maildir\n",
        "over MCP only",
    ),
    "the error taxonomy imports the SDK lazily": (
        "core/errors.py",
        "def as_tool_error():\n    from mcp.server.mcpserver.exceptions import ToolError\n    return ToolError\n",
        "Only the MCP adapters and the entry points import the MCP SDK",
    ),
    "a service imports the SDK": ("mail/service.py", "import mcp.types\n", "import the MCP SDK"),
    "a service imports the Google libraries with a bare import google": (
        "sheets/service.py",
        "import google\n",
        "Only deskmcp.google and the two Google backends",
    ),
    "core imports a Google client library": ("core/retry.py", "import google_auth_httplib2\n", "Google client"),
    "an import circle between the orchestrator's modules": (
        "orchestrator/vault_port.py",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from deskmcp.orchestrator.mcp_vault import McpVault\n",
        "No import cycle between the modules of the orchestrator",
    ),
    "an import circle between the sheets modules": (
        "sheets/backends/csv_files.py",
        "def later():\n    from deskmcp.sheets.backends import book\n",
        "No import cycle between the modules or the sub-packages of sheets",
    ),
    "the xlsx package code reaches up into the sheets backends": (
        "sheets/xlsx/parts.py",
        "def later():\n    from deskmcp.sheets.backends import local\n",
        "Sheets: server over service over backends over xlsx over formulas",
    ),
    "the orchestrator imports the vault's MCP adapter": (
        "orchestrator/layout.py",
        "from deskmcp.vault import server\n",
        "Only the entry points and the adapters themselves import an MCP adapter",
    ),
}


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with the project's contracts on the `deskmcp` package under `src`."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=src,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.e2e
def test_the_source_tree_keeps_every_import_contract() -> None:
    done = lint_imports(SRC.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.e2e
@pytest.mark.parametrize("case", VIOLATIONS)
def test_the_import_contracts_refuse_each_kind_of_violation(case: str, tmp_path: Path) -> None:
    rel, code, contract = VIOLATIONS[case]
    copy = tmp_path / "deskmcp"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / rel
    target.write_text(target.read_text(encoding="utf-8") + "\n" + code, encoding="utf-8")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout


def layered_names(config: str) -> set[str]:
    """The top-level modules and packages named in the `layers` contract of an .importlinter text."""
    names: set[str] = set()
    section = re.search(r"^\[importlinter:contract:layers\]\n(.*?)(?=^\[|\Z)", config, re.M | re.S)
    assert section is not None, "no layers contract"
    layers = re.search(r"^layers\s*=\s*\n((?:[ \t]+\S.*\n?)+)", section.group(1), re.M)
    assert layers is not None, "the layers contract lists no layers"
    for line in layers.group(1).splitlines():
        names.update(part.strip() for part in line.split("|") if part.strip())
    return names


def top_level(src: Path) -> set[str]:
    """The modules and packages directly under the `deskmcp` package (its dunder modules aside)."""
    found = {p.stem for p in src.glob("*.py") if not p.name.startswith("__")}
    found |= {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return found


def test_every_top_level_module_and_package_sits_in_a_layer() -> None:
    config = (ROOT / ".importlinter").read_text(encoding="utf-8")
    outside = top_level(SRC) - layered_names(config)
    assert outside == set(), f"add these to a layer of the layers contract in .importlinter: {sorted(outside)}"


def test_the_layer_check_sees_a_module_added_outside_the_layers(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "__main__.py").write_text("", encoding="utf-8")
    (tmp_path / "cli.py").write_text("", encoding="utf-8")
    (tmp_path / "stray.py").write_text("", encoding="utf-8")
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "data").mkdir()  # a folder that is not a package is no module
    config = "[importlinter:contract:layers]\nname = x\ntype = layers\nlayers =\n    cli\n    demo | core\n"
    assert layered_names(config) == {"cli", "demo", "core"}
    assert top_level(tmp_path) - layered_names(config) == {"stray"}


ABOVE_THE_SERVERS = ("serving", "gateway.py")
"""What composes and serves the servers, and so names none: each server declares what differs."""


def _setting_names(cls: type) -> set[str]:
    from pydantic import AliasChoices
    from pydantic_settings import BaseSettings

    assert issubclass(cls, BaseSettings)
    names: set[str] = set()
    for name, info in cls.model_fields.items():
        names.add(name)
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(choice for choice in alias.choices if isinstance(choice, str))
        elif isinstance(alias, str):
            names.add(alias)
    return names


def server_words() -> tuple[set[str], set[str], set[str]]:
    """The servers' names; their settings' names that are a sign of them wherever they appear (the
    environment names, and field names of several words); and their one-word field names (`source`,
    `accounts`), a sign of them only as a string of their own (a lookup by name). The settings every
    server shares (the workspace's, the Google sign-in's) are nobody's in particular, and the error
    taxonomy's codes (`timeout`) are core's words."""
    from deskmcp.core.config import WorkspaceSettings
    from deskmcp.core.errors import ERRORS_BY_CODE
    from deskmcp.google.auth import GoogleSettings
    from deskmcp.servers import SERVERS

    shared = _setting_names(WorkspaceSettings) | _setting_names(GoogleSettings)
    keys: set[str] = set()
    for spec in SERVERS.values():
        keys |= _setting_names(spec.load().Settings) - shared
    words = {k for k in keys if k.isupper() or "_" in k}
    return set(SERVERS), words, keys - words - set(ERRORS_BY_CODE)


def names_of_servers(files: list[Path]) -> list[str]:
    """`file:line: word` for every server name or server setting in `files`' code, strings and comments."""
    servers, keys, plain = server_words()
    found: list[str] = []
    word = re.compile(r"[A-Za-z0-9_]+")
    for path in files:
        text = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type not in (tokenize.NAME, tokenize.STRING, tokenize.COMMENT):
                continue
            named = [w for w in word.findall(token.string) if w.lower() in servers or w in keys]
            if token.type == tokenize.STRING and token.string.strip("'\"") in plain:
                named.append(token.string)
            found += [f"{path.name}:{token.start[0]}: {w}" for w in named]
    return found


def above_the_servers(src: Path) -> list[Path]:
    files: list[Path] = []
    for name in ABOVE_THE_SERVERS:
        path = src / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def test_nothing_above_the_servers_names_a_server_or_its_settings() -> None:
    found = names_of_servers(above_the_servers(SRC))
    assert found == [], (
        "declare what differs per server on its module (servers.UserPolicy, the module's USERS) "
        f"instead of naming it here: {found}"
    )


def test_the_server_name_check_sees_a_server_and_its_settings_named(tmp_path: Path) -> None:
    (tmp_path / "serving").mkdir()
    (tmp_path / "serving" / "users.py").write_text(
        'PER_USER = [n for n in SERVERS if n != "orchestrator"]\n'
        'if "password_env" in str(getattr(settings, "accounts", "")):\n'
        "    raise PermissionDenied('MAIL_ACCOUNTS may not name *_password_env')\n"
        "# the team folders go into extra_roots\n"
        "source = settings.source  # a word, not a lookup by name\n",
        encoding="utf-8",
    )
    (tmp_path / "gateway.py").write_text(
        '"""Composes the servers."""\nfrom deskmcp.vault import server\n', encoding="utf-8"
    )

    found = names_of_servers(above_the_servers(tmp_path))

    assert found == [
        "users.py:1: orchestrator",
        'users.py:2: "accounts"',
        "users.py:3: MAIL_ACCOUNTS",
        "users.py:4: extra_roots",
        "gateway.py:2: vault",
    ]


def environment_reads(src: Path) -> list[str]:
    """`path:line` of each place outside `ENVIRONMENT_ALLOWED` that names this process's environment."""
    found: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel in ENVIRONMENT_ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if ENVIRONMENT_READ.search(line):
                found.append(f"{rel}:{number}")
    return found


def test_only_the_settings_mechanism_reads_the_environment() -> None:
    assert all((SRC / rel).is_file() for rel in ENVIRONMENT_ALLOWED)
    assert environment_reads(SRC) == [], "read settings through a Settings class, the rest through core.settings"


def test_the_environment_check_sees_each_spelling(tmp_path: Path) -> None:
    package = write_tree(
        tmp_path,
        {
            "core/settings.py": "import os\nCOPY = dict(os.environ)\n",
            "core/dates.py": "import os\nZONE = os.environ.get('TZ')\n",
            "vault/service.py": "import os\nROOT = os.getenv('VAULT_PATH')\n",
            "mail/service.py": "from os import environ as env, getenv\n",
            "sheets/service.py": "import os\ndef f():\n    os.environ['X'] = '1'\n",
            "diagrams/service.py": "import os\nPATH = os.path.join('a', 'b')  # the environment is not read here\n",
        },
    )
    assert environment_reads(package) == [
        "core/dates.py:2",
        "mail/service.py:1",
        "sheets/service.py:3",
        "vault/service.py:2",
    ]
