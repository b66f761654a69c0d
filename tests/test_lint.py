"""The tree stays clean under the project's ruff and mypy configuration (pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed in this environment (pip install -e '.[dev]')")
    return found


def test_ruff() -> None:
    out = subprocess.run([_tool("ruff"), "check", "raftstore", "storage", "apiserver", "tests", "e2e", "bench"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict() -> None:
    out = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
