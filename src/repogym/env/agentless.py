"""Agentless mode (SWE-RL's setting): one step, one SEARCH/REPLACE answer, graded and scored.

- `reset()` returns the problem statement plus, with `context="files"` (the default), the full text
  of the files the gold patch touches (and `extra_context_files`), and the answer format. With
  `context="window"` it shows only `window_lines` lines around each line the `localize` method
  points at (see `repogym.env.context`: `oracle` is perfect fault localization and uses gold
  information, `sbfl` does not). `info["code_context"]` holds the files answers apply to
  (path -> text) so a policy can build its own prompt; `info["localization"]` says how the
  window was chosen (None in files mode).
- `gold_answer()` is the SWE-RL answer reproducing the gold patch (in window mode restricted to
  the windows; None when the gold change lies outside them): the demonstration SFT trains on.
- `step(answer)` takes SWE-RL's `<think>...</think><solution>...</solution>` text (or a chat
  message dict with `content`); with `answer_format="lines"` the suspicious lines rewritten
  (`repogym.env.lines_answer`), converted to SWE-RL's answer first (the reward components and
  `info["similarity"]` see the converted text). Its blocks are applied with `repogym.search_replace.apply_answer`
  exactly as SWE-RL applies them; the resulting diff is graded in a fresh sandbox episode. The
  episode always terminates after this one step.
- A malformed answer (see `FormatErrorReason`) counts one format error and is not graded.
- The default reward is the seed's components plus `patch_similarity` (SWE-RL's reward: the mean
  per-file similarity to the gold patch, -1.0 on a format error), so the gold answer scores
  1.0 + 1.0 = 2.0, an answer that does not resolve scores its similarity, and a malformed answer
  scores -1.0. `info["similarity"]` is SWE-RL's value whatever the reward config is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from repogym.env.base import TaskEnv, TextSpace, end_summary, read_originals
from repogym.env.context import Localization, Window, localize, make_windows, window_answer, window_prompt
from repogym.env.lines_answer import lines_answer, to_search_replace
from repogym.env.localize import sbfl_localizer  # noqa: F401  (registers localize='sbfl')
from repogym.env.observation import truncate
from repogym.env.options import EnvOptions
from repogym.errors import ConfigError
from repogym.patches import PatchError, changed_paths
from repogym.rewards.similarity import oracle_contents, similarity_from_response
from repogym.search_replace import FormatError, answer_from_patch, apply_answer

#: A malformed answer for `action_space.sample()` (it has no SEARCH/REPLACE block).
SAMPLE_ANSWER = "<think>\nsampled\n</think>\n<solution>\n</solution>"

ANSWER_FORMAT = """\
Answer in this format: first your reasoning in <think>...</think>, then the fix in <solution>...</solution>
as one or more SEARCH/REPLACE edits, each in a fenced block like this:

```python
### path/to/file.py
<<<<<<< SEARCH
lines copied exactly from the file (each SEARCH must start at the beginning of a line)
=======
the lines that replace them
>>>>>>> REPLACE
```

Every occurrence of a SEARCH text is replaced; SEARCH and REPLACE must differ; an empty SEARCH creates a new file.
"""


def agentless_prompt(problem_statement: str, code_context: Mapping[str, str]) -> str:
    """The observation: the issue, each relevant file in full, and the answer format."""
    files = "".join(
        f"--- BEGIN FILE ---\n```\n### {path}\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}```\n"
        "--- END FILE ---\n"
        for path, text in code_context.items()
    )
    return (
        "We are currently solving the following issue within our repository. Here is the issue text:\n"
        f"--- BEGIN ISSUE ---\n{problem_statement.strip()}\n--- END ISSUE ---\n\n"
        "Below are some code segments, each from a relevant file. One or more of these files may contain bugs.\n\n"
        f"{files}\n{ANSWER_FORMAT}"
    )


def build_observation(
    problem_statement: str,
    code_context: Mapping[str, str],
    options: EnvOptions,
    localization: Localization | None,
) -> tuple[str, list[Window]]:
    """The reset observation (and the windows shown): files mode without a localization, window mode with one.

    `repogym data sft` builds its agentless demonstrations with this same function, so the prompts a
    model is fine-tuned on are the ones the env shows it.
    """
    if localization is None:
        return truncate(agentless_prompt(problem_statement, code_context), options.context_chars), []
    windows = make_windows(localization.spots, code_context, options.window_lines)
    prompt = window_prompt(
        problem_statement,
        windows,
        localization.spots,
        code_context,
        options.answer_format,
        options.prompt_style,
    )
    return truncate(prompt, options.context_chars), windows


def gold_answer(
    patch: str,
    code_context: Mapping[str, str],
    windows: list[Window] | None,
    localization: Localization | None = None,
    answer_format: str = "search_replace",
) -> str | None:
    """The answer reproducing `patch`: whole-file blocks, or (with `windows`) blocks inside them, or (with
    `answer_format="lines"`) the localized lines rewritten; None if impossible."""
    if answer_format == "lines":
        return lines_answer(patch, localization.spots, code_context) if localization else None
    if windows is not None:
        return window_answer(patch, code_context, windows)
    try:
        return answer_from_patch(patch, code_context)
    except PatchError:
        return None


class AgentlessEnv(TaskEnv):
    """One-step SEARCH/REPLACE mode; see this module's docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_space = TextSpace(10**7, sample_text=SAMPLE_ANSWER)
        paths = [*changed_paths(self.task.patch), *self.options.extra_context_files]
        self.code_context = read_originals(self.runtime.pristine, paths)
        self.localization: Localization | None = None
        self.windows: list[Window] = []
        if self.options.context == "window":
            self.localization = localize(self.options.localize, self.task, self.code_context, self.runtime)
            missing = [path for path in self.localization.spots if path not in self.code_context]
            self.code_context.update(read_originals(self.runtime.pristine, missing))
        try:
            self.oracle_new_content = oracle_contents(self.task.patch, self.code_context)
        except PatchError as exc:
            raise ConfigError(
                f"{self.task.instance_id}: agentless mode needs the gold patch's files as text: {exc}"
            ) from None
        self._prompt, self.windows = build_observation(
            self.task.problem_statement, self.code_context, self.options, self.localization
        )

    def gold_answer(self) -> str | None:
        """The SWE-RL answer reproducing the gold patch (window mode: inside the windows, else None)."""
        return gold_answer(
            self.task.patch,
            self.code_context,
            self.windows if self.localization else None,
            self.localization,
            self.options.answer_format,
        )

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Agentless mode has no tools: the answer is text."""
        return []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if options:
            raise ConfigError(
                f"reset(options=...): AgentlessEnv takes no reset options, got {sorted(options)}"
            )
        self._running = True
        self._steps = self._format_errors = 0
        self._last_observation = self._prompt
        info = {
            "instance_id": self.task.instance_id,
            "mode": "agentless",
            "code_context": dict(self.code_context),
            "localization": self.localization.to_dict() if self.localization else None,
            "timings": {"reset_s": 0.0},
        }
        return self._last_observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._require_running()
        self._steps = 1
        response = _answer_text(action)
        format_error: FormatError | None = None
        patch = ""
        try:
            if self.options.answer_format == "lines" and self.localization is not None:
                response = to_search_replace(response, self.localization.spots, self.code_context)
            patch = apply_answer(response, self.code_context).diff
        except FormatError as exc:
            format_error = exc
            self._format_errors = 1
            if self.options.answer_format == "lines":
                response = ""  # scored as malformed: SWE-RL blocks written around a bad lines answer count for nothing
        grade_result, breakdown, timings = self._finish(
            patch,
            grade_patch=format_error is None,
            response=response,
            code_context=self.code_context,
            oracle_new_content=self.oracle_new_content,
        )
        similarity = similarity_from_response(self.code_context, self.oracle_new_content, response).reward
        how = f"format error: {format_error}" if format_error else "answer applied"
        observation = end_summary(how, grade_result, breakdown).lstrip("\n")
        self._last_observation = observation
        info = {
            "instance_id": self.task.instance_id,
            "step": 1,
            "format_error": str(format_error) if format_error else None,
            "format_errors": self._format_errors,
            "grade": grade_result,
            "reward": breakdown,
            "similarity": similarity,
            "patch": patch,
            "steps": 1,
            "truncated_by": None,
            "timings": timings,
        }
        assert breakdown is not None
        return observation, breakdown.total, True, False, info

    def close(self) -> None:
        self._running = False


def _answer_text(action: Any) -> str:
    """The answer text of an action: a string, or a chat message's string `content` ('' otherwise: a format error)."""
    if isinstance(action, str):
        return action
    if isinstance(action, Mapping) and isinstance(action.get("content"), str):
        return action["content"]
    return ""
