"""`repogym COMMAND` imports only the modules that provide COMMAND: the table in repogym.cli must say which
module adds which command, a grade must not import the trainer, the miner, gymnasium or the log parsers its
task does not use, and `repogym --help` still lists every command."""

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

from repogym.cli import COMMANDS as MODULES
from repogym.cli import GROUPS, INDEX, _new_app, app, build_app, build_index_app, modules_for
from repogym.cli.common import add_group

#: Imported by `repogym.cli` itself, on every command line: `main` ends a training process group on the way
#: out (train/launch.py imports torch inside its function only).
MAIN_IMPORTS = ("repogym.train", "repogym.train.launch")


def _paths(typer_app: typer.Typer) -> set[str]:
    """Every command and group under the root, as "tasks audit"."""

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            yield " ".join([*path, name])
            yield from walk(sub, [*path, name])

    return set(walk(typer.main.get_command(typer_app), []))


def test_each_module_adds_exactly_the_command_the_table_names() -> None:
    """A module adds the one command COMMANDS names for it, into its group (made from GROUPS)."""
    for module_name, command in MODULES.items():
        alone = _new_app()
        if " " in command:
            group = command.split()[0]
            add_group(alone, group, GROUPS[group].help, GROUPS[group].default)
        before = _paths(alone)
        importlib.import_module(f"repogym.cli.{module_name}").register(alone)
        assert _paths(alone) - before == {command}, module_name
    assert _paths(app) == {*MODULES.values(), *GROUPS}


def test_a_command_line_imports_only_its_command() -> None:
    """`repogym tasks stats ...` builds the tasks group with `stats` alone (not `tasks audit`, which imports
    the audit battery); a group's help lists every command of the group; a group's default command runs
    alone when it is what runs."""
    assert modules_for(["tasks", "stats", "t.jsonl"]) == ["tasks_stats_cmd"]
    stats = typer.main.get_command(build_app(["tasks", "stats", "t.jsonl"])).commands["tasks"]
    assert set(stats.commands) == {"stats"}
    listed = typer.main.get_command(build_app(["tasks", "--help"])).commands["tasks"]
    assert set(listed.commands) == {"import", "export", "stats", "show", "split", "audit", "check"}
    assert modules_for(["synth", "../calc", "--out", "c.jsonl"]) == ["synth_inject_cmd"]
    assert modules_for(["synth", "methods"]) == ["synth_methods_cmd"]
    assert modules_for(["nonsense"]) == list(MODULES)
    probe = (
        "import sys; sys.argv = ['repogym', 'synth', 'methods', '--json']\n"
        "from repogym.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('repogym.cli.') and m.endswith('_cmd')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "['repogym.cli.synth_methods_cmd']", done.stderr


def test_grade_starts_without_the_other_stages() -> None:
    probe = (
        "import sys; sys.argv = ['repogym', 'grade', '--help']\n"
        "from repogym.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('gymnasium', 'numpy', 'torch', 'transformers', 'pandas', 'repogym.train', 'repogym.mining', "
        "'repogym.env', 'repogym.config')\n"
        f"print(sorted(m for m in sys.modules if m.startswith(heavy) and m not in {MAIN_IMPORTS!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Example" in done.stdout  # the grade help was printed
    assert done.stdout.strip().splitlines()[-1] == "[]"


#: What a `repogym grade --json` of a pytest task has no use for: the other commands and their libraries, the
#: log parsers of other test frameworks (each compiles its patterns at import), and the env-file and config
#: readers. (rich is imported: the CLI's modules import at their top, issue 27; it prints nothing into a pipe.)
NOT_ON_THE_GRADE_PATH = (
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
    *(f"repogym.cli.{module}" for module in MODULES if module != "grade_cmd"),
    "repogym.cli.attempt_options",
    "repogym.cli.progress",
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
        "found = sorted(m for m in sys.modules if any(m == u or m.startswith(u + '.') for u in unneeded)\n"
        f"               and m not in {MAIN_IMPORTS!r})\n"
        "import gc, threading\n"
        "waited = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]\n"
        "sys.stderr.write(json.dumps([found, waited, gc.isenabled(), gc.get_freeze_count() > 0]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["outcome"] == "RESOLVED", done.stdout + done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [[], [], True, True], done.stderr


#: The top-level commands, as scripts call them: none may go missing from `repogym --help`.
COMMANDS = ("tasks", "config", "synth", "quickstart", "samples", "mine", "validate", "scrub", "grade", "play")
COMMANDS += ("rollout", "serve", "data", "model", "train", "eval", "report", "cache", "verify")
COMMANDS += ("env", "doctor", "export")


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
    """`repogym`, `repogym --help` and `repogym --version` are answered by the index app (no command module
    imported): what it prints, and its exit status, must be the full app's to the character, so a command
    added to MODULES or a help line edited in its docstring without INDEX following fails here."""
    from typer.testing import CliRunner

    assert list(INDEX) == [name for name in typer.main.get_command(app).list_commands(None)]  # type: ignore[arg-type]
    runner = CliRunner()
    for args in ([], ["--help"], ["--version"]):
        index = runner.invoke(build_index_app(), args, env={"COLUMNS": "100"})
        full = runner.invoke(app, args, env={"COLUMNS": "100"})
        assert (index.exit_code, index.output) == (full.exit_code, full.output), args


def test_root_help_imports_no_command_module() -> None:
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
    shared = ["repogym.cli.common", "repogym.cli.openmp", "repogym.cli.options"]  # what every command shares
    assert done.stdout.strip().splitlines()[-1] == str(sorted([*shared, *MAIN_IMPORTS]))
