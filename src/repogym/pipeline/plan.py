"""How big each stage of `repogym quickstart` is: one frozen plan from `--fast` and `--budget MINUTES`.

The default plan is sized to finish within 15 minutes on 2 CPU cores (data about 4, training about 7,
evaluation about 3); `--budget` sets the training minutes (pretraining, SFT and GRPO steps scale with
it); `--fast` is the CI form: two sample repositories, few synthetic bugs, a few dozen training steps,
every stage still run for real. The prompt is what makes a tiny model learnable at all (docs/benchmarks.md,
"Learning"): agentless answers over a 3-line window around the bug, located by the gold patch
(perfect fault localization), as the training probes found.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Literal

from repogym.errors import ConfigError

#: Training minutes of the default plan (what `--budget` replaces).
DEFAULT_BUDGET_MIN = 7.0
FAST_BUDGET_MIN = 0.8

#: The agentless env options of every stage: 1 line either side of the bug, gold-localized.
WINDOW_OPTIONS: dict[str, Any] = {"context": "window", "window_lines": 1, "localize": "oracle"}


@dataclass(frozen=True)
class QuickstartPlan:
    """Every size the quickstart's stages use; OUT/quickstart.json records it so a resume uses the same."""

    fast: bool
    budget_minutes: float
    repos: int
    """Sample repositories generated; the last is the held-out repository (never trained on)."""
    synth_per_repo: int
    """Synthetic single-line bugs drawn per repository (validated like mined ones)."""
    split_ratio: float
    """Share of the training repositories' tasks in train; the rest (held-out functions) is tested."""
    pretrain_minutes: float
    sft_steps: int
    sft_batch: int
    grpo_steps: int
    grpo_generations: int
    grpo_batch: int
    eval_attempts: int
    max_reply_tokens: int
    """Longest answer sampled in eval and GRPO. With the tiny model's 4,096-token BPE a lines answer is
    median 26 tokens (longest 57 of 300 demonstrations); a SEARCH/REPLACE window answer ~110-120 (median
    112, longest 282), so for that format a cap below ~200 cuts most answers off before `</solution>`."""
    seed: int = 0
    pretrain_seed: int | None = None
    """Seed of the model's initial weights and of its pretraining (None: `seed`). Seeds that share it share
    one cached pretraining, so the seeds of a benchmark can differ only in SFT, GRPO and sampling."""
    learning_rate_sft: float = 1e-3
    learning_rate_grpo: float = 2e-5
    eval_methods: tuple[str, ...] = ()
    """Synth methods of the held-out splits' tasks (empty: every task); see `repogym.train.mutation_demos`."""
    short_statements: bool = False
    """Cut each task's statement to its first paragraph (`mutation_demos.short_statement`): the full test
    output costs a tiny model hundreds of prompt tokens it cannot use."""
    demo_rows: int = 0
    """Cheap SFT demonstrations: synth's methods injected into the standard library (0: none)."""
    sft_warmup: float = 0.05
    sft_scheduler: str = "cosine"
    """transformers scheduler of SFT; the tiny model's copying appears late, so a constant rate after warmup
    (`constant_with_warmup`) learns it sooner than a decaying one."""
    grpo_beta: float = 0.0
    """KL coefficient of GRPO against the SFT model."""
    grpo_temperature: float = 1.0
    """Sampling temperature of GRPO's generations. On 32 training tasks a tiny SFT model resolved 10.9% of
    its samples at 1.0 against 19.5% at 0.6 (pass@4 21.9% / 31.2%): at 1.0 most groups hold no success."""
    answer_format: str = "lines"
    """The agentless env's `answer_format`: "lines" (the suspicious line rewritten, ~26 tokens of the tiny
    BPE) or "search_replace" (SWE-RL's blocks, ~110 tokens, which the tiny model did not learn to copy in
    960 SFT steps; docs/benchmarks.md, "Learning")."""

    sft_decay: float = 0.2
    """With `sft_scheduler="warmup_stable_decay"`: the share of SFT steps at the end over which the rate
    decays to 0 (constant before it, so copying still appears as early as with a constant rate)."""
    sampled_attempts: int = 0
    """Sampled attempts per held-out task for the models after SFT and after GRPO, at `grpo_temperature` (the
    temperature GRPO trains at): sampled pass@1 and pass@k for every k up to it beside the greedy pass@1, in
    OUT/eval/<stage>-sampled-<split>/ (0: greedy only)."""
    grpo_format_errors: Literal["penalty", "mask"] = "penalty"
    """GRPO's `grpo.format_errors`: "penalty" (SWE-RL's -1) or "mask" (no advantage, out of the loss)."""
    prompt_style: str = "compact"
    """The agentless env's `prompt_style`: "compact" (no issue text, the suspicious line last: ~150 prompt
    tokens of the tiny BPE against ~200, and the line to copy next to the answer) or "full"."""

    @property
    def model_seed(self) -> int:
        return self.seed if self.pretrain_seed is None else self.pretrain_seed

    def to_dict(self) -> dict[str, Any]:
        """As JSON reads it back (tuples as lists), so a recorded plan compares equal to its own."""
        return json.loads(json.dumps(asdict(self)))

    @property
    def env_options(self) -> dict[str, Any]:
        return {**WINDOW_OPTIONS, "answer_format": self.answer_format, "prompt_style": self.prompt_style}


def plan_defaults() -> dict[str, Any]:
    """The plan's fields that have defaults, as `to_dict` writes them (the settings of a plan recorded before
    a field was added)."""
    defaults = {f.name: f.default for f in fields(QuickstartPlan) if f.default is not MISSING}
    return json.loads(json.dumps(defaults))


def make_plan(fast: bool = False, budget_minutes: float | None = None, repos: int | None = None,
              seed: int = 0) -> QuickstartPlan:  # fmt: skip
    """The plan for `--fast` / `--budget` / `--repos` (None: the mode's default)."""
    budget = (
        budget_minutes if budget_minutes is not None else (FAST_BUDGET_MIN if fast else DEFAULT_BUDGET_MIN)
    )
    if budget <= 0:
        raise ConfigError(f"--budget {budget}: give the training minutes (> 0), e.g. --budget 7")
    n_repos = repos if repos is not None else (2 if fast else 3)
    if n_repos < 2:
        raise ConfigError(
            f"--repos {n_repos}: the quickstart needs at least 2 sample repositories (one is held out)"
        )
    # Minutes split about 40 / 35 / 25 between pretraining, SFT and GRPO; steps per minute measured on
    # 2 busy cores (SFT ~2 steps/s at batch 8, GRPO ~8 s a step with its sandbox grading).
    return QuickstartPlan(
        fast=fast,
        budget_minutes=budget,
        repos=n_repos,
        synth_per_repo=6 if fast else 16,
        split_ratio=0.6,
        pretrain_minutes=round(0.4 * budget, 2),
        sft_steps=max(20, int(0.35 * budget * 60 * 1.5)),
        sft_batch=8,
        grpo_steps=max(2, int(0.25 * budget * 60 / 8)),
        grpo_generations=4,
        grpo_batch=4 if fast else 8,
        eval_attempts=1,
        sampled_attempts=2 if fast else 4,
        max_reply_tokens=96,
        seed=seed,
    )
