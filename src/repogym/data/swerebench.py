"""SWE-rebench's instances: the install recipe each one carries (`install_config`) made into the task's EnvSpec,
or refused, naming the instance and the key, where this machine cannot honour it without docker or root.

Sources (facts restated from them; no code copied):

- The dataset, nebius/SWE-rebench on the Hugging Face hub (21,000+ Python tasks; arXiv 2505.20411). An
  instance has SWE-bench's fields (instance_id, repo, base_commit, patch, test_patch, problem_statement,
  hints_text, created_at, version, FAIL_TO_PASS, PASS_TO_PASS, environment_setup_commit) and its own:
  `install_config`, `meta` (commit_name, failed_lite_validators, has_test_patch, is_lite, llm_score,
  num_modified_files), `license_name`, `requirements` and `environment` (the built environment's pip freeze
  and conda export), the docker image's name. repogym keeps the fields it does not know in the task's
  `extra`, so `repogym tasks export --format swebench` writes them back.
- The recipe's keys as the paper's appendix asks its model to write them (python, packages, install,
  test_cmd, pre_install, reqs_path, env_yml_path, pip_packages) and the script they stand for: pre_install,
  an environment of `python`, then `packages` ("requirements.txt": `pip install -r` each reqs_path;
  "environment.yml": `conda env update -f` each env_yml_path; else the packages by name), pip_packages,
  install, test_cmd.
- SWE-rebench's harness, github.com/SWE-rebench/SWE-bench-fork at 39316f7 (2025-09-02), which validated
  every instance, so where it and the appendix differ it wins. swebench/harness/test_spec/test_spec.py
  (`make_test_spec`): an instance's install_config replaces SWE-bench's MAP_REPO_VERSION_TO_SPECS, the same
  keys (swebench.toml beside this file says what each means there). utils.py (`_clean_install_config`):
  python below 3.6 becomes 3.6, LANG and LC_ALL C.UTF-8 go before install and test_cmd,
  environment_setup_commit becomes base_commit. test_spec/python.py: the environment script (python, then
  packages, then pip_packages), the repository script (pre_install, then install, in the checkout with the
  environment active), the eval script (install again, the test patch, test_cmd with the test patch's files
  appended). grading.py (`get_logs_eval`): install_config's log_parser names the parser, with no default.

How each key becomes EnvSpec fields (repogym.task), in the harness's order:

  python        -> python (required); below 3.6 -> 3.6, as the harness does.
  packages      "requirements.txt" -> install: `python -m pip install -r PATH` for each reqs_path that the
                base commit has (the harness reads each at environment_setup_commit, which it sets to
                base_commit, and skips one that is missing). The harness drops `-e .`, `.[test`, `-c` and
                comment lines and keeps a name's first pin across files; pip here reads each file as it is,
                as the SWE-bench specs do (swebench.toml).
                "environment.yml" -> refused: a conda environment file, and repogym builds without conda.
                Other text -> packages: conda specs written as pip's (`name=1.2` -> `name==1.2.*`, as
                swebench.toml writes SWE-bench's conda lists), `python` left to its own key.
  pip_packages  -> packages (installed with uv before install), or after requirements an install command
                `python -m pip install ...`, so that its pins win as in the harness's order.
  pre_install   -> install commands, in order, before install. Root's commands cannot run in the jail:
                `apt-get install` of Debian packages this machine has is left out (said in the task's
                metadata, `install_config_left_out`), of one it lacks refused naming the package and the
                apt-get line; apt-get update / upgrade / clean are left out; other package managers and
                locale tools (dpkg, yum, apk, conda, locale-gen, ...) are refused; `sudo` is dropped.
  install       -> the last install command (the same rules). A recipe that leaves nothing to run at all
                gets a no-op command: an empty install would have repogym detect one, and the harness ran none.
  test_cmd      -> test_cmd (required); the grader appends the test files, as the harness does.
  log_parser    -> log_parser (required): parse_log_pytest, parse_log_pytest_options and
                parse_log_pytest_v2 -> pytest, pytest-options and pytest-v2; a SWE-bench repository's name ->
                the parser swebench.toml gives that repository.
  eval_commands -> `export NAME=value` lines -> test_env; any other command is refused.
  env_vars, no_use_env, env_yml_path, docker_specs, base_image_name -> not mapped: the harness never reads
                env_vars, and the others configure conda or docker. LANG and LC_ALL: the jail sets C.UTF-8.

Not in the recipe: the day its packages were resolved. SWE-rebench built each environment from the package
index of its build day, which an instance does not record; unpinned packages resolve as of today unless an
`--env-file` sets `exclude_newer`.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from repogym.data import builtin_specs
from repogym.errors import DatasetError
from repogym.sandbox.syspackages import install_line, installed_packages
from repogym.task import EnvSpec, Task

#: The instance field that holds the recipe.
INSTALL_CONFIG = "install_config"
#: Metadata key of what a task's recipe asked for that this machine already has (so it was left out).
LEFT_OUT = "install_config_left_out"
#: What `env_rules` metadata names as the source of an instance's env.
RULE_NAME = "install_config (SWE-rebench)"

_HARNESS_PARSERS = {
    "parse_log_pytest": "pytest",
    "parse_log_pytest_options": "pytest-options",
    "parse_log_pytest_v2": "pytest-v2",
}
_APT = frozenset({"apt-get", "apt", "aptitude"})
#: apt-get subcommands that install nothing a build could lack: nothing of them needs doing here.
_APT_NOTHING_TO_DO = frozenset({"update", "upgrade", "dist-upgrade", "full-upgrade", "clean", "autoclean", "autoremove"})  # fmt: skip
#: apt-get options that take the next word as their value.
_APT_VALUE_OPTIONS = frozenset({"-o", "-t", "-c", "--option", "--target-release", "--config-file"})
#: Programs that need root or conda, which repogym's builds have neither of.
_ROOT_ONLY = frozenset({
    "dpkg", "dpkg-reconfigure", "add-apt-repository", "yum", "dnf", "microdnf", "apk", "zypper", "pacman",
    "snap", "conda", "mamba", "micromamba", "locale-gen", "update-locale", "localedef", "useradd", "chown",
})  # fmt: skip
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_EXPORT = re.compile(r"\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)")
_PYTHON = re.compile(r"\d+(\.\d+){0,2}")
_CONDA_PIN = re.compile(r"([A-Za-z0-9_.\-]+)=([^=<>!~,]+)(?:=\S*)?")
_PYTEST_RUN = re.compile(r"(?<![\w.-])(?:pytest|py\.test)(?![\w.-])")
#: What install holds when the recipe has no install command: the harness ran none.
NO_INSTALL = ": install_config has no install command"


@dataclass(frozen=True)
class Refusal:
    """An instance whose recipe asks for what cannot be done here, and the key that asks it."""

    instance_id: str
    key: str
    """The install_config key, with its index for a list ("pre_install[1]")."""
    why: str

    def __str__(self) -> str:
        where = f"install_config.{self.key}" if self.key else "install_config"
        return f"instance {self.instance_id!r}: {where}: {self.why}"


@dataclass
class InstallConfigsApplied:
    """What making instances' recipes into envs did to a set of tasks."""

    tasks: list[Task]
    """Every task but the refused ones: SWE-rebench instances with their env from the recipe, others as read."""
    shaped: int = 0
    """Tasks whose env came from their install_config."""
    refused: list[Refusal] = field(default_factory=list)
    left_out: int = 0
    """Tasks with a step left out because this machine already has what it installs."""


class _Refused(Exception):
    def __init__(self, key: str, why: str) -> None:
        super().__init__(why)
        self.key, self.why = key, why


def is_swerebench_instance(task: Task) -> bool:
    """The task carries a recipe and no env of repogym's: a SWE-rebench instance as its dataset writes it (a
    task imported earlier keeps the env it was given, and any edit made to it since)."""
    return task.extra.get(INSTALL_CONFIG) is not None and task.env == EnvSpec()


def apply_install_configs(tasks: Iterable[Task]) -> InstallConfigsApplied:
    """Each SWE-rebench instance with its env made from its install_config; a recipe that cannot be honoured
    here puts the instance among `refused` instead (the caller says whether that refuses the file)."""
    applied = InstallConfigsApplied([])
    for task in tasks:
        if not is_swerebench_instance(task):
            applied.tasks.append(task)
            continue
        try:
            env, left_out = _env_from_install_config(task.extra[INSTALL_CONFIG])
        except _Refused as refused:
            applied.refused.append(Refusal(task.instance_id, refused.key, refused.why))
            continue
        metadata = {**task.metadata, "env_rules": [RULE_NAME]}
        if left_out:
            metadata[LEFT_OUT] = list(left_out)
            applied.left_out += 1
        applied.tasks.append(task.replace(env=env, metadata=metadata))
        applied.shaped += 1
    return applied


def _env_from_install_config(config: Any) -> tuple[EnvSpec, tuple[str, ...]]:
    """The EnvSpec a recipe stands for, and the steps left out because this machine has what they install.

    Raises `_Refused` naming the key of the first thing that cannot be done here.
    """
    if isinstance(config, str):  # a recipe stored as JSON text (a column some converters flatten)
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            raise _Refused("", "is text that is not a JSON object") from None
    if not isinstance(config, Mapping):
        raise _Refused("", f"must be an object, got {type(config).__name__}")
    log_parser = _log_parser(config)
    test_cmd = _required_text(config, "test_cmd")
    if log_parser.startswith("pytest") and not _PYTEST_RUN.search(test_cmd):
        raise _Refused("test_cmd", f"{test_cmd!r} runs no pytest, which the {log_parser!r} parser reads")
    requirements, packages = _requirement_steps(config)
    left_out: list[str] = []
    pre_install = [
        step
        for index, command in enumerate(_commands(config, "pre_install"))
        if (step := _shell_step(f"pre_install[{index}]", command, left_out))
    ]
    install = [
        step
        for command in _commands(config, "install")
        if (step := _shell_step("install", command, left_out))
    ]
    fields = {
        "python": _python(config),
        "packages": packages,
        "install": [*requirements, *pre_install, *install] or [NO_INSTALL],
        "test_cmd": test_cmd,
        "log_parser": log_parser,
        "test_env": _eval_exports(config),
    }
    try:
        return EnvSpec.from_dict(fields, "install_config"), tuple(left_out)
    except DatasetError as exc:
        raise _Refused("", str(exc)) from None


def refusal_message(source: str, refused: list[Refusal], shown: int = 10) -> str:
    """Why a file is refused: how many instances, the first `shown` of them, and the way past it."""
    lines = [
        f"{source}: {len(refused)} SWE-rebench instance(s) ask for what cannot be done here without docker or root:"
    ]
    lines += [f"  {refusal}" for refusal in refused[:shown]]
    if len(refused) > shown:
        lines.append(f"  ... and {len(refused) - shown} more")
    lines.append("--skip-refused imports the others and lists these")
    return "\n".join(lines)


# -- the keys ------------------------------------------------------------------------------------


def _python(config: Mapping[str, Any]) -> str:
    """The recipe's Python, raised to 3.6 as the harness raises it (conda has no older one).

    >>> _python({"python": 3.9}), _python({"python": "3.5"}), _python({"python": "3.10"})
    ('3.9', '3.6', '3.10')
    """
    value = config.get("python")
    if value is None or value == "":
        raise _Refused("python", "missing: the harness builds every environment with it")
    text = str(value).strip() if isinstance(value, str | int | float) else ""
    if not _PYTHON.fullmatch(text):
        raise _Refused("python", f"{value!r} is not a Python version such as '3.9'")
    parts = tuple(int(p) for p in text.split("."))
    return "3.6" if parts < (3, 6) else text


def _required_text(config: Mapping[str, Any], key: str) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not value.strip():
        what = "missing" if value in (None, "") else f"{value!r} is not a command"
        raise _Refused(key, f"{what}: the harness reads it with no default")
    return value.strip()


def _log_parser(config: Mapping[str, Any]) -> str:
    """repogym's parser for the harness's log_parser: its three pytest parsers by name, SWE-bench's per-repo
    parsers by the repository's name (as swebench.toml gives them)."""
    name = _required_text(config, "log_parser")
    parser = _HARNESS_PARSERS.get(name) or _swebench_repo_parsers().get(name)
    if parser is None:
        known = ", ".join([*_HARNESS_PARSERS, *sorted(_swebench_repo_parsers())])
        raise _Refused("log_parser", f"{name!r}: no repogym parser reads what it reads; known: {known}")
    return parser


@functools.cache
def _swebench_repo_parsers() -> dict[str, str]:
    return {
        rule.repo: str(rule.fields["log_parser"])
        for rule in builtin_specs("swebench").rules
        if "log_parser" in rule.fields
    }


def _words(config: Mapping[str, Any], key: str) -> list[str]:
    """A list (or one text) of shell words as the harness hands them to a shell: quotes removed.

    >>> _words({"pip_packages": ["'flask<2.3.0'", "numpy>=1.16"]}, "pip_packages")
    ['flask<2.3.0', 'numpy>=1.16']
    """
    value = config.get(key)
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise _Refused(key, f"must be a list of strings, got {value!r}")
    try:
        return [word for item in items for word in shlex.split(item)]
    except ValueError as exc:
        raise _Refused(key, f"{value!r} is not shell words: {exc}") from None


def _requirement_steps(config: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(install commands, packages) for `packages`, reqs_path and pip_packages, in the harness's order."""
    packages = config.get("packages") or ""
    if not isinstance(packages, str):
        raise _Refused("packages", f"must be a string, got {packages!r}")
    pip_packages = _words(config, "pip_packages")
    if packages.strip() == "environment.yml":
        raise _Refused(
            "packages",
            "'environment.yml' is a conda environment file (env_yml_path), and repogym builds environments "
            "with uv and pip, without conda; its packages would have to be written as pip requirements",
        )
    if packages.strip() != "requirements.txt":
        conda = [pip_requirement(spec) for spec in shlex.split(packages) if not _names_python(spec)]
        return [], [*conda, *pip_packages]
    install = [
        f"if [ -f {shlex.quote(path)} ]; then python -m pip install -r {shlex.quote(path)}; fi"
        for path in _words(config, "reqs_path")
    ]
    if pip_packages:
        install.append("python -m pip install " + shlex.join(pip_packages))
    return install, []


def pip_requirement(conda_spec: str) -> str:
    """A conda package spec as pip's requirement: `name=1.2` (or `name=1.2=build`) -> `name==1.2.*`.

    >>> pip_requirement("numpy=1.21"), pip_requirement("conda-forge::six=1.16=py_0"), pip_requirement("scipy>=1.5")
    ('numpy==1.21.*', 'six==1.16.*', 'scipy>=1.5')
    """
    spec = conda_spec.split("::", 1)[-1]
    pin = _CONDA_PIN.fullmatch(spec)
    if pin is None:
        return spec
    name, version = pin.groups()
    return f"{name}=={version if version.endswith('*') else version + '.*'}"


def _names_python(spec: str) -> bool:
    return re.split(r"[=<>!~ ]", spec.split("::", 1)[-1], maxsplit=1)[0].lower() == "python"


def _commands(config: Mapping[str, Any], key: str) -> list[str]:
    value = config.get(key)
    if value is None or value == "":
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise _Refused(key, f"must be a command or a list of commands, got {value!r}")
    return [item for item in items if item.strip()]


def _eval_exports(config: Mapping[str, Any]) -> dict[str, str]:
    """`export NAME=value` lines of eval_commands, as the test environment; another command is refused."""
    exports: dict[str, str] = {}
    for index, command in enumerate(_commands(config, "eval_commands")):
        match = _EXPORT.fullmatch(command)
        values = shlex.split(match.group(2)) if match else []
        if match is None or len(values) != 1 or "$" in values[0]:
            raise _Refused(
                f"eval_commands[{index}]",
                f"{command!r}: only `export NAME=value` lines of literal values are mapped",
            )
        exports[match.group(1)] = values[0]
    return exports


# -- shell steps: what the jail can run, what the machine has, what is refused --------------------------


def _shell_step(key: str, command: str, left_out: list[str]) -> str:
    """The command as the jail runs it, '' when nothing of it is left to run; a step left out because the
    machine has what it installs is noted in `left_out`. Raises `_Refused` for what needs root.

    A line is split into its simple commands (at `&&`, `||`, `;` and newlines outside quotes); a line none of
    whose commands is left out or changed runs as written. Else each command keeps the operator after it, so
    `x || echo skipped` still tolerates x's failure: a command left out stays as `:` (the shell's command that
    does nothing and succeeds), and goes with the `&&` or `;` after it where it begins a list (`: && x` is x).

    >>> _shell_step("install", "apt-get update && sudo pip install -e . || echo skipped", [])
    'pip install -e . || echo skipped'
    """
    segments = _segments(command)
    steps = [_simple_step(key, segment, left_out) for segment, _ in segments]
    if all(step == segment.strip() for step, (segment, _) in zip(steps, segments, strict=True)):
        return command.strip()
    if not any(steps):
        return ""
    kept: list[str] = []
    before = ""  # the operator before the command, in the line as rebuilt
    for step, (_, operator) in zip(steps, segments, strict=True):
        if not step and before in ("", ";") and operator in ("&&", ";"):
            continue
        kept.append(f"{step or ':'} {operator}" if operator else step or ":")
        before = operator
    return " ".join(kept)


def _simple_step(key: str, segment: str, left_out: list[str]) -> str:
    text = segment.strip()
    try:
        words = shlex.split(text)
    except ValueError:
        return text  # the shell will say what is wrong with it, in the build log
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    sudo = bool(words) and words[0] == "sudo"
    if sudo:
        words = words[1:]
        while words and words[0].startswith("-"):
            words.pop(0)
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program in _APT:
        _apt_step(key, text, words[1:], left_out)
        return ""
    if program in _ROOT_ONLY:
        raise _Refused(
            key, f"`{text}`: {program} needs root or conda, which repogym's builds have neither of"
        )
    return re.sub(r"(^|\s)sudo(\s+-\S+)*\s+", r"\1", text, count=1) if sudo else text


def _apt_step(key: str, text: str, arguments: list[str], left_out: list[str]) -> None:
    """Leave out an apt-get command whose packages the machine has; refuse one that installs what it lacks."""
    subcommand, names = "", []
    words = iter(arguments)
    for word in words:
        if word in _APT_VALUE_OPTIONS:
            next(words, None)
        elif word.startswith("-"):
            continue
        elif not subcommand:
            subcommand = word
        else:
            names.append(re.split(r"[=/]", word, maxsplit=1)[0])
    if subcommand in _APT_NOTHING_TO_DO:
        left_out.append(f"{key} `{text}`: installs nothing a build here lacks")
        return
    if subcommand != "install":
        raise _Refused(
            key, f"`{text}`: apt-get {subcommand or '(no command)'} needs root, which repogym's builds lack"
        )
    missing = [name for name in names if not debian_package_installed(name)]
    if missing:
        raise _Refused(
            key,
            f"`{text}` installs Debian package(s) this machine lacks: {', '.join(missing)}; repogym builds "
            f"without root, so install them first ({install_line(missing)}) and import again",
        )
    left_out.append(f"{key} `{text}`: this machine has {', '.join(names)}")


def _segments(command: str) -> list[tuple[str, str]]:
    """The simple commands of a shell line, each with the operator after it (`&&`, `||` or `;`, a newline
    read as `;`; '' after the last): split outside quotes.

    >>> _segments("apt-get update && apt-get install -y gcc || true; echo 'a && b'")
    [('apt-get update ', '&&'), (' apt-get install -y gcc ', '||'), (' true', ';'), (" echo 'a && b'", '')]
    """
    segments: list[tuple[str, str]] = []
    current: list[str] = []
    quote, index = "", 0
    while index < len(command):
        char = command[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif command.startswith(("&&", "||"), index) or char in ";\n":
            operator = ";" if char in ";\n" else command[index : index + 2]
            segments.append(("".join(current), operator))
            current = []
            index += len(operator) if char not in ";\n" else 1
            continue
        current.append(char)
        index += 1
    segments.append(("".join(current), ""))
    kept = [(segment, operator) for segment, operator in segments if segment.strip()]
    if kept:  # a line that ends in an operator (`x;`) has nothing after its last command
        kept[-1] = (kept[-1][0], "")
    return kept


def debian_package_installed(name: str) -> bool:
    """dpkg records the Debian package `name` as installed here (False where dpkg cannot tell: then nothing
    can be shown to be there). Builds run in the jail over the host's /usr, so the host's packages are the
    build's."""
    return name in (installed_packages([name]) or ())
