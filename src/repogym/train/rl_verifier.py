"""GRPO's verifier term (`reward.verifier`): a learned verifier's p(YES) on a completion's final diff, for the
tasks that no test can prove, beside the tests for the tasks that have them.

The rule, which is about reward integrity more than about scores: a task with FAIL_TO_PASS tests is judged by its
tests, and the verifier is never asked about it (its term abstains, None). Were it asked, a policy could earn from
the verifier's approval what it lost on the tests, and the verifier's blind spots would become what RL optimises.
A task without such tests is graded as the env grades it (INFRA_ERROR, "nothing can prove a fix": tests_pass 0,
compile_pass abstains; diff-shape and format terms as usual) and the verifier term carries its signal:
`weight * p(YES)`; a completion with no diff or an unparsable answer gets 0.0 without asking (nothing to approve,
and nothing defaults to success), and so does a diff too long for the verifier to read whole (`diff_scorer`). A completion whose reward was never composed (its Ray task failed:
train/rl_ray.py) abstains on every term, and so on this one: a 0.0 would rank an infrastructure failure in its group.

Every test-free completion of a batch is scored in one call of the scorer (one forward pass unless
`reward.verifier.batch_size` cuts it), after the batch is graded. The scorer is handed in: `train` sits below
`verifier` (docs/architecture.md), so `repogym train rl` loads the verifier once and passes its scoring function.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from repogym.config import VerifierRewardConfig
from repogym.dataset import TaskSet
from repogym.errors import ConfigError
from repogym.rewards import VERIFIER_TERM, RewardBreakdown, RewardError
from repogym.task import Task
from repogym.train.rl_reward import Scored
from repogym.train.rl_tasks import has_proven_tests

VerifierScores = Callable[[Sequence[tuple[Task, str]]], list[float]]
"""p(YES) for each (task, final diff) pair, in order (`repogym.verifier.score.score_attempts` with its verifier)."""


@dataclass(frozen=True)
class VerifierTerm:
    """The `verifier` term of a run: its weight, the loaded verifier's scorer and the tasks trained on."""

    weight: float
    score: VerifierScores
    tasks: TaskSet
    name: str = VERIFIER_TERM

    def add_to(self, scored: Sequence[Scored], instance_ids: Sequence[str]) -> list[Scored]:
        """Each completion's Scored with the verifier term in its breakdown (raw p(YES), None for a tested task)."""
        tasks = [self.tasks.get(instance_id) for instance_id in instance_ids]
        judged = [
            not has_proven_tests(task) and _was_scored(done) for task, done in zip(tasks, scored, strict=True)
        ]
        asked = [
            at
            for at, done in enumerate(scored)
            if judged[at] and not done.format_error and done.patch.strip()
        ]
        values = self.score([(tasks[at], scored[at].patch) for at in asked]) if asked else []
        if len(values) != len(asked):
            raise RewardError(f"the verifier scored {len(values)} of {len(asked)} diffs")
        by_index = dict(zip(asked, map(self._checked, values), strict=True))
        raws = [by_index.get(at, 0.0) if judged[at] else None for at in range(len(tasks))]
        return [dataclasses.replace(done, breakdown=self._with_term(done.breakdown, raw)) for done, raw in
                zip(scored, raws, strict=True)]  # fmt: skip

    def _with_term(self, breakdown: RewardBreakdown, raw: float | None) -> RewardBreakdown:
        weighted = None if raw is None else self.weight * raw
        return RewardBreakdown(
            total=breakdown.total + (weighted or 0.0),
            components={**breakdown.components, self.name: weighted},
            raw={**breakdown.raw, self.name: raw},
        )

    def _checked(self, value: float) -> float:
        if not isinstance(value, int | float) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise RewardError(f"the verifier returned {value!r}; a p(YES) is a number in [0, 1]")
        return float(value)


def _was_scored(done: Scored) -> bool:
    """Whether the reward was composed for the completion: every composed breakdown names each component, even one
    that abstained; a failed Ray task's Scored (or one the env did not score) has no term at all."""
    return bool(done.breakdown.raw)


def check_verifier_given(settings: VerifierRewardConfig | None, score: VerifierScores | None) -> None:
    """A ConfigError when the config sets `reward.verifier` and the caller loaded no verifier for it (only
    `repogym train rl` loads one; the quickstart and the flywheel do not)."""
    if settings is not None and score is None:
        raise ConfigError(
            "reward.verifier: set, but this command loads no verifier; train with `repogym train rl CONFIG`, "
            "or remove reward.verifier"
        )


def verifier_term(
    settings: VerifierRewardConfig | None, score: VerifierScores | None, tasks: TaskSet
) -> VerifierTerm | None:
    """The run's verifier term (None without `reward.verifier`)."""
    check_verifier_given(settings, score)
    if settings is None or score is None:
        return None
    return VerifierTerm(settings.weight, score, tasks)
