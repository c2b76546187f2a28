"""A candidate's environment from its own commit: the recipe (`repogym.validate.recipe`) made into EnvSpec fields.

`resolve_task_env` fills the fields a task leaves empty (what an env file or the task itself sets is
kept whole) and records how in `metadata["env_recipe"]`; the filled task is what validation writes, so
re-validating it rebuilds the same environment from the same fields. Version metadata: a project
versioned by setuptools_scm or hatch-vcs gets SETUPTOOLS_SCM_PRETEND_VERSION from `git describe` of
the mirror (the pristine checkout has no tags: it would be versioned 0.1.dev1, which its own
plugins' requirements on it cannot satisfy). The nearest tag is used rather than the full describe
string so that the commits between two tags share one environment; the per-commit install layer
still writes each commit's own files.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from repogym.hostgit import run_git
from repogym.patches import changed_paths
from repogym.sandbox.envbuild import UV_PIP
from repogym.sandbox.interpreters import find_interpreters
from repogym.task import Task
from repogym.validate.metadata_files import read_toml
from repogym.validate.pythons import PYTHON_RELEASES
from repogym.validate.recipe import (
    RECIPE_FILES,
    Recipe,
    addopts_plugins,
    choose_python,
    drop_dev_tools,
    exclude_newer_for,
    extras_requirement_names,
    lock_pins,
    project_dependencies,
    requirements_for_tests,
)

_MAX_FILE_BYTES = 2_000_000
#: setuptools 64 (2022-08-11) brought editable installs by PEP 660; older commits build with a later one.
_EDITABLE_SETUPTOOLS_RELEASED = "2022-08-11"
_EDITABLE_SETUPTOOLS_FROM = "2025-06-01"
#: poetry-core gained a PEP 660 editable hook in 2022 (a commit of 2022-03 built editable with the
#: poetry-core of its day here); older commits build with a later one.
_EDITABLE_POETRY_CORE_RELEASED = "2022-02-27"
#: The cutoff exact pins are exempt to (any date after every real pin).
_PINS_FROM = "2099-12-31"
_SCM_MARKERS = ("setuptools_scm", "setuptools-scm", "hatch-vcs", "hatch_vcs", "use_scm_version")


def read_recipe_files(root: Path) -> dict[str, str]:
    """The text of every file a recipe reads, keyed by its path relative to `root`."""
    files: dict[str, str] = {}
    for pattern in RECIPE_FILES:
        for path in sorted(root.glob(pattern)):
            if path.is_file() and path.stat().st_size <= _MAX_FILE_BYTES:
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return files


def plan_recipe(
    files: Mapping[str, str],
    commit_date: str,
    installed: list[str],
    scm_version: str = "",
    python: str = "",
    subprojects: tuple[str, ...] = (),
    made_on: str = "",
) -> Recipe:
    """The recipe for one commit: lock / pin files, then test dependencies, then the rest by date.

    `python` given (the task names one) is kept; otherwise it is chosen from the files and the date.
    `subprojects`: folders with their own packaging that hold the task's tests (flask's examples/*),
    installed editable after the repository itself. `made_on`: today's date (YYYY-MM-DD), the pins'
    fallback cutoff (see `_pins_lines`); empty = the commit's day."""
    steps: list[str] = []
    chosen = ""  # the recipe's own choice ('' when the task names its Python)
    if python:
        steps.append(f"python {python}: set by the task")
    else:
        python, why = choose_python(files, commit_date, installed)
        chosen = python
        steps.append(f"python {python}: {why}")
    pins, lock_source, whole = lock_pins(files, python)
    tests, extras, warnings, test_source = requirements_for_tests(files)
    tests, dropped = drop_dev_tools(tests, test_source)
    if dropped:
        steps.append(f"dev tools left out of {test_source}: {', '.join(dropped)} (not needed to run tests)")
    packages: list[str] = []
    if whole:
        packages += pins.values()
        steps.append(f"pins: {len(pins)} package(s) from {lock_source}, installed whole")
    wanted = tests + (project_dependencies(files) if lock_source and not whole else [])
    pinned = 0
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if whole and name in pins:
            continue
        if not whole and name in pins and _satisfies(requirement, pins[name]):
            marker = f"; {requirement.marker}" if requirement.marker else ""
            text = pins[name] + marker
            pinned += 1
        packages.append(text)
    if lock_source and not whole:
        steps.append(f"pins: {pinned} of the tests' and project's requirements pinned from {lock_source}")
    if test_source:
        steps.append(f"test dependencies: {len(tests)} from {test_source}")
    packages += _addopts_plugins(files, packages, extras, pins, steps)
    cutoff = exclude_newer_for(commit_date)
    minor = ".".join(chosen.split(".")[:2])
    if chosen and PYTHON_RELEASES.get(minor, "") > cutoff and made_on:
        # A commit dated before its own Python existed has a made-up date (a generated history's
        # fixed 2000-01-01): nothing would resolve as of it, so the recipe's own day is used.
        steps.append(f"the commit's date {cutoff} predates Python {minor}: not a credible cutoff")
        cutoff = made_on
        steps.append(f"everything else resolved as of the end of {cutoff} (the day the recipe was made)")
    else:
        steps.append(f"everything else resolved as of the end of {cutoff} (the commit's day, UTC)")
    dated, exact = _split_exact_pins(packages)
    install = _pins_lines(exact, steps, made_on or cutoff) + _install_lines(
        files, commit_date, extras, scm_version, steps
    )
    for folder in subprojects:
        install.append(f"{UV_PIP} {_setuptools_flag(files, commit_date)}-e {shlex.quote(folder)}")
        steps.append(f"install: {folder} (its own packaging holds the tests)")
    for warning in warnings:
        steps.append(f"warning: {warning}")
    return Recipe(
        python=python,
        packages=tuple(dict.fromkeys(dated)),
        install=tuple(install),
        exclude_newer=cutoff,
        steps=tuple(steps),
        warnings=tuple(warnings),
        extras=tuple(extras),
    )


def _addopts_plugins(
    files: Mapping[str, str],
    packages: list[str],
    extras: list[str],
    pins: Mapping[str, str],
    steps: list[str],
) -> list[str]:
    """The pytest plugins the configuration's addopts needs that nothing else installs (its lock's pin when
    it has one). Installed rather than the option dropped, lint plugins too: the suite then runs as the
    project runs it, with the same test ids and checks."""
    named = {canonicalize_name(Requirement(text).name) for text in packages}
    named |= extras_requirement_names(files, extras)
    added = []
    for plugin, option in addopts_plugins(files):
        if plugin not in named:
            added.append(pins.get(plugin, plugin))
            steps.append(f"pytest plugin: {added[-1]} (addopts names {option}; the test dependencies do not)")
    return added


def _satisfies(requirement: Requirement, pin: str) -> bool:
    """The lock's version is one the requirement allows (a stale lock never overrides the project)."""
    version = pin.split("==", 1)[1] if "==" in pin else ""
    return bool(version) and requirement.specifier.contains(version, prereleases=True)


def _split_exact_pins(packages: list[str]) -> tuple[list[str], list[str]]:
    """(requirements resolved by date, exact `==` pins); a pin is the repository's own word."""
    dated, exact = [], []
    for text in dict.fromkeys(packages):
        specs = list(Requirement(text).specifier)
        (exact if len(specs) == 1 and specs[0].operator in ("==", "===") else dated).append(text)
    return dated, exact


def _pins_lines(exact: list[str], steps: list[str], made_on: str) -> list[str]:
    """One install of the exact pins, each exempt from the date cutoff (a pin file can name a version
    released after the commit's parent was written; its own word wins over the date).

    What the pins need but do not pin is resolved as of the commit's day; when that cannot satisfy
    them (pins newer than the commit's date: a generated history, a rewritten date), as of the day
    the recipe was made (`made_on`, written into the line, so a rebuild resolves the same way).
    """
    if not exact:
        return []
    names = sorted({canonicalize_name(Requirement(text).name) for text in exact})
    flags = " ".join(f"--exclude-newer-package {name}={_PINS_FROM}" for name in names)
    quoted = " ".join(shlex.quote(text) for text in exact)
    steps.append(f"pins: {len(exact)} exact pin(s) installed as written, exempt from the date")
    fallback = f"UV_EXCLUDE_NEWER={made_on}T23:59:59Z {UV_PIP} {quoted}"
    return [f"{UV_PIP} {flags} {quoted} || {fallback}"]


def _install_lines(
    files: Mapping[str, str], commit_date: str, extras: list[str], scm_version: str, steps: list[str]
) -> list[str]:
    """The repository's own editable install (with its test extras), or [] when it has no packaging."""
    if not any(name in files for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        return []
    target = f".[{','.join(extras)}]" if extras else "."
    prefix = ""
    packaging_text = "".join(files.get(n, "") for n in ("pyproject.toml", "setup.py", "setup.cfg"))
    if scm_version and any(marker in packaging_text for marker in _SCM_MARKERS):
        prefix = f"SETUPTOOLS_SCM_PRETEND_VERSION={shlex.quote(scm_version)} "
        steps.append(f"version {scm_version} from git describe (the checkout has no tags)")
    setuptools = _setuptools_flag(files, commit_date)
    if setuptools:
        steps.append(f"build: setuptools as of {_EDITABLE_SETUPTOOLS_FROM} (editable installs need >= 64)")
    backend = _build_backend(files)
    with_extras = f"{' with extras ' + ','.join(extras) if extras else ''}"
    if backend == "poetry.masonry.api":
        # poetry itself as the backend never had an editable hook (only poetry-core has): a wheel of the
        # checkout brings its dependencies and metadata, and the test runner puts the checkout first on
        # sys.path, so the tests import the checkout's code (a src/ layout would not be seen this way).
        steps.append(f"install: as a wheel{with_extras} (poetry.masonry.api has no editable install)")
        return [f"{prefix}{UV_PIP} {shlex.quote(target)}"]
    poetry_core = ""
    if backend == "poetry.core.masonry.api" and commit_date[:10] < _EDITABLE_POETRY_CORE_RELEASED:
        poetry_core = f"--exclude-newer-package poetry-core={_EDITABLE_SETUPTOOLS_FROM} "
        steps.append(
            f"build: poetry-core as of {_EDITABLE_SETUPTOOLS_FROM} (editable installs need a 2022 or later one)"
        )
    steps.append(f"install: editable{with_extras}")
    return [f"{prefix}{UV_PIP} {setuptools}{poetry_core}-e {shlex.quote(target)}"]


def _build_backend(files: Mapping[str, str]) -> str:
    backend = read_toml(files.get("pyproject.toml", "")).get("build-system", {}).get("build-backend", "")
    return backend if isinstance(backend, str) else ""


def _setuptools_flag(files: Mapping[str, str], commit_date: str) -> str:
    """setuptools before 64 has no PEP 660 editable hook, and uv's isolated build would take one of those
    as of the commit's day: that one package then comes from a fixed later date."""
    if commit_date[:10] < _EDITABLE_SETUPTOOLS_RELEASED and _built_with_setuptools(files):
        return f"--exclude-newer-package setuptools={_EDITABLE_SETUPTOOLS_FROM} "
    return ""


def _built_with_setuptools(files: Mapping[str, str]) -> bool:
    """The project builds with setuptools: no [build-system] table, or one that requires it."""
    data = read_toml(files.get("pyproject.toml", ""))
    requires = data.get("build-system", {}).get("requires")
    if not isinstance(requires, list):
        return True
    return any(isinstance(r, str) and r.lower().startswith("setuptools") for r in requires)


def subprojects_holding(root: Path, test_paths: list[str]) -> tuple[str, ...]:
    """Folders below the root with their own pyproject.toml or setup.py that hold some of `test_paths`."""
    found: list[str] = []
    for path in test_paths:
        parts = Path(path).parts[:-1]
        for depth in range(len(parts), 0, -1):
            folder = Path(*parts[:depth])
            if any((root / folder / name).is_file() for name in ("pyproject.toml", "setup.py")):
                found.append(folder.as_posix())
                break
    return tuple(sorted(set(found)))


def scm_version(mirror_path: Path | None, commit: str) -> str:
    """The version of the nearest tag below `commit` ('' when there is none or it is not a version)."""
    if mirror_path is None:
        return ""
    done = run_git(mirror_path, "describe", "--tags", "--abbrev=0", commit)
    tag = done.stdout.decode("utf-8", errors="replace").strip()
    candidate = re.sub(r"^[^\d]*", "", tag)
    try:
        return str(Version(candidate)) if done.returncode == 0 and candidate else ""
    except InvalidVersion:
        return ""


def commit_date(task: Task, mirror_path: Path | None) -> str:
    """The base commit's committer date (ISO, UTC); the task's created_at when git cannot say."""
    if mirror_path is not None:
        done = run_git(mirror_path, "log", "-1", "--format=%cI", task.base_commit)
        stamp = done.stdout.decode("utf-8", errors="replace").strip()
        if done.returncode == 0 and stamp:
            moment = datetime.datetime.fromisoformat(stamp)
            return moment.astimezone(datetime.UTC).isoformat()
    return task.created_at or datetime.datetime.now(datetime.UTC).isoformat()


def resolve_task_env(task: Task, pristine: Path, mirror_path: Path | None = None) -> Task:
    """The task with the env fields it leaves empty filled from its commit's recipe (see the module doc).

    Raises Python2OnlyError / EnvBuildError when no installed interpreter fits the commit.
    """
    env = task.env
    if env.python and env.install and env.exclude_newer:
        return task  # fully specified (an env file, SWE-bench specs, or an earlier validation)
    files = read_recipe_files(pristine)
    installed = [i.version for i in find_interpreters()]
    recipe = plan_recipe(
        files,
        commit_date(task, mirror_path),
        installed,
        scm_version(mirror_path, task.base_commit),
        env.python,
        subprojects_holding(pristine, changed_paths(task.test_patch) if task.test_patch else []),
        datetime.datetime.now(datetime.UTC).date().isoformat(),
    )
    filled: dict[str, object] = {}
    if not env.python:
        filled["python"] = recipe.python
    if not env.exclude_newer:
        filled["exclude_newer"] = recipe.exclude_newer
    if not env.install:
        filled["install"] = recipe.install
        if not env.packages:
            filled["packages"] = recipe.packages
    record = {"steps": list(recipe.steps), "warnings": list(recipe.warnings), "filled": sorted(filled)}
    metadata = {**task.metadata, "env_recipe": record}
    return task.replace(env=task.env.__class__(**{**_fields(env), **filled}), metadata=metadata)


def _fields(env: object) -> dict[str, object]:
    return {f.name: getattr(env, f.name) for f in dataclasses.fields(env)}  # type: ignore[arg-type]
