"""Which installed Python a commit's files and date allow (`repogym.validate.recipe`'s first step).

Allowed: requires-python / python_requires. Preferred: the newest version the classifiers, the tox
envlist or a CI matrix names. Bounded by the date: a commit is never built with a Python released
after it. Python 2 only code is its own error (repogym builds Python 3 environments only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from repogym.errors import EnvBuildError
from repogym.validate.metadata_files import read_config, read_toml

#: First release of each CPython minor version (a commit is built with a Python that existed then).
PYTHON_RELEASES = {
    "2.7": "2010-07-03", "3.6": "2016-12-23", "3.7": "2018-06-27", "3.8": "2019-10-14", "3.9": "2020-10-05",
    "3.10": "2021-10-04", "3.11": "2022-10-24", "3.12": "2023-10-02", "3.13": "2024-10-07",
}  # fmt: skip
_CLASSIFIER = re.compile(r"Programming Language :: Python :: (\d)\.(\d+)\s*$")
_PY_REQUIRES_SETUP = re.compile(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]")
_CLASSIFIER_SETUP = re.compile(r"['\"]Programming Language :: Python :: (\d)\.(\d+)['\"]")
_CI_VERSION = re.compile(r"(?<![\d.])([23])\.(\d{1,2})(?![\d])")
_TOX_ENV = re.compile(r"\bpy([23])(\d{1,2})\b")


class Python2OnlyError(EnvBuildError):
    """The repository at this commit supports no Python 3 (repogym builds Python 3 environments only)."""


def choose_python(files: Mapping[str, str], commit_date: str, installed: list[str]) -> tuple[str, str]:
    """The installed interpreter the commit's files and date allow, and why; raises when there is none.

    Allowed: requires-python / python_requires; preferred: the newest version the classifiers, tox
    envlist or CI matrix name; bounded by what was released before the commit. Python 2 only code
    raises Python2OnlyError; an allowed version that is not installed raises EnvBuildError.

    >>> files = {"setup.py": "python_requires='>=3.6', classifiers=['Programming Language :: Python :: 3.7']"}
    >>> choose_python(files, "2019-06-01", ["3.6.15", "3.7.16", "3.11.7"])
    ('3.7.16', 'python_requires >=3.6; classifiers / CI name 3.7; released before 2019-06-01')
    """
    specifier, where = _requires_python(files)
    named = _named_versions(files)
    date = commit_date[:10]
    released = {v for v, first in PYTHON_RELEASES.items() if first <= date}
    if named and all(v.startswith("2.") for v in named) and specifier is None:
        raise Python2OnlyError(
            f"the repository supports Python {', '.join(sorted(named))} only ({where or 'classifiers'})"
        )
    if specifier is not None and not _allows_python3(specifier):
        raise Python2OnlyError(f"{where} {specifier} allows no Python 3")
    by_minor = _newest_per_minor(installed)
    allowed = [m for m in by_minor if m != "2.7" and (specifier is None or specifier.contains(by_minor[m]))]
    why = [f"{where} {specifier}"] if specifier is not None else []
    if not allowed:
        raise EnvBuildError(
            f"the commit needs Python {specifier} ({where}), none installed (installed: "
            f"{', '.join(sorted(installed)) or 'none'}); install one (pyenv install) or set env.python"
        )
    # No allowed Python existed at the commit's date: the date is made up (see envresolve), not a bound.
    dated = [m for m in allowed if m in released] or allowed
    preferred = [m for m in dated if m in named]
    if preferred:
        why.append(f"classifiers / CI name {_minor_key_max(preferred)}")
        choice = _minor_key_max(preferred)
    else:
        choice = _minor_key_max(dated)
    credible = any(m in released for m in allowed)
    why.append(f"released before {date}" if credible else f"none released before {date}: the newest allowed")
    return by_minor[choice], "; ".join(why)


def _minor_key_max(minors: list[str]) -> str:
    return max(minors, key=lambda m: tuple(int(p) for p in m.split(".")))


def _newest_per_minor(installed: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for version in sorted(installed, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v))):
        out[".".join(version.split(".")[:2])] = version
    return out


def _allows_python3(specifier: SpecifierSet | None) -> bool:
    if specifier is None:
        return True
    return any(specifier.contains(f"3.{minor}.0") for minor in range(0, 20))


def _requires_python(files: Mapping[str, str]) -> tuple[SpecifierSet | None, str]:
    raw, where = "", ""
    project = read_toml(files.get("pyproject.toml", "")).get("project", {})
    if isinstance(project.get("requires-python"), str):
        raw, where = project["requires-python"], "requires-python"
    elif (match := _PY_REQUIRES_SETUP.search(files.get("setup.py", ""))) is not None:
        raw, where = match.group(1), "python_requires"
    else:
        cfg = read_config(files.get("setup.cfg", ""))
        if cfg.has_option("options", "python_requires"):
            raw, where = cfg.get("options", "python_requires", raw=True), "python_requires"
        else:
            poetry = read_toml(files.get("pyproject.toml", "")).get("tool", {}).get("poetry", {})
            constraint = poetry.get("dependencies", {}).get("python")
            if isinstance(constraint, str):
                raw, where = poetry_constraint(constraint), "[tool.poetry.dependencies] python"
    try:
        return (SpecifierSet(raw.strip()), where) if raw.strip() else (None, "")
    except InvalidSpecifier:
        return None, ""


def poetry_constraint(text: str) -> str:
    """A poetry version constraint as a PEP 440 specifier (of "a || b", the newest alternative).

    >>> [poetry_constraint(c) for c in ("^3.6", "~3.7", ">=3.8,<4.0", "~2.7 || ^3.4", "*", "^3.8.1")]
    ['>=3.6,<4.0', '>=3.7,<3.8', '>=3.8,<4.0', '>=3.4,<4.0', '', '>=3.8.1,<4.0']
    """
    alternative = text.split("||")[-1].strip()
    out = []
    for part in re.split(r"[,\s]+(?=[~^<>=!\d])", alternative):
        part = part.strip().rstrip(",")
        if part in ("", "*"):
            continue
        numbers = part.lstrip("^~=").strip().split(".")
        if part.startswith("^"):
            major = int(numbers[0])
            upper = f"{major + 1}.0" if major else f"0.{int(numbers[1]) + 1}" if len(numbers) > 1 else "1.0"
            out += [f">={part[1:].strip()}", f"<{upper}"]
        elif part.startswith("~") and not part.startswith("~="):
            minor = int(numbers[1]) if len(numbers) > 1 else 0
            out += [f">={part[1:].strip()}", f"<{numbers[0]}.{minor + 1}"]
        else:
            out.append(part if part[0] in "<>=!~" else f"=={part}")
    return ",".join(out)


def _named_versions(files: Mapping[str, str]) -> set[str]:
    """Python minor versions the classifiers name, else the tox envlist and CI matrices."""
    named: set[str] = set()
    pyproject = read_toml(files.get("pyproject.toml", ""))
    classifiers = pyproject.get("project", {}).get("classifiers", []) or pyproject.get("tool", {}).get(
        "poetry", {}
    ).get("classifiers", [])
    for classifier in classifiers if isinstance(classifiers, list) else []:
        if isinstance(classifier, str) and (m := _CLASSIFIER.match(classifier)):
            named.add(f"{m.group(1)}.{m.group(2)}")
    for text in (files.get("setup.py", ""), files.get("setup.cfg", "")):
        named |= {f"{a}.{b}" for a, b in _CLASSIFIER_SETUP.findall(text)}
        named |= {f"{a}.{b}" for a, b in re.findall(r"Python :: (\d)\.(\d+)\s*$", text, re.M)}
    if named:
        return named
    named |= {f"{a}.{b}" for a, b in _TOX_ENV.findall(files.get("tox.ini", ""))}
    for path, text in files.items():
        if path.startswith(".github/workflows/") or path == ".travis.yml":
            for line in text.splitlines():
                if "python" in line.lower() or line.strip().startswith("- "):
                    named |= {
                        f"{a}.{b}" for a, b in _CI_VERSION.findall(line) if f"{a}.{b}" in PYTHON_RELEASES
                    }
    return named
