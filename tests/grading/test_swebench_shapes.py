"""Grading repositories shaped like SWE-bench's Django, scikit-learn and matplotlib, with the env rules
repogym ships for them (src/repogym/data/swebench.toml), in the real bwrap sandbox.

No copy of those repositories is on the test machine, so tests/support/swebench_shapes.py builds small ones of
their shape: Django's executable tests/runtests.py run with the rule's test_cmd and read by repogym's django
parser from its verbose log (SWE-bench's `test_x (module.Class)` ids); and a package whose code is a C
extension built by the rule's install step, whose gold patch changes only the C source, so it resolves only if
the grader re-runs the install after the patch (as SWE-bench's eval script does).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from repogym.grading.grade import grade
from repogym.grading.report import Outcome, ResolvedStatus, TestStatus
from repogym.grading.swebench_reading import load_reader
from repogym.patches import changed_paths
from repogym.sandbox.runtime import TaskRuntime, touches_packaging
from repogym.task import Task

from ..support.swebench_shapes import (
    DJANGO_PYTHONS,
    django_ids,
    make_django_task,
    make_extension_task,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=sorted(DJANGO_PYTHONS))
def django_task(request, toy_task, tmp_path_factory) -> Task:
    """The Django shape graded with the rule of each version of DJANGO_PYTHONS (toy_task first: it points
    REPOGYM_CACHE at the run's shared cache, so each environment is built once)."""
    return make_django_task(tmp_path_factory.mktemp("django-shape"), request.param)


@pytest.fixture(scope="module")
def django_runtime(django_task) -> TaskRuntime:
    return TaskRuntime.create(django_task, "bwrap").prepare()


def test_django_shape_runs_the_rules_runner(django_task):
    """The task is graded as the shipped rule says: Django's runner, its log parser, the rule's Python (whose
    unittest prints the form of SWE-bench's ids for that version) and the rule's install steps."""
    env = django_task.env
    assert env.test_cmd == "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
    assert env.log_parser == "django"
    assert env.python == DJANGO_PYTHONS[django_task.version]
    assert env.install == (
        "python -m pip install -r tests/requirements/py3.txt",
        "python -m pip install -e .",
    )


def test_django_shape_gold_resolves_with_swebench_ids(django_task, django_runtime, tmp_path):
    """repogym's django parser (no swebench package needed) reads the runner's log by SWE-bench's ids, the
    docstring-named test's included."""
    fail_to_pass, pass_to_pass, skipped = django_ids(django_task.version)
    result = grade(django_task, django_task.patch, runtime=django_runtime, log_dir=tmp_path)
    assert result.outcome is Outcome.RESOLVED, result.detail
    assert result.status is ResolvedStatus.FULL
    assert result.fail_to_pass == {fail_to_pass[0]: TestStatus.PASSED}
    assert result.pass_to_pass == {test_id: TestStatus.PASSED for test_id in pass_to_pass}
    log = Path(result.report.log_path).read_text()
    # The rule's runner ran the test patch's module as a dotted label, and printed unittest's verbose lines.
    assert f"{fail_to_pass[0]} ... ok" in log, log
    assert f"{skipped} ... skipped 'needs a PostgreSQL database'" in log, log
    assert result.report.statuses()[skipped] is TestStatus.SKIPPED


def test_django_shape_empty_patch_does_not_resolve(django_task, django_runtime, tmp_path):
    fail_to_pass, pass_to_pass, _ = django_ids(django_task.version)
    result = grade(django_task, "", runtime=django_runtime, log_dir=tmp_path)
    assert result.outcome is Outcome.UNRESOLVED and result.status is ResolvedStatus.NO, result.detail
    assert result.fail_to_pass == {fail_to_pass[0]: TestStatus.FAILED}
    assert result.pass_to_pass == {test_id: TestStatus.PASSED for test_id in pass_to_pass}
    log = Path(result.report.log_path).read_text()
    assert f"{fail_to_pass[0]} ... FAIL" in log, log
    assert "FAILED (failures=1, skipped=1)" in log, log


def test_django_shape_a_patch_that_raises_is_an_error(django_task, django_runtime, tmp_path):
    """A fix that raises in the function under test: unittest prints `... ERROR`, read as ERROR, and the
    PASS_TO_PASS test that calls it breaks too."""
    fail_to_pass, pass_to_pass, _ = django_ids(django_task.version)
    broken = django_task.patch.replace(
        "+    return x[0].upper() + x[1:]", "+    return x[0].upper() + x[1:] + 1"
    )
    assert broken != django_task.patch
    result = grade(django_task, broken, runtime=django_runtime, log_dir=tmp_path)
    assert result.outcome is Outcome.UNRESOLVED, result.detail
    assert result.fail_to_pass == {fail_to_pass[0]: TestStatus.ERROR}
    assert result.pass_to_pass[pass_to_pass[0]] is TestStatus.ERROR


def test_django_shape_swebench_reads_the_log_alike(django_task, django_runtime, tmp_path):
    """SWE-bench's own Django parser and resolution rule read the same logs to the same verdicts."""
    fail_to_pass, pass_to_pass, _ = django_ids(django_task.version)
    for patch, resolved in ((django_task.patch, True), ("", False)):
        result = grade(django_task, patch, runtime=django_runtime, log_dir=tmp_path)
        theirs, their_resolved = swebench_reading(django_task, Path(result.report.log_path).read_text())
        assert their_resolved is resolved is result.resolved
        ours = result.report.statuses()
        for test_id in (*fail_to_pass, *pass_to_pass):
            assert theirs[test_id] == ours[test_id].value, test_id


#: SWE-bench's reading of a log, run by an interpreter that has the swebench package (stdin: the task's repo,
#: test lists and log as JSON; stdout: the statuses and SWE-bench's FULL, as JSON).
SWEBENCH_READING = """
import inspect, json, sys
from swebench.harness import constants, grading
try:
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER as parsers
except ImportError:
    from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY as parsers
task = json.load(sys.stdin)
parser = parsers[task["repo"]]
log = task["log"]
statuses = dict(parser(log, None) if len(inspect.signature(parser).parameters) > 1 else parser(log))
lists = {constants.FAIL_TO_PASS: task["FAIL_TO_PASS"], constants.PASS_TO_PASS: task["PASS_TO_PASS"]}
full = grading.get_resolution_status(grading.get_eval_tests_report(statuses, lists))
print(json.dumps({"statuses": statuses, "resolved": full == constants.ResolvedStatus.FULL.value}))
"""


def swebench_reading(task: Task, log: str) -> tuple[dict[str, str], bool]:
    """(statuses, resolved) as SWE-bench reads `log`: with the swebench package of this venv, else with the
    interpreter $SWEBENCH_PYTHON names (the repo venv has none: `repogym[swebench]` is an optional extra);
    skipped, saying why, where neither has it."""
    reader, why = load_reader()
    if reader is not None:
        return reader.statuses(task, log) or {}, bool(reader.resolved(task, log))
    python = os.environ.get("SWEBENCH_PYTHON", "")
    if not python:
        pytest.skip(f"{why}; or set SWEBENCH_PYTHON to an interpreter that has it")
    request = {"repo": task.repo, "FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS}
    done = subprocess.run(
        [python, "-c", SWEBENCH_READING],
        input=json.dumps({**request, "log": log}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"SWE-bench's reading with {python} failed: {done.stderr[-2000:]}"
    reading = json.loads(done.stdout.strip().splitlines()[-1])
    return reading["statuses"], reading["resolved"]


# -- a compiled extension, graded with scikit-learn's and matplotlib's rules ----------------------------------


#: The rules graded: matplotlib's as shipped (its packages aside); scikit-learn's with the fix for the bug that
#: test_extension_scikit_learn_rule_builds_as_shipped names: the pip of the rule's date, as a package.
EXTENSION_CASES = {"matplotlib": (), "scikit-learn": ("pip",)}


@pytest.fixture(scope="module", params=sorted(EXTENSION_CASES))
def extension(request, toy_task, tmp_path_factory) -> tuple[Task, TaskRuntime]:
    flavour = request.param
    task = make_extension_task(tmp_path_factory.mktemp("extension"), flavour, EXTENSION_CASES[flavour])
    return task, TaskRuntime.create(task, "bwrap").prepare()


def test_extension_gold_resolves_only_by_rebuilding_the_extension(extension, tmp_path):
    """The gold patch changes only fastops/_core.c; Python imports the shared object the base install built,
    so the fix reaches the tests only if the grader re-ran the install step after the patch."""
    task, runtime = extension
    assert changed_paths(task.patch) == ["fastops/_core.c"] and touches_packaging(["fastops/_core.c"])
    result = grade(task, task.patch, runtime=runtime, log_dir=tmp_path)
    assert result.outcome is Outcome.RESOLVED, (result.detail, result.report and result.report.note)
    assert set(result.fail_to_pass.values()) == {TestStatus.PASSED}
    assert result.pass_to_pass == {task.PASS_TO_PASS[0]: TestStatus.PASSED}


def test_extension_empty_patch_does_not_resolve(extension, tmp_path):
    task, runtime = extension
    result = grade(task, "", runtime=runtime, log_dir=tmp_path)
    assert result.outcome is Outcome.UNRESOLVED and result.status is ResolvedStatus.NO, result.detail
    assert set(result.fail_to_pass.values()) == {TestStatus.FAILED}
    assert result.pass_to_pass == {task.PASS_TO_PASS[0]: TestStatus.PASSED}


def test_extension_swebench_reads_the_log_alike(extension, tmp_path):
    """SWE-bench's parser for the repository (pytest-v2 for scikit-learn, matplotlib's) reads the printed
    log of each grade to the verdict repogym's structured report gave."""
    task, runtime = extension
    for patch, resolved in ((task.patch, True), ("", False)):
        result = grade(task, patch, runtime=runtime, log_dir=tmp_path)
        theirs, their_resolved = swebench_reading(task, Path(result.report.log_path).read_text())
        assert their_resolved is resolved is result.resolved
        ours = result.report.statuses()
        for test_id in (*task.FAIL_TO_PASS, *task.PASS_TO_PASS):
            assert theirs[test_id] == ours[test_id].value, test_id


def test_extension_rebuild_lasts_one_episode(extension, tmp_path):
    """The re-install writes the rebuilt extension into the episode's own layer: after a graded gold patch, the
    next grade of the empty patch sees the base build again (its mul is still wrong)."""
    task, runtime = extension
    assert grade(task, task.patch, runtime=runtime, log_dir=tmp_path).resolved
    again = grade(task, "", runtime=runtime, log_dir=tmp_path)
    assert set(again.fail_to_pass.values()) == {TestStatus.FAILED}, again.detail


def test_extension_scikit_learn_rule_builds_as_shipped(toy_task, tmp_path):
    """The scikit-learn 1.3-1.6 rule as repogym ships it (its heavy packages left out, the pip it names kept)
    builds the environment and grades the gold patch resolved. Was a bug: its `pip install --no-use-pep517` met
    today's pip (the option went in 25.3) and every build failed; the rule now names pip, as of its date."""
    task = make_extension_task(tmp_path, "scikit-learn")
    assert "--no-use-pep517" in task.env.install[0]
    result = grade(task, task.patch, runtime=TaskRuntime.create(task, "bwrap").prepare(), log_dir=tmp_path)
    assert result.outcome is Outcome.RESOLVED, result.detail


def test_extension_scikit_learn_022_rule_builds_as_shipped(toy_task, tmp_path):
    """The scikit-learn 0.20-0.22 rule (Python 3.6) as repogym ships it, its heavy packages left out (pytest
    and setuptools stand for them, so the build still installs packages), grades the gold patch resolved. Was a
    bug: uv's bytecode compiling needs Python 3.7, and ensurepip's pip 18.1 lacks --no-use-pep517."""
    task = make_extension_task(tmp_path, "scikit-learn-0.22")
    assert task.env.python == "3.6" and task.env.packages
    result = grade(task, task.patch, runtime=TaskRuntime.create(task, "bwrap").prepare(), log_dir=tmp_path)
    assert result.outcome is Outcome.RESOLVED, result.detail
