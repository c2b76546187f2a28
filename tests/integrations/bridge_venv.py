"""The trainers' own virtual environments (scripts/setup_bridges.sh makes them beside .venv): finding one, or
skipping with the reason, and running a checks script in it with this checkout's src/ on its path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
HOW = "bash scripts/setup_bridges.sh"
#: What setup_bridges.sh leaves in a venv whose install failed: the failing pip step and its output's tail.
INSTALL_ERROR = "install-error.txt"


def bridge_python(venv: Path, module: str, variable: str) -> Path:
    """The venv's Python, or a skip quoting why it cannot run `module`: no venv (`variable` names another),
    the install error setup_bridges.sh recorded, or the import's own error."""
    python = venv / "bin" / "python"
    error = venv / INSTALL_ERROR
    if error.exists():
        pytest.skip(f"{module} could not be installed in {venv} ({HOW}): {error.read_text().strip()}")
    if not python.exists():
        pytest.skip(f"no virtual environment for {module} at {venv} (set {variable}, or make it: {HOW})")
    found = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip(f"{module} does not import in {venv}: {found.stderr.strip().splitlines()[-1:]} ({HOW})")
    return python


def run_checks(python: Path, script: Path, inputs: dict[str, Any], work: Path) -> dict[str, Any]:
    """What `script` saw (`PYTHON SCRIPT INPUTS.json SEEN.json`), run in the venv with this checkout's repogym."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "inputs.json").write_text(json.dumps(inputs))
    environment = {**os.environ, "PYTHONPATH": str(SRC)}  # this checkout's repogym, whatever the venv has
    run = subprocess.run(
        [python, script, work / "inputs.json", work / "seen.json"],
        capture_output=True, text=True, env=environment, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, f"{script.name} failed under {python}:\n{run.stderr[-4000:]}"
    print(f"{script.name} ran under {python}", file=sys.stderr)
    return json.loads((work / "seen.json").read_text())
