"""`repogym COMMAND` imports only the stage that provides COMMAND: the table in repogym.cli must say which
stage adds which command, a grade must not import the trainer, the miner, gymnasium, rich or the log parsers
its task does not use, and `repogym --help` still lists every command."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import subprocess
import sys

import typer
import typer.main

from repogym.cli import _GROUPS, INDEX, STAGES, app, build_index_app


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


#: What a `repogym grade --json` of a pytest task has no use for: rich (it prints nothing through it into a
#: pipe: no console, no spinner; 15-25 ms of start-up), the other stages and their libraries, the log parsers
#: of other test frameworks (each compiles its patterns at import), and the env-file and config readers.
NOT_ON_THE_GRADE_PATH = (
    "rich",
    "gymnasium",
    "numpy",
    "pandas",
    "torch",
    "transformers",
    "datasets",
    "repogym.agent",
    "repogym.config",
    "repogym.data",
    "repogym.env",
    "repogym.envfile",
    "repogym.evaluate",
    "repogym.mining",
    "repogym.rollout",
    "repogym.serve",
    "repogym.synth",
    "repogym.train",
    "repogym.validate",
    "repogym.grading.parsers.django",
    "repogym.grading.parsers.sympy",
    "repogym.grading.parsers.unittest",
    *(f"repogym.cli.{stage}" for stage in STAGES if stage != "grade_cmd"),
)


def test_json_grade_imports_only_what_the_grade_path_needs(toy_task, toy_runtime, tmp_path) -> None:
    """A real `repogym grade TASKS --instance ID --gold --json` of the toy task in a fresh process: it
    resolves, no module of NOT_ON_THE_GRADE_PATH (nor one under it) was imported, no thread is left for the
    exit to wait on (the episode's layer is deleted by a detached process: tests/sandbox/
    test_detached_deletion.py), and the garbage collector, paused while the process started, ran the
    command switched on again (what start-up made frozen)."""
    from repogym.dataset import save_tasks

    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    probe = (
        "import json, sys\n"
        f"sys.argv = ['repogym', 'grade', {str(tasks)!r}, '--instance', {toy_task.instance_id!r}, '--gold', '--json']\n"
        "from repogym.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"unneeded = {NOT_ON_THE_GRADE_PATH!r}\n"
        "found = sorted(m for m in sys.modules if any(m == u or m.startswith(u + '.') for u in unneeded))\n"
        "import gc, threading\n"
        "waited = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]\n"
        "sys.stderr.write(json.dumps([found, waited, gc.isenabled(), gc.get_freeze_count() > 0]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["outcome"] == "RESOLVED", done.stdout + done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [[], [], True, True], done.stderr


#: The top-level commands, as scripts call them: none may go missing from `repogym --help`.
COMMANDS = ("tasks", "config", "synth", "quickstart", "samples", "mine", "validate", "scrub", "grade", "play")
COMMANDS += ("rollout", "serve", "data", "model", "train", "eval", "report", "cache")


def test_root_help_lists_every_command_with_its_help_line() -> None:
    """`python -m repogym --help` in a fresh process (the way a user starts it, not the in-process app) shows
    each command beside the first paragraph of its own help."""
    group = typer.main.get_command(app)
    assert set(group.commands) == set(COMMANDS)
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "--help"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    # Box borders and the wrapping of long help lines removed: one line of words to search in.
    shown = " ".join(re.sub(r"[\u2500-\u257f]", " ", done.stdout).split())
    for name in COMMANDS:
        first_paragraph = inspect.cleandoc(group.commands[name].help or "").split("\n\n")[0]
        assert first_paragraph, f"{name} has no help text"
        assert f" {name} {' '.join(first_paragraph.split())}" in shown, (name, done.stdout)


def test_root_help_from_the_index_is_the_full_apps_page() -> None:
    """`repogym`, `repogym --help` and `repogym --version` are answered by the index app (no stage imported):
    what it prints, and its exit status, must be the full app's to the character, so a command added to
    STAGES or a help line edited in its docstring without INDEX following fails here."""
    from typer.testing import CliRunner

    assert list(INDEX) == [name for name in typer.main.get_command(app).list_commands(None)]  # type: ignore[arg-type]
    runner = CliRunner()
    for args in ([], ["--help"], ["--version"]):
        index = runner.invoke(build_index_app(), args, env={"COLUMNS": "100"})
        full = runner.invoke(app, args, env={"COLUMNS": "100"})
        assert (index.exit_code, index.output) == (full.exit_code, full.output), args


def test_root_help_imports_no_stage() -> None:
    """A fresh `repogym --help` lists every command without importing the modules that provide them."""
    probe = (
        "import sys; sys.argv = ['repogym', '--help']\n"
        "from repogym.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('repogym.cli.', 'repogym.validate', "
        "'repogym.mining', 'repogym.train', 'repogym.grading'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert " quickstart " in done.stdout and " cache " in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "['repogym.cli.openmp']"
