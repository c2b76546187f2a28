"""`scripted:gold` and `scripted:FILE`: policies that replay actions instead of thinking.

`scripted:gold` turns each task's gold patch into tool calls: `create_file`
for a new file, `edit_file` on each hunk's line range (bottom-up, so line
numbers stay valid) for a modified one, a `git apply` through `bash` for what
line edits cannot express (binary files, renames, deletions, a missing final
newline), then `submit()`. Its trajectories are demonstrations and its resolve
rate checks a task set end to end.

`scripted:FILE` (JSON or JSONL) replays given replies: a list of actions for
every task, or rows `{"instance_id": ..., "actions": [...]}`, optionally with
`"attempt": N` for that attempt alone (k different attempts per task, as
best-of-n needs; a row naming the attempt wins over one that does not). An action is a
reply text (parsed like a model's), a tool call (`{"name", "arguments"}` or
OpenAI's shape) or a whole message (`{"content", "tool_calls"}`). When the
script runs out the policy says so in text, without a tool call.

Both are stateless: the turn number (assistant messages so far) picks the action.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repogym.agent.parsing import ToolCall
from repogym.agent.policies import (
    AssistantTurn,
    PolicyConfig,
    PolicyRequest,
    PolicyUnavailable,
    policy_backends,
)
from repogym.errors import ConfigError
from repogym.patches import parse_patch

#: Replies once a script has no more actions (no tool call: the loop counts a format error).
EXHAUSTED = "(the script has no more actions)"
_HEREDOC = "REPOGYM_PATCH_EOF"


def gold_actions(patch: str) -> list[ToolCall]:
    """Tool calls that turn the base commit into the gold patch's result, then submit.

    >>> patch = ("--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n-x = 1\\n+x = 2\\n y = 3\\n"
    ...          "--- /dev/null\\n+++ b/new.py\\n@@ -0,0 +1 @@\\n+z = 0\\n")
    >>> [(c.name, json.loads(c.arguments)) for c in gold_actions(patch)]  # doctest: +NORMALIZE_WHITESPACE
    [('edit_file', {'path': 'm.py', 'lines': '1:2', 'text': 'x = 2\\ny = 3\\n'}),
     ('create_file', {'path': 'new.py', 'text': 'z = 0\\n'}),
     ('submit', {})]
    """
    parsed = parse_patch(patch)
    if parsed is None:
        return [_call("bash", command=_git_apply(patch)), _call("submit")]
    calls: list[ToolCall] = []
    for patched in parsed:
        calls.extend(_file_actions(patched))
    calls.append(_call("submit"))
    return calls


def _file_actions(patched: Any) -> list[ToolCall]:
    path = patched.path
    simple = not (patched.is_binary_file or patched.is_rename or patched.is_removed_file)
    no_newline_marks = any(line.line_type == "\\" for hunk in patched for line in hunk)
    if not simple or no_newline_marks or not len(patched):
        return [_call("bash", command=_git_apply(str(patched)))]
    if patched.is_added_file:
        text = "".join(line.value for hunk in patched for line in hunk if line.is_added)
        return [_call("create_file", path=path, text=text)]
    edits = []
    for hunk in reversed(list(patched)):  # bottom-up: earlier hunks' line numbers stay valid
        new_text = "".join(line.value for line in hunk if line.is_context or line.is_added)
        if hunk.source_length:
            lines = f"{hunk.source_start}:{hunk.source_start + hunk.source_length - 1}"
        else:  # pure insertion after line source_start
            lines = f"{hunk.source_start + 1}:{hunk.source_start}"
        edits.append(_call("edit_file", path=path, lines=lines, text=new_text))
    return edits


def _git_apply(patch: str) -> str:
    body = patch if patch.endswith("\n") else patch + "\n"
    return f"git apply --whitespace=nowarn - <<'{_HEREDOC}'\n{body}{_HEREDOC}"


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, json.dumps(arguments, ensure_ascii=False))


class GoldPolicy:
    """Replays each task's gold patch (needs `PolicyRequest.task`)."""

    policy_id = "scripted:gold"

    def act(self, request: PolicyRequest) -> AssistantTurn:
        if request.task is None:
            raise PolicyUnavailable("scripted:gold needs the task in the request (the rollout passes it)")
        actions = gold_actions(request.task.patch)
        turn = request.turn
        if turn >= len(actions):
            return AssistantTurn(text=EXHAUSTED)
        call = actions[turn].with_id(f"call_{turn}")
        return AssistantTurn(text="", tool_calls=(call,), finish_reason="tool_calls")

    def close(self) -> None:
        """Nothing to free."""


class ScriptPolicy:
    """Replays actions from a file, the same for every task or per instance id."""

    def __init__(self, path: str) -> None:
        self.policy_id = f"scripted:{Path(path).name}"
        self.default, self.by_instance = load_script(path)

    def act(self, request: PolicyRequest) -> AssistantTurn:
        by_id = self.by_instance
        actions = by_id.get((request.instance_id, request.attempt)) or by_id.get((request.instance_id, None))
        actions = actions or self.default
        turn = request.turn
        if turn >= len(actions):
            return AssistantTurn(text=EXHAUSTED)
        return action_turn(actions[turn], turn)

    def close(self) -> None:
        """Nothing to free."""


def action_turn(action: Any, turn: int) -> AssistantTurn:
    """One scripted action as the assistant turn a model would have produced."""
    if isinstance(action, str):
        return AssistantTurn(text=action)
    if "tool_calls" in action or "content" in action:
        calls = tuple(
            ToolCall.from_openai(call, default_id=f"call_{turn}_{index}")
            for index, call in enumerate(action.get("tool_calls") or [])
        )
        return AssistantTurn(
            text=action.get("content") or "",
            tool_calls=calls,
            finish_reason=action.get("finish_reason", "stop"),
        )
    return AssistantTurn(
        tool_calls=(ToolCall.from_openai(action, default_id=f"call_{turn}"),), finish_reason="tool_calls"
    )


def load_script(path: str) -> tuple[list[Any], dict[tuple[str, int | None], list[Any]]]:
    """(actions for every task, actions per (instance id, attempt or None: any)) from a JSON list of actions
    or JSONL rows."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"--policy scripted:{path}: cannot read the script: {exc.strerror or exc}"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None  # several lines: JSONL rows
    if isinstance(data, list):
        return _checked_actions(data, path), {}
    by_instance: dict[tuple[str, int | None], list[Any]] = {}
    default: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(row, Mapping) or "actions" not in row:
            raise ConfigError(f"{path}:{number}: a script row is {{'instance_id': ..., 'actions': [...]}}")
        actions = _checked_actions(row["actions"], f"{path}:{number}")
        attempt = row.get("attempt")
        if attempt is not None and (not isinstance(attempt, int) or not row.get("instance_id")):
            raise ConfigError(
                f"{path}:{number}: 'attempt' is an attempt number, in a row with an 'instance_id'"
            )
        if row.get("instance_id"):
            by_instance[(str(row["instance_id"]), attempt)] = actions
        else:
            default = actions
    return default, by_instance


def _checked_actions(actions: Any, where: str) -> list[Any]:
    if not isinstance(actions, list) or not all(isinstance(a, str | Mapping) for a in actions):
        raise ConfigError(f"{where}: actions must be a list of reply texts or tool-call/message objects")
    return list(actions)


@policy_backends.register("scripted")
def make_scripted_policy(argument: str, config: PolicyConfig) -> GoldPolicy | ScriptPolicy:
    if argument == "gold":
        return GoldPolicy()
    if not argument:
        raise ConfigError("--policy scripted:gold or scripted:FILE (a JSON/JSONL script of actions)")
    return ScriptPolicy(argument)
