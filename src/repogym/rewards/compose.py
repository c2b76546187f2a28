"""Weighted sums of reward components, built from the seed's `reward:` config.

`compose(config)` resolves every component's function when it is called (an unknown name fails
before any episode runs, listing the known ones) and returns a `ComposedReward`; calling that
with an attempt's facts (see `repogym.rewards.components.RUNTIME_KWARGS`) gives a
`RewardBreakdown`.

With the default config (the seed's: tests_pass 1.0, compile_pass 0.5, minimal_diff 0.1):

- resolved, compiling, within the oracle's files and size: 1.0 + 0 + 0 = 1.0;
- empty submit: tests 0.0, compile 0.0 (nothing to break), minimal_diff 0.0 = 0.0;
- a patch that breaks compilation: -0.5 plus the tests term (so -0.5 when unresolved), and
  -0.1 more if the patch is also unnecessary;
- a component that abstains (e.g. compile_pass when the grader did not check) adds 0 and shows
  as None;
- a grade of REPORT_FORGED (the attempt's code rewrote the test report) is worth
  `RewardConfig.forged_report_penalty` (-1.0), whatever the components say: they show as None in
  the breakdown, beside a `forged_report` term holding the penalty, and keep their own values in
  `raw`. Without it a forger kept every term but the tests' (0.9 through submit, 1.68 as an
  agentless answer at 385871c).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repogym.config import RewardConfig, validate_config
from repogym.errors import ConfigError, RepogymError, UnknownNameError
from repogym.grading.report import GradeResult, Outcome
from repogym.rewards.components import RUNTIME_KWARGS, RewardFn, reward_fns

#: The breakdown's term for the fixed penalty of a REPORT_FORGED grade (no component may take the name).
FORGED_REPORT = "forged_report"
#: The breakdown's term of `reward.verifier` (GRPO's learned verifier, repogym.train.rl_verifier): a component may
#: not take the name while a verifier is configured.
VERIFIER_TERM = "verifier"


class RewardError(RepogymError):
    """A reward component returned something other than a finite number or None."""


@dataclass(frozen=True)
class RewardBreakdown:
    """One attempt's reward: the total and each component's weighted and raw value (None: abstained)."""

    total: float
    components: dict[str, float | None] = field(default_factory=dict)
    """Name -> weight * value, in config order."""
    raw: dict[str, float | None] = field(default_factory=dict)
    """Name -> the component's own value, before weighting."""

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "components": dict(self.components), "raw": dict(self.raw)}


@dataclass(frozen=True)
class Component:
    """A resolved config entry: `weight * fn(**facts, **options)`."""

    name: str
    weight: float
    fn: RewardFn
    fn_name: str
    options: dict[str, Any] = field(default_factory=dict)


class ComposedReward:
    """A reward built from components; call it with keyword facts to get a `RewardBreakdown`.

    >>> reward = compose({"components": [{"name": "fmt", "weight": 0.5, "fn": "format"}]})
    >>> reward(format_errors=1, patch="")
    RewardBreakdown(total=-0.5, components={'fmt': -0.5}, raw={'fmt': -1.0})
    >>> from repogym.grading.report import GradeResult, Outcome, ResolvedStatus
    >>> reward(format_errors=0, grade=GradeResult("t", Outcome.REPORT_FORGED, ResolvedStatus.NO))
    RewardBreakdown(total=-1.0, components={'fmt': None, 'forged_report': -1.0}, raw={'fmt': 0.0, 'forged_report': -1.0})
    """

    def __init__(self, components: list[Component], forged_report_penalty: float = -1.0) -> None:
        self.components = tuple(components)
        self.forged_report_penalty = float(forged_report_penalty)
        """The whole reward of a REPORT_FORGED grade (`RewardConfig.forged_report_penalty`)."""

    @property
    def names(self) -> list[str]:
        return [component.name for component in self.components]

    @property
    def floor(self) -> float:
        """The lowest total this reward can give: every component at the end of its range [-1, 1] that its
        weight makes lowest (the components' documented convention), or the forged-report penalty when lower.

        A trainer that leaves some trajectories ungraded (SkyRL stops one past its length budget without
        telling the env) must not reward them above any graded attempt; this is the bound it shifts by.

        >>> compose({"components": [{"name": "t", "weight": 1.0, "fn": "tests_pass"},
        ...                         {"name": "c", "weight": -0.5, "fn": "compile_pass"}]}).floor
        -1.5
        """
        lowest = -sum(abs(component.weight) for component in self.components)
        return min(lowest, self.forged_report_penalty)

    def __call__(self, **facts: Any) -> RewardBreakdown:
        weighted: dict[str, float | None] = {}
        raw: dict[str, float | None] = {}
        for component in self.components:
            value = _checked(component, component.fn(**facts, **component.options))
            raw[component.name] = value
            weighted[component.name] = None if value is None else component.weight * value
        grade = facts.get("grade")
        if isinstance(grade, GradeResult) and grade.outcome is Outcome.REPORT_FORGED:
            # No term may pay a forger: the penalty replaces them all (their own values stay in `raw`).
            penalty = self.forged_report_penalty
            weighted = {**dict.fromkeys(weighted), FORGED_REPORT: penalty}
            raw[FORGED_REPORT] = penalty
            return RewardBreakdown(total=penalty, components=weighted, raw=raw)
        total = sum(value for value in weighted.values() if value is not None)
        return RewardBreakdown(total=float(total), components=weighted, raw=raw)

    def __repr__(self) -> str:
        terms = ", ".join(f"{c.name}={c.weight:g}*{c.fn_name}" for c in self.components)
        return f"ComposedReward({terms}; {FORGED_REPORT}={self.forged_report_penalty:g})"


def _checked(component: Component, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RewardError(
            f"reward component {component.name!r} (fn {component.fn_name!r}) returned {value!r}; "
            "a reward function must return a finite float or None"
        )
    return float(value)


def compose(config: RewardConfig | Mapping[str, Any]) -> ComposedReward:
    """Build the reward of a `RewardConfig` or of the seed's `reward:` mapping (validated the same way).

    A mapping may also be a whole run config, in which case its `reward` key is used.
    """
    if isinstance(config, Mapping):
        data = config["reward"] if "reward" in config and "components" not in config else config
        config = validate_config(data, RewardConfig, source="reward")
    components = []
    seen: set[str] = set()
    for index, entry in enumerate(config.components):
        where = f"reward.components.{index}"
        if entry.name in seen:
            raise ConfigError(f"{where}.name: {entry.name!r} is used twice; give each component its own name")
        if entry.name == FORGED_REPORT:
            raise ConfigError(
                f"{where}.name: {FORGED_REPORT!r} is the breakdown's term for a forged report's penalty "
                "(reward.forged_report_penalty); give the component another name"
            )
        if entry.name == VERIFIER_TERM and config.verifier is not None:
            raise ConfigError(
                f"{where}.name: {VERIFIER_TERM!r} is the breakdown's term of reward.verifier; give the component "
                "another name"
            )
        seen.add(entry.name)
        if not math.isfinite(entry.weight):
            raise ConfigError(f"{where}.weight: must be a finite number, got {entry.weight!r}")
        fn = _resolve(entry.fn, where)
        _check_options(fn, entry.fn, dict(entry.kwargs), where)
        components.append(Component(entry.name, entry.weight, fn, entry.fn, dict(entry.kwargs)))
    if not math.isfinite(config.forged_report_penalty):
        raise ConfigError(
            f"reward.forged_report_penalty: must be a finite number, got {config.forged_report_penalty!r}"
        )
    return ComposedReward(components, config.forged_report_penalty)


def _resolve(name: str, where: str) -> RewardFn:
    try:
        fn = reward_fns.get(name)
    except UnknownNameError as exc:
        raise ConfigError(f"{where}.fn: {exc}") from None
    if not callable(fn):
        raise ConfigError(f"{where}.fn: {name!r} is not callable (got {type(fn).__name__})")
    return fn


def _check_options(fn: RewardFn, fn_name: str, options: dict[str, Any], where: str) -> None:
    """Options must not shadow runtime facts, and must be parameters the function declares."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and some callables have no signature: nothing to check
        return
    named = {n for n, p in parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - set(
        RUNTIME_KWARGS
    )
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    for option in options:
        if option in RUNTIME_KWARGS:
            raise ConfigError(
                f"{where}.kwargs.{option}: {option!r} is passed by the env at run time; it cannot be an option"
            )
        if option not in named and not (takes_any and not named):
            known = ", ".join(sorted(named)) or "(none)"
            raise ConfigError(
                f"{where}.kwargs.{option}: {fn_name!r} has no option {option!r}; its options: {known}"
            )
