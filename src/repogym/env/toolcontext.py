"""What a tool handler is given and what it returns: the types the tools (`repogym.env.tools`) and the
run_tests tool (`repogym.env.testrun`) share, kept below both so neither imports the other."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from repogym.env.options import EnvOptions
from repogym.sandbox.base import Bind, ExecResult
from repogym.sandbox.runtime import Episode
from repogym.task import Task


@dataclass(frozen=True)
class ToolOutput:
    """What a tool call produced: the observation text, whether it failed, whether it ends the episode."""

    text: str
    error: bool = False
    submit: bool = False


def failure(text: str) -> ToolOutput:
    """An error observation (the tool could not do what was asked)."""
    return ToolOutput(f"Error: {text}", error=True)


@dataclass
class ToolContext:
    """What a tool handler may use: the episode (its sandbox), the task and the env's options."""

    episode: Episode
    task: Task
    options: EnvOptions
    deadline: float = float("inf")
    """time.monotonic() at which the episode's time budget runs out (limits long commands)."""
    calls: itertools.count = field(default_factory=itertools.count)

    def timeout(self, seconds: float) -> float:
        """A per-call limit that does not run far past the episode's budget (at least 1 s)."""
        return max(1.0, min(seconds, self.deadline - time.monotonic()))

    def run(self, command: str, seconds: float, binds: Sequence[Bind] = ()) -> ExecResult:
        limits = self.episode.runtime.limits.model_copy(update={"wall_s": self.timeout(seconds)})
        return self.episode.run(command, limits=limits, binds=binds)
