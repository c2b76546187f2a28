"""RepoEnv's options: one pydantic model, each field documented once, checked when the env is made."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EnvOptions(BaseModel):
    """How one RepoEnv behaves; pass any field to `repogym.env.make(...)` as a keyword."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: Literal["agent", "agentless"] = "agent"
    """'agent': multi-turn tool use ending with submit(); 'agentless': one SEARCH/REPLACE answer (SWE-RL)."""
    max_steps: int = Field(default=50, ge=1, le=10_000)
    """Steps (tool calls, malformed ones included) before the episode is truncated."""
    time_budget_s: float = Field(default=1800.0, gt=0)
    """Wall-clock seconds from reset(); the first step that ends past it truncates the episode."""
    grade_on_truncation: bool = True
    """Grade the current diff when the episode is truncated (else reward 0.0 and no grade)."""
    observation_chars: int = Field(default=16_000, ge=500)
    """Longest observation of a step; longer ones keep head and tail around a marker saying what was cut."""
    context_chars: int = Field(default=200_000, ge=1_000)
    """Longest reset observation (agentless prompts carry whole files)."""
    bash_timeout_s: float = Field(default=60.0, gt=0)
    """Wall-clock limit of one bash() call; the command's process tree is killed after it."""
    tool_timeout_s: float = Field(default=30.0, gt=0)
    """Wall-clock limit of one file tool call (view_file, search, edit_file, str_replace, create_file)."""
    test_timeout_s: float = Field(default=300.0, gt=0)
    """Wall-clock limit of one run_tests() call."""
    grade_timeout_s: float | None = Field(default=None, gt=0)
    """Wall-clock limit of the test run that grades the episode's answer. None: ten times the task's slowest
    validated test run plus 20 s, at least 60 s, at most the sandbox limits' (`repogym.grading.timelimit`),
    so an answer whose tests loop forever costs a minute, not ten; tasks never validated keep the sandbox's."""
    max_edit_chars: int = Field(default=200_000, ge=1)
    """Longest text one edit_file, str_replace or create_file call may write."""
    max_file_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest file the file tools read; bigger ones are refused with a hint to use bash."""
    max_search_matches: int = Field(default=100, ge=1)
    """Matching lines search() lists (it always reports the total)."""
    tools: tuple[str, ...] | None = None
    """Tool names offered in agent mode (None: all registered tools; submit is always offered)."""
    extra_context_files: tuple[str, ...] = ()
    """Agentless mode: repository files shown besides those the gold patch touches."""
    context: Literal["files", "window"] = "files"
    """Agentless mode: 'files' shows the gold patch's files whole; 'window' only `window_lines` around localized lines."""
    answer_format: Literal["search_replace", "lines"] = "search_replace"
    """Agentless mode: 'search_replace' is SWE-RL's answer; 'lines' (window context only) the suspicious lines
    as they should read, one per line (see `repogym.env.lines_answer`), converted to SWE-RL's answer before grading."""
    prompt_style: Literal["full", "compact"] = "full"
    """Agentless window context: 'full' shows the issue, the windows, the suspicious lines, then the answer
    format; 'compact' leaves the issue out and lists the suspicious lines last (about three quarters of the
    tokens, the line to copy next to the answer: for tiny models; see `repogym.env.context.window_prompt`)."""
    window_lines: int = Field(default=3, ge=0, le=200)
    """Agentless window context: lines shown either side of each localized line."""
    localize: str = "oracle"
    """Agentless window context: 'oracle' (the gold patch's lines: perfect fault localization, uses gold
    information), 'sbfl' (spectrum-based, from per-test coverage in the sandbox), or a dotted path to a Localizer."""

    @model_validator(mode="after")
    def _window_options_need_windows(self) -> EnvOptions:
        if self.answer_format == "lines" and self.context != "window":
            raise ValueError(
                "answer_format='lines' rewrites the window's suspicious lines: it needs context='window'"
            )
        if self.prompt_style == "compact" and self.context != "window":
            raise ValueError("prompt_style='compact' shortens the window prompt: it needs context='window'")
        return self
