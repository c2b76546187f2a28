"""Attacks on one verdict per distinct candidate (grading/verdicts.py): each is a candidate that tries to reach
another candidate's grade through what grades now share (the store of a runtime, its prepared checkout and
environment). None may change another candidate's verdict from what a full grade of it gives alone.

The holes these close: a store keyed on too little (the task id, a normalised patch) hands one candidate's
verdict to another; a group graded over shared state (one tree, one warm process) lets the first candidate's
writes decide the next one's tests.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.grading.runner import run_tests
from repogym.grading.verdicts import verdicts_for
from repogym.sandbox.bwrap import is_root
from repogym.sandbox.runtime import TaskRuntime
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, toy_patch

pytestmark = pytest.mark.skipif(not is_root(), reason="real bwrap episodes need root")

_FORGE = (
    "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
#: Appended to the buggy module: while its own tests import it, it fixes the module's source for whoever comes
#: next, plants a forging conftest.py where pytest looks, and a sitecustomize.py wherever it can write.
POLLUTER = BUGGY_SOURCE + (
    "\n\nimport os as _os, pathlib as _pathlib\n"
    f"_WRITES = {{'src/calc/__init__.py': {FIXED_SOURCE!r}, 'conftest.py': {_FORGE!r},\n"
    f"           'tests/conftest.py': {_FORGE!r}, '/tmp/conftest.py': {_FORGE!r},\n"
    f"           '/tmp/sitecustomize.py': 'import builtins', _os.path.expanduser('~/sitecustomize.py'): ''}}\n"
    "for _path, _text in _WRITES.items():\n"
    "    try:\n"
    "        _pathlib.Path(_path).write_text(_text)\n"
    "    except OSError:\n"
    "        pass\n"
)


def _summary(result) -> tuple:
    return (result.outcome, result.status, result.fail_to_pass, result.pass_to_pass, result.compile_errors,
            result.patch_applied_with, result.ignored_paths)  # fmt: skip


def _pollutes_a_shared_tree(task, runtime, polluter: str) -> bool:
    """Whether the polluter's first test run turns a second run over the same tree into a pass: what a
    group graded over one tree would see."""
    with runtime.episode() as episode:
        patch = episode.put_file("both.patch", polluter + task.test_patch)
        assert episode.run(f"git apply {patch}").ok
        first, second = (run_tests(task, episode, task.FAIL_TO_PASS) for _ in range(2))
    test = task.FAIL_TO_PASS[0]
    return not first.results[test].status.ok and second.results[test].status.ok


def _fresh(task) -> TaskRuntime:
    return TaskRuntime.create(task, "bwrap").prepare()


def test_verdicts_polluter_rewrites_the_tree_for_the_next_candidate(toy_task):
    """A candidate that, while its tests run, writes the fix and a forging conftest.py into its tree (and
    wherever else it can) must leave the next candidates' grades as full grades make them."""
    runtime = _fresh(toy_task)
    polluter = toy_patch(toy_task, "src/calc/__init__.py", POLLUTER)
    assert _pollutes_a_shared_tree(toy_task, runtime, polluter)  # else this test proves nothing
    full = {
        name: grade(toy_task, patch, runtime=runtime)
        for name, patch in (("empty", ""), ("gold", toy_task.patch))
    }
    own = grade(toy_task, polluter, runtime=runtime, share_verdicts=True)
    assert not own.resolved
    after = {name: grade(toy_task, patch, runtime=runtime, share_verdicts=True) for name, patch in
             (("empty", ""), ("gold", toy_task.patch))}  # fmt: skip
    assert (
        _summary(after["empty"]) == _summary(full["empty"]) and after["empty"].outcome is Outcome.UNRESOLVED
    )
    assert _summary(after["gold"]) == _summary(full["gold"]) and after["gold"].resolved
    assert verdicts_for(runtime).graded == 3


def test_verdicts_polluter_runs_beside_the_next_candidate(toy_task):
    """The same polluter graded at the same moment as copies of the empty patch: no shared tree in flight."""
    runtime = _fresh(toy_task)
    reference = grade(toy_task, "", runtime=runtime)
    polluter = toy_patch(toy_task, "src/calc/__init__.py", POLLUTER)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda p: grade(toy_task, p, runtime=runtime, share_verdicts=True),
                                [polluter, "", polluter, ""]))  # fmt: skip
    assert all(_summary(r) == _summary(reference) for r in results[1::2])
    assert not any(r.resolved for r in results)


def test_verdicts_near_copy_of_a_resolved_patch(toy_task):
    """A candidate one edit away from a resolved one (the fix, then the bug again further down) is graded on
    its own bytes: it gets no share of the resolved verdict."""
    runtime = _fresh(toy_task)
    assert grade(toy_task, toy_task.patch, runtime=runtime, share_verdicts=True).resolved
    undone = FIXED_SOURCE + "\n\ndef add(a, b):\n    return a - b\n"
    near = grade(
        toy_task, toy_patch(toy_task, "src/calc/__init__.py", undone), runtime=runtime, share_verdicts=True
    )
    assert not near.resolved and near.outcome is Outcome.UNRESOLVED
    assert (verdicts_for(runtime).graded, verdicts_for(runtime).reused) == (2, 0)


def test_verdicts_same_id_other_task(toy_task):
    """Two tasks under one id over one runtime (a task file edited between runs, a forged id): the empty patch
    fails the toy's FAIL_TO_PASS but passes a task whose FAIL_TO_PASS is a test that already passes; neither
    verdict may stand in for the other."""
    runtime = _fresh(toy_task)
    lenient = toy_task.replace(FAIL_TO_PASS=toy_task.PASS_TO_PASS[:1], PASS_TO_PASS=toy_task.PASS_TO_PASS[1:])
    strict_alone, lenient_alone = grade(toy_task, "", runtime=runtime), grade(lenient, "", runtime=runtime)
    assert strict_alone.outcome != lenient_alone.outcome  # else this test proves nothing
    for task, alone in ((toy_task, strict_alone), (lenient, lenient_alone), (toy_task, strict_alone)):
        assert _summary(grade(task, "", runtime=runtime, share_verdicts=True)) == _summary(alone)
