"""Per-commit environment recipes: what a repository's own files at a commit say its tests need.

Pure functions over the text of the dependency files at one commit (a `{path: text}` mapping, see
`repogym.validate.envresolve` for reading them from a checkout) plus the commit date and the
interpreters this machine has. The order is issue 11's: the repository's lock or pin files, then its
test dependencies, then everything else resolved as of the commit's day (uv's exclude-newer). Every
step is written into `Recipe.steps`, and the recipe becomes plain EnvSpec fields, so a task rebuilt
from what it records gets the same environment.

Lock files are read, not handed to their tools: repogym installs with uv into one venv per key, and a
poetry or pdm install would need that tool in the jail. A lock's version is used for each package the
tests ask for directly (a Pipfile.lock, which lists the whole set with markers, is used whole); what the
lock does not pin is resolved by date. Requirement files are parsed by hand (pip's parser is not a
public API): `-r` includes, options, hashes and environment markers are handled; URLs are dropped with
a warning, because nothing but the package index is reachable from the build.
"""

from __future__ import annotations

import ast
import datetime
import itertools
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from repogym.validate.metadata_files import read_config, read_toml
from repogym.validate.pythons import Python2OnlyError, choose_python

__all__ = [
    "Python2OnlyError",
    "Recipe",
    "addopts_plugins",
    "choose_python",
    "lock_pins",
    "parse_requirements",
]

#: Files a recipe reads (globs relative to the repository root).
RECIPE_FILES = (
    "pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "uv.lock", "poetry.lock", "pdm.lock",
    "Pipfile.lock", "constraints.txt", "requirements*.txt", "requirements/*.txt", "requirements/*.in",
    "test-requirements.txt", "dev-requirements.txt", ".github/workflows/*.yml", ".github/workflows/*.yaml",
    ".travis.yml", "pytest.ini", ".pytest.ini", "noxfile.py", "tests/requirements*.txt", "test/requirements*.txt",
)  # fmt: skip
_TEST_GROUPS = ("tests", "test", "testing")
_TEST_REQUIREMENT_FILES = (
    "requirements/tests.txt", "requirements/test.txt", "requirements/testing.txt", "requirements-test.txt",
    "requirements-tests.txt", "requirements_test.txt", "test-requirements.txt", "tests/requirements.txt",
    "test/requirements.txt", "requirements/dev.txt", "requirements-dev.txt", "dev-requirements.txt",
)  # fmt: skip
#: A nox session's `def` and body (up to the next decorator or top-level statement).
_NOX_SESSION = re.compile(r"^def (\w+)\(session\b[^)]*\)[^:]*:\n((?:[ \t]+.*\n|[ \t]*\n)*)", re.MULTILINE)
#: `session.install("-r", "path")` (or `--requirement`) inside a session's body.
_NOX_REQUIREMENTS = re.compile(r"session\.install\(([^)]*)\)")
#: First release of each CPython minor version (a commit is built with a Python that existed then).


@dataclass(frozen=True)
class Recipe:
    """What a commit's files say about its environment, as EnvSpec fields plus how each was found."""

    python: str
    """Chosen interpreter version (major.minor.patch, one that is installed)."""
    packages: tuple[str, ...] = ()
    """Requirements installed before the repo's own install (pins from lock / pin files, test deps)."""
    install: tuple[str, ...] = ()
    """The repo's own install lines (an editable install with its test extras)."""
    exclude_newer: str = ""
    steps: tuple[str, ...] = ()
    """One line per decision, in order (recorded in the task's metadata["env_recipe"])."""
    warnings: tuple[str, ...] = ()
    """Dropped URL dependencies and other things that may make the tests fail."""
    extras: tuple[str, ...] = field(default=(), repr=False)


def exclude_newer_for(commit_date: str) -> str:
    """The commit's day (an EnvSpec date means the end of that day, UTC): packages as they were then.

    Not rounded down to a coarser period for sharing: a lock or pin file updated in a commit pins what
    was released days before it (a month-start cutoff failed 7 of flask's first 8 builds that way).

    >>> exclude_newer_for("2021-03-17T10:00:00+00:00")
    '2021-03-17'
    """
    return datetime.date.fromisoformat(commit_date[:10]).isoformat()


def parse_requirements(
    files: Mapping[str, str], path: str, seen: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """The requirements of a requirements file (following -r), and warnings for what was dropped.

    >>> reqs = {"r.txt": "-r base.txt\\nattrs==23.1 --hash=sha256:ab\\n# c\\ngit+https://x/y.git#egg=y\\n-e .\\n",
    ...         "base.txt": "six==1.16.0 ; python_version < '3.8'  # via x\\n"}
    >>> parse_requirements(reqs, "r.txt")
    (['six==1.16.0; python_version < "3.8"', 'attrs==23.1'], ['r.txt: dropped URL requirement git+https://x/y.git#egg=y (only the package index is reachable)'])
    """
    out: list[str] = []
    warnings: list[str] = []
    folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    for raw in files.get(path, "").replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ", "-c ", "--constraint ")):
            include = _normpath(folder + line.split(None, 1)[1].strip())
            if include not in seen and include != path:
                more, more_warnings = parse_requirements(files, include, seen | {path})
                out += more
                warnings += more_warnings
            continue
        if line.startswith(("-e ", "--editable ")) or line in (".", "-e."):
            if "://" in line:
                warnings.append(
                    f"{path}: dropped URL requirement {line.split(None, 1)[1]} (only the package index is reachable)"
                )
            continue  # the repository itself: installed by the recipe's own install line
        if line.startswith("-"):
            continue  # pip options (--index-url, --hash on its own line, ...)
        if "://" in line or line.startswith("git+"):
            warnings.append(f"{path}: dropped URL requirement {line} (only the package index is reachable)")
            continue
        line = re.split(r"\s--hash[= ]", line)[0].strip()
        try:
            out.append(str(Requirement(line)))
        except InvalidRequirement:
            warnings.append(f"{path}: skipped unreadable requirement {line!r}")
    return out, warnings


def _normpath(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


#: Tools a "dev" group holds beside the tests' needs (lint, docs, release, coverage upload): never needed
#: to run the tests, and pinned versions of them vanish from the index (codecov 2.1.8 did).
DEV_TOOLS = frozenset({
    "codecov", "coveralls", "python-coveralls", "pre-commit", "tox", "nox", "black", "flake8", "isort",
    "pylint", "ruff", "autopep8", "yapf", "sphinx", "furo", "sphinx-rtd-theme", "sphinx-autobuild", "twine",
    "bump2version", "bumpversion", "towncrier", "commitizen", "mkdocs", "mkdocs-material", "ipython",
    "ipdb", "pdbpp", "poethepoet", "taskipy", "check-manifest", "cleo", "pyupgrade", "bandit",
})  # fmt: skip


def drop_dev_tools(requirements: list[str], source: str) -> tuple[list[str], list[str]]:
    """(the requirements without DEV_TOOLS, the names dropped) for a dev group or file; a test group's
    own word is kept whole (it names what its tests need).

    >>> drop_dev_tools(["pytest==7.4", "codecov==2.1.8", "black"], "pyproject.toml [tool.poetry.dev-dependencies]")
    (['pytest==7.4'], ['codecov', 'black'])
    >>> drop_dev_tools(["pytest", "black"], "pyproject.toml [dependency-groups] tests")
    (['pytest', 'black'], [])
    """
    if "dev" not in source.rsplit("/", 1)[-1].lower():
        return requirements, []
    kept, dropped = [], []
    for text in requirements:
        name = canonicalize_name(Requirement(text).name)
        (dropped if name in DEV_TOOLS or name.startswith("sphinx") else kept).append(
            name if name in DEV_TOOLS or name.startswith("sphinx") else text
        )
    return kept, dropped


def requirements_for_tests(files: Mapping[str, str]) -> tuple[list[str], list[str], list[str], str]:
    """The tests' own requirements: (requirements, test extras, warnings, where they came from).

    First match wins: a pinned test requirements file, a [dependency-groups] test group, poetry or pdm
    test groups, test extras, tox's [testenv] deps, the requirement files a nox test session installs. Test extras are returned apart (they go on the
    editable install, so that setup.py's extras_require counts without running setup.py here).
    """
    pyproject = read_toml(files.get("pyproject.toml", ""))
    extras = _test_extras(files, pyproject)
    for path in _TEST_REQUIREMENT_FILES:
        if path in files:
            reqs, warnings = parse_requirements(files, path)
            return reqs, extras, warnings, path
    groups = pyproject.get("dependency-groups", {})
    for name in _TEST_GROUPS:
        if isinstance(groups.get(name), list):
            reqs, warnings = _group(groups, name, set())
            return reqs, extras, warnings, f"pyproject.toml [dependency-groups] {name}"
    poetry = pyproject.get("tool", {}).get("poetry", {})
    for name in (*_TEST_GROUPS, "dev"):
        table = poetry.get("group", {}).get(name, {}).get("dependencies")
        if isinstance(table, dict):
            return _poetry_names(table), extras, [], f"pyproject.toml [tool.poetry.group.{name}]"
    if isinstance(poetry.get("dev-dependencies"), dict):
        return (
            _poetry_names(poetry["dev-dependencies"]),
            extras,
            [],
            "pyproject.toml [tool.poetry.dev-dependencies]",
        )
    pdm = pyproject.get("tool", {}).get("pdm", {}).get("dev-dependencies", {})
    for name in (*_TEST_GROUPS, "dev"):
        if isinstance(pdm.get(name), list):
            return (
                _valid([r for r in pdm[name] if isinstance(r, str)]),
                extras,
                [],
                f"[tool.pdm.dev-dependencies] {name}",
            )
    if extras:
        return [], extras, [], f"test extras [{','.join(extras)}]"
    reqs, warnings = _tox_deps(files)
    if reqs:
        return reqs, extras, warnings, "tox.ini [testenv] deps"
    reqs, warnings, session = _nox_requirements(files)
    return reqs, extras, warnings, f"noxfile.py session {session}" if reqs else ""


def _nox_requirements(files: Mapping[str, str]) -> tuple[list[str], list[str], str]:
    """The requirement files (`session.install("-r", PATH)`) of the first nox session named for tests.

    noxfile.py is Python that nox runs; it is read, never run (running a repository's code to plan its
    environment would run it outside the sandbox), so only literal `-r` paths count.

    >>> nox = 'import nox\\n\\n@nox.session\\ndef tests(session):\\n    session.install("-r", "tests/requirements.txt")\\n'
    >>> _nox_requirements({"noxfile.py": nox, "tests/requirements.txt": "pretend\\npytest>=6.2.0\\n"})
    (['pretend', 'pytest>=6.2.0'], [], 'tests')
    """
    for match in _NOX_SESSION.finditer(files.get("noxfile.py", "")):
        name, body = match.groups()
        if "test" not in name:
            continue
        paths = []
        for call in _NOX_REQUIREMENTS.finditer(body):
            words = re.findall(r"[\"']([^\"']+)[\"']", call.group(1))
            paths += [_normpath(b) for a, b in itertools.pairwise(words) if a in ("-r", "--requirement")]
        reqs: list[str] = []
        warnings: list[str] = []
        for path in paths:
            more, more_warnings = parse_requirements(files, path)
            reqs += more
            warnings += more_warnings
        if reqs:
            return reqs, warnings, name
    return [], [], ""


def _group(groups: Mapping[str, object], name: str, seen: set[str]) -> tuple[list[str], list[str]]:
    out: list[str] = []
    warnings: list[str] = []
    seen.add(name)
    for item in groups.get(name, []) or []:  # type: ignore[union-attr]
        if isinstance(item, dict) and isinstance(item.get("include-group"), str):
            if item["include-group"] not in seen:
                more, more_warnings = _group(groups, item["include-group"], seen)
                out += more
                warnings += more_warnings
        elif isinstance(item, str):
            if "://" in item:
                warnings.append(f"pyproject.toml [dependency-groups] {name}: dropped URL requirement {item}")
            else:
                out += _valid([item])
    return out, warnings


def _poetry_names(table: Mapping[str, object]) -> list[str]:
    """Names of a poetry dependency table (poetry's ^ and ~ are not PEP 440: the versions come from the
    lock); git, url and path dependencies are left out."""
    names = []
    for name, value in table.items():
        if name.lower() == "python" or (isinstance(value, dict) and {"git", "url", "path"} & set(value)):
            continue
        names.append(name)
    return names


def _valid(reqs: list[str]) -> list[str]:
    out = []
    for text in reqs:
        try:
            out.append(str(Requirement(text)))
        except InvalidRequirement:
            continue
    return out


def _test_extras(files: Mapping[str, str], pyproject: Mapping[str, object]) -> list[str]:
    """The extras the tests are installed with: tox's `[testenv] extras` where the project declares them
    (what its own test runs install), else the first declared of tests, test, testing, dev."""
    declared: set[str] = set(pyproject.get("project", {}).get("optional-dependencies", {}) or {})  # type: ignore[union-attr]
    cfg = read_config(files.get("setup.cfg", ""))
    if cfg.has_section("options.extras_require"):
        declared |= set(cfg.options("options.extras_require"))
    declared |= set(setup_py_extras(files.get("setup.py", "")))
    tox = read_config(files.get("tox.ini", ""))
    if tox.has_option("testenv", "extras"):
        named = re.split(r"[\s,]+", tox.get("testenv", "extras", raw=True))
        chosen = [extra for extra in named if extra in declared]
        if chosen:
            return chosen
    return [extra for extra in (*_TEST_GROUPS, "dev") if extra in declared][:1]


def setup_py_extras(text: str) -> dict[str, list[str]]:
    """setup.py's `extras_require`: {extra: its requirement strings}, read (never run) with `ast`.

    The value may be a dict literal in the call or a module-level name bound to one, with later
    `NAME["extra"] = [...]` items (marshmallow's `EXTRAS_REQUIRE`); an item that is not a literal list
    (`EXTRAS["tests"] + EXTRAS["lint"]`) keeps its extra's name with the literal strings found in it.
    Code that does not parse (a Python 2 setup.py) is read with a pattern for a dict literal in the call.

    >>> setup_py_extras('E = {"tests": ["pytest", "simplejson"]}\\nE["dev"] = E["tests"] + ["tox"]\\n'
    ...                 'setup(name="m", extras_require=E)')
    {'tests': ['pytest', 'simplejson'], 'dev': ['tox']}
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        block = re.search(r"extras_require\s*=\s*\{(.*?)\}", text, re.S)
        pairs = re.findall(r"['\"]([\w-]+)['\"]\s*:\s*\[([^\]]*)\]", block.group(1)) if block else []
        return {name: re.findall(r"['\"]([^'\"]+)['\"]", items) for name, items in pairs}
    value: ast.expr | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            value = next((k.value for k in node.keywords if k.arg == "extras_require"), value)
    if isinstance(value, ast.Dict):
        return _literal_items(value)
    if not isinstance(value, ast.Name):
        return {}
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == value.id and isinstance(node.value, ast.Dict):
                found.update(_literal_items(node.value))
            elif (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == value.id
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                found[target.slice.value] = _strings(node.value)
    return found


def _literal_items(node: ast.Dict) -> dict[str, list[str]]:
    return {
        key.value: _strings(item)
        for key, item in zip(node.keys, node.values, strict=True)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    }


def _strings(node: ast.expr) -> list[str]:
    """The string literals directly in a list or tuple (or one string), in order; concatenations' parts too."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [
            s for item in node.elts for s in _strings(item) if not isinstance(item, (ast.List, ast.Tuple))
        ]
    if isinstance(node, ast.BinOp):
        return _strings(node.left) + _strings(node.right)
    return []


def _tox_deps(files: Mapping[str, str]) -> tuple[list[str], list[str]]:
    cfg = read_config(files.get("tox.ini", ""))
    if not cfg.has_option("testenv", "deps"):
        return [], []
    out: list[str] = []
    warnings: list[str] = []
    for raw in cfg.get("testenv", "deps", raw=True).splitlines():
        line = raw.strip()
        if not line or ":" in line.split("://")[0].split(";")[0] or "{" in line:
            continue  # factor-conditional deps (lowest: ..., devel: URL) and substitutions are other tox envs
        if line.startswith("-r"):
            more, more_warnings = parse_requirements(files, _normpath(line[2:].strip()))
            out += more
            warnings += more_warnings
        elif "://" in line:
            warnings.append(f"tox.ini [testenv] deps: dropped URL requirement {line}")
        else:
            out += _valid([line])
    return out, warnings


def lock_pins(files: Mapping[str, str], python: str = "") -> tuple[dict[str, str], str, bool]:
    """Versions a lock file pins: (canonical name -> pinned requirement, which file, whether it is whole).

    `whole` is True for a Pipfile.lock (every package with its markers: installed as it is); for the
    other locks only the packages the tests ask for take their pin, because their markers live on edges
    of a graph that this reader does not walk.
    """
    if "Pipfile.lock" in files:
        try:
            data = json.loads(files["Pipfile.lock"])
        except json.JSONDecodeError:
            data = {}
        pins = {}
        for section in ("default", "develop"):
            for name, entry in (data.get(section) or {}).items():
                if isinstance(entry, dict) and isinstance(entry.get("version"), str):
                    marker = f"; {entry['markers']}" if isinstance(entry.get("markers"), str) else ""
                    pins[canonicalize_name(name)] = f"{name}{entry['version']}{marker}"
        return pins, "Pipfile.lock", True
    for path in ("uv.lock", "poetry.lock", "pdm.lock"):
        if path in files:
            versions: dict[str, set[str]] = {}
            for package in read_toml(files[path]).get("package", []):
                locked = isinstance(package, dict) and isinstance(package.get("version"), str)
                if locked and not _forked_for(package, python):
                    name = canonicalize_name(str(package.get("name", "")))
                    versions.setdefault(name, set()).add(package["version"])
            # A name still locked at two versions (a fork this reader cannot place) is left to the resolver.
            return {n: f"{n}=={next(iter(v))}" for n, v in versions.items() if len(v) == 1}, path, False
    if "constraints.txt" in files:
        reqs, _ = parse_requirements(files, "constraints.txt")
        pins = {canonicalize_name(Requirement(r).name): r for r in reqs}
        return pins, "constraints.txt", False
    return {}, "", False


def _forked_for(package: Mapping[str, object], python: str) -> bool:
    """True when a uv.lock entry belongs to a fork of the resolution for other Pythons than `python`."""
    markers = package.get("resolution-markers")
    if not python or not isinstance(markers, list) or not markers:
        return False
    env = {
        "python_version": ".".join(python.split(".")[:2]),
        "python_full_version": python,
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
    }
    try:
        return not any(Marker(m).evaluate(env) for m in markers if isinstance(m, str))
    except InvalidMarker:
        return False


def project_dependencies(files: Mapping[str, str]) -> list[str]:
    """[project].dependencies (the runtime requirements a lock's pins apply to); [] when dynamic."""
    deps = read_toml(files.get("pyproject.toml", "")).get("project", {}).get("dependencies", [])
    return (
        _valid([d for d in deps if isinstance(d, str) and "://" not in d]) if isinstance(deps, list) else []
    )


#: pytest options (the name before any `=`) that only a plugin defines, and the distribution that brings it.
#: An `addopts` naming one without its plugin makes pytest stop with a usage error before collecting
#: anything (parse's `--cov`). Options of pytest itself (`--doctest-*`, `-p`, `-r`) have no row.
ADDOPTS_PLUGINS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"--(?:no-)?cov(?:-.*)?"), "pytest-cov"),
    (re.compile(r"-n(?:\d+|auto|logical)?|--numprocesses|--maxprocesses|--dist"), "pytest-xdist"),
    (re.compile(r"--timeout(?:-method|_method)?"), "pytest-timeout"),
    (re.compile(r"--benchmark-.*"), "pytest-benchmark"),
    (re.compile(r"--mypy(?:-.*)?"), "pytest-mypy"),
    (re.compile(r"--flake8"), "pytest-flake8"),
    (re.compile(r"--black"), "pytest-black"),
    (re.compile(r"--reruns(?:-delay)?"), "pytest-rerunfailures"),
    (re.compile(r"--html|--self-contained-html"), "pytest-html"),
    (re.compile(r"--hypothesis-.*"), "hypothesis"),
    (re.compile(r"--asyncio-mode"), "pytest-asyncio"),
)


def pytest_addopts(files: Mapping[str, str]) -> tuple[list[str], str]:
    """The `addopts` of the pytest configuration pytest itself would read, split into arguments, and its file.

    pytest takes the first of pytest.ini, .pytest.ini, pyproject.toml ([tool.pytest.ini_options] or
    [tool.pytest]), tox.ini ([pytest]), setup.cfg ([tool:pytest]) that holds its section, so a later
    file's addopts never counts.

    >>> pytest_addopts({"setup.cfg": "[tool:pytest]\\naddopts = --cov=parse -q\\n"})
    (['--cov=parse', '-q'], 'setup.cfg [tool:pytest]')
    >>> pytest_addopts({"pyproject.toml": "[tool.pytest.ini_options]\\naddopts = ['-n', 'auto']\\n"})
    (['-n', 'auto'], 'pyproject.toml [tool.pytest.ini_options]')
    """
    for path, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest")):
        if path in files:
            return _ini_addopts(files[path], section), f"{path} [{section}]"
    tool = read_toml(files.get("pyproject.toml", "")).get("tool", {})
    pytest_table = tool.get("pytest") if isinstance(tool.get("pytest"), dict) else {}
    native = {key: value for key, value in pytest_table.items() if key != "ini_options"}  # pytest 9's
    tables = (("tool.pytest.ini_options", pytest_table.get("ini_options")), ("tool.pytest", native))
    for name, table in tables:
        if isinstance(table, dict) and (table or name == "tool.pytest.ini_options"):
            value = table.get("addopts", "")
            words = value if isinstance(value, list) else _split(str(value))
            return [str(word) for word in words], f"pyproject.toml [{name}]"
    for path, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        if read_config(files.get(path, "")).has_section(section):
            return _ini_addopts(files[path], section), f"{path} [{section}]"
    return [], ""


def _ini_addopts(text: str, section: str) -> list[str]:
    config = read_config(text)
    return _split(config.get(section, "addopts", raw=True, fallback=""))


def _split(value: str) -> list[str]:
    try:
        return shlex.split(value, comments=True)
    except ValueError:
        return value.split()


def addopts_plugins(files: Mapping[str, str]) -> list[tuple[str, str]]:
    """(plugin distribution, the addopts option that needs it) for each plugin the pytest configuration's
    addopts names, in ADDOPTS_PLUGINS's order, once each.

    >>> addopts_plugins({"pytest.ini": "[pytest]\\naddopts = --cov=pkg --cov-report term -n4 --doctest-modules\\n"})
    [('pytest-cov', '--cov'), ('pytest-xdist', '-n4')]
    """
    options, _ = pytest_addopts(files)
    found: dict[str, str] = {}
    for option in options:
        name = option.split("=", 1)[0]
        for pattern, plugin in ADDOPTS_PLUGINS:
            if pattern.fullmatch(name) and plugin not in found:
                found[plugin] = name
    return list(found.items())


def extras_requirement_names(files: Mapping[str, str], extras: tuple[str, ...] | list[str]) -> set[str]:
    """Canonical names the given extras require (pyproject, setup.cfg, setup.py's extras_require read with
    `ast`): what the repository's own install brings besides the recipe's packages."""
    texts: list[str] = []
    optional = read_toml(files.get("pyproject.toml", "")).get("project", {}).get("optional-dependencies", {})
    for extra in extras:
        if isinstance(optional, dict) and isinstance(optional.get(extra), list):
            texts += [item for item in optional[extra] if isinstance(item, str)]
        config = read_config(files.get("setup.cfg", ""))
        if config.has_option("options.extras_require", extra):
            texts += config.get("options.extras_require", extra, raw=True).splitlines()
    from_setup_py = setup_py_extras(files.get("setup.py", "")) if extras else {}
    texts += [text for extra in extras for text in from_setup_py.get(extra, [])]
    requirements = _valid([text.strip() for text in texts if text.strip()])
    return {canonicalize_name(Requirement(text).name) for text in requirements}
