"""An optional setup agent: a model proposes an env override for a candidate the rules could not prove.

`repogym validate --setup-agent openai:MODEL --base-url URL`: when a candidate is dropped because its
environment did not build (`env_build_failed`), its tests could not be collected (`env_broken`,
`tests_did_not_run`) or tests still fail with the gold patch (`no_fail_to_pass` with failures after),
the model reads the repository's README, CI and packaging files at the base commit, the environment
the rules made and the failing log, and answers with an `[env]` table in the env-file format
(`repogym.envfile`). The fields it sets replace those of the rules' environment and the candidate is
validated again in the sandbox. The override is kept only when that validation succeeds (the
FAIL_TO_PASS tests fail without the gold patch, i.e. with an empty one, and pass with it); the kept
environment is written on the task with every field explicit, so a rebuild is the same build, and
`metadata["validation"]["setup_agent"]` records each proposal and what became of it.

Bounds: at most `max_proposals` per candidate, one HTTP request each with a timeout, each trial in the
sandbox under the run's limits. A proposal may set python, packages, install, test_cmd, test_env and
exclude_newer; never log_parser (how results are read belongs to the grader, not to the model). It may
not name a URL, another index (--index-url, --find-links, ...) or a download tool (curl, wget, git
clone): environment builds reach the package index only. Not guaranteed: that text check is a filter
on what the model writes, not a network policy; the build jail's own network rules are the sandbox's.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.envfile import parse_env_file
from repogym.errors import ConfigError, EnvBuildError, RepoSourceError
from repogym.task import EnvSpec, Task
from repogym.textmodel import OpenAITextModel, TextModel, TextSampling, make_text_model
from repogym.validate.diagnose import read_log
from repogym.validate.envresolve import resolve_task_env
from repogym.validate.outcome import CandidateOutcome, Verdict
from repogym.validate.pool import ValidationPool

#: Fields a proposal may set (log_parser is left out on purpose: see the module docstring).
ALLOWED_FIELDS = ("python", "packages", "install", "test_cmd", "test_env", "exclude_newer")
#: Verdicts a setup agent is asked about; no_fail_to_pass only when tests still fail after the fix.
RETRIED = (Verdict.ENV_BUILD_FAILED, Verdict.ENV_BROKEN, Verdict.TESTS_DID_NOT_RUN, Verdict.NO_FAIL_TO_PASS)
_OFF_INDEX = re.compile(
    r"(://|--index-url|--extra-index-url|--find-links|--trusted-host|\bcurl\b|\bwget\b|"
    r"\bgit\s+(?:clone|fetch|pull|submodule)\b|\bssh\b|\bscp\b|\brsync\b|\bnc\b)"
)
_AFTER_FAILS = re.compile(r"after: [^;(]*\b\d+ fail")
_LOG_PATH = re.compile(r"\(log ([^)]+)\)")
_CONTEXT_FILES = (
    "README.md", "README.rst", "README.txt", "README", "pyproject.toml", "setup.py", "setup.cfg", "tox.ini",
    "noxfile.py", ".travis.yml", "requirements.txt", "requirements-dev.txt", "requirements/test.txt",
    "requirements/tests.txt", "test-requirements.txt", ".github/workflows/*.yml", ".github/workflows/*.yaml",
)  # fmt: skip
_PER_FILE_CHARS = 1800
_LOG_CHARS = 2500

SYSTEM_PROMPT = (
    "You set up Python test environments. A repository's tests could not be run or did not pass at one "
    "commit. Read its files and the failing log, then answer with exactly one ```toml block holding an "
    '[env] table that fixes the environment. Fields you may set: python (a version such as "3.9"), '
    'packages (requirements installed first, e.g. ["pytest<7"]), install (shell commands run in the '
    "repository, replacing the current ones), test_cmd, test_env (environment variables for the test "
    "runs), exclude_newer (a date: packages as of then). Only the package index is reachable: no URLs, "
    'no other index, no downloads. Example:\n```toml\n[env]\npython = "3.8"\npackages = ["pytest<7"]\n```'
)


class ProposalRejected(ValueError):
    """A proposal that cannot be tried; `kind` names why in one word (for the funnel's counts)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind


def make_setup_agent(
    spec: str, base_url: str, timeout_s: float = 120.0, max_tokens: int = 600
) -> OpenAITextModel:
    """`openai:MODEL` -> the text model that proposes overrides (one request per proposal, greedy)."""
    sampling = TextSampling(temperature=0.0, max_tokens=max_tokens, seed=0)
    return make_text_model(
        spec,
        base_url,
        option="--setup-agent",
        sampling=sampling,
        timeout_s=timeout_s,
        max_retries=1,
        concurrency=2,
    )


def parse_proposal(text: str, current: EnvSpec) -> dict[str, Any]:
    """The EnvSpec fields a model's answer sets; raises ProposalRejected saying why it cannot be tried.

    >>> parse_proposal('```toml\\n[env]\\npython = "3.9"\\n```', EnvSpec(python="3.11"))
    {'python': '3.9'}
    >>> try:
    ...     parse_proposal('[env]\\ninstall = ["curl -o x.whl example.invalid/x.whl"]', EnvSpec())
    ... except ProposalRejected as exc:
    ...     print(exc.kind)
    off_index
    """
    fenced = re.search(r"```(?:toml)?\s*\n(.*?)```", text, re.S)
    body = fenced.group(1) if fenced else text
    try:
        data = tomllib.loads(body)
    except tomllib.TOMLDecodeError as exc:
        raise ProposalRejected(
            "not_toml", f"not TOML ({exc}); answer with one ```toml block holding an [env] table"
        ) from None
    table = data.get("env", data if set(data) <= set(ALLOWED_FIELDS) | {"log_parser"} else None)
    if not isinstance(table, Mapping) or not table:
        raise ProposalRejected("no_env_table", f"no [env] table of fields (got keys {sorted(data)[:8]})")
    if "when" in table:
        raise ProposalRejected(
            "bad_field", "match rules ([[env.when]]) are not for proposals: set [env] fields"
        )
    forbidden = sorted(set(table) - set(ALLOWED_FIELDS))
    if forbidden:
        raise ProposalRejected(
            "bad_field", f"field(s) {forbidden} may not be set; allowed: {list(ALLOWED_FIELDS)}"
        )
    try:
        (rule,) = parse_env_file({"env": dict(table)}, "setup agent proposal").rules
    except ConfigError as exc:
        raise ProposalRejected("bad_field", str(exc)) from None
    fields = dict(rule.fields)
    for name in ("packages", "install", "test_cmd"):
        value = fields.get(name, [])
        for line in [value] if isinstance(value, str) else value:
            if _OFF_INDEX.search(line):
                raise ProposalRejected("off_index", f"{name} {line!r} reaches beyond the package index")
    merged = EnvSpec.from_dict({**current.to_dict(), **fields}, "setup agent proposal")
    if merged == current:
        raise ProposalRejected("unchanged", "proposes the environment that already failed")
    return fields


@dataclass(frozen=True)
class SetupContext:
    """What the model is shown: the environment the rules made and the repository's files at the commit."""

    env: EnvSpec
    files: dict[str, str]
    recipe: dict[str, Any]


def wants_setup(outcome: CandidateOutcome) -> bool:
    """A verdict the agent may fix: the env build or the gold run failed (see RETRIED)."""
    if outcome.verdict is Verdict.NO_FAIL_TO_PASS:
        return bool(_AFTER_FAILS.search(outcome.detail))
    return outcome.verdict in RETRIED


def setup_context(task: Task, pool: ValidationPool) -> SetupContext:
    """The rules' environment for `task` (every field explicit) and the files a model should read."""
    mirror_path, pristine = pool.checkout(task)
    recipe: dict[str, Any] = {}
    env = task.env
    if pool.recipes:
        try:
            resolved = resolve_task_env(task, pristine, mirror_path)
            env, recipe = resolved.env, dict(resolved.metadata.get("env_recipe", {}))
        except EnvBuildError:
            pass  # no interpreter fits: the model sees the task's own (empty) fields and may name one
    return SetupContext(env, _read_context_files(pristine), recipe)


def _read_context_files(root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for pattern in _CONTEXT_FILES:
        for path in sorted(root.glob(pattern))[:3]:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                files[path.relative_to(root).as_posix()] = text[:_PER_FILE_CHARS]
    return files


def build_prompt(
    task: Task, outcome: CandidateOutcome, context: SetupContext, tried: list[dict[str, Any]], limit: int
) -> str:
    """The user message: the failure first (a small model's context is short), then the env, then files."""
    log_match = _LOG_PATH.search(outcome.detail)
    log_tail = read_log(log_match.group(1))[-_LOG_CHARS:] if log_match else ""
    parts = [
        f"Repository {task.repo} at commit {task.base_commit[:12]}: {outcome.verdict.value}.",
        f"What failed:\n{outcome.detail[:1500]}",
    ]
    if log_tail:
        parts.append(f"End of the test log:\n{log_tail}")
    current = {k: v for k, v in context.env.to_dict().items() if k in ALLOWED_FIELDS and v}
    parts.append("The environment that failed (env-file fields):\n" + _as_toml(current))
    for earlier in tried:
        parts.append(f"Your proposal {earlier['number']} did not work: {earlier['reason'][:300]}")
    for path, text in context.files.items():
        parts.append(f"--- {path} ---\n{text}")
    parts.append("Answer with one ```toml block holding an [env] table.")
    return "\n\n".join(parts)[:limit]


def _as_toml(fields: Mapping[str, Any]) -> str:
    lines = ["[env]"]
    for key, value in fields.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class SetupAgentConfig:
    """Bounds of the setup agent."""

    max_proposals: int = 2
    """Proposals asked for (and tried in the sandbox) per candidate."""
    max_prompt_chars: int = 12000
    """The user message is cut to this many characters."""


def try_setup_agent(
    task: Task,
    outcome: CandidateOutcome,
    pool: ValidationPool,
    agent: TextModel,
    config: SetupAgentConfig,
    validate: Any,
) -> CandidateOutcome:
    """The outcome after asking `agent` for up to `config.max_proposals` overrides, each validated with
    `validate(task, number) -> CandidateOutcome`; a kept override's outcome, else the first one with the record."""
    if not wants_setup(outcome):
        return outcome
    try:
        context = setup_context(task, pool)
    except RepoSourceError:
        return outcome
    tried: list[dict[str, Any]] = []
    for number in range(1, config.max_proposals + 1):
        record: dict[str, Any] = {"number": number}
        try:
            text = agent.write(
                SYSTEM_PROMPT, build_prompt(task, outcome, context, tried, config.max_prompt_chars)
            )
            fields = parse_proposal(text, context.env)
        except ProposalRejected as exc:
            tried.append({**record, "kind": exc.kind, "verdict": "rejected", "reason": str(exc)})
            continue
        except Exception as exc:  # an endpoint that is down or answers nonsense costs this proposal only
            tried.append(
                {
                    **record,
                    "kind": "request_failed",
                    "verdict": "rejected",
                    "reason": f"{type(exc).__name__}: {exc}"[:400],
                }
            )
            break
        trial = _with_override(task, context, fields, agent.name, number)
        result = validate(trial, number)
        record.update(fields=fields, verdict=result.verdict.value)
        if result.validated:
            tried.append({**record, "kind": "kept", "reason": ""})
            summary = {"agent": agent.name, "proposals": tried, "kept": number}
            return dataclasses.replace(
                result,
                fingerprint=outcome.fingerprint,
                validation={**result.validation, "setup_agent": summary},
            )
        first_line = result.detail.split("\n", 1)[0][:300]
        tried.append(
            {**record, "kind": "did_not_validate", "reason": f"{result.verdict.value}: {first_line}"}
        )
    summary = {"agent": agent.name, "proposals": tried, "kept": 0}
    return dataclasses.replace(outcome, validation={**outcome.validation, "setup_agent": summary})


def _with_override(
    task: Task, context: SetupContext, fields: dict[str, Any], agent: str, number: int
) -> Task:
    """The task with the rules' environment, every field explicit, and the proposal's fields over it."""
    env = EnvSpec.from_dict({**context.env.to_dict(), **fields}, f"setup agent proposal {number}")
    steps = [
        *context.recipe.get("steps", []),
        f"setup agent {agent}, proposal {number}: set {', '.join(sorted(fields))}",
    ]
    recipe = {
        **context.recipe,
        "steps": steps,
        "setup_agent": {"agent": agent, "proposal": number, "fields": fields},
    }
    return task.replace(env=env, metadata={**task.metadata, "env_recipe": recipe})


def setup_agent_counts(outcomes: Iterable[CandidateOutcome]) -> dict[str, Any]:
    """The funnel's setup-agent line: candidates tried and kept, proposals, and why proposals failed."""
    tried = kept = proposals = 0
    kinds: Counter[str] = Counter()
    for outcome in outcomes:
        record = outcome.validation.get("setup_agent")
        if not isinstance(record, dict):
            continue
        tried += 1
        kept += bool(record.get("kept"))
        for proposal in record.get("proposals", []):
            proposals += 1
            kinds[str(proposal.get("kind", ""))] += 1
    return {"tried": tried, "kept": kept, "proposals": proposals, "by_kind": dict(kinds.most_common())}
