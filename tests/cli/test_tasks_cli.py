"""`repogym tasks ...` and the CLI as a whole, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from repogym import __version__
from repogym.cli import app, common
from repogym.dataset import load_tasks

RUNNER = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """Rich fixes the width when the console is made (from COLUMNS then); tables must not wrap here."""
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def invoke(*args: str):
    return RUNNER.invoke(app, list(args))


def run_main(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real entry point in a fresh process: its exit status and stderr are what a shell sees."""
    return subprocess.run(
        [sys.executable, "-c", "from repogym.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        timeout=60,
    )


def _all_commands():
    def walk(command, path):
        yield path
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def test_version_from_the_installed_script():
    script = Path(sys.executable).parent / "repogym"
    command = (
        [str(script)] if script.exists() else [sys.executable, "-c", "from repogym.cli import main; main()"]
    )
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == f"repogym {__version__}"


@pytest.mark.parametrize("command", _all_commands(), ids=lambda path: " ".join(path) or "repogym")
def test_every_help_has_an_example(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout, f"`repogym {' '.join(command)} --help` shows no example"


@pytest.mark.parametrize("out_name", ["tasks.jsonl", "tasks.parquet", "tasks.json"])
def test_import_any_format_to_any_format(tmp_path, swebench_sample_path, out_name):
    out = tmp_path / out_name
    result = invoke("tasks", "import", str(swebench_sample_path), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"wrote 4 tasks to {out}" in result.stdout
    assert list(load_tasks(out)) == list(load_tasks(swebench_sample_path))
    # and back from the written format into another one
    again = tmp_path / "again.jsonl"
    assert invoke("tasks", "import", str(out), "-o", str(again)).exit_code == 0
    assert list(load_tasks(again)) == list(load_tasks(swebench_sample_path))


def test_export_swebench_gives_back_the_original_rows(tmp_path, examples_dir, swebench_rows):
    out = tmp_path / "swebench.json"
    result = invoke(
        "tasks", "export", str(examples_dir / "tasks.jsonl"), "--format", "swebench", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert "(swebench form)" in result.stdout
    assert json.loads(out.read_text(encoding="utf-8")) == swebench_rows


def test_stats_table_shows_repos_and_patch_sizes(examples_dir):
    result = invoke("tasks", "stats", str(examples_dir / "tasks.jsonl"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"4 tasks in {examples_dir / 'tasks.jsonl'}" in lines[0]

    def row(label: str) -> list[str]:
        found = [line for line in lines if f" {label} " in line]
        assert found, f"no row {label!r} in:\n{result.stdout}"
        return [cell.strip() for cell in found[0].strip("│ ").split("│")]

    for repo in ("pallets/flask", "psf/requests", "sympy/sympy", "django/django"):
        assert row(repo) == [repo, "1"]
    assert row("files in patch") == ["files in patch", "2.0", "2", "2"]
    assert row("lines in patch") == ["lines in patch", "9.2", "9", "11"]
    assert row("lines in test patch") == ["lines in test patch", "7.2", "6", "13"]
    assert row("FAIL_TO_PASS tests") == ["FAIL_TO_PASS tests", "1.2", "1", "2"]
    assert row("PASS_TO_PASS tests") == ["PASS_TO_PASS tests", "4.0", "5", "6"]
    assert "sources: imported: 4" in result.stdout


def test_stats_json_is_machine_readable(swebench_sample_path):
    result = invoke("tasks", "stats", str(swebench_sample_path), "--json")
    figures = json.loads(result.stdout)
    assert figures["per_repo"]["psf/requests"] == 1
    assert figures["patch_lines"] == {"mean": 9.25, "median": 9.0, "max": 11}


def test_show_prints_the_task(examples_dir):
    result = invoke("tasks", "show", str(examples_dir / "tasks.jsonl"), "psf__requests-2931")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "psf__requests-2931  repo psf/requests @ 5f7a3a74aab1  source imported" in out
    assert "Request with binary payload fails due to calling to_native_string" in out
    assert "patch: 2 file(s), +8 -1" in out
    assert "-            return to_native_string(data)" in out
    assert "+    def test_binary_put(self):" in out
    assert "FAIL_TO_PASS (1): test_requests.py::TestRequests::test_binary_put" in out
    as_json = invoke("tasks", "show", str(examples_dir / "tasks.jsonl"), "psf__requests-2931", "--json")
    assert json.loads(as_json.stdout)["FAIL_TO_PASS"] == ["test_requests.py::TestRequests::test_binary_put"]


def test_show_prints_task_text_literally(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    row = {
        "instance_id": "o__r-[1]",
        "repo": "o/r",
        "base_commit": "c",
        "patch": "p",
        "problem_statement": "[bold]not bold[/bold] and a stray [/x] :fire:",
    }
    tasks.write_text(json.dumps(row) + "\n")
    result = invoke("tasks", "show", str(tasks), "o__r-[1]")
    assert result.exit_code == 0, result.output
    assert "[bold]not bold[/bold] and a stray [/x] :fire:" in result.stdout
    assert "o__r-[1]  repo o/r" in result.stdout


def test_unknown_id_lists_close_matches_and_exits_2(examples_dir):
    done = run_main("tasks", "show", str(examples_dir / "tasks.jsonl"), "psf__requests-2391")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ")
    assert "no task with instance_id 'psf__requests-2391'" in done.stderr
    assert "closest: psf__requests-2931" in done.stderr
    assert done.stdout == ""


def test_bad_input_and_unwritable_output_exit_2_without_traceback(tmp_path, swebench_sample_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "a[/b]", "repo": "o/r", "base_commit": "c"}\n')
    done = run_main("tasks", "stats", str(bad))
    assert (done.returncode, "Traceback" in done.stderr) == (2, False)
    assert f"error: {bad}:1 (instance_id 'a[/b]'): missing required field(s) ['patch']" in done.stderr

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    done = run_main("tasks", "import", str(swebench_sample_path), "--out", str(blocked / "tasks.jsonl"))
    assert (done.returncode, "Traceback" in done.stderr) == (2, False)
    assert "cannot write" in done.stderr


def test_bad_output_suffix_fails_before_reading(tmp_path):
    result = invoke("tasks", "import", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "tasks.csv"))
    assert result.exit_code == 2
    assert "unknown output suffix '.csv'" in result.stderr
