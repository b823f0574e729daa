"""The test suite's own rules: shared helpers come from tests/helpers, never from a conftest module
(pytest loads conftests itself; importing one a second time as a module runs its code twice and ties
one folder's tests to another's fixtures file)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def conftest_imports(source: str) -> list[str]:
    """The `from ... import` lines of `source` that name a conftest module, as written."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module.split(".")[-1] == "conftest" or any(a.name == "conftest" for a in node.names):
                found.append(f"from {module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[-1] == "conftest"]
    return found


def test_conftest_imports_are_found_in_every_spelling() -> None:
    source = (
        "from tests.mail.conftest import call\n"
        "from .conftest import write\n"
        "from . import conftest\n"
        "import tests.conftest\n"
        "def f():\n    from tests.sheets.conftest import make_xlsx\n"
        "from tests.helpers.files import write\n"
    )
    assert conftest_imports(source) == [
        "from tests.mail.conftest import call",
        "from .conftest import write",
        "from . import conftest",
        "import tests.conftest",
        "from tests.sheets.conftest import make_xlsx",
    ]


def test_no_test_module_imports_from_a_conftest() -> None:
    # every spelling of such an import holds the word, so only the files that do are parsed
    sources = {path: path.read_text(encoding="utf-8") for path in sorted(TESTS.rglob("*.py"))}
    offenders = {
        path.relative_to(TESTS).as_posix(): found
        for path, source in sources.items()
        if "conftest" in source and (found := conftest_imports(source))
    }
    assert offenders == {}, "import these from tests.helpers (or use a fixture) instead"
