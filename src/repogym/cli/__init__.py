"""The `repogym` command: one module per command, each adding itself with `register(app)`.

Commands are thin: they parse arguments, call the library, print a rich summary and write machine-readable
output. Errors from `repogym.errors` become one red line and exit status 2, never a traceback. The options
several commands share are declared once (options.py); tests/cli/test_vocabulary.py holds every command to
them.

Start-up: `repogym tasks stats ...` imports only the module of `tasks stats`, whose imports are at its top
(the full app, for `repogym.cli.app` and for a command line that names no command, imports them all): a
grade should not pay for the trainer's, the miner's and the config's imports. `repogym` and `repogym --help`
alone print the command list from INDEX without importing any command module (seconds of imports on 2
cores, for a page of names).
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from repogym import __version__
from repogym.cli.common import add_group, print_error
from repogym.cli.openmp import wait_passively
from repogym.errors import RepogymError
from repogym.train.launch import end_process_group


@dataclass(frozen=True)
class Group:
    """A command group: `repogym GROUP COMMAND ...`."""

    help: str
    """Its help; the first paragraph is its line in `repogym --help`."""
    default: str | None = None
    """The command a first word that names none of the group's commands runs (`repogym eval TASKS ...`)."""


#: The command groups, in `repogym --help` order. Their commands are modules of COMMANDS.
GROUPS: dict[str, Group] = {
    "tasks": Group(
        "Import, export and inspect task datasets.\n\nExample: repogym tasks stats examples/tasks.jsonl"
    ),
    "config": Group(
        "Check run configurations.\n\nExample: repogym config check examples/seed_grpo.yaml rollout.max_steps=20"
    ),
    "synth": Group(
        "Synthetic tasks: inject bugs into the functions the tests cover (SWE-smith style), combine them.\n\n"
        "`repogym synth REPO ...` is short for `repogym synth inject REPO ...`.\n\n"
        "Example: repogym synth ../calc --out candidates.jsonl --seed 0 && "
        "repogym validate candidates.jsonl --out tasks.jsonl -j 2",
        default="inject",
    ),
    "samples": Group(
        "Generate small Python libraries whose git history holds real, verifiable bug fixes.\n\n"
        "Example: repogym samples generate /tmp/samples --repos 3 --seed 1"
    ),
    "data": Group(
        "Build training data: SFT chat rows from rollouts and gold demonstrations, commit data from repositories."
        "\n\nExamples:\n\n  repogym data sft runs/gold tasks.jsonl --out sft.jsonl\n\n"
        "  repogym data commits ../calc --out commits.jsonl"
    ),
    "model": Group(
        "Build repogym's own small models: a random-weight model with a locally trained tokenizer, then "
        "pretraining.\n\n"
        "Example: repogym model init checkpoints/tiny && repogym model pretrain checkpoints/tiny --budget 10"
    ),
    "train": Group(
        "Train a model: SFT on demonstrations, GRPO against the sandbox, or both in rounds; or a verifier of "
        "attempts.\n\n"
        "Example: repogym train sft examples/sft.yaml base_model=/tmp/tiny max_steps=20"
    ),
    "eval": Group(
        "Measure a policy: pass@1 / pass@k with bootstrap intervals, SWE-bench predictions and report.\n\n"
        "`repogym eval TASKS ...` runs `repogym eval run TASKS ...` (see `repogym eval run --help`).\n\n"
        "Example: repogym eval tasks.jsonl --policy scripted:gold -n 4 --out runs/eval-gold\n\n"
        "Example: repogym eval compare runs/eval-baseline runs/eval-sft",
        default="run",
    ),
    "env": Group(
        "Check a repository's environment at a commit: built, test suite collected and run, or why not.\n\n"
        "Example: repogym env check ../flask --commit 2.0.0 --json"
    ),
    "export": Group(
        "Export tasks to other RL trainers, graded by repogym's sandbox (verl, OpenRLHF).\n\n"
        "Example: repogym export verl tasks.jsonl --out verl-data --mode agentless"
    ),
    "cache": Group(
        "Where repogym keeps mirrors, checkouts, environments and logs, and how to shrink it.\n\n"
        "The root is $REPOGYM_CACHE, else $XDG_CACHE_HOME/repogym, else ~/.cache/repogym.\n\n"
        "Example: repogym cache du"
    ),
}
#: Command modules (under repogym.cli), each adding one command, in registration (and help) order: the
#: module `tasks_audit_cmd` is `repogym tasks audit`; a command imports its module and no other command's.
COMMANDS: dict[str, str] = {
    "quickstart_cmd": "quickstart",
    "mine_cmd": "mine",
    "validate_cmd": "validate",
    "scrub_cmd": "scrub",
    "grade_cmd": "grade",
    "play_cmd": "play",
    "rollout_cmd": "rollout",
    "serve_cmd": "serve",
    "report_cmd": "report",
    "tasks_import_cmd": "tasks import",
    "tasks_export_cmd": "tasks export",
    "tasks_stats_cmd": "tasks stats",
    "tasks_show_cmd": "tasks show",
    "tasks_split_cmd": "tasks split",
    "tasks_audit_cmd": "tasks audit",
    "tasks_check_cmd": "tasks check",
    "config_check_cmd": "config check",
    "synth_inject_cmd": "synth inject",
    "synth_methods_cmd": "synth methods",
    "synth_combine_cmd": "synth combine",
    "synth_statements_cmd": "synth statements",
    "samples_generate_cmd": "samples generate",
    "data_sft_cmd": "data sft",
    "data_commits_cmd": "data commits",
    "model_init_cmd": "model init",
    "model_pretrain_cmd": "model pretrain",
    "train_sft_cmd": "train sft",
    "train_rl_cmd": "train rl",
    "train_flywheel_cmd": "train flywheel",
    "train_verifier_cmd": "train verifier",
    "eval_run_cmd": "eval run",
    "eval_compare_cmd": "eval compare",
    "env_check_cmd": "env check",
    "export_verl_cmd": "export verl",
    "export_openrlhf_cmd": "export openrlhf",
    "cache_du_cmd": "cache du",
    "cache_prune_cmd": "cache prune",
    "verify_cmd": "verify",
    "doctor_cmd": "doctor",
}

#: The top-level commands in the order `repogym --help` lists them, each with the first paragraph of its own
#: help: the page `repogym --help` prints without importing the command modules (a group's line comes from
#: GROUPS). tests/cli/test_fast_start.py holds the page it makes identical to the full app's, so an edited
#: docstring that is not copied here fails there.
INDEX: dict[str, str] = {
    "quickstart": (
        "Run the whole loop: sample repos -> mine + synth -> validate -> split -> tiny model -> baseline eval\n"
        "-> SFT -> GRPO -> eval on held-out functions and a held-out repo -> OUT/report.html."
    ),
    "mine": "Walk the history and write candidate tasks (code patch, test patch, problem statement); validate them next.",
    "validate": "Run each candidate's test files before and after its gold patch; keep candidates with FAIL_TO_PASS tests.",
    "scrub": (
        "Drop or redact secrets, redact personal data, and refuse tasks from repositories whose licence is not "
        "allowed."
    ),
    "grade": "Apply a patch and the task's tests in the sandbox; report SWE-bench's FULL / PARTIAL / NO.",
    "play": "Play one task yourself: the fastest way to debug a task and the tools.",
    "rollout": "Run N attempts of a policy on every task; store each as a trajectory the moment it finishes.",
    "serve": "Serve a local model as an OpenAI-compatible chat-completions endpoint (with tool calls).",
    "report": "Write one self-contained HTML page (opens offline) from run folders; plots also as PNGs beside it.",
    "verify": "Score stored attempts with a verifier: p(YES) per attempt, AUC and ECE with bootstrap 95% intervals.",
    "doctor": "List what a task file (or a repository) needs from this machine: tools, Pythons, system packages.",
}
INDEX.update({name: group.help.split("\n\n")[0] for name, group in GROUPS.items()})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"repogym {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """repogym: mine tasks from git history, run them in sandboxes, grade, roll out and train.

    Example: repogym tasks stats examples/tasks.jsonl
    """
    _resume_gc()  # runs before every command: start-up is over


#: True while `main` holds the cyclic garbage collector off (see there).
_gc_paused = False


def _resume_gc() -> None:
    """The collector back on, and what start-up made frozen: it lives as long as the process."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.freeze()
        gc.enable()


def _new_app() -> typer.Typer:
    app = typer.Typer(
        name="repogym",
        help=(
            "Turn your repositories into verifiable tasks, sandboxed gyms and RL training for code agents.\n\n"
            "Example: repogym quickstart    (sample repos -> mine + synth -> validate -> tiny model -> SFT -> GRPO -> report)"
        ),
        no_args_is_help=True,
        rich_markup_mode="rich",
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    return app


def build_index_app() -> typer.Typer:
    """The root command with every top-level command listed by INDEX but none of their modules: for the
    root's own help (and --version) only. A listed command would do nothing here, so `main` never runs one."""
    app = _new_app()

    def listed_only() -> None:
        raise AssertionError("the index app only prints the root's help")

    for name, help_line in INDEX.items():
        app.command(name, help=help_line)(listed_only)
    return app


def _starts(path: Sequence[str], words: Sequence[str]) -> bool:
    return list(words[: len(path)]) == list(path)


def modules_for(words: Sequence[str]) -> list[str]:
    """The command modules `repogym WORDS...` needs: the module of the command WORDS names; for a group, those
    of all its commands (its help lists them, and typer suggests among them for a misspelt one), or only its
    default command's when that is what runs. All of them when WORDS names no command.

    >>> modules_for(["tasks", "stats", "tasks.jsonl"])
    ['tasks_stats_cmd']
    >>> modules_for(["data", "--help"])
    ['data_sft_cmd', 'data_commits_cmd']
    >>> modules_for(["eval", "tasks.jsonl", "--policy", "scripted:gold"])
    ['eval_run_cmd']
    """
    paths = {module: command.split() for module, command in COMMANDS.items()}
    known = [*paths.values(), *([group] for group in GROUPS)]
    matched = max((path for path in known if _starts(path, words)), key=len, default=None)
    if matched is None:
        return list(COMMANDS)
    group = GROUPS.get(matched[0]) if len(matched) == 1 else None
    if group and group.default and len(words) > 1 and words[1] not in ("--help", "-h"):
        matched = [matched[0], group.default]  # words[1] is none of its commands, else it had matched longer
    return [module for module, path in paths.items() if _starts(matched, path)]


def build_app(command: str | Sequence[str] | None = None) -> typer.Typer:
    """The CLI with every command, or with only what the command line `command` needs (see `modules_for`)."""
    app = _new_app()
    words = command.split() if isinstance(command, str) else command
    modules = modules_for(words) if words else list(COMMANDS)
    needed = {COMMANDS[module].split()[0] for module in modules}
    for name, group in GROUPS.items():
        if name in needed:
            add_group(app, name, group.help, group.default)
    for module in modules:
        importlib.import_module(f"repogym.cli.{module}").register(app)
    return app


_full_app: typer.Typer | None = None
_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    """`repogym.cli.app`: the full app, built on first use."""
    global _full_app
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        if _full_app is None:
            _full_app = build_app()
    return _full_app


def _one_line_warning(message, category, filename, lineno, line=None) -> str:  # type: ignore[no-untyped-def]
    return f"warning: {message}\n"


def main() -> None:
    global _gc_paused
    # Start-up (building the app, typer's and pydantic's option models) makes tens of thousands of objects
    # that all live on, and the collector's passes over them (about 30 for `repogym grade`, finding almost
    # no garbage) cost 10-15 ms. Off until the root callback, which runs before every command; frozen then,
    # so later passes never walk them again.
    if gc.isenabled():
        gc.disable()
        _gc_paused = True
    warnings.formatwarning = _one_line_warning  # a CLI user needs the message, not our source line
    wait_passively()  # before any command imports torch: its OpenMP threads must not spin on a busy machine
    words = sys.argv[1:]
    index_only = set(words) <= {"--help", "--version"}  # `repogym`, `repogym --help`: the list
    try:
        # The name usage lines and notes show, however it was started (`python -m repogym`, `accelerate launch`).
        (build_index_app() if index_only else build_app(words))(prog_name="repogym")
    except RepogymError as exc:
        print_error(exc)
        sys.exit(2)
    finally:
        if "torch.distributed" in sys.modules:  # only then can a command have made a process group
            end_process_group()  # any command that trained under accelerate launch / torchrun
