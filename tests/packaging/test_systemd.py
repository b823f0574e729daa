"""packaging/systemd/deskmcp.service, the unit that keeps a team's `deskmcp serve all --http`
running, as `systemd-analyze verify` reads it (skipped where systemd-analyze is absent)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import REPO

UNIT = REPO / "packaging" / "systemd" / "deskmcp.service"
INSTALLED = "/opt/deskmcp/bin/deskmcp"
ANALYZE = shutil.which("systemd-analyze")

pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed (systemd's tools)")


def verify(text: str, folder: Path) -> str:
    """What `systemd-analyze verify` says of a unit with this text (empty: nothing to say)."""
    assert ANALYZE is not None
    unit = folder / "deskmcp.service"
    unit.write_text(text, encoding="utf-8")
    done = subprocess.run([ANALYZE, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False)
    said = "\n".join(line for line in (done.stdout + done.stderr).splitlines() if "deskmcp.service" in line)
    return said or ("" if done.returncode == 0 else f"exit code {done.returncode}")


def _as_installed_here(text: str) -> str:
    # The unit names the command where the docs install it; here the checkout's own stands in.
    executable = Path(sys.executable).with_name("deskmcp")
    assert executable.is_file(), executable
    return text.replace(INSTALLED, str(executable))


def test_the_unit_verifies_without_a_word(tmp_path: Path) -> None:
    text = UNIT.read_text(encoding="utf-8")
    assert f"ExecStart={INSTALLED} serve all --http" in text
    assert verify(_as_installed_here(text), tmp_path) == ""


def test_verify_reports_a_mistake_in_the_unit(tmp_path: Path) -> None:
    # The check can fail: a misspelt setting and a bad value are reported, naming the unit.
    text = _as_installed_here(UNIT.read_text(encoding="utf-8"))
    broken = text.replace("Restart=on-failure", "Restart=sometimes\nRestartSecs=2")
    said = verify(broken, tmp_path)
    assert "Restart" in said and "RestartSecs" in said
