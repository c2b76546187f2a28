"""Rewards: pure rule components (tests, compile, minimal diff, format, SWE-RL similarity) and their sum.

Grading says what happened (`repogym.grading.report.GradeResult`); this package turns that, the
candidate's patch or answer and the task into a float. `reward_fns` is the registry of
components (the seed's names `run_pytest`, `type_check`, `diff_size_penalty` are aliases;
any dotted path works too) and `compose(config)` builds the weighted sum.
"""

from __future__ import annotations

from repogym.rewards.components import (
    RUNTIME_KWARGS,
    RewardFn,
    compile_pass,
    format_penalty,
    minimal_diff,
    patch_similarity,
    patch_similarity_diff,
    reward_fns,
    tests_pass,
)
from repogym.rewards.compose import VERIFIER_TERM, ComposedReward, RewardBreakdown, RewardError, compose
from repogym.rewards.similarity import SimilarityResult, similarity_from_diff, similarity_from_response
from repogym.testpaths import is_test_path  # the rule minimal_diff applies, kept here for its users

__all__ = [
    "RUNTIME_KWARGS",
    "VERIFIER_TERM",
    "ComposedReward",
    "RewardBreakdown",
    "RewardError",
    "RewardFn",
    "SimilarityResult",
    "compile_pass",
    "compose",
    "format_penalty",
    "is_test_path",
    "minimal_diff",
    "patch_similarity",
    "patch_similarity_diff",
    "reward_fns",
    "similarity_from_diff",
    "similarity_from_response",
    "tests_pass",
]
