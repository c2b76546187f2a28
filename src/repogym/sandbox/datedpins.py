"""A task's exact pins (`name==version`, `name===version`) and what lets their releases past a dated
index's cutoff: the words of its install commands read as pip reads them, the release a file name holds,
and uv's per-project dates (sandbox/datedindex.py serves the index and says what is guaranteed)."""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

_PIP = re.compile(r"^pip(\d+(\.\d+)*)?$")
#: Shell punctuation (`;`, `&&`, `|`, redirections): a word made of these ends a command.
_PUNCTUATION = frozenset("();<>|&")
#: Options that point an install at another index or a folder of files.
_OTHER_SOURCES = (
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--index",
    "--default-index",
)
_OLD_ARCHIVES = (".tar.gz", ".tar.bz2", ".tar.xz", ".tar.Z", ".tgz", ".tbz", ".tar", ".zip")


@dataclass(frozen=True)
class ExactPin:
    """A requirement of the task that names one release (`name==version` or `name===version`)."""

    requirement: str
    """As the task writes it."""
    name: str
    """The project's normalised name (PEP 503)."""
    specifier: SpecifierSet
    field: str
    """The task field that holds it: "env.packages" or "env.install[i]" (i counted from 0)."""
    marked: bool = False
    """It has an environment marker: it may not apply here, so the index lacking it is no error."""


@dataclass(frozen=True)
class LatePin:
    """An exact pin none of whose release's files the cutoff lets through; its last file came at `last_upload`."""

    pin: ExactPin
    last_upload: datetime.datetime


def exact_pins(packages: Sequence[str], install: Sequence[str]) -> tuple[ExactPin, ...]:
    """The task's exact pins: of its packages, and of the arguments of each `pip install` in its install commands.

    >>> pins = exact_pins(
    ...     ["tox==4.16.0", "pytest<8", "numpy==1.2.*"],
    ...     ["sed -i 's/a==1/b/' x.ini", "python -m pip install -e .[test] 'Jinja2===3.0.3'; echo six==1"],
    ... )
    >>> [(pin.requirement, pin.name, pin.field) for pin in pins]
    [('tox==4.16.0', 'tox', 'env.packages'), ('Jinja2===3.0.3', 'jinja2', 'env.install[1]')]
    """
    found = [pin for text in packages if (pin := _exact_pin(text, "env.packages"))]
    for index, command in enumerate(install):
        field = f"env.install[{index}]"
        found += [pin for text in pip_install_arguments(command) if (pin := _exact_pin(text, field))]
    return tuple(found)


def pip_install_arguments(command: str) -> list[str]:
    """The words after `install` in each `pip install` of a shell command (`python -m pip`, `pip3`, `uv pip`
    too). An install that reads another index or a folder of files gives none (its pins are not the dated
    index's to answer for), nor does a line the shell could not split.

    >>> pip_install_arguments("cd x && python -m pip install -U 'a==1' b > log; pip3.9 install c==2")
    ['-U', 'a==1', 'b', 'c==2']
    >>> pip_install_arguments("pip install --extra-index-url https://example.org/simple d==1")
    []
    >>> pip_install_arguments("uv pip install --index-strategy unsafe-best-match e==1")
    ['--index-strategy', 'unsafe-best-match', 'e==1']
    """
    arguments: list[str] = []
    for line in command.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            continue
        segment: list[str] = []
        for word in [*words, ";"]:
            if not set(word) <= _PUNCTUATION:
                segment.append(word)
                continue
            installed = _install_words(segment)
            if not any(w.split("=", 1)[0] in _OTHER_SOURCES or w[:2] in ("-i", "-f") for w in installed):
                arguments += installed
            segment = []
    return arguments


def _install_words(segment: list[str]) -> list[str]:
    for at, name in enumerate(segment):
        if _PIP.match(os.path.basename(name)) and "install" in segment[at + 1 :]:
            return segment[segment.index("install", at + 1) + 1 :]
    return []


def _exact_pin(text: str, field: str) -> ExactPin | None:
    if text.startswith("-"):
        return None
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    exact = any(
        spec.operator == "===" or (spec.operator == "==" and not spec.version.endswith(".*"))
        for spec in requirement.specifier
    )
    if requirement.url or not exact:
        return None
    name = canonicalize_name(requirement.name)
    return ExactPin(text, name, requirement.specifier, field, requirement.marker is not None)


def release_of(filename: str) -> Version | None:
    """The version a distribution file's name holds: a wheel's, an sdist's, or an older archive's or egg's
    (None when the name says none).

    >>> [str(release_of(n)) for n in ("tox-4.16.0-py3-none-any.whl", "Jinja2-3.0.3.tar.gz", "py-1.4.26.tar.bz2")]
    ['4.16.0', '3.0.3', '1.4.26']
    >>> release_of("setup.exe") is None
    True
    """
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        pass
    # Before PEP 625: name-version.tar.bz2 / .tgz / ..., and eggs (name-version-pyX.Y.egg).
    stem = filename[:-4].rsplit("-", 1)[0] if filename.endswith(".egg") else None
    for suffix in _OLD_ARCHIVES:
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
    name, _, version = (stem or "").rpartition("-")
    try:
        return Version(version) if name else None
    except InvalidVersion:
        return None


def names_release(filename: object, specifiers: Sequence[SpecifierSet]) -> bool:
    version = release_of(filename) if isinstance(filename, str) and specifiers else None
    return version is not None and any(spec.contains(version, prereleases=True) for spec in specifiers)


def write_uv_settings(folder: Path, late: Sequence[LatePin]) -> Path:
    """A uv.toml giving each late-pinned project a cutoff of its own, one second past its release's last
    upload (uv reads per-project dates, `exclude-newer-package`, from settings only)."""
    dates: dict[str, datetime.datetime] = {}
    for item in late:
        moment = item.last_upload.replace(microsecond=0) + datetime.timedelta(seconds=1)
        dates[item.pin.name] = max(moment, dates.get(item.pin.name, moment))
    entries = ", ".join(
        f'{json.dumps(name)} = "{moment.astimezone(datetime.UTC):%Y-%m-%dT%H:%M:%SZ}"'
        for name, moment in sorted(dates.items())
    )
    path = folder / "uv.toml"
    path.write_text(
        "# repogym: releases the task pins exactly, uploaded after its exclude_newer (sandbox/datedindex.py)\n"
        f"exclude-newer-package = {{ {entries} }}\n",
        encoding="utf-8",
    )
    path.chmod(0o644)  # read in the jail by the sandbox's user
    return path
