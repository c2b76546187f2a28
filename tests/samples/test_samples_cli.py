"""`repogym samples generate` as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from repogym.cli import app
from repogym.samples import load_manifest


def test_generate_writes_repos_exports_and_manifests(tmp_path: Path) -> None:
    out = tmp_path / "samples"
    result = CliRunner().invoke(
        app,
        [
            "samples",
            "generate",
            str(out),
            "--seed",
            "4",
            "--repos",
            "2",
            "--license",
            "Apache-2.0",
            "--bug-fixes",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    manifests = sorted(out.glob("*.manifest.json"))
    assert len(manifests) == 2
    for manifest in manifests:
        repo = load_manifest(manifest)
        assert repo.name in result.output and repo.head[:8] in result.output
        assert repo.license == "Apache-2.0" and len(repo.fixes) == 2
        assert (out / f"{repo.name}.prs.jsonl").is_file()
        assert all(fix.slug in result.output for fix in repo.fixes)
        assert (repo.path / ".git").is_dir()
    assert "wrote 2 repositories" in result.output


def test_generate_json_and_no_prs(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["samples", "generate", str(tmp_path / "s"), "--repos", "1", "--no-prs", "--json"]
    )
    assert result.exit_code == 0, result.output
    (repo,) = json.loads(result.output)
    assert repo["prs_path"] is None and {fix["kind"] for fix in repo["fixes"]} == {"commit"}


def test_help_has_an_example() -> None:
    result = CliRunner().invoke(app, ["samples", "generate", "--help"])
    assert result.exit_code == 0
    assert "Example: repogym samples generate" in result.output


def test_unknown_licence_is_one_red_line_and_exit_2(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-c",
        "from repogym.cli import main; main()",
        "samples",
        "generate",
        str(tmp_path / "s"),
        "--license",
        "WTFPL",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 2
    assert "unknown licence 'WTFPL'" in result.stderr and "Traceback" not in result.stderr
