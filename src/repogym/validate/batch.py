"""Validate a file of candidates: parallel, resumable, scrubbed, with a funnel that accounts for each one.

Each finished candidate's outcome is appended (one fsynced line) to
`<out>.partial.jsonl` by the worker that finished it, so a killed run loses
nothing already validated and a re-run skips it (unless the candidate's
patches, environment or `runs` changed). The partial file holds test ids,
timings and reasons only, never patches or text. At the end the validated
tasks are scrubbed (`repogym.privacy`, on by default) and written atomically.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repogym.dataset import coerce_tasks, save_tasks
from repogym.errors import DatasetError
from repogym.files import append_jsonl, read_jsonl_records, write_json
from repogym.interrupts import wait_interruptibly
from repogym.privacy import ScrubConfig, ScrubResult, scrub_tasks
from repogym.sandbox.base import Limits
from repogym.task import Task
from repogym.textmodel import TextModel
from repogym.validate.funnel import ValidationFunnel, build_funnel
from repogym.validate.outcome import CandidateOutcome, Verdict, candidate_fingerprint
from repogym.validate.overrides import AppliedEnvFile, apply_overrides
from repogym.validate.pool import EnvironmentUsage, ValidationPool, environment_usage
from repogym.validate.setup_agent import (
    SetupAgentConfig,
    setup_agent_counts,
    try_setup_agent,
    wants_setup,
)
from repogym.validate.statement import StatementWriter, write_statements
from repogym.validate.validate import run_log_dir, validate_candidate


class ValidateConfig(BaseModel):
    """Options of `repogym validate`."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    runs: int = Field(default=2, ge=1)
    """Times the test files run before and after the gold patch; a test whose outcome changes is dropped as flaky."""
    workers: int = Field(default=1, ge=1)
    """Candidates validated at once (threads; the work is sandboxed subprocesses)."""
    sandbox: str = "bwrap"
    """'bwrap' (isolated) or 'local' (NO isolation: runs the repository's tests on the host)."""
    repos_dir: str | None = None
    """Folder of owner__name clones for candidates without repo_source."""
    scrub: bool = True
    """Run the privacy stage (secrets, personal data, licence allowlist) before writing."""
    scrub_config: ScrubConfig = Field(default_factory=ScrubConfig)
    """Options of the privacy stage (its defaults: drop tasks with secrets, permissive licences only)."""
    limits: Limits = Field(default_factory=Limits)
    """Resource limits of every command run while validating (a test run included)."""
    log_dir: str | None = None
    """Where test logs go (one folder per candidate); default: repogym's cache."""
    env_file: str | None = None
    """An env file (repogym.toml format) applied after each repository's own repogym.toml."""
    recipes: bool = True
    """Fill the env fields a candidate leaves empty from its commit's own files (repogym.validate.recipe)."""
    setup_max_proposals: int = Field(default=2, ge=1, le=10)
    """With a setup agent: env overrides asked for and tried per candidate (repogym.validate.setup_agent)."""
    setup_max_prompt_chars: int = Field(default=12000, ge=500)
    """With a setup agent: the prompt (failure, env, repository files) is cut to this many characters."""


@dataclass(frozen=True)
class ValidationRun:
    """What `validate_candidates` did: the written tasks, every candidate's outcome, the scrub and the funnel."""

    tasks: tuple[Task, ...]
    outcomes: dict[str, CandidateOutcome]
    scrub: ScrubResult | None
    funnel: ValidationFunnel
    elapsed_s: float
    validated_now: int
    """Candidates validated in this run (not taken from the partial file)."""
    clean_runs: int = 0
    """Clean suite runs made for synthetic candidates (one per repo state, shared by its candidates)."""
    env_files: tuple[AppliedEnvFile, ...] = ()
    """Env files whose rules matched some candidate (a repository's repogym.toml, --env-file)."""
    environments: EnvironmentUsage | None = None
    """The distinct environments this run built or reused, and their disk."""
    setup_agent: dict[str, Any] | None = None
    """With a setup agent: candidates tried and kept, proposals and why they failed (`setup_agent_counts`)."""

    @property
    def candidates_per_minute(self) -> float:
        return 60.0 * self.validated_now / self.elapsed_s if self.elapsed_s > 0 else 0.0


def partial_path(out: str | Path) -> Path:
    path = Path(out)
    return path.with_name(path.name + ".partial.jsonl")


def load_done(partial: Path, candidates: dict[str, Task], runs: int) -> dict[str, CandidateOutcome]:
    """Outcomes saved by earlier runs for candidates that have not changed since."""
    done: dict[str, CandidateOutcome] = {}
    for number, record in enumerate(read_jsonl_records(partial), start=1):
        try:
            outcome = CandidateOutcome.from_record(record, f"{partial}:{number}")
        except DatasetError as exc:
            warnings.warn(f"{exc}; skipped", stacklevel=2)
            continue
        candidate = candidates.get(outcome.instance_id)
        if candidate is not None and outcome.fingerprint == candidate_fingerprint(candidate, runs):
            done[outcome.instance_id] = outcome  # a later line for the same candidate wins
    return done


def validate_candidates(
    candidates: str | Path | Iterable[Task],
    out: str | Path,
    config: ValidateConfig | None = None,
    *,
    funnel_path: str | Path | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[CandidateOutcome], None] | None = None,
    statement_writer: StatementWriter | None = None,
    setup_agent: TextModel | None = None,
) -> ValidationRun:
    """Validate every candidate not already done, scrub the validated ones and write them to `out`
    (not written when no task survives).

    `on_start(todo, done)` is called once before work starts; `on_result(outcome)` after each
    candidate (from worker threads, one at a time). Validated synthetic tasks get a problem statement
    from their failing tests' output, or from `statement_writer` (see `repogym.validate.statement`).
    With `setup_agent`, candidates the rules could not prove get its env overrides
    (`repogym.validate.setup_agent`), including those an earlier run without it dropped.
    """
    config = config or ValidateConfig()
    started = time.perf_counter()
    task_set, env_files = apply_overrides(coerce_tasks(candidates), config.env_file, config.repos_dir)
    by_id = {task.instance_id: task for task in task_set}
    partial = partial_path(out)
    outcomes = load_done(partial, by_id, config.runs)
    resumed = len(outcomes)
    todo = [task for task in task_set if task.instance_id not in outcomes]
    if setup_agent is not None:  # dropped by an earlier run without an agent: the agent's turn now
        retry = [t for t in task_set if t.instance_id in outcomes and _agent_due(outcomes[t.instance_id])]
        todo += retry
        resumed -= len(retry)
    if on_start:
        on_start(len(todo), resumed)
    pool = ValidationPool(config.sandbox, config.repos_dir, config.limits, recipes=config.recipes)
    clean_runs = _run_all(todo, partial, outcomes, config, on_result, pool, setup_agent) if todo else 0
    environments = environment_usage(pool)
    validated = [outcomes[t.instance_id].to_task(t) for t in task_set if outcomes[t.instance_id].validated]
    validated = write_statements(validated, statement_writer)
    scrubbed = scrub_tasks(validated, config.scrub_config) if config.scrub else None
    written = list(scrubbed.tasks) if scrubbed else validated
    if written:  # an empty task file is not a valid input to the next stage: write none
        save_tasks(written, out)
    funnel = build_funnel(list(task_set), outcomes, scrubbed, written, resumed)
    agent_counts = setup_agent_counts(outcomes.values()) if setup_agent is not None else None
    if funnel_path is not None:
        write_json(
            funnel_path,
            {
                **funnel.to_dict(),
                "environments": environments.to_dict(),
                "env_files": {applied.source: applied.tasks for applied in env_files},
                **({"setup_agent": agent_counts} if agent_counts is not None else {}),
            },
        )
    return ValidationRun(
        tasks=tuple(written),
        outcomes=outcomes,
        scrub=scrubbed,
        funnel=funnel,
        elapsed_s=time.perf_counter() - started,
        validated_now=len(todo),
        clean_runs=clean_runs,
        env_files=env_files,
        environments=environments,
        setup_agent=agent_counts,
    )


def _agent_due(outcome: CandidateOutcome) -> bool:
    """A saved drop the setup agent may fix and has not been asked about."""
    return wants_setup(outcome) and "setup_agent" not in outcome.validation


def _run_all(
    todo: list[Task],
    partial: Path,
    outcomes: dict[str, CandidateOutcome],
    config: ValidateConfig,
    on_result: Callable[[CandidateOutcome], None] | None,
    pool: ValidationPool,
    setup_agent: TextModel | None = None,
) -> int:
    """Validate `todo` (a saved outcome is given to the setup agent only); returns how many clean suite
    runs synthetic candidates needed."""
    lock = threading.Lock()
    bounds = SetupAgentConfig(config.setup_max_proposals, config.setup_max_prompt_chars)

    def one(task: Task) -> None:
        log_dir = _log_dir(config, task) or run_log_dir(task)
        outcome = outcomes.get(task.instance_id) or validate_candidate(task, pool, config.runs, log_dir)
        if setup_agent is not None and outcome.verdict is not Verdict.INFRA_ERROR:

            def trial(changed: Task, number: int) -> CandidateOutcome:
                logs = log_dir / f"setup-{number}"  # beside the rules' own logs, which the drop detail names
                return validate_candidate(changed, pool, config.runs, logs)

            outcome = try_setup_agent(task, outcome, pool, setup_agent, bounds, trial)
        with lock:
            # Saved by the worker itself: an interrupt of the main thread must not lose a finished candidate.
            if outcome.verdict is not Verdict.INFRA_ERROR:
                append_jsonl(partial, outcome.to_record())
            outcomes[task.instance_id] = outcome
            if on_result:
                on_result(outcome)

    executor = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="validate")
    try:
        futures = [executor.submit(one, task) for task in todo]
        wait_interruptibly(futures)  # Ctrl-C lands in any thread (repogym.interrupts)
        for future in futures:
            future.result()  # re-raise a failure of repogym itself (e.g. the partial file is not writable)
    finally:
        # On Ctrl-C, candidates not yet started are cancelled; the running ones finish and are saved.
        executor.shutdown(wait=True, cancel_futures=True)
    return pool.clean_runs.made


def _log_dir(config: ValidateConfig, task: Task) -> Path | None:
    if config.log_dir is None:
        return None
    return Path(config.log_dir) / task.instance_id.replace("/", "__")
