"""The project's own install outputs in a venv: its distributions, their entry points, scripts and packages.

grading/installcheck.py asks this module which files of a re-installed venv are the project's. The project
is what the base install (the base commit's, never the candidate's) put in the venv from /testbed: a
dist-info or egg-info whose direct_url.json names file:///testbed, an egg-link into /testbed, or an egg named
like an egg-info the install left in the repository (``python setup.py install`` records no URL). Everything
here that decides what is the project's is read from the base venv and the base tree; the venv after the
re-install (`new`) is only read for what it now holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from repogym.grading.candidate import is_startup_name
from repogym.sandbox.base import REPO_DIR
from repogym.sandbox.layerchanges import Tree

#: Entry point groups a project's re-install may change: they only name programs for bin/.
SCRIPT_GROUPS = frozenset({"console_scripts", "gui_scripts"})
METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")
# The versions that may differ between a base file and its re-install: digits, then dotted parts (PEP 440, as
# installers escape it). Anything else, a bare "1" included (it would match any digit), is compared exactly.
_VERSION = re.compile(r"[0-9][A-Za-z0-9+!_]*(?:\.[A-Za-z0-9+!_]+)+")
_PLACEHOLDER = "\0version\0"


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them.

    >>> normalize("Foo_Bar.baz"), normalize("foo-bar-baz")
    ('foo-bar-baz', 'foo-bar-baz')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Dist:
    """A metadata entry of a site folder: `name-version.dist-info`, `name.egg-info`, `name-version-pyX.egg`."""

    site: str
    entry: str

    @property
    def name(self) -> str:
        """Normalized: the part before the first '-' of the entry without its suffix.

        >>> [Dist("", e).name for e in ("Calc_X-0.1.dist-info", "calc.egg-info", "Django-1.11-py3.6.egg")]
        ['calc-x', 'calc', 'django']
        """
        return normalize(self.entry.rsplit(".", 1)[0].split("-", 1)[0])

    @property
    def version(self) -> str:
        """'' when the entry names none.

        >>> [Dist("", e).version for e in ("calc-0.1.0.dist-info", "calc.egg-info", "Django-1.11-py3.6.egg")]
        ['0.1.0', '', '1.11']
        """
        parts = self.entry.rsplit(".", 1)[0].split("-")
        return parts[1] if len(parts) > 1 else ""

    @property
    def is_egg(self) -> bool:
        return self.entry.lower().endswith(".egg")

    @property
    def metadata(self) -> str:
        """The folder holding its metadata files (an egg's EGG-INFO)."""
        return f"{self.site}/{self.entry}" + ("/EGG-INFO" if self.is_egg else "")


@dataclass(frozen=True)
class InstalledProject:
    """The project's installed outputs in the base venv and in the venv after the re-install."""

    base: Tree
    new: Tree
    names: frozenset[str]
    """Its distribution names (normalized)."""
    packages: frozenset[str]
    """Top-level import names its install writes into the site folder: [] for an editable install; never a
    start-up module nor a module a .pth file names."""
    base_entry_points: dict[str, tuple[str, ...]]
    base_scripts: frozenset[str]
    """bin/ programs that were the project's before the re-install."""
    new_scripts: frozenset[str]
    """Console and GUI scripts the project declares after it."""
    versions: tuple[tuple[str, ...], tuple[str, ...]]
    """(before, after): the project's versions, as its metadata entries name them."""

    @classmethod
    def find(cls, base: Tree, new: Tree, repo: Tree) -> InstalledProject:
        """The project of `base` (the venv an episode starts from), as `new` shows it; `repo`: the installed
        base tree of the repository."""
        names, editable, others = _installed_from_repo(base)
        # An egg records no URL: it is known by the egg-info the install left in the repository, unless that
        # name is another distribution's in the venv.
        names |= _repo_egg_infos(repo) - others
        base_dists, new_dists = dists(base, names), dists(new, names)
        base_points = _merged_entry_points(base, base_dists)
        return cls(
            base=base,
            new=new,
            names=names,
            packages=frozenset() if editable else _packages(base, base_dists),
            base_entry_points=base_points,
            base_scripts=_script_names(base_points) | _recorded_scripts(base, base_dists),
            new_scripts=_script_names(_merged_entry_points(new, new_dists)),
            versions=(_versions(base_dists), _versions(new_dists)),
        )

    def owns(self, entry: str) -> bool:
        """Whether a site folder's top-level entry is one of the project's metadata entries."""
        return entry.lower().endswith(METADATA_SUFFIXES) and Dist("", entry).name in self.names

    def reproduces_base(self, site: str, name: str) -> bool:
        """Whether the site folder's top-level file `name` (after the re-install) is one the base install
        wrote there: the same name and bytes, the project's version aside (an editable .pth, setuptools'
        finder module, an egg-link, easy-install.pth)."""
        data = self.new.read(f"{site}/{name}")
        if data is None:
            return False
        key, text = self._form(name, 1), self._form(data.decode("latin-1"), 1)
        for other in self.base.names(site):
            if self._form(other, 0) == key:
                old = self.base.read(f"{site}/{other}")
                if old is not None and self._form(old.decode("latin-1"), 0) == text:
                    return True
        return False

    def names_versioned_file(self, name: str) -> bool:
        """Whether a file name carries the project's name and its base version (its .pth, finder module)."""
        spelled = name.lower().replace("-", "_")
        named = any(project.replace("-", "_") in spelled for project in self.names)
        return named and _PLACEHOLDER in self._form(name, 0)

    def _form(self, text: str, side: int) -> str:
        """`text` with the project's versions of one side (0 before, 1 after) replaced by a placeholder."""
        for version in sorted(_version_forms(self.versions[side]), key=len, reverse=True):
            text = text.replace(version, _PLACEHOLDER)
        return text


def entry_point_sections(text: str) -> dict[str, tuple[str, ...]]:
    """An entry_points.txt as importlib.metadata reads it (stripped lines; blank lines and '#' comments
    dropped; a '[group]' line opens a group): group -> its entry lines, sorted; lines before any group: ''.

    >>> entry_point_sections("[console_scripts]\\ncalc = calc:main\\n# note\\n[pytest11]\\n x = calc.plugin \\n")
    {'console_scripts': ('calc = calc:main',), 'pytest11': ('x = calc.plugin',)}
    """
    sections: dict[str, list[str]] = {}
    group = ""
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            sections.setdefault(group, [])
            continue
        sections.setdefault(group, []).append(line)
    return {group: tuple(sorted(lines)) for group, lines in sections.items()}


def site_folders(tree: Tree) -> list[str]:
    """The venv's site-packages folders (relative to its root)."""
    folders = []
    for lib in ("lib", "lib64"):
        folders += [f"{lib}/{name}/site-packages" for name in tree.names(lib) if name.startswith("python")]
    return [folder for folder in folders if tree.is_dir(folder)]


def dists(tree: Tree, names: frozenset[str]) -> list[Dist]:
    """The metadata entries of `tree`'s site folders for the distributions `names`."""
    return [
        Dist(site, entry)
        for site in site_folders(tree)
        for entry in tree.names(site)
        if entry.lower().endswith(METADATA_SUFFIXES) and Dist(site, entry).name in names
    ]


def _installed_from_repo(base: Tree) -> tuple[frozenset[str], bool, frozenset[str]]:
    """(names installed from /testbed, whether one of them is editable, every other installed name)."""
    mine: set[str] = set()
    others: set[str] = set()
    editable = False
    for site in site_folders(base):
        for entry in base.names(site):
            dist, low = Dist(site, entry), entry.lower()
            if low.endswith(".egg-link"):
                target = (base.text(f"{site}/{entry}") or "").splitlines()[:1]
                if target and _in_repo(target[0].strip()):
                    mine.add(dist.name)
                    editable = True
            elif low.endswith((".dist-info", ".egg-info")):
                url, is_editable = _direct_url(base.text(f"{site}/{entry}/direct_url.json"))
                from_repo = _in_repo(url.removeprefix("file://"))
                (mine if from_repo else others).add(dist.name)
                editable = editable or (from_repo and is_editable)
    return frozenset(mine), editable, frozenset(others - mine)


def _in_repo(path: str) -> bool:
    return path == REPO_DIR or path.startswith(REPO_DIR + "/")


def _direct_url(text: str | None) -> tuple[str, bool]:
    """(url, editable) of a direct_url.json (PEP 610); ('', False) when there is none or it is malformed."""
    try:
        data = json.loads(text or "{}")
        return str(data.get("url", "")), bool((data.get("dir_info") or {}).get("editable", False))
    except (ValueError, AttributeError):
        return "", False


def _repo_egg_infos(repo: Tree) -> frozenset[str]:
    """Names of the egg-info folders at the top of the installed base tree and one folder down (src/)."""
    found = set()
    for top in repo.names(""):
        if top.lower().endswith(".egg-info"):
            found.add(Dist("", top).name)
        elif not top.startswith(".") and repo.is_dir(top):
            found |= {Dist("", name).name for name in repo.names(top) if name.lower().endswith(".egg-info")}
    return frozenset(found)


def _merged_entry_points(tree: Tree, found: Sequence[Dist]) -> dict[str, tuple[str, ...]]:
    merged: dict[str, set[str]] = {}
    for dist in found:
        text = tree.text(f"{dist.metadata}/entry_points.txt") or ""
        for group, lines in entry_point_sections(text).items():
            merged.setdefault(group, set()).update(lines)
    return {group: tuple(sorted(lines)) for group, lines in merged.items()}


def _script_names(points: dict[str, tuple[str, ...]]) -> frozenset[str]:
    lines = [line for group in SCRIPT_GROUPS for line in points.get(group, ())]
    return frozenset(line.split("=", 1)[0].strip() for line in lines if "=" in line)


def _recorded_scripts(tree: Tree, found: Sequence[Dist]) -> frozenset[str]:
    """bin/ files the base install recorded as the project's (RECORD; an egg's EGG-INFO/scripts)."""
    names: set[str] = set()
    for dist in found:
        if dist.is_egg:
            names.update(tree.names(f"{dist.metadata}/scripts"))
        for line in (tree.text(f"{dist.metadata}/RECORD") or "").splitlines():
            path = PurePosixPath(line.split(",", 1)[0])
            if len(path.parts) >= 2 and path.parts[-2] == "bin" and ".." in path.parts:
                names.add(path.name)
    return frozenset(names)


def _packages(base: Tree, found: Sequence[Dist]) -> frozenset[str]:
    """Top-level import names the base install wrote for the project (top_level.txt; an egg's own folder),
    minus any a .pth file names: a module a .pth imports runs at start, and must reproduce the base's."""
    names: set[str] = set()
    for dist in found:
        names.update((base.text(f"{dist.metadata}/top_level.txt") or "").split())
        if dist.is_egg:
            names.update(
                n.split(".", 1)[0] for n in base.names(f"{dist.site}/{dist.entry}") if n != "EGG-INFO"
            )
    started: set[str] = set()
    for site in site_folders(base):
        for entry in base.names(site):
            if entry.lower().endswith(".pth"):
                started.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", base.text(f"{site}/{entry}") or ""))
    return frozenset(
        name
        for name in names - started
        if name.isidentifier() and not is_startup_name(name) and not name.startswith("__editable__")
    )


def _versions(found: Sequence[Dist]) -> tuple[str, ...]:
    return tuple(sorted({dist.version for dist in found if _VERSION.fullmatch(dist.version)}))


def _version_forms(versions: Iterable[str]) -> set[str]:
    """A version as file and module names spell it: as it is, and with each non-alphanumeric escaped to '_'."""
    return {form for v in versions for form in (v, re.sub(r"[^A-Za-z0-9]", "_", v)) if form}
