"""GRPO's reward from the sandbox: every configured reward component is one TRL reward function.

TRL calls its reward functions one after another, each with the whole batch (every group's
completions side by side). The first call of a batch grades all of its completions at once on a
thread pool sized to the machine (grading is sandbox processes, so threads suffice) and keeps each
one's `RewardBreakdown`; each component's function then returns its raw values from those
breakdowns, and TRL multiplies them by the components' weights (`GRPOConfig.reward_weights`) and
sums, so TRL's reward is exactly the breakdown's total and TRL logs `rewards/<name>/mean|std` for
every term. A component that abstains (None) is NaN to TRL, which leaves it out of the sum; a completion
every term abstains on (a format error under `grpo.format_errors: mask`) gets no advantage in TRL. With
`reward.verifier`, a `verifier` term follows the components (repogym.train.rl_verifier: p(YES) on the diffs of
tasks without FAIL_TO_PASS tests, scored after the batch is graded; it abstains on tasks with tests).

How one completion is scored is exactly how the env scores it anywhere else:
- agentless: `AgentlessEnv.step(answer)`: the SWE-RL answer is applied, its diff graded in a fresh
  sandbox episode (`repogym.grading.grade.grade`: apply, compile check, FAIL_TO_PASS and
  PASS_TO_PASS), the components composed; a malformed answer is not graded; copies of one candidate
  (a group samples the same answer often) share one grade (`share_verdicts`, grading/verdicts.py):
  the first copy grades, the others wait for its verdict;
- agent: `RepoEnv.step(submit)` on the rollout's own episode (see `repogym.train.rl_tools`).

Besides the terms, each batch logs `resolve_rate` and `format_error_rate` through TRL's log_metric.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repogym.rewards import ComposedReward, RewardBreakdown
from repogym.train.rl_tasks import TaskEnvs

if TYPE_CHECKING:  # rl_verifier builds on Scored
    from repogym.train.rl_verifier import VerifierTerm


@dataclass(frozen=True)
class Scored:
    """One completion's verdict: its reward breakdown and what the logs count."""

    breakdown: RewardBreakdown
    resolved: bool
    format_error: bool
    grade_s: float = 0.0
    """Seconds this completion's grading took (0.0 when it was not graded)."""
    submitted: bool = True
    """Agent mode: the policy called submit() (else its diff was graded when its budget ran out)."""
    started: float = 0.0
    finished: float = 0.0
    """time.monotonic() when this completion's scoring began and ended (shows the batch's overlap)."""
    grade: Any = None
    """The env's `GradeResult` the reward was composed from (None: not graded, e.g. a format error). Typed
    Any: train reads grades through the env, and does not import grading (docs/architecture.md)."""
    patch: str = ""
    """The diff that was graded ('' for a format error)."""


def scored_from_info(info: dict[str, Any], submitted: bool = True, started: float = 0.0) -> Scored:
    """The Scored of an env's last-step info (`grade`, `reward`, `format_errors`, `timings`)."""
    grade = info.get("grade")
    breakdown = info.get("reward")
    if breakdown is None:  # the env did not score (never happens with grading on): nothing is earned
        breakdown = RewardBreakdown(total=0.0)
    return Scored(
        breakdown=breakdown,
        resolved=bool(grade is not None and grade.resolved),
        format_error=bool(info.get("format_errors")),
        grade_s=float((info.get("timings") or {}).get("grade_s", 0.0)),
        submitted=submitted,
        started=started,
        finished=time.monotonic(),
        grade=grade,
        patch=str(info.get("patch") or ""),
    )


def completion_text(completion: Any) -> str:
    """The answer text of a TRL completion: a string, or the assistant messages' contents joined."""
    if isinstance(completion, str):
        return completion
    return "".join(str(m.get("content") or "") for m in completion if m.get("role") == "assistant")


BatchScorer = Callable[[Sequence[Any], dict[str, Any]], list[Scored]]


def agentless_scorer(envs: TaskEnvs, pool: ThreadPoolExecutor) -> BatchScorer:
    """Score a batch of SWE-RL answers: each on an idle AgentlessEnv of its task, all at once on `pool`."""

    def score_one(instance_id: str, answer: str) -> Scored:
        started = time.monotonic()
        with envs.borrowed(instance_id) as env:
            env.reset()
            _, _, _, _, info = env.step(answer)
        return scored_from_info(info, started=started)

    def score(completions: Sequence[Any], kwargs: dict[str, Any]) -> list[Scored]:
        answers = list(zip(kwargs["instance_id"], map(completion_text, completions), strict=True))
        futures = {at: pool.submit(score_one, *answers[at]) for at in firsts_first(answers)}
        return [futures[at].result() for at in range(len(answers))]

    return score


def firsts_first(answers: Sequence[Any]) -> list[int]:
    """Indices of `answers`, each first occurrence before every repeat: a repeat waits for its first copy's
    grade (grading/verdicts.py), so a pool that met it early would idle a worker that could grade another.

    >>> firsts_first(["a", "a", "b", "a", "c", "b"])
    [0, 2, 4, 1, 3, 5]
    """
    seen: set[Any] = set()
    firsts, repeats = [], []
    for at, answer in enumerate(answers):
        (repeats if answer in seen else firsts).append(at)
        seen.add(answer)
    return firsts + repeats


def agent_scorer() -> BatchScorer:
    """Score a batch of agent rollouts: start grading every rollout not yet graded, then wait for all."""

    def score(completions: Sequence[Any], kwargs: dict[str, Any]) -> list[Scored]:
        futures = [env._start_grading() for env in kwargs["environments"]]
        return [future.result() for future in futures]

    return score


class SandboxReward:
    """The reward functions of a run: one per component, sharing one grading of each batch."""

    def __init__(
        self,
        reward: ComposedReward,
        score_batch: BatchScorer,
        mask_format_errors: bool = False,
        verifier: VerifierTerm | None = None,
    ) -> None:
        self.reward = reward
        self.score_batch = score_batch
        self.mask_format_errors = mask_format_errors
        """`grpo.format_errors: mask`: every term abstains on a format error (TRL then gives it no advantage)."""
        self.verifier = verifier
        """`reward.verifier`: one more term after the components, scored once the batch is graded."""
        self._batch: Sequence[Any] | None = None
        self._scores: list[Scored] = []
        self.last_grade_wall_s = 0.0

    @property
    def weights(self) -> list[float]:
        """TRL's reward_weights: the components' weights, in the same order as `functions()`."""
        return [component.weight for component in self.reward.components] + (
            [self.verifier.weight] if self.verifier else []
        )

    def functions(self) -> list[Callable[..., list[float | None]]]:
        names = [component.name for component in self.reward.components]
        return [
            _ComponentReward(self, name) for name in names + ([self.verifier.name] if self.verifier else [])
        ]

    def scores(self, completions: Sequence[Any], kwargs: dict[str, Any]) -> list[Scored]:
        """Each completion's Scored; the batch is graded on the first call and reused by the other terms."""
        if completions is not self._batch:  # TRL passes the same list object to every reward function
            started = time.perf_counter()
            self._scores = self.score_batch(completions, kwargs)
            if self.verifier is not None:
                self._scores = self.verifier.add_to(self._scores, kwargs["instance_id"])
            self._batch = completions
            self.last_grade_wall_s = time.perf_counter() - started
            _log_batch(self._scores, kwargs.get("log_metric"))
        return self._scores


class _ComponentReward:
    """TRL reward function of one component: `f(prompts=, completions=, **kwargs) -> list[float | None]`."""

    def __init__(self, owner: SandboxReward, name: str) -> None:
        self.owner = owner
        self.__name__ = name  # TRL names the logged term after it: rewards/<name>/mean

    def __call__(self, prompts: Any = None, completions: Any = None, **kwargs: Any) -> list[float | None]:
        masked = self.owner.mask_format_errors
        return [
            None if masked and s.format_error else s.breakdown.raw.get(self.__name__)
            for s in self.owner.scores(completions, kwargs)
        ]


def _log_batch(scores: list[Scored], log_metric: Callable[[str, float], None] | None) -> None:
    if log_metric is None or not scores:
        return
    count = len(scores)
    log_metric("resolve_rate", sum(s.resolved for s in scores) / count)
    log_metric("format_error_rate", sum(s.format_error for s in scores) / count)
    log_metric("submit_rate", sum(s.submitted for s in scores) / count)
    graded = [s.grade_s for s in scores if s.grade_s > 0]
    if graded:
        log_metric("time/grade_each_s", sum(graded) / len(graded))
