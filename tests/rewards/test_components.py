"""Each reward component's rules, with real GradeResult and Task records."""

from __future__ import annotations

import inspect

import pytest

from repogym.grading.report import GradeResult, Outcome, ResolvedStatus, TestStatus
from repogym.patches import unified_diff
from repogym.rewards import (
    RUNTIME_KWARGS,
    compile_pass,
    format_penalty,
    is_test_path,
    minimal_diff,
    patch_similarity,
    reward_fns,
    tests_pass,
)
from repogym.task import Task

P, F, E = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR


def grade(outcome=Outcome.UNRESOLVED, f2p=None, p2p=None, compile_errors=None) -> GradeResult:
    status = ResolvedStatus.FULL if outcome is Outcome.RESOLVED else ResolvedStatus.NO
    return GradeResult("t", outcome, status, f2p or {}, p2p or {}, compile_errors=compile_errors)


# -- tests_pass ---------------------------------------------------------------------------------


def test_tests_pass_is_one_only_when_resolved():
    assert tests_pass(grade=grade(Outcome.RESOLVED, {"a": P}, {"b": P})) == 1.0
    assert tests_pass(grade=grade(Outcome.UNRESOLVED, {"a": F}, {"b": P})) == 0.0
    assert tests_pass(grade=grade(Outcome.TIMEOUT)) == 0.0
    assert tests_pass(grade=None) is None


@pytest.mark.parametrize(
    ("graded", "expected"),
    [
        (grade(Outcome.UNRESOLVED, {"a": P, "b": F, "c": TestStatus.XFAIL, "d": None}, {"p": P}), 0.5),
        (grade(Outcome.UNRESOLVED, {"a": P, "b": F}, {"p": F}), 0.0),  # a broken PASS_TO_PASS gates it
        (grade(Outcome.UNRESOLVED, {"a": P, "b": F}, {"p": None}), 0.0),  # so does one that never ran
        (grade(Outcome.PATCH_APPLY_FAILED, {"a": P}, {}), 0.0),  # tests did not run on the patch
        (grade(Outcome.UNRESOLVED, {}, {}), 0.0),  # nothing to pass is not success
        (grade(Outcome.RESOLVED, {"a": P}, {"p": P}), 1.0),
    ],
    ids=["half", "p2p_failed", "p2p_missing", "apply_failed", "no_f2p", "resolved"],
)
def test_tests_pass_partial_credit(graded, expected):
    assert tests_pass(grade=graded, partial=True) == expected


# -- compile_pass and format ----------------------------------------------------------------------


def test_compile_pass_penalises_only_reported_errors():
    assert compile_pass(grade=grade(compile_errors=("pkg/m.py:3: invalid syntax",))) == -1.0
    assert compile_pass(grade=grade(compile_errors=())) == 0.0
    assert compile_pass(grade=grade(compile_errors=None)) is None
    assert compile_pass(grade=None) is None


def test_format_penalty():
    assert [format_penalty(format_errors=n) for n in (0, 1, 7)] == [0.0, -1.0, -1.0]
    assert format_penalty() is None


# -- minimal_diff ---------------------------------------------------------------------------------


def diff_of(path: str, added: int, removed: int = 0, start: int = 0) -> str:
    old = {path: "".join(f"old{i} = {i}\n" for i in range(start, start + removed)) + "tail = 0\n"}
    new = {path: "".join(f"new{i} = {i}\n" for i in range(start, start + added)) + "tail = 0\n"}
    return unified_diff(old, new)


GOLD = diff_of("pkg/core.py", added=1, removed=1)  # 2 changed lines
TASK = Task("t", "r", "c", patch=GOLD, test_patch=diff_of("pkg/checks.py", added=3))


def test_minimal_diff_accepts_the_oracle_and_an_empty_patch():
    assert minimal_diff(patch=GOLD, task=TASK) == 0.0
    assert minimal_diff(patch="", task=TASK) == 0.0
    assert minimal_diff(patch=GOLD, task=None) is None


def test_minimal_diff_rule_1_a_non_test_file_the_oracle_leaves_alone():
    assert minimal_diff(patch=GOLD + diff_of("pkg/other.py", added=1), task=TASK) == -1.0
    assert minimal_diff(patch=GOLD + diff_of("reproduce.py", added=1), task=TASK) == -1.0
    renamed = "diff --git a/pkg/core.py b/pkg/core2.py\nsimilarity index 100%\nrename from pkg/core.py\nrename to pkg/core2.py\n"
    assert minimal_diff(patch=renamed, task=TASK) == -1.0


def test_minimal_diff_test_files_do_not_count():
    tests_too = GOLD + diff_of("tests/test_core.py", added=200) + diff_of("pkg/checks.py", added=50)
    assert minimal_diff(patch=tests_too, task=TASK) == 0.0


@pytest.mark.parametrize(
    ("oracle_lines", "candidate_lines", "expected"),
    [
        (2, 12, 0.0),  # limit max(2*2, 2+10) = 12
        (2, 13, -1.0),
        (20, 40, 0.0),  # limit max(2*20, 20+10) = 40
        (20, 41, -1.0),
    ],
)
def test_minimal_diff_rule_2_size(oracle_lines, candidate_lines, expected):
    task = Task("t", "r", "c", patch=diff_of("m.py", added=oracle_lines))
    assert minimal_diff(patch=diff_of("m.py", added=candidate_lines), task=task) == expected


def test_minimal_diff_size_options_and_garbage():
    task = Task("t", "r", "c", patch=diff_of("m.py", added=2))
    assert minimal_diff(patch=diff_of("m.py", added=5), task=task, size_factor=1.0, size_slack=0) == -1.0
    assert minimal_diff(patch="--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n-x\n", task=task) == -1.0


def test_is_test_path_follows_the_task_test_patch():
    assert is_test_path("pkg/checks.py", frozenset({"pkg/checks.py"}))
    assert not is_test_path("pkg/checks.py")
    assert not is_test_path("pkg/latest.py")  # 'test' inside a word is not a test


# -- patch_similarity abstains without its facts ----------------------------------------------------


def test_patch_similarity_abstains_in_agent_mode():
    assert patch_similarity(response=None, code_context={"a.py": ""}, oracle_new_content={}) is None
    assert patch_similarity(response="<think>", code_context=None) is None
    assert patch_similarity(response="<think>", code_context={}, oracle_new_content=None, task=None) is None


# -- the registry -----------------------------------------------------------------------------------


def test_seed_names_are_aliases_of_the_components():
    assert reward_fns.get("run_pytest") is tests_pass
    assert reward_fns.get("type_check") is compile_pass
    assert reward_fns.get("diff_size_penalty") is minimal_diff
    assert reward_fns.get("repogym.rewards.components:minimal_diff") is minimal_diff
    assert set(reward_fns.names()) == {
        "tests_pass",
        "compile_pass",
        "minimal_diff",
        "format",
        "patch_similarity",
        "patch_similarity_diff",
        "overlong",
    }


@pytest.mark.parametrize("name", sorted(reward_fns.names()))
def test_components_are_keyword_only_documented_and_ignore_other_facts(name):
    fn = reward_fns.get(name)
    params = inspect.signature(fn).parameters.values()
    assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params)
    assert ">>>" in (fn.__doc__ or "")
    facts = dict.fromkeys(RUNTIME_KWARGS)
    facts.update(patch="", format_errors=0, unknown_fact=object())
    value = fn(**facts)
    assert value is None or isinstance(value, float)
