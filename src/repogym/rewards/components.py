"""Reward components: small pure functions from an attempt's facts to a number (TRL style).

Every component is called with keyword arguments only and takes what it needs, ignoring the
rest through `**_`. The env and the rollout pass all of `RUNTIME_KWARGS`:

- grade: GradeResult | None: the sandbox's verdict (None when the attempt was not graded);
- task: Task: the task attempted (its `patch` is the oracle);
- patch: str: the candidate's final unified diff ('' for an empty submit);
- format_errors: int: malformed actions in the episode;
- response: str | None: the answer text in agentless mode (None in agent mode);
- code_context: dict[str, str] | None: original text of the relevant files;
- oracle_new_content: dict[str, str] | None: their text after the gold patch.

A component returns a float (by convention in [-1, 1]; the weight scales it) or None to abstain
when its facts are missing. Abstaining adds nothing to the total and shows as None in breakdowns.
Options (e.g. `partial`) come from the component's `kwargs` in the reward config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from repogym.grading.report import GradeResult, Outcome
from repogym.patches import changed_paths, parse_patch
from repogym.registry import Registry
from repogym.rewards.similarity import oracle_contents, similarity_from_diff, similarity_from_response
from repogym.task import Task
from repogym.testpaths import is_test_path

RUNTIME_KWARGS: tuple[str, ...] = (
    "grade",
    "task",
    "patch",
    "format_errors",
    "response",
    "code_context",
    "oracle_new_content",
)


class RewardFn(Protocol):
    """A reward component: keyword facts in, a float (or None to abstain) out."""

    def __call__(self, **kwargs: Any) -> float | None: ...


reward_fns: Registry[RewardFn] = Registry("reward function")


@reward_fns.register("tests_pass", "run_pytest")
def tests_pass(*, grade: GradeResult | None = None, partial: bool = False, **_: Any) -> float | None:
    """+1.0 when the attempt resolved the task, else 0.0; None when it was not graded.

    With `partial=True`, an unresolved attempt whose tests ran scores the fraction of
    FAIL_TO_PASS tests that pass, but only if every PASS_TO_PASS test passes (else 0.0).

    >>> from repogym.grading.report import GradeResult, Outcome, ResolvedStatus, TestStatus
    >>> P, F = TestStatus.PASSED, TestStatus.FAILED
    >>> half = GradeResult("t", Outcome.UNRESOLVED, ResolvedStatus.PARTIAL, {"a": P, "b": F}, {"c": P})
    >>> tests_pass(grade=half), tests_pass(grade=half, partial=True), tests_pass(grade=None)
    (0.0, 0.5, None)
    """
    if grade is None:
        return None
    if grade.resolved:
        return 1.0
    if not partial or grade.outcome is not Outcome.UNRESOLVED or not grade.fail_to_pass:
        return 0.0
    if not all(status is not None and status.ok for status in grade.pass_to_pass.values()):
        return 0.0
    passing = sum(1 for status in grade.fail_to_pass.values() if status is not None and status.ok)
    return passing / len(grade.fail_to_pass)


@reward_fns.register("compile_pass", "type_check")
def compile_pass(*, grade: GradeResult | None = None, **_: Any) -> float | None:
    """-1.0 when a changed Python file does not compile or the package does not import, else 0.0.

    None when the grade did not check (`compile_errors is None`). The seed's weight 0.5 makes it -0.5.

    >>> from repogym.grading.report import GradeResult, Outcome, ResolvedStatus
    >>> broken = GradeResult("t", Outcome.UNRESOLVED, ResolvedStatus.NO, compile_errors=("a.py:3: invalid syntax",))
    >>> compile_pass(grade=broken), compile_pass(grade=GradeResult("t", Outcome.RESOLVED, ResolvedStatus.FULL))
    (-1.0, None)
    """
    if grade is None or grade.compile_errors is None:
        return None
    return -1.0 if grade.compile_errors else 0.0


@reward_fns.register("minimal_diff", "diff_size_penalty")
def minimal_diff(
    *,
    patch: str | None = None,
    task: Task | None = None,
    size_factor: float = 2.0,
    size_slack: int = 10,
    **_: Any,
) -> float | None:
    """-1.0 for an unnecessary modification, else 0.0; None without a patch or a task.

    Only non-test files count (`repogym.testpaths.is_test_path`, the test patch's files and test support
    files included: test files are overwritten by the test patch when grading). With `oracle` the task's gold patch, the candidate is unnecessary when

    1. it touches a non-test file the oracle does not touch (both sides of a rename count), or
    2. its non-test changed lines (added + removed) exceed
       `max(size_factor * oracle_lines, oracle_lines + size_slack)` (defaults: 2x, +10).

    An empty patch is not penalised (the tests say it is wrong); a patch that does not parse is
    (-1.0: nothing is assumed fine).

    >>> from repogym.task import Task
    >>> gold = "--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
    >>> task = Task("t", "r", "c", gold)
    >>> minimal_diff(patch=gold, task=task), minimal_diff(patch=gold.replace("m.py", "n.py"), task=task)
    (0.0, -1.0)
    """
    if patch is None or task is None:
        return None
    if not patch.strip():
        return 0.0
    candidate, oracle = parse_patch(patch), parse_patch(task.patch)
    if candidate is None:
        return -1.0
    test_paths = frozenset(changed_paths(task.test_patch))
    oracle_paths = set(changed_paths(task.patch))
    if any(
        path not in oracle_paths
        for path in changed_paths(patch)
        if not is_test_path(path, test_paths, support_files=True)
    ):
        return -1.0
    oracle_lines = _changed_lines(oracle, test_paths) if oracle is not None else 0
    limit = max(size_factor * oracle_lines, oracle_lines + size_slack)
    return -1.0 if _changed_lines(candidate, test_paths) > limit else 0.0


def _changed_lines(parsed: Any, test_paths: frozenset[str]) -> int:
    return sum(
        f.added + f.removed for f in parsed if not is_test_path(f.path, test_paths, support_files=True)
    )


@reward_fns.register("format")
def format_penalty(*, format_errors: int | None = None, **_: Any) -> float | None:
    """-1.0 when the episode had a malformed action (or answer), else 0.0; None when not counted.

    >>> format_penalty(format_errors=2), format_penalty(format_errors=0), format_penalty()
    (-1.0, 0.0, None)
    """
    if format_errors is None:
        return None
    return -1.0 if format_errors > 0 else 0.0


@reward_fns.register("patch_similarity")
def patch_similarity(
    *,
    response: str | None = None,
    code_context: Mapping[str, str] | None = None,
    oracle_new_content: Mapping[str, str] | None = None,
    task: Task | None = None,
    **_: Any,
) -> float | None:
    """SWE-RL's reward for an agentless answer: -1.0 on a format error, else the mean per-file similarity.

    See `repogym.rewards.similarity`. When `oracle_new_content` is not given it is derived from
    the task's gold patch applied to `code_context` (PatchError if it does not apply: the
    context is wrong, which is a setup error, not an attempt's). None without a response or a
    code context.

    >>> answer = "<think>x</think><solution>```python\\n### a.py\\n<<<<<<< SEARCH\\nx = 1\\n=======\\nx = 2\\n>>>>>>> REPLACE\\n```</solution>"
    >>> patch_similarity(response=answer, code_context={"a.py": "x = 1\\n"}, oracle_new_content={"a.py": "x = 2\\n"})
    1.0
    >>> patch_similarity(response="x = 2", code_context={"a.py": "x = 1\\n"}, oracle_new_content={"a.py": "x = 2\\n"})
    -1.0
    """
    if response is None or code_context is None:
        return None
    if oracle_new_content is None:
        if task is None:
            return None
        oracle_new_content = oracle_contents(task.patch, code_context)
    return similarity_from_response(code_context, oracle_new_content, response).reward


@reward_fns.register("patch_similarity_diff")
def patch_similarity_diff(
    *,
    patch: str | None = None,
    task: Task | None = None,
    code_context: Mapping[str, str] | None = None,
    **_: Any,
) -> float | None:
    """SWE-RL's similarity for a candidate diff (agent mode), against the task's gold patch; in [0, 1].

    Files both diffs touch and whose original is in `code_context` are compared by content, as
    `patch_similarity` does; other files by their hunks as written (SWE-RL's unidiff variant);
    see `repogym.rewards.similarity.similarity_from_diff`. An empty patch scores 0.0. There is no
    format error here: malformed actions are the `format` component's business.

    >>> from repogym.task import Task
    >>> gold = "--- a/a.py\\n+++ b/a.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
    >>> patch_similarity_diff(patch=gold, task=Task("t", "r", "c", gold), code_context={"a.py": "x = 1\\n"})
    1.0
    >>> patch_similarity_diff(patch="", task=Task("t", "r", "c", gold))
    0.0
    """
    if patch is None or task is None:
        return None
    return similarity_from_diff(code_context, task.patch, patch).reward


@reward_fns.register("overlong")
def overlong_penalty(
    *, response: str | None = None, max_chars: int = 4000, buffer_chars: int = 1000, **_: Any
) -> float | None:
    """DAPO's soft overlong punishment, on an agentless answer's characters: 0 up to `max_chars -
    buffer_chars`, then falling linearly to -1.0 at `max_chars` (and -1.0 beyond); None in agent mode.

    DAPO counts tokens; components see text, so this counts characters (set `max_chars` from the
    completion budget times the tokenizer's characters per token).

    >>> [overlong_penalty(response="x" * n, max_chars=100, buffer_chars=50) for n in (10, 50, 75, 100, 400)]
    [0.0, 0.0, -0.5, -1.0, -1.0]
    >>> overlong_penalty(response=None) is None
    True
    """
    if response is None:
        return None
    start = max_chars - buffer_chars
    if len(response) <= start:
        return 0.0
    return -min(1.0, (len(response) - start) / max(buffer_chars, 1))
