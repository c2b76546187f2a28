"""The agent's tools: one registry, OpenAI function schemas, and handlers that act inside the episode's sandbox.

Every tool runs in the episode's jail, never on the host. The file tools (view_file, search,
edit_file, str_replace, create_file) are one small Python script (`fileops.py`) whose arguments
travel in a JSON file placed in the episode's read-only inbox, so model text is never pasted into
a shell command line; bash runs the model's command as the model wrote it, with a per-call
timeout. A tool that cannot do what was asked (a missing file, a line range beyond the end) returns
an error observation; only a call that cannot be bound to a tool (unknown name, missing or extra
arguments, wrong types) is a format error.

run_tests(tests=None) runs tests in the agent's own episode, WITHOUT the task's hidden test patch:
with no argument, the test files of the task's FAIL_TO_PASS and PASS_TO_PASS tests as they exist in
the episode (so hidden tests the grader adds are absent; their names are never shown); with
`tests`, the given test ids or files. It lists every result the run reported.
"""

from __future__ import annotations

import difflib
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from repogym.env.actions import ActionCall, ActionError
from repogym.env.testrun import run_visible_tests
from repogym.env.toolcontext import ToolContext, ToolOutput, failure
from repogym.registry import Registry
from repogym.sandbox.base import OUT_DIR, REPO_DIR, read_jail_file
from repogym.sandbox.runtime import IN_DIR, Episode

FILEOPS_NAME = "repogym_fileops.py"
_PYTHON = 'p=/usr/bin/python3; [ -x "$p" ] || p=python3; exec "$p" -I -S'
_TYPES = {"string": str, "integer": int, "array": list}


@dataclass(frozen=True)
class Param:
    """One argument of a tool, as its JSON schema shows it."""

    name: str
    type: str
    description: str
    required: bool = True
    accepts_int: bool = False
    """Also accept an integer (a line number written without quotes), turned into a string."""

    def check(self, tool: str, value: Any) -> Any:
        if value is None and not self.required:
            return None
        if self.accepts_int and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        expected = _TYPES[self.type]
        ok = isinstance(value, expected) and not isinstance(value, bool)
        if ok and self.type == "array":
            ok = all(isinstance(item, str) for item in value)
        if not ok:
            shown = "a list of strings" if self.type == "array" else f"a {self.type}"
            raise ActionError(f"argument {self.name!r} of {tool} must be {shown}, got {type(value).__name__}")
        return value

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            schema["items"] = {"type": "string"}
        return schema


Handler = Callable[..., ToolOutput]


@dataclass(frozen=True)
class Tool:
    """A tool: its name, what it does, its arguments (in positional order) and its handler."""

    name: str
    description: str
    params: tuple[Param, ...]
    handler: Handler

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in self.params},
                    "required": [p.name for p in self.params if p.required],
                    "additionalProperties": False,
                },
            },
        }

    def bind(self, call: ActionCall) -> dict[str, Any]:
        """Keyword arguments for the handler; ActionError for missing, extra, repeated or mistyped ones."""
        names = [p.name for p in self.params]
        signature = f"{self.name}({', '.join(names)})"
        if len(call.args) > len(self.params):
            raise ActionError(f"{signature} takes {len(self.params)} argument(s), got {len(call.args)}")
        bound = dict(zip(names, call.args, strict=False))
        for key, value in call.kwargs.items():
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ActionError(f"{self.name} has no argument {key!r}{hint}; its arguments: {signature}")
            if key in bound:
                raise ActionError(f"{self.name} got two values for argument {key!r}")
            bound[key] = value
        missing = [p.name for p in self.params if p.required and p.name not in bound]
        if missing:
            raise ActionError(
                f"{self.name} is missing required argument(s) {', '.join(missing)}: {signature}"
            )
        return {p.name: p.check(self.name, bound[p.name]) for p in self.params if p.name in bound}

    def __call__(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutput:
        return self.handler(context, **arguments)


tools: Registry[Tool] = Registry("tool")


def tool(name: str, description: str, *params: Param) -> Callable[[Handler], Handler]:
    """Register a handler as a tool (the registry holds the `Tool`, the module keeps the function)."""

    def decorator(handler: Handler) -> Handler:
        tools.add(name, Tool(name, description, params, handler))
        return handler

    return decorator


def parse_line_range(spec: str | None) -> tuple[int, int | None]:
    """(first, last) of a 1-based inclusive range; last None means "to the end".

    >>> parse_line_range("42:50"), parse_line_range("7"), parse_line_range("3:"), parse_line_range(":9")
    ((42, 50), (7, 7), (3, None), (1, 9))
    >>> parse_line_range("10:5")
    Traceback (most recent call last):
    ...
    ValueError: line range '10:5' ends before it starts (lines are 1-based and inclusive, e.g. '42:50')
    """
    if spec is None or not spec.strip():
        return 1, None
    text = spec.strip()
    first_text, sep, last_text = text.partition(":")
    try:
        first = int(first_text) if first_text.strip() else 1
        last = (int(last_text) if last_text.strip() else None) if sep else first
    except ValueError:
        raise ValueError(
            f"line range {spec!r} is not 'first:last' (1-based, inclusive, e.g. '42:50')"
        ) from None
    if first < 1 or (last is not None and last < 0):
        raise ValueError(f"line range {spec!r}: line numbers start at 1")
    if last is not None and last < first - 1:
        raise ValueError(
            f"line range {spec!r} ends before it starts (lines are 1-based and inclusive, e.g. '42:50')"
        )
    return first, last


# -- running the file-ops script in the jail ------------------------------------------------------


def _fileops_source() -> str:
    return resources.files("repogym.env").joinpath("fileops.py").read_text(encoding="utf-8")


def install_fileops(episode: Episode) -> None:
    """Put the file tools' script in the episode's inbox (it survives episode resets)."""
    episode.put_file(FILEOPS_NAME, _fileops_source())


def file_op(context: ToolContext, op: str, **args: Any) -> ToolOutput:
    """Run one file operation in the jail and return its observation."""
    call = next(context.calls)
    args_name, result_name = f"fileop-{call}.json", f"fileop-{call}.result.json"
    payload = {"op": op, "repo_alias": REPO_DIR, "max_file_bytes": context.options.max_file_bytes, **args}
    args_path = context.episode.put_file(args_name, json.dumps(payload))
    inbox = context.episode.inbox
    result_file = context.episode.layer.out / result_name
    command = f"{_PYTHON} {inbox_path(FILEOPS_NAME)} {shlex.quote(args_path)} {OUT_DIR}/{result_name}"
    try:
        result = context.run(command, context.options.tool_timeout_s)
        # read_jail_file: the jail can plant a link to a host file at this (predictable) name.
        raw = read_jail_file(result_file)
        if raw is None:
            why = "timed out" if result.timed_out else f"failed (exit code {result.exit_code})"
            tail = "\n".join(result.output.strip().splitlines()[-5:])
            return failure(f"the {op} tool {why}: {tail}".strip())
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or "ok" not in data:
                raise ValueError("not a tool result")
        except ValueError as exc:  # e.g. killed while writing it (file size limit)
            return failure(f"the {op} tool's result could not be read: {exc}")
    finally:
        (inbox / args_name).unlink(missing_ok=True)
        result_file.unlink(missing_ok=True)
    return ToolOutput(str(data["text"])) if data["ok"] else failure(str(data["text"]))


def inbox_path(name: str) -> str:
    return f"{IN_DIR}/{name}"


def _range_args(lines: str | None) -> dict[str, int | None] | ToolOutput:
    try:
        first, last = parse_line_range(lines)
    except ValueError as exc:
        return failure(str(exc))
    return {"start": first, "end": last}


def _too_long(context: ToolContext, tool_name: str, **texts: str) -> ToolOutput | None:
    limit = context.options.max_edit_chars
    for name, text in texts.items():
        if len(text) > limit:
            return failure(
                f"{tool_name}: {name!r} is {len(text):,} characters, over the limit of {limit:,} per call "
                "(env option max_edit_chars); make smaller edits"
            )
    return None


# -- the tools ------------------------------------------------------------------------------------

_PATH = Param("path", "string", "File path relative to the repository root (e.g. 'src/pkg/module.py').")
_LINES = "1-based inclusive line range 'first:last', e.g. '42:50'"


@tool(
    "bash",
    "Run a shell command in the repository root (/testbed) inside the sandbox: no network, a per-call "
    "timeout, output truncated. Returns the exit code and the combined stdout and stderr.",
    Param("command", "string", "The shell command (run with sh -c)."),
)
def bash(context: ToolContext, command: str) -> ToolOutput:
    if not command.strip():
        return failure("the command is empty")
    result = context.run(command, context.options.bash_timeout_s)
    if result.timed_out:
        status = (
            f"timed out after {context.timeout(context.options.bash_timeout_s):g} s (process tree killed)"
        )
    elif result.exit_code is None:
        status = "killed (" + "; ".join(result.notes) + ")"
    else:
        status = f"exit code {result.exit_code}"
    return ToolOutput(f"[{status}]\n{result.output}", error=not result.ok)


@tool(
    "view_file",
    "Show a text file with line numbers (all of it, or a line range), or list a directory.",
    _PATH,
    Param("lines", "string", f"Optional {_LINES}; '42:' means from line 42 to the end.", False, True),
)
def view_file(context: ToolContext, path: str, lines: str | None = None) -> ToolOutput:
    span = _range_args(lines)
    if isinstance(span, ToolOutput):
        return span
    return file_op(context, "view", path=path, **span)


@tool(
    "search",
    "Search file contents for a regular expression (Python syntax; invalid ones are searched literally). "
    "Lists matching lines as path:line: text.",
    Param("pattern", "string", "Regular expression to look for, line by line."),
    Param(
        "path", "string", "File or directory to search, relative to the repository root (default '.').", False
    ),
)
def search(context: ToolContext, pattern: str, path: str | None = None) -> ToolOutput:
    if not pattern:
        return failure("the pattern is empty")
    return file_op(
        context, "search", pattern=pattern, path=path or ".", max_matches=context.options.max_search_matches
    )


@tool(
    "edit_file",
    "Replace lines first..last (1-based, inclusive) of a file with new text: edit_file('models.py', '42:50', "
    "'...') replaces lines 42 to 50. 'N:N-1' inserts before line N without replacing anything.",
    _PATH,
    Param("lines", "string", f"The {_LINES}.", True, True),
    Param("text", "string", "The new text for those lines (a final newline is added if missing)."),
)
def edit_file(context: ToolContext, path: str, lines: str, text: str) -> ToolOutput:
    span = _range_args(lines)
    if isinstance(span, ToolOutput):
        return span
    if span["end"] is None:
        return failure(f"edit_file needs a full range 'first:last', got {lines!r}")
    return _too_long(context, "edit_file", text=text) or file_op(
        context, "edit", path=path, text=text, **span
    )


@tool(
    "str_replace",
    "Replace the one occurrence of `old` in a file with `new`; `old` must occur exactly once "
    "(include surrounding lines to make it unique).",
    _PATH,
    Param("old", "string", "The exact text to replace, indentation included."),
    Param("new", "string", "The text to put in its place."),
)
def str_replace(context: ToolContext, path: str, old: str, new: str) -> ToolOutput:
    return _too_long(context, "str_replace", old=old, new=new) or file_op(
        context, "replace", path=path, old=old, new=new
    )


@tool(
    "create_file",
    "Create a file with the given text (parent directories are created; an existing file is replaced).",
    _PATH,
    Param("text", "string", "The whole content of the file."),
)
def create_file(context: ToolContext, path: str, text: str) -> ToolOutput:
    return _too_long(context, "create_file", text=text) or file_op(context, "create", path=path, text=text)


@tool(
    "run_tests",
    "Run tests in your workspace and list each result. Without arguments: the test files relevant to the "
    "task as they are in your workspace (the grader's hidden tests are not included).",
    Param("tests", "array", "Optional test ids or test files, e.g. ['tests/test_io.py::test_read'].", False),
)
def run_tests(context: ToolContext, tests: list[str] | None = None) -> ToolOutput:
    return run_visible_tests(context, tests)


@tool("submit", "Finish: your changes to the repository are graded by the hidden tests. Takes no arguments.")
def submit(context: ToolContext) -> ToolOutput:
    return ToolOutput("Submitted.", submit=True)


def tool_names(selected: Sequence[str] | None = None) -> list[str]:
    """The tools an env offers: `selected` (checked against the registry) plus submit, else all of them."""
    if selected is None:
        return [name for name in _ORDER if name in tools] + [n for n in tools.names() if n not in _ORDER]
    names = [tools.canonical(name) for name in selected]
    for name in names:
        tools.get(name)  # unknown names fail here, listing the known ones
    return [*dict.fromkeys(names)] + ([] if "submit" in names else ["submit"])


_ORDER = ("bash", "view_file", "search", "edit_file", "str_replace", "create_file", "run_tests", "submit")
