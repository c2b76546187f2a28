"""The CLI speaks one vocabulary (issue 27): the whole command tree, as typer builds it, walked and held to it.

The task file is the first argument, output goes to `--out/-o`, parallelism is `--jobs/-j`, `--json` prints one
JSON object on stdout and nothing else, and every command's help shows an example. Old spellings
(`--workers`, `--tasks FILE`, `--out-dir`, `model init --tiny DIR`) keep working with a one-line note.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from repogym.cli import app, common
from repogym.cli.common import REGISTERED
from repogym.cli.options import Json, NowFirstArgument, Renamed
from repogym.dataset import load_tasks

RUNNER = CliRunner()

#: Commands without --json, and why.
NO_JSON = {"play": "interactive: a person types tool calls and reads observations"}
#: Short flags that mean one option in every command that has them.
SHORT_FLAGS = {"-j": "--jobs", "-o": "--out", "-i": "--instance"}
#: Parameter names and option names that hold a task file.
TASK_FILE_NAMES = {"tasks_file", "tasks", "task_file"}
TASK_FILE_OPTIONS = {"--tasks", "--task-file", "--tasks-file"}


def _leaves() -> list[tuple[str, object]]:
    """Every command that runs something (not a group), as ("tasks show", its click command)."""

    def walk(command, path):
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            yield " ".join(path), command
        for name, sub in (subcommands or {}).items():
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def _options(command) -> list:
    return [param for param in command.params if param.param_type_name == "option" and param.name != "help"]


def _names(option) -> set[str]:
    return {*option.opts, *option.secondary_opts}


def assert_no_drift(check) -> None:
    """`check(command)` yields what is wrong with one command; every command's problems are listed at once."""
    drift = [f"repogym {path}: {problem}" for path, command in _leaves() for problem in check(command)]
    assert not drift, "\n".join(["", *drift])


def test_jobs_always_has_j_and_j_is_always_jobs():
    def check(command):
        for option in _options(command):
            names = _names(option)
            if ("--jobs" in names) != ("-j" in names):
                yield f"{sorted(names)}: --jobs and -j go together"

    assert_no_drift(check)


def test_no_command_shows_workers():
    """`--workers` was `-j` in some commands and a different option in others; it is read as `--jobs` now and
    never listed (a hidden option is the most an old spelling may be)."""

    def check(command):
        for option in _options(command):
            if "--workers" in _names(option) and not option.hidden:
                yield f"{sorted(_names(option))}: --workers is spelt --jobs/-j"

    assert_no_drift(check)


def test_short_flags_mean_the_same_option_everywhere():
    def check(command):
        for option in _options(command):
            for short, long in SHORT_FLAGS.items():
                if short in option.opts and long not in option.opts:
                    yield f"{short} is {long} everywhere, not {sorted(_names(option))}"
                if long in option.opts and short not in option.opts:
                    yield f"{long} has its short flag {short}"

    assert_no_drift(check)


def test_every_command_that_writes_output_has_json():
    def check(command):
        names = {name for option in _options(command) for name in _names(option)}
        if "--json" not in names and command.name not in NO_JSON:
            yield "no --json" + (" (it has --out)" if "--out" in names else "")

    assert_no_drift(check)


def test_json_is_read_by_the_commands_json_mode():
    """`exits_on_error` keeps stdout for the JSON object when the parameter `json_out` is set."""

    def check(command):
        for option in _options(command):
            if "--json" in _names(option) and option.name != "json_out":
                yield f"--json sets {option.name!r}, not 'json_out': its output would not be kept clean"

    assert_no_drift(check)


def test_task_files_are_positional():
    def check(command):
        for param in command.params:
            named = param.name in TASK_FILE_NAMES or TASK_FILE_OPTIONS & set(getattr(param, "opts", ()))
            if named and param.param_type_name != "argument":
                yield f"{param.opts}: the task file is an argument (TASKS), not an option"

    assert_no_drift(check)


def test_every_help_has_an_example_line():
    def check(command):
        lines = [line.strip() for line in (command.help or "").splitlines()]
        if not any(re.match(r"Examples?:", line) for line in lines):
            yield "no 'Example:' line in its help"

    assert_no_drift(check)


def test_no_option_shows_a_python_object_as_its_default():
    """An option-group field without a default was shown as `[default: <dataclasses._MISSING_TYPE object at
    0x...>]` (eval's --policy) instead of being required."""

    def check(command):
        for option in _options(command):
            default = option.default
            if type(default).__module__ == "dataclasses" or " object at 0x" in repr(default):
                yield f"{option.opts}: default {default!r}"

    assert_no_drift(check)


def test_every_command_is_added_the_one_way():
    """`common.add_command` gives a command the CLI's contract (errors, Ctrl-C, JSON mode, old spellings)."""

    def check(command):
        if not getattr(command.callback, REGISTERED, False):
            yield "not added with common.add_command"

    assert_no_drift(check)


# -- the vocabulary at work --------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def invoke(*args: str):
    return RUNNER.invoke(app, list(args), env={"COLUMNS": "200"})


def test_json_mode_keeps_stdout_for_the_one_object(examples_dir, tmp_path):
    """Commands that print tables and lines print one JSON object with --json, and their messages and tables
    (which a library may print too) go to stderr."""
    tasks = str(examples_dir / "tasks.jsonl")
    seed = str(examples_dir / "seed_grpo.yaml")
    runs = {
        "tasks import": ("tasks", "import", tasks, "--out", str(tmp_path / "t.parquet"), "--json"),
        "tasks export": ("tasks", "export", tasks, "--out", str(tmp_path / "t.json"), "--json"),
        "tasks split": ("tasks", "split", tasks, "--by", "repo", "--out", str(tmp_path / "split"), "--json"),
        "config check": ("config", "check", seed, "rollout.max_steps=20", "--json"),
        "synth methods": ("synth", "methods", "--json"),
        "tasks audit --list": ("tasks", "audit", tasks, "--list", "--json"),
    }
    printed = {}
    for name, args in runs.items():
        result = invoke(*args)
        assert result.exit_code == 0, (name, result.output)
        printed[name] = json.loads(result.stdout)  # one object, nothing before or after it
        assert isinstance(printed[name], dict), name
    assert printed["tasks import"]["tasks"] == 4 and len(load_tasks(tmp_path / "t.parquet")) == 4
    assert printed["tasks export"] == {"out": str(tmp_path / "t.json"), "tasks": 4, "format": "swebench"}
    assert printed["tasks split"]["counts"]["input"] == 4
    assert Path(printed["tasks split"]["manifest_path"]).is_file()
    assert printed["config check"]["rollout"]["max_steps"] == 20
    assert {"name", "kind", "description"} <= set(printed["synth methods"]["methods"][0])
    assert printed["tasks audit --list"]["attacks"]


def test_json_mode_sends_what_a_command_prints_to_stderr(examples_dir, tmp_path):
    """A library (or a command) printing to stdout during a --json run must not break the JSON: it lands on
    stderr, and the object alone on stdout."""

    def noisy(json_out: Json = False) -> None:
        print("a library's progress line")
        common.console.print("a rich table")
        common.print_json({"ok": True})

    wrapped = common.exits_on_error(noisy)
    tiny = typer.Typer()
    tiny.command()(wrapped)
    result = CliRunner().invoke(tiny, ["--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"ok": True}
    assert "a library's progress line" in result.stderr and "a rich table" in result.stderr
    plain = CliRunner().invoke(tiny, [])
    assert "a library's progress line" in plain.stdout


def test_old_spellings_keep_working_and_say_so(examples_dir, tmp_path):
    tasks = str(examples_dir / "tasks.jsonl")
    shown = invoke("tasks", "show", "psf__requests-2931", "--tasks", tasks, "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["instance_id"] == "psf__requests-2931"
    assert shown.stderr.strip().splitlines() == [
        "warning: repogym tasks show --tasks is deprecated; its value is the first argument now: "
        "repogym tasks show TASKS ID"
    ]
    short = invoke("tasks", "show", "psf__requests-2931", "-t", tasks, "--json")
    assert json.loads(short.stdout)["instance_id"] == "psf__requests-2931"
    split = invoke("tasks", "split", tasks, "--by", "repo", "--out-dir", str(tmp_path / "old"))
    assert split.exit_code == 0, split.output
    assert (tmp_path / "old" / "manifest.json").is_file()
    assert "warning: repogym tasks split --out-dir is deprecated; use --out" in split.stderr


@pytest.mark.parametrize("command", [["grade", "t.jsonl", "--gold", "-i", "x"], ["validate", "c.jsonl", "--out", "t.jsonl"],
                                     ["quickstart"]], ids=lambda c: c[0])  # fmt: skip
def test_workers_is_read_as_jobs(command):
    """`--workers 0` reaches `--jobs`, whose range check names it: the old spelling's value went where the new
    one's goes (0 fails before anything runs)."""
    result = invoke(*command, "--workers", "0")
    assert result.exit_code == 2, result.output
    assert f"warning: repogym {command[0]} --workers is deprecated; use --jobs" in result.stderr
    assert "Invalid value for '--jobs' / '-j': Input should be greater than or equal to 1" in result.stderr


def test_renamed_option_rewrites_only_the_options_part():
    workers = Renamed("--workers", "--jobs")
    assert workers.rewrite(["t.jsonl", "--workers", "2"]) == (["t.jsonl", "--jobs", "2"], True)
    assert workers.rewrite(["--workers=2"]) == (["--jobs=2"], True)
    assert workers.rewrite(["-j", "2"]) == (["-j", "2"], False)
    assert workers.rewrite(["--", "--workers"]) == (["--", "--workers"], False)


def test_now_first_argument_moves_the_value_to_the_front():
    tasks = NowFirstArgument(("--tasks", "-t"), "TASKS ID")
    assert tasks.rewrite(["ID", "--tasks", "f.jsonl", "--json"]) == (["f.jsonl", "ID", "--json"], True)
    assert tasks.rewrite(["ID", "--tasks=f.jsonl"]) == (["f.jsonl", "ID"], True)
    assert tasks.rewrite(["--sandbox", "local", "ID", "-t", "f.jsonl"]) == (
        ["f.jsonl", "--sandbox", "local", "ID"],
        True,
    )
    assert tasks.rewrite(["f.jsonl", "ID"]) == (["f.jsonl", "ID"], False)
    # No value after it: left for the parser to report, not swallowed.
    assert tasks.rewrite(["ID", "--tasks"]) == (["ID", "--tasks"], False)


def test_play_takes_the_task_file_first_and_still_reads_tasks(examples_dir):
    """Both spellings reach the task file: an unknown id is answered from it with the closest ids."""
    tasks = str(examples_dir / "tasks.jsonl")
    for args in (["play", tasks, "psf__requests-2391"], ["play", "psf__requests-2391", "--tasks", tasks]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert (
            "no task with instance_id 'psf__requests-2391' (4 tasks); closest: psf__requests-2931"
            in result.stderr
        )
    assert "warning: repogym play --tasks is deprecated" in result.stderr


def test_model_init_takes_its_folder_first(tmp_path):
    """`model init DIR` (and the old `model init --tiny DIR`) write a model folder there."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "code.py").write_text("def add(a, b):\n    return a + b\n" * 200)
    small = ["--tokenizer-corpus", str(corpus), "--tokenizer-chars", "20000", "--json"]
    new = invoke("model", "init", str(tmp_path / "new"), *small)
    assert new.exit_code == 0, new.output
    assert json.loads(new.stdout)["size"] == "tiny" and (tmp_path / "new" / "config.json").is_file()
    old = invoke("model", "init", "--tiny", str(tmp_path / "old"), *small)
    assert old.exit_code == 0, old.output
    assert (tmp_path / "old" / "config.json").is_file()
    assert "warning: repogym model init --tiny is deprecated" in old.stderr
