"""Routing between a small and a large policy (`repogym eval TASKS --route small=P1,large=P2 --by B --threshold T`):
per task a predicted risk that the small policy fails; the small policy keeps the tasks whose risk is below T and
the large one gets the rest.

Risk, by predictor (`--by`):

- `difficulty`: the task's difficulty score from the task alone (`repogym.evaluate.difficulty`).
- `verifier:V`: 1 - p(YES) of verifier V on the small policy's attempt; an attempt without a diff is risk 1
  (it cannot resolve, and there is nothing to judge).

The rule (`keeps_small`): the small policy keeps a task when its risk is below T, and T = 1 keeps every task.
So T = 0 is the large policy alone and T = 1 the small one alone; between them, raising T sends fewer tasks on.

The curve: both policies run once on every task (the eval folders DIR/small and DIR/large), and routing is
applied offline to those stored attempts at each threshold of `curve_thresholds` (0, 0.05, ..., 1 and T), so the
curve runs and grades nothing more than the two evals. What a routed run at threshold T spends:

- by difficulty: the small policy's attempts on the tasks it keeps, the large policy's on the rest;
- by verifier (a cascade: the small policy tries, the verifier judges, the large policy retries what it
  distrusts): the small policy's attempt on every task, the verifier's scoring time and the large policy's
  attempts on the distrusted. At T = 0 no small attempt would be used, so none is counted (the large policy
  alone); at T = 1 none is sent on, so none is judged (the small policy alone).

Tokens are prompt + completion tokens. Seconds are each attempt's wall time less the final grade's (a
deployed router pays for an attempt, not for grading it against hidden tests), plus the verifier's time.
Cost prices the tokens with each policy's `PolicyConfig.price`, and is null where a policy that ran is not
priced. The verifier's own tokens are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repogym.agent.policies import PolicyConfig, TokenPrice
from repogym.agent.trajectory import Trajectory
from repogym.errors import ConfigError
from repogym.evaluate.bestofn import VerifierScores

#: The route's two policies, cheaper first: each its own eval folder under DIR.
ROUTE_KEYS = ("small", "large")
#: Predictor -> whether it names a verifier folder.
PREDICTORS = {"difficulty": False, "verifier": True}
#: The curve's thresholds are multiples of this (and the run's own T).
CURVE_STEP = 0.05
ROUTE_EXAMPLE = "--route small=hf:ckpt/sft,large=openai:qwen2.5-coder-32b"


@dataclass(frozen=True)
class Route:
    """Which two policies, what predicts the small one's failure, and where the cut is."""

    small: PolicyConfig
    large: PolicyConfig
    by: str = "difficulty"
    """'difficulty' or 'verifier'."""
    threshold: float = 0.5
    """The small policy keeps tasks whose risk is below this (see `keeps_small`)."""
    verifier: str = ""
    """The verifier folder (by verifier only)."""
    verifier_scores: VerifierScores | None = None
    """p(YES) of (task, diff) pairs: the loaded verifier's scoring, which the CLI hands in."""

    @property
    def spec(self) -> str:
        return f"small={self.small.spec},large={self.large.spec}"

    @property
    def predictor(self) -> str:
        return f"verifier:{self.verifier}" if self.verifier else self.by

    def policy(self, key: str) -> PolicyConfig:
        return self.small if key == "small" else self.large


def parse_route(spec: str) -> dict[str, str]:
    """`--route small=P1,large=P2` as {key: policy spec}.

    >>> parse_route("small=scripted:gold, large=openai:big")
    {'small': 'scripted:gold', 'large': 'openai:big'}
    """
    policies: dict[str, str] = {}
    for part in spec.split(","):
        key, equals, policy = (text.strip() for text in part.partition("="))
        if key not in ROUTE_KEYS:
            raise ConfigError(
                f"--route {spec!r}: unknown policy key {key!r}; use small=P1,large=P2, e.g. {ROUTE_EXAMPLE}"
            )
        if not equals or not policy or key in policies:
            raise ConfigError(
                f"--route {spec!r}: give each of small and large one policy, e.g. {ROUTE_EXAMPLE}"
            )
        policies[key] = policy
    missing = [key for key in ROUTE_KEYS if key not in policies]
    if missing:
        raise ConfigError(
            f"--route {spec!r}: no {missing[0]} policy; use small=P1,large=P2, e.g. {ROUTE_EXAMPLE}"
        )
    return {key: policies[key] for key in ROUTE_KEYS}


def parse_predictor(by: str, verifier: str) -> tuple[str, str]:
    """`--by` (and `--verifier V`) as (predictor, verifier folder); `--by verifier:V` is `--by verifier --verifier V`.

    >>> parse_predictor("verifier:runs/v", ""), parse_predictor("difficulty", "")
    (('verifier', 'runs/v'), ('difficulty', ''))
    """
    kind, colon, folder = by.partition(":")
    if kind not in PREDICTORS:
        raise ConfigError(
            f"--by {by!r}: unknown predictor; use difficulty or verifier:V (V: a verifier folder)"
        )
    if colon and not PREDICTORS[kind]:
        raise ConfigError(f"--by {by!r}: difficulty takes no argument; use --by difficulty")
    if folder and verifier and folder != verifier:
        raise ConfigError(f"--verifier {verifier}: --by {by} names another verifier; give it once")
    folder = folder or verifier
    if PREDICTORS[kind] and not folder:
        raise ConfigError(
            "--by verifier: name the verifier folder, e.g. --by verifier:runs/verifier (or --verifier runs/verifier)"
        )
    if folder and not PREDICTORS[kind]:
        raise ConfigError(
            f"--verifier {folder}: only --by verifier reads a verifier; drop it or use --by verifier"
        )
    return kind, folder


def check_threshold(threshold: float) -> float:
    if not 0.0 <= threshold <= 1.0:  # also refuses NaN
        raise ConfigError(
            f"--threshold {threshold}: must be within [0, 1] (0: every task to the large policy, 1: every task "
            "kept by the small one)"
        )
    return threshold


def parse_price(text: str) -> tuple[str, TokenPrice]:
    """`--price KEY=IN/OUT`: a route policy's price per 1M input (prompt) and output (completion) tokens.

    >>> parse_price("large=2.5/10")
    ('large', TokenPrice(input_per_1m=2.5, output_per_1m=10.0))
    """
    key, _, prices = (part.strip() for part in text.partition("="))
    if key not in ROUTE_KEYS:
        raise ConfigError(f"--price {text!r}: unknown policy key {key!r}; use small=IN/OUT or large=IN/OUT")
    try:
        input_price, output_price = (float(value) for value in prices.split("/"))
    except ValueError:
        raise ConfigError(
            f"--price {text!r}: write KEY=IN/OUT, the prices per 1M input and output tokens, e.g. --price large=2.5/10"
        ) from None
    if not all(math.isfinite(value) and value >= 0 for value in (input_price, output_price)):
        raise ConfigError(f"--price {text!r}: prices must be numbers >= 0")
    return key, TokenPrice(input_price, output_price)


def parse_endpoint(text: str) -> tuple[str, str]:
    """`--endpoint KEY=URL`: one route policy's OpenAI-compatible endpoint, in place of --base-url for it.

    >>> parse_endpoint("large=https://api.example.com/v1")
    ('large', 'https://api.example.com/v1')
    """
    key, _, url = (part.strip() for part in text.partition("="))
    if key not in ROUTE_KEYS:
        raise ConfigError(f"--endpoint {text!r}: unknown policy key {key!r}; use small=URL or large=URL")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"--endpoint {text!r}: write KEY=URL with an http(s) URL, e.g. --endpoint large=http://127.0.0.1:8000/v1"
        )
    return key, url


def keeps_small(risk: float, threshold: float) -> bool:
    """Whether the small policy keeps a task: its risk is below the threshold, and threshold 1 keeps all.

    >>> keeps_small(0.3, 0.5), keeps_small(0.5, 0.5), keeps_small(0.0, 0.0), keeps_small(1.0, 1.0)
    (True, False, False, True)
    """
    return threshold >= 1.0 or risk < threshold


def curve_thresholds(threshold: float) -> list[float]:
    """0, CURVE_STEP, ..., 1 and the run's own threshold, in order.

    >>> curve_thresholds(0.33)[:8]
    [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.33]
    """
    steps = round(1 / CURVE_STEP)
    return sorted({round(i * CURVE_STEP, 6) for i in range(steps + 1)} | {threshold})


@dataclass(frozen=True)
class PolicyAttempt:
    """One policy's attempt at one task, as routing counts it."""

    resolved: bool
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    """Wall time less the final grade's."""

    @classmethod
    def of(cls, trajectory: Trajectory) -> PolicyAttempt:
        timings = trajectory.timings
        seconds = float(timings.get("total_s", 0.0)) - float(timings.get("env_grade_s", 0.0))
        return cls(
            trajectory.resolved, trajectory.prompt_tokens, trajectory.completion_tokens, max(0.0, seconds)
        )


@dataclass(frozen=True)
class RoutedTask:
    """A task's two attempts and the predicted risk that the small policy's fails."""

    instance_id: str
    risk: float
    small: PolicyAttempt
    large: PolicyAttempt


@dataclass(frozen=True)
class Spend:
    """What a set of attempts cost: tokens, seconds and money (None: a policy that ran is not priced)."""

    tokens: int = 0
    seconds: float = 0.0
    cost: float | None = 0.0

    @classmethod
    def of(cls, attempts: Sequence[PolicyAttempt], price: TokenPrice | None) -> Spend:
        prompt = sum(a.prompt_tokens for a in attempts)
        completion = sum(a.completion_tokens for a in attempts)
        cost = price.cost(prompt, completion) if price else (None if attempts else 0.0)
        return cls(prompt + completion, sum(a.seconds for a in attempts), cost)

    def __add__(self, other: Spend) -> Spend:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Spend(self.tokens + other.tokens, self.seconds + other.seconds, cost)


def policy_alone(tasks: Sequence[RoutedTask], route: Route, key: str) -> dict[str, Any]:
    """One policy on every task: its resolve rate and spend (what the curve's ends equal)."""
    attempts = [task.small if key == "small" else task.large for task in tasks]
    spend = Spend.of(attempts, route.policy(key).price)
    return {
        "policy": route.policy(key).spec, "resolve_rate": _share(sum(a.resolved for a in attempts), tasks),
        "tokens": spend.tokens, "seconds": spend.seconds, "cost": spend.cost,
    }  # fmt: skip


def curve_row(
    tasks: Sequence[RoutedTask], route: Route, threshold: float, verifier_s: float
) -> dict[str, Any]:
    """Routing at `threshold` over the stored attempts: the share sent to the large policy, the resolve rate and
    the spend (what counts is in the module docstring)."""
    sent = [not keeps_small(task.risk, threshold) for task in tasks]
    cascade = route.by == "verifier" and 0.0 < threshold < 1.0
    small_ran = [task.small for task, on in zip(tasks, sent, strict=True) if cascade or not on]
    large_ran = [task.large for task, on in zip(tasks, sent, strict=True) if on]
    spend = Spend.of(small_ran, route.small.price) + Spend.of(large_ran, route.large.price)
    if cascade:
        spend += Spend(seconds=verifier_s)
    resolved = sum((t.large if on else t.small).resolved for t, on in zip(tasks, sent, strict=True))
    return {
        "threshold": threshold, "share_to_large": _share(sum(sent), tasks), "resolve_rate": _share(resolved, tasks),
        "resolved": resolved, "tokens": spend.tokens, "seconds": spend.seconds, "cost": spend.cost,
    }  # fmt: skip


def routing_block(tasks: Sequence[RoutedTask], route: Route, verifier_s: float) -> dict[str, Any]:
    """summary.json's `routing`: the route, each policy alone, the row at the run's threshold and the curve."""
    if not tasks:
        raise ConfigError("--route: no tasks to route")
    curve = [
        curve_row(tasks, route, threshold, verifier_s) for threshold in curve_thresholds(route.threshold)
    ]
    return {
        "route": route.spec, "by": route.predictor, "threshold": route.threshold, "tasks": len(tasks),
        "small": policy_alone(tasks, route, "small"), "large": policy_alone(tasks, route, "large"),
        "chosen": next(row for row in curve if row["threshold"] == route.threshold),
        "verifier_s": verifier_s, "curve": curve,
    }  # fmt: skip


def _share(count: int, tasks: Sequence[object]) -> float:
    return count / len(tasks) if tasks else 0.0
