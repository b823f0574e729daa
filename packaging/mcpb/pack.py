"""Pack deskmcp as an MCP Bundle (`.mcpb`), the one-click install of Claude Desktop.

    uv run python packaging/mcpb/pack.py [--out dist] [--offline]

The bundle holds manifest.json, icon.png, server/main.py (the entry point: `deskmcp serve all`),
the deskmcp wheel built from this checkout, and a pyproject.toml with its uv.lock that make uv
install that wheel and its dependencies when the host starts the bundle (server type `uv`). The
manifest is validated and the bundle packed by the official CLI, `@anthropic-ai/mcpb` at the
version pinned in packaging/mcpb/package-lock.json (`npm ci` in packaging/mcpb installs it).
`--offline` builds and resolves from uv's cache only. Prints the bundle's path.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MCPB = HERE / "node_modules" / ".bin" / "mcpb"


def fail(message: str) -> None:
    print(f"pack.py: {message}", file=sys.stderr)
    raise SystemExit(1)


def run(command: list[str], **kwargs: object) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        fail(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")


def project_version() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    if manifest["version"] != project["version"]:
        fail(f"manifest.json says version {manifest['version']}, pyproject.toml {project['version']}: make them one.")
    return str(project["version"])


def stage(folder: Path, version: str, *, offline: bool) -> None:
    """Lay out the bundle's files in `folder`."""
    uv = shutil.which("uv") or fail("uv is not on PATH.")
    assert uv is not None
    for name in ("manifest.json", "icon.png", ".mcpbignore"):
        shutil.copy2(HERE / name, folder / name)
    (folder / "server").mkdir()
    shutil.copy2(HERE / "server" / "main.py", folder / "server" / "main.py")
    offline_flag = ["--offline"] if offline else []
    run([uv, "build", "--wheel", "--quiet", *offline_flag, "--out-dir", str(folder / "wheels")], cwd=ROOT)
    wheel = next((folder / "wheels").glob("deskmcp-*.whl")).name
    template = (HERE / "bundle-pyproject.toml").read_text(encoding="utf-8")
    pyproject = template.replace('"VERSION"', f'"{version}"').replace("wheels/WHEEL", f"wheels/{wheel}")
    (folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    run([uv, "lock", "--quiet", *offline_flag], cwd=folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="Folder to write the bundle to.")
    parser.add_argument("--offline", action="store_true", help="Resolve the bundle's lock from uv's cache only.")
    args = parser.parse_args()
    if not MCPB.is_file():
        fail(f"the mcpb CLI is not installed: run `npm ci` in {HERE}.")
    version = project_version()
    with tempfile.TemporaryDirectory(prefix="deskmcp-mcpb-") as tmp:
        folder = Path(tmp) / "deskmcp"
        folder.mkdir()
        stage(folder, version, offline=args.offline)
        run([str(MCPB), "validate", str(folder / "manifest.json")])
        args.out.mkdir(parents=True, exist_ok=True)
        bundle = args.out.resolve() / f"deskmcp-{version}.mcpb"
        run([str(MCPB), "pack", str(folder), str(bundle)])
    print(bundle)


if __name__ == "__main__":
    main()
