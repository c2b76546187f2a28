"""`repogym COMMAND` imports only the stage that provides COMMAND: the table in repogym.cli must say which
stage adds which command, and a grade must not import the trainer, the miner or gymnasium."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import typer
import typer.main

from repogym.cli import _GROUPS, STAGES, app


def _top_level(command) -> set[str]:
    return set(getattr(command, "commands", {}) or {command.name})


def test_each_stage_adds_exactly_the_commands_the_table_names() -> None:
    for module_name, commands in STAGES.items():
        module = importlib.import_module(f"repogym.cli.{module_name}")
        if module_name in _GROUPS:
            assert commands == (_GROUPS[module_name],)
            continue
        alone = typer.Typer()
        module.register(alone)
        assert _top_level(typer.main.get_command(alone)) == set(commands), module_name
    everything = {name for commands in STAGES.values() for name in commands}
    assert _top_level(typer.main.get_command(app)) == everything


def test_grade_starts_without_the_other_stages() -> None:
    probe = (
        "import sys; sys.argv = ['repogym', 'grade', '--help']\n"
        "from repogym.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('gymnasium', 'numpy', 'torch', 'transformers', 'pandas', 'repogym.train', 'repogym.mining', "
        "'repogym.env', 'repogym.config')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Example" in done.stdout  # the grade help was printed
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_json_grade_imports_no_rich(toy_task, toy_runtime, tmp_path) -> None:
    """`repogym grade --json` into a pipe prints nothing through rich (no console, no spinner): rich is not
    imported (about 15-25 ms of a grade's start-up)."""
    from repogym.dataset import save_tasks

    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    probe = (
        "import json, sys\n"
        f"sys.argv = ['repogym', 'grade', {str(tasks)!r}, '--instance', {toy_task.instance_id!r}, '--gold', '--json']\n"
        "from repogym.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'rich')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["outcome"] == "RESOLVED", done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
