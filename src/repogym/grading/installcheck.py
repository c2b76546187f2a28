"""What the grader's own re-install wrote into the episode's venv, checked like the patch.

After a packaging patch, grade.py re-runs the repo's install step (`Episode.reinstall`) over a venv layer
private to the episode. That step runs the candidate's setup.py or build backend, which can write whatever
the venv holds: a .pth file, a pytest11 entry point, a changed ``_pytest`` module, a console script called
``pytest``. `check_reinstall` compares the venv after the step with the venv the episode started from (the
overlay's upper layer, or the copy file by file where there is no overlayfs) and refuses every change that
is not the project's own install output (install_outputs.py says which distribution is the project). What
the step wrote in the repository is checked by `candidate.check_changes(..., by_install=True)` (grade.py).

The project's outputs, the only changes allowed:

- its metadata entries (dist-info, egg-info, an unzipped egg's EGG-INFO), at the same or another version,
  where entry_points.txt may change console_scripts and gui_scripts only: every other group (pytest11
  first) must hold exactly the base install's entries;
- top-level files of the site folder that reproduce one the base install wrote, byte for byte but for the
  project's version: its editable .pth, setuptools' finder module, its egg-link, easy-install.pth;
- its console scripts in bin/: names it declares that are no other package's bin/ file and no program on the
  jail's PATH;
- for a project installed without -e, the files of its own top-level packages (code under test, compiled or
  not), never a start-up module, a .pth file or package metadata among them;
- share/ and include/ (data files, C headers: nothing Python or pytest loads by itself);
- removing what the base install wrote for the project (the old version's metadata and .pth), or a cache.

Guarantees (tests/grading/test_installcheck.py, on real re-installs in the jail; through the grader,
tests/sandbox/test_hostile_reinstall.py):

- Anything else the step changed, added or removed in the venv is refused, each path named with its reason:
  a new .pth file, a start-up module (any form `candidate.is_startup_name` matches), another distribution's
  metadata, a new entry point group or a changed pytest11 entry, a changed or new module of another package
  (``_pytest/*.py``, a new top-level module), a .pyc outside the project's packages, a link, a zipped egg,
  a console script in the place of ``bin/pytest`` or of a program on the jail's PATH, pyvenv.cfg.
- Nothing is read through a link the jail planted, nor more than 16 MiB of one file; what cannot be read or
  listed is refused, never passed.

Not guaranteed:

- A legitimate packaging change is refused where its install output differs from the base install's in more
  than the version: a new top-level package in setuptools' editable finder mapping, a new entry point group
  other than scripts, data files outside share/, a zipped egg, a version without a dot (compared exactly),
  or a pip that byte-compiles the finder module (pip's default: the re-install must set PIP_NO_COMPILE=0).
- The project's own code is code under test: a non-editable install's package files and the console scripts
  it declares are not read, as the code in /testbed is not.
- Only the venv is checked here; /tmp, $HOME and the jail's other writable folders do not outlive the
  install's command.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from repogym.grading.candidate import is_startup_name, loaded_by_itself
from repogym.grading.install_outputs import (
    METADATA_SUFFIXES,
    SCRIPT_GROUPS,
    Dist,
    InstalledProject,
    entry_point_sections,
)
from repogym.sandbox.base import VENV_DIR
from repogym.sandbox.layerchanges import LayerChange, LayerChangeKind, Tree, layer_changes, tree_changes
from repogym.sandbox.runtime import Episode

#: The jail's PATH after the venv's bin/ (bwrap.jail_environment): a console script must not shadow these.
JAIL_PATH_DIRS = ("/usr/local/bin", "/usr/bin", "/bin")
_SITE = re.compile(r"(lib(?:64)?/python[^/]+/site-packages)/(.+)")


def check_reinstall(episode: Episode) -> str:
    """What the episode's re-install changed in its venv that is not the project's own install output ('' when
    nothing; else 'PATH (why)' entries joined by ', ', each PATH as the jail sees it)."""
    layer = episode.layer
    if not layer.venv_private or not layer.venv_lowers:
        return ""
    folder, overlay = layer.venv_view()
    try:
        if overlay is not None and overlay.upper is not None:
            new = Tree((overlay.upper, *overlay.lowers))
            changes = layer_changes(overlay.upper, overlay.lowers)
        elif folder is not None:
            new, changes = Tree((folder,)), tree_changes(folder, layer.venv_lowers[0])
        else:
            return f"{VENV_DIR} (the venv after the re-install was not found)"
        if changes is None:
            return f"{VENV_DIR} (its layer holds overlay redirects or metacopy, which are not replayed)"
        return judge_venv_changes(changes, Tree(layer.venv_lowers), new, Tree(layer.lowers))
    except OSError as exc:  # a folder the jail made unreadable (where it is not root): not seen, not passed
        return f"{VENV_DIR} (could not be read after the re-install: {exc})"


def judge_venv_changes(changes: Iterable[LayerChange], base: Tree, new: Tree, repo: Tree) -> str:
    """The rules of this module on `changes` (paths relative to the venv) from `base` to `new`; `repo` is the
    installed base tree of the repository (where ``setup.py install`` leaves its egg-info)."""
    project = InstalledProject.find(base, new, repo)
    found = []
    for change in changes:
        why = _reason(change, project)
        if why:
            found.append(f"{VENV_DIR}/{change.path} ({why})")
    return ", ".join(found)


# -- the rules, one change at a time ----------------------------------------------------------------------


def _reason(change: LayerChange, project: InstalledProject) -> str:
    if change.kind is not LayerChangeKind.REMOVED and not _is_regular(change.host_path):
        return "a link" if change.is_link else "not a regular file"
    site = _SITE.fullmatch(change.path)
    if site:
        return _site_reason(site.group(1), site.group(2), change, project)
    top, _, rest = change.path.partition("/")
    if top == "bin" and rest and "/" not in rest:
        return _script_reason(rest, change, project)
    if top in ("share", "include") and rest:
        return ""
    return "outside site-packages, bin/, share/ and include/: nothing of an install's own"


def _is_regular(entry: Path | None) -> bool:
    return entry is not None and stat.S_ISREG(os.lstat(entry).st_mode)


def _site_reason(site: str, inner: str, change: LayerChange, project: InstalledProject) -> str:
    top, _, rest = inner.partition("/")
    removed = change.kind is LayerChangeKind.REMOVED
    if project.owns(top):
        return _metadata_reason(Dist(site, top), rest, change, project)
    if not rest and not removed and project.reproduces_base(site, top):
        return ""
    if removed and (top == "__pycache__" or (not rest and project.names_versioned_file(top))):
        return ""  # a cache (Python compiles the source instead), or the base's .pth of the old version
    if _module_name(inner) in project.packages:
        return _package_reason(inner, project)
    return _refused_site_entry(site, top, rest, change, project)


def _metadata_reason(dist: Dist, rest: str, change: LayerChange, project: InstalledProject) -> str:
    """A file in one of the project's metadata entries (an egg holds its packages too)."""
    if change.kind is LayerChangeKind.REMOVED:
        return ""
    if dist.is_egg and not rest:
        return "a zipped egg: what it would put on sys.path cannot be read"
    if dist.is_egg and not rest.startswith("EGG-INFO/"):
        return _package_reason(rest, project)
    if PurePosixPath(rest or dist.entry).name.casefold() == "entry_points.txt":
        return _entry_points_reason(change, project)
    return ""


def _module_name(inner: str) -> str:
    """The top-level import name a site folder's path belongs to (a cached .pyc counts as its module's)."""
    parts = PurePosixPath(inner).parts
    if parts[0] == "__pycache__" and len(parts) == 2:
        return parts[1].split(".", 1)[0]
    return "" if parts[0].lower().endswith(".pth") else parts[0].split(".", 1)[0]


def _package_reason(inner: str, project: InstalledProject) -> str:
    """A file of the project's own packages (an install without -e): code under test, compiled or not, unless
    Python would load it by itself, or it is a top-level name the base install did not write (in an egg)."""
    why = loaded_by_itself(inner)
    if why and why != "compiled code":
        return why
    if _module_name(inner) not in project.packages:
        return "a new top-level module in the project's egg (on sys.path)"
    return ""


def _entry_points_reason(change: LayerChange, project: InstalledProject) -> str:
    """The project's entry_points.txt: scripts may change, every other group must be the base's."""
    text = project.new.text(change.path)
    if text is None:
        return "entry points that are not readable UTF-8"
    new = {g: lines for g, lines in entry_point_sections(text).items() if g not in SCRIPT_GROUPS}
    old = {g: lines for g, lines in project.base_entry_points.items() if g not in SCRIPT_GROUPS}
    changed = sorted(g for g in set(new) | set(old) if new.get(g, ()) != old.get(g, ()))
    if changed:
        return f"entry points the base install did not register: [{'], ['.join(changed)}]"
    return ""


def _refused_site_entry(
    site: str, top: str, rest: str, change: LayerChange, project: InstalledProject
) -> str:
    """Why a change of the site folder that is none of the project's outputs is refused."""
    low = top.lower()
    if change.kind is LayerChangeKind.REMOVED:
        return "removes a file the project's install did not write"
    if is_startup_name(top):
        return "a module run at interpreter start"
    if top == "__pycache__":
        return "compiled code Python would run in place of its source (installers must not compile here)"
    if low.endswith(".pth") and not rest:
        return "a .pth file the base install did not write (its lines run at interpreter start)"
    if low.endswith((*METADATA_SUFFIXES, ".egg-link")):
        return "package metadata of a distribution that is not the project (entry points, plugins)"
    if project.base.entry(f"{site}/{top}") is not None:
        return "changes an installed package other than the project"
    return "a new top-level module or package in site-packages"


def _script_reason(name: str, change: LayerChange, project: InstalledProject) -> str:
    if change.kind is LayerChangeKind.REMOVED:
        return "" if name in project.base_scripts else "removes a program of another package from bin/"
    if name not in project.new_scripts | project.base_scripts:
        return "a program in bin/ the project does not declare as a console script"
    if project.base.entry(f"bin/{name}") is not None and name not in project.base_scripts:
        return f"a console script in place of another package's bin/{name}"
    shadowed = [folder for folder in JAIL_PATH_DIRS if os.path.lexists(f"{folder}/{name}")]
    if shadowed:
        return f"a console script that shadows {shadowed[0]}/{name} on the jail's PATH"
    return ""
