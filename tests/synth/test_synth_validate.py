"""`synthesize` then `validate_candidates` on a real library, as a user of the two commands sees them."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.dataset import load_tasks
from repogym.grading.grade import grade
from repogym.patches import apply_patch, unified_diff
from repogym.sandbox.envbuild import install_layer_dir
from repogym.sandbox.repos import mirror
from repogym.sandbox.runtime import TaskRuntime
from repogym.sandbox.workspace import pristine_checkout
from repogym.synth.config import SynthConfig
from repogym.synth.methods import method_names
from repogym.synth.synth import synthesize
from repogym.task import Source
from repogym.validate import Verdict, partial_path, validate_candidates
from repogym.validate.statement import buggy_code, fix_fragments, reveals_fix

from ..support.git import git
from ..support.shapes import REPO_NAME

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synth-shapes")]


def test_every_method_finds_candidates_in_covered_code(shapes_synth):
    methods = {task.metadata["method"] for task in shapes_synth.tasks}
    assert methods == set(method_names())
    funnel = shapes_synth.funnel.to_dict()
    assert funnel["covered_functions"] == funnel["functions"]  # the suite covers every function
    assert sum(m["written"] for m in funnel["by_method"].values()) == len(shapes_synth.tasks)


def test_a_candidate_records_method_file_function_lines_and_difficulty(shapes_synth):
    task = next(t for t in shapes_synth.tasks if t.metadata["method"] == "op_change")
    meta = task.metadata
    assert task.source is Source.SYNTHETIC and task.test_patch == "" and task.repo == REPO_NAME
    assert meta["file"] == "src/shapes/geometry.py"
    assert meta["function"] in {
        "Rectangle.area",
        "Rectangle.perimeter",
        "Rectangle.scaled",
        "total_area",
        "parity",
    }
    start, end = meta["lines"]
    buggy = git(task.repo_source, "show", f"{task.base_commit}:{meta['file']}").splitlines()
    assert start == end  # a single-line bug
    removed = [
        line[1:] for line in task.patch.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    assert buggy[start - 1] == removed[0]  # the 1-based line of the buggy file the gold patch replaces
    assert meta["difficulty"] == {"lines_changed": 2, "fail_to_pass": None}
    assert meta["synth"]["tests"] and "tests/test_geometry.py" in meta["synth"]["test_files"]


def test_each_bug_is_a_commit_on_top_of_rev_and_its_base_commit_has_no_history(shapes_synth, shapes_repo):
    rev = git(shapes_repo, "rev-parse", "HEAD").strip()
    task = shapes_synth.tasks[0]
    store = task.repo_source
    assert Path(store) == shapes_synth.repo_path and Path(store).parent != Path(shapes_repo).parent
    bug_commit = task.metadata["synth"]["bug_commit"]
    assert git(store, "rev-parse", f"{bug_commit}^").strip() == rev
    assert git(store, "rev-list", "--count", task.base_commit).strip() == "1"
    assert git(store, "rev-parse", f"{task.base_commit}^{{tree}}") == git(
        store, "rev-parse", f"{bug_commit}^{{tree}}"
    )
    # The gold patch is the injected diff reversed: applied to the bug it gives REV's file back.
    file = task.metadata["file"]
    buggy, clean = git(store, "show", f"{bug_commit}:{file}"), git(store, "show", f"{rev}:{file}")
    assert buggy != clean
    assert apply_patch(task.patch, {file: buggy}) == {file: clean}


def test_synth_again_gives_the_same_candidates_and_commits(shapes_repo, shapes_synth, tmp_path):
    last: dict[str, tuple[int, int]] = {}
    again = synthesize(
        shapes_repo, SynthConfig(repo_name=REPO_NAME, per_function=6, seed=0), shapes_synth.repo_path.parent,
        progress=lambda stage, done, total: last.__setitem__(stage, (done, total)),
    )  # fmt: skip
    assert last and all(done == total for done, total in last.values()), last  # every bar ends full
    assert [t.instance_id for t in again.tasks] == [t.instance_id for t in shapes_synth.tasks]
    assert [t.base_commit for t in again.tasks] == [t.base_commit for t in shapes_synth.tasks]
    other = synthesize(
        shapes_repo, SynthConfig(repo_name=REPO_NAME, per_function=6, seed=1), tmp_path / "store"
    )
    assert [t.instance_id for t in other.tasks] != [t.instance_id for t in shapes_synth.tasks]


def test_validated_tasks_have_fail_to_pass_and_pass_to_pass(shapes_validated):
    written = list(load_tasks(shapes_validated.out))
    assert {t.metadata["method"] for t in written} == set(method_names())  # every method gives a real task
    for task in written:
        assert task.FAIL_TO_PASS and task.PASS_TO_PASS
        assert task.metadata["difficulty"]["fail_to_pass"] == len(task.FAIL_TO_PASS)
        assert not set(task.FAIL_TO_PASS) & set(task.PASS_TO_PASS)
    by_method = shapes_validated.run.funnel.to_dict()["by_method"]
    assert set(by_method) == {t.metadata["method"] for t in shapes_validated.candidates}
    assert sum(v["candidates"] for v in by_method.values()) == len(shapes_validated.candidates)


def test_the_clean_suite_runs_once_for_all_candidates_of_a_repo_state(shapes_validated):
    assert shapes_validated.run.clean_runs == 1
    runs = [o.validation.get("before_runs") for o in shapes_validated.run.outcomes.values() if o.validation]
    assert 1 in runs  # a candidate whose tests all passed with the bug stopped after one run


def test_candidates_borrow_the_clean_commit_s_install_layers(shapes_validated):
    # Each candidate used to run the editable install again at its own commit: a package build per bug.
    outcomes = [o for o in shapes_validated.run.outcomes.values() if o.validation]
    assert outcomes
    assert {o.validation["install_layers_from"] for o in outcomes} == {
        o.validation["clean_commit"] for o in outcomes
    }
    # No layer was made at a dropped candidate's commit (validated ones are graded by later tests, which
    # make theirs): the install step ran at the clean commit only.
    dropped = [o for o in outcomes if o.verdict is not Verdict.VALIDATED]
    assert dropped
    for outcome in dropped:
        candidate = next(c for c in shapes_validated.candidates if c.instance_id == outcome.instance_id)
        pristine = pristine_checkout(
            mirror(candidate.repo_source, (candidate.base_commit,)), candidate.base_commit
        )
        key = outcome.validation["env"]["env_key"]
        assert not install_layer_dir(key, pristine, overlay=True).exists()
        assert not install_layer_dir(key, pristine, overlay=False).exists()


def test_only_the_tests_coverage_chose_run(shapes_validated):
    for outcome in shapes_validated.run.outcomes.values():
        candidate = next(c for c in shapes_validated.candidates if c.instance_id == outcome.instance_id)
        chosen = set(candidate.metadata["synth"]["tests"])
        assert set(outcome.fail_to_pass) | set(outcome.pass_to_pass) <= chosen


def test_the_problem_statement_shows_the_failure_and_never_the_fix(shapes_validated):
    for task in load_tasks(shapes_validated.out):
        statement = task.problem_statement
        assert task.FAIL_TO_PASS[0] in statement
        assert task.metadata["statement"]["writer"] == "tests"
        assert not reveals_fix(statement, fix_fragments(task.patch, buggy_code(task)))
        assert "diff --git" not in statement and "+++" not in statement
    assert any(
        "assert" in t.problem_statement or "Error" in t.problem_statement
        for t in load_tasks(shapes_validated.out)
    )


def test_validate_again_resumes_without_running_anything(shapes_validated):
    again = validate_candidates(list(shapes_validated.candidates), shapes_validated.out)
    assert again.validated_now == 0 and again.funnel.resumed == len(shapes_validated.candidates)
    assert [t.instance_id for t in again.tasks] == [t.instance_id for t in load_tasks(shapes_validated.out)]
    assert partial_path(shapes_validated.out).exists()


def test_gold_resolves_and_empty_does_not(shapes_validated):
    """`repogym grade TASKS --instance ID --gold` / `--empty`, as a user runs them."""
    import json

    from typer.testing import CliRunner

    from repogym.cli import app

    for task in list(load_tasks(shapes_validated.out))[:2]:
        verdicts = {}
        for flag in ("--gold", "--empty"):
            args = ["grade", str(shapes_validated.out), "--instance", task.instance_id, flag, "--json"]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
            verdicts[flag] = json.loads(result.stdout)["resolved"]
        assert verdicts == {"--gold": True, "--empty": False}, task.instance_id


def test_a_patch_that_edits_the_failing_test_does_not_resolve_a_synthetic_task(shapes_validated):
    """A synthetic task has no test patch to restore the tests: the grader must still ignore a candidate's
    changes to the repository's own test files."""
    task = next(iter(load_tasks(shapes_validated.out)))
    path = task.FAIL_TO_PASS[0].split("::", 1)[0]
    original = git(task.repo_source, "show", f"{task.base_commit}:{path}")
    gutted = "\n".join(line.replace("assert ", "assert True or ") for line in original.splitlines()) + "\n"
    hack = unified_diff({path: original}, {path: gutted})
    result = grade(task, hack)
    assert not result.resolved
    assert any(path in ignored for ignored in result.ignored_paths)


def test_synthetic_base_hides_the_injected_diff(shapes_validated):
    """An agent in the episode must not find the fix in git: the base commit has no parent to diff
    against, and no log message names the bug."""
    task = next(iter(load_tasks(shapes_validated.out)))
    runtime = TaskRuntime.create(task).prepare()
    with runtime.episode() as episode:
        count = episode.run("git rev-list --count HEAD")
        log = episode.run("git log --all --format=%s")
        parent = episode.run("git diff HEAD~1")
    assert count.output.strip() == "1"
    assert log.output.strip() == "repogym task"
    assert not parent.ok and not reveals_fix(parent.output, fix_fragments(task.patch))


def test_a_candidate_whose_gold_patch_does_not_restore_the_clean_commit_is_dropped(shapes_synth, tmp_path):
    task = shapes_synth.tasks[0]
    broken = task.replace(
        instance_id="tampered",
        metadata={**task.metadata, "synth": {**task.metadata["synth"], "clean_commit": task.base_commit}},
    )
    run = validate_candidates([broken], tmp_path / "out.jsonl")
    outcome = run.outcomes["tampered"]
    assert outcome.verdict is Verdict.PATCH_FAILED and "clean_commit" in outcome.detail


def test_a_bug_that_breaks_a_test_module_import_fails_that_module_s_tests(shapes_synth, tmp_path):
    """pytest exits 4 when given ids of a module that no longer imports; the module's tests must still
    count as failing (and the other modules' as what they are), not make the run untrusted."""
    candidate = next(
        t
        for t in shapes_synth.tasks
        if t.metadata["function"] == "parse_size" and t.metadata["method"] == "remove_assign"
    )
    run = validate_candidates([candidate], tmp_path / "import.jsonl")
    outcome = run.outcomes[candidate.instance_id]
    assert outcome.verdict is Verdict.VALIDATED, outcome.detail
    # Chosen by coverage although it never calls parse_size itself: its module does, when imported.
    assert "tests/test_import_time.py::test_default_area" in candidate.metadata["synth"]["tests"]
    assert "tests/test_import_time.py::test_default_area" in outcome.fail_to_pass
    assert "tests/test_geometry.py::test_parse_size" in outcome.fail_to_pass
