"""The compile check of a candidate's changed Python files, as a shell command for a jailed command the grader
runs anyway (the test patch's, or the one-pass command), and its report read back safely."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass

from repogym.grading.parsers.common import shell_join
from repogym.patches import changed_paths
from repogym.sandbox.base import OUT_DIR, read_jail_file
from repogym.sandbox.runtime import Episode

# The report is each error followed by a NUL, then "ok" (no path or message holds a NUL): not JSON, because
# importing json (and the re it loads) is half the check's time in a jail (20-40 ms of every grade).
_COMPILE_SCRIPT = (
    "import sys\n"
    "bad = []\n"
    "for path in sys.argv[2:]:\n"
    "    try:\n"
    "        compile(open(path, 'rb').read(), path, 'exec')\n"
    "    except (SyntaxError, ValueError) as exc:\n"
    "        bad.append('%s: %s' % (path, exc))\n"
    "    except OSError:\n"
    "        pass\n"
    "open(sys.argv[1], 'w').write(''.join(error + '\\0' for error in bad) + 'ok')\n"
)


@dataclass(frozen=True)
class CompileStep:
    """The compile check of the candidate's Python files, as a jailed shell command."""

    command: str
    script: str
    """Its script's path in the jail's inbox."""
    report: str
    """The report's file name in the episode's out folder: new per grade, so no earlier command's file
    can stand in for it."""


def compile_step(episode: Episode, patch: str, test_paths: Collection[str] = ()) -> CompileStep | None:
    """The check of the Python files `patch` changes, except the test patch's (`test_paths`: what the tests
    run of those is the task's file, whatever the candidate did to it)."""
    paths = [p for p in changed_paths(patch) if p.endswith(".py") and p not in test_paths]
    if not paths:
        return None
    name = f"compile-{time.monotonic_ns()}.py"
    script = episode.put_file(name, _COMPILE_SCRIPT)
    # -I -S: no site, no user paths, no PYTHON* variables: nothing of the candidate runs before compile().
    command = f"python -I -S {script} {OUT_DIR}/{name}.out " + shell_join(paths)
    return CompileStep(command, script, f"{name}.out")


def compile_report(episode: Episode, step: CompileStep | None, tail: str) -> tuple[str, ...]:
    """The compile errors the check reported; one error saying so when it wrote no readable report."""
    if step is None:
        return ()
    report = read_jail_file(episode.layer.out / step.report)
    if report is None:
        return (f"compile check did not run: {tail}",)
    *errors, end = report.split("\0")
    if end != "ok":
        return ("compile check wrote no readable report",)
    return tuple(errors)
