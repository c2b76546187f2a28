"""`human`: a person at the terminal is the policy (used by `repogym play` and for debugging tasks).

Each turn shows what arrived since the last one (tool results, the issue) and
reads one reply: a tool call in the seed's syntax (`view_file('a.py', '1:20')`),
JSON, or free text. Typing `:quit` (or end of input) stops the attempt as a
policy error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from repogym.agent.policies import (
    AssistantTurn,
    PolicyConfig,
    PolicyRequest,
    PolicyUnavailable,
    policy_backends,
)

QUIT = ":quit"


class HumanPolicy:
    """Reads replies from `read_line` and shows observations with `show` (stdin/stdout by default)."""

    policy_id = "human"

    def __init__(self, read_line: Callable[[str], str] = input, show: Callable[[str], Any] = print) -> None:
        self.read_line = read_line
        self.show = show

    def act(self, request: PolicyRequest) -> AssistantTurn:
        self.show(new_observations(request.messages))
        try:
            line = self.read_line("action> ")
        except EOFError:
            line = QUIT
        if line.strip() == QUIT:
            raise PolicyUnavailable("the person at the terminal quit", kind="error")
        return AssistantTurn(text=line)

    def close(self) -> None:
        """Nothing to free."""


def new_observations(messages: list[dict[str, Any]]) -> str:
    """The text of the messages after the last assistant turn.

    >>> new_observations([{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "ls"},
    ...                   {"role": "tool", "content": "a.py"}])
    'a.py'
    """
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return "\n\n".join(str(m.get("content") or "") for m in messages[last + 1 :] if m.get("role") != "system")


@policy_backends.register("human")
def make_human_policy(argument: str, config: PolicyConfig) -> HumanPolicy:
    return HumanPolicy()
