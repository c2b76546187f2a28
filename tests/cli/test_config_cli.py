"""`repogym config check`: prints the resolved config, or every error with its key path."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from repogym.cli import app, common

RUNNER = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """Rich fixes the width when the console is made (from COLUMNS then); tables must not wrap here."""
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def test_check_prints_the_resolved_config_with_overrides(examples_dir):
    seed = examples_dir / "seed_grpo.yaml"
    result = RUNNER.invoke(
        app,
        ["config", "check", str(seed), "rollout.max_steps=20", "learning_rate=5e-6"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    first, _, rest = result.stdout.partition("\n")
    assert first == f"ok {seed}"
    resolved = yaml.safe_load(rest)
    assert resolved["rollout"] == {"num_candidates": 16, "async": True, "max_steps": 20}
    assert resolved["learning_rate"] == 5e-06
    assert resolved["env"]["mode"] == "agent", "defaults are filled in"
    assert [c["fn"] for c in resolved["reward"]["components"]] == [
        "run_pytest",
        "type_check",
        "diff_size_penalty",
    ]


def test_misspelled_key_exits_2_with_path_and_suggestion(examples_dir, tmp_path):
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        (examples_dir / "seed_grpo.yaml").read_text().replace("num_candidates:", "num_candidate:")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from repogym.cli import main; main()",
            "config",
            "check",
            str(typo),
            "batch_size=0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"error: {typo}: 2 error(s)" in done.stderr
    assert "rollout.num_candidate: unknown key; did you mean 'rollout.num_candidates'?" in done.stderr
    assert "batch_size: Input should be greater than or equal to 1 (got 0)" in done.stderr


def test_bad_override_is_a_clear_error(examples_dir):
    result = RUNNER.invoke(
        app, ["config", "check", str(examples_dir / "seed_grpo.yaml"), "rollout.max_steps"]
    )
    assert result.exit_code == 2
    assert "override 'rollout.max_steps': expected key.path=value" in result.stderr
