"""A deskmcp process as on an install without some extras: a `sitecustomize` module on PYTHONPATH
puts a meta path finder first that refuses the named top-level packages, in that process and in
every Python process it starts (the demo's servers, the orchestrator's), as a missing package would."""

from __future__ import annotations

import os
from pathlib import Path

GOOGLE = ("google", "googleapiclient", "google_auth_oauthlib", "google_auth_httplib2", "httplib2")
REMOTE = ("joserfc", "psycopg", "psycopg_pool")
SEMANTIC = ("numpy", "model2vec", "safetensors", "tokenizers")
EVERY_EXTRA = GOOGLE + REMOTE + SEMANTIC

SITECUSTOMIZE = '''
import os
import sys

_BLOCKED = frozenset(os.environ.get("DESKMCP_TEST_BLOCKED_MODULES", "").split(","))


class _Blocked:
    """Refuses the packages of the extras not installed, as if they were absent."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
'''


def lean_environment(folder: Path, env: dict[str, str], blocked: tuple[str, ...] = EVERY_EXTRA) -> dict[str, str]:
    """`env` for a process that cannot import `blocked` (top-level package names)."""
    site = folder / "lean-site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "DESKMCP_TEST_BLOCKED_MODULES": ",".join(blocked)}
