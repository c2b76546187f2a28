"""Compiled bytecode of a commit's installed tree, made once per (environment, commit) and stacked under every
episode of it, so that a test run loads the repository's modules instead of compiling each one again.

Why: the jails never write bytecode (PYTHONDONTWRITEBYTECODE: an episode's writes are its own and are thrown
away with it), so every test run compiled every module of the repository it imported, on every grade: 0.1
core-s of a 0.3 s run on pytest's repository, seconds on sympy's. A bare SWE-bench harness pays it too (its
image's tree holds no bytecode); here it is paid once per commit.

How: the environment's own interpreter compiles every ``.py`` file under /testbed (``.git`` and links aside),
in a jail over the commit's installed tree, into ``__pycache__`` beside it, as CHECKED_HASH pycs (PEP 552):
Python checks such a pyc against the hash of the source it has at import, so a module an episode changed,
or a candidate patched, is compiled from its new text whatever its timestamps say. Nothing an episode writes
can make Python run bytecode that does not match the source beside it; a candidate that writes a pyc itself
is refused by the candidate rules (grading/candidate.py), as before.

What a test sees: ``__pycache__`` folders beside the modules, as a Python that writes bytecode leaves them after
importing (SWE-bench's containers do), here beside every module rather than the imported ones. Git does not:
the installed tree's baseline (installs.py) records them, so an episode's diff never reports them, and
those the repository does not ignore are listed in the layer's ``.git/info/exclude`` for `git status`.

Not done: interpreters before 3.7 (no hash-based pycs) and the copy mode (no overlayfs: an episode is a copy
of its tree, which would copy the bytecode too). A file that does not compile (Python 2 syntax, another
encoding) gets no pyc and is compiled at import as before, failing there as it would have.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from repogym.sandbox.base import REPO_DIR, VENV_DIR, Mounts, OverlaySpec, Sandbox
from repogym.sandbox.bwrap import SANDBOX_UID, is_root
from repogym.sandbox.envbuild import BUILD_LIMITS, EnvHandle
from repogym.sandbox.interpreters import Interpreter

#: Added to an install layer's done-marker when it holds bytecode: layers made before it are completed once.
STAMP = "+pyc1"

# Run by the environment's interpreter with -I -S: nothing of the venv or the repository is imported.
_COMPILE = """
import importlib.util, os, py_compile, sys
mode = py_compile.PycInvalidationMode.CHECKED_HASH
made = 0
for root, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d not in ('.git', '__pycache__') and not os.path.islink(os.path.join(root, d))]
    for name in files:
        path = os.path.join(root, name)
        if name.endswith('.py') and not os.path.islink(path):
            try:
                py_compile.compile(path, importlib.util.cache_from_source(path), doraise=True,
                                   invalidation_mode=mode)
            except Exception:
                continue
            made += 1
print('compiled', made)
"""


def supported(interpreter: Interpreter) -> bool:
    """Whether `interpreter` writes hash-based pycs (3.7+).

    >>> at = Path("/p")
    >>> supported(Interpreter("3.7.16", at, at)), supported(Interpreter("3.6.15", at, at))
    (True, False)
    """
    major, minor = (int(part) for part in interpreter.version.split(".")[:2])
    return (major, minor) >= (3, 7)


def compile_layer(sandbox: Sandbox, env: EnvHandle, lowers: tuple[Path, ...], upper: Path, log: Path) -> bool:
    """Compile the tree `lowers` make (top first) into `upper`, a new overlay layer; False, with the layer
    removed and the cause appended to `log`, when the jail failed (episodes then go without it)."""
    shutil.rmtree(upper, ignore_errors=True)
    scratch = upper.with_name(upper.name + ".scratch")
    shutil.rmtree(scratch, ignore_errors=True)
    work, merged, tmp = scratch / "work", scratch / "repo", scratch / "tmp"
    for path in (upper, work, merged, tmp):
        path.mkdir(parents=True)
    if is_root():
        for path in (upper, work, tmp):
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
    view = OverlaySpec(lowers, upper, work, merged)
    mounts = Mounts(
        workspace=merged, tmp=tmp, venv=env.venv, interpreter_prefix=env.interpreter.prefix, overlay=view
    )
    command = f"{VENV_DIR}/bin/python -I -S -c {shlex.quote(_COMPILE)} {REPO_DIR}"
    try:
        result = sandbox.run(command, mounts, BUILD_LIMITS)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if result.ok:
        return True
    shutil.rmtree(upper, ignore_errors=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"\n# compiling the tree's bytecode failed; episodes go without it\n{result.output}\n")
    return False
