"""Attacks on the grader's compile check (a script and an output name the candidate can predict): start-up
code that writes the check's result itself, garbage in that result, and a stale result left by an earlier
command. Each is graded on the toy task in the real bwrap sandbox and named after its attack.
"""

from __future__ import annotations

from repogym.grading.grade import grade, grade_in_episode
from repogym.grading.report import Outcome

from ..support.patches import new_file

_SITECUSTOMIZE_FORGE = (
    "import os\n"
    "_cmd = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
    "_script = [a.decode() for a in _cmd if a.endswith(b'compile_check.py')]\n"
    "if _script:\n"
    "    open(_script[0] + '.out', 'w').write({payload!r})\n"
    "    os._exit(0)\n"
)


def test_grading_sitecustomize_forges_the_compile_check(toy_task, toy_runtime):
    """Was a hole at 4021a70: the compile check ran with site enabled and /testbed/src on sys.path (the
    editable install), so a candidate src/sitecustomize.py wrote '[]' to compile_check.py.out and exited 0."""
    patch = (
        toy_task.patch
        + new_file("src/calc/broken.py", "def oops(:\n")
        + new_file("src/sitecustomize.py", _SITECUSTOMIZE_FORGE.format(payload="[]"))
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert any("broken.py" in error for error in result.compile_errors), result.compile_errors


def test_grading_garbage_compile_report_is_an_outcome_not_a_crash(toy_task, toy_runtime):
    """Was a hole at 4021a70: _compile_errors json.loads'ed the jail-written report unguarded, so garbage
    there made grade() raise instead of returning a GradeResult."""
    patch = toy_task.patch + new_file(
        "src/sitecustomize.py", _SITECUSTOMIZE_FORGE.format(payload="{not json")
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert result.outcome in tuple(Outcome)


def test_grading_stale_compile_report_in_out_is_not_read(toy_task, episode):
    """A compile_check.py.out left in out/ by an earlier command does not stand in for the check's own."""
    episode.run("echo '[]' > /opt/repogym/out/compile_check.py.out")
    patch = toy_task.patch + new_file("src/calc/broken.py", "def oops(:\n")
    result = grade_in_episode(toy_task, patch, episode)
    assert any("broken.py" in error for error in result.compile_errors), result.compile_errors
