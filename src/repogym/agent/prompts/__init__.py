"""The agent's words: system prompt, problem rendering and format-error reply, as template files.

The defaults are the `.md` files beside this module. A user overrides any of
them by putting a file of the same name in a folder and passing it
(`repogym rollout --prompts DIR`); files not there keep the default. Templates
use `string.Template` placeholders (`$observation`), so code with braces needs
no escaping; a placeholder a template does not know fails when the prompts are
loaded, before any attempt runs.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError

DEFAULT_DIR = Path(__file__).resolve().parent

#: Template name -> the placeholders it may use.
PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "system.md": ("tool_list",),
    "problem.md": ("observation", "instance_id", "repo", "problem_statement"),
    "format_error.md": ("observation", "reason"),
    "tool_line.md": ("name", "params", "description"),
}


@dataclass(frozen=True)
class Prompts:
    """The loaded templates and where each came from."""

    templates: Mapping[str, string.Template]
    sources: Mapping[str, str]

    def render(self, template: str, /, **values: Any) -> str:
        return self.templates[template].substitute(values).strip("\n")

    def system(self, tools: Sequence[Mapping[str, Any]]) -> str:
        return self.render("system.md", tool_list="\n".join(self.tool_line(tool) for tool in tools))

    def tool_line(self, tool: Mapping[str, Any]) -> str:
        function = tool.get("function", tool)
        params = ", ".join((function.get("parameters") or {}).get("properties", {}))
        description = str(function.get("description", "")).split("\n")[0]
        return self.render(
            "tool_line.md", name=function.get("name", ""), params=params, description=description
        )

    def problem(
        self, observation: str, instance_id: str = "", repo: str = "", problem_statement: str = ""
    ) -> str:
        return self.render(
            "problem.md",
            observation=observation,
            instance_id=instance_id,
            repo=repo,
            problem_statement=problem_statement,
        )

    def format_error(self, observation: str, reason: str) -> str:
        return self.render("format_error.md", observation=observation, reason=reason)


def load_prompts(override_dir: str | Path | None = None) -> Prompts:
    """The default templates, with any same-named files from `override_dir` in their place."""
    folder = Path(override_dir) if override_dir else None
    if folder is not None and not folder.is_dir():
        raise ConfigError(
            f"--prompts {folder}: not a folder (expected one holding {', '.join(PLACEHOLDERS)})"
        )
    if folder is not None:
        strays = sorted(p.name for p in folder.glob("*.md") if p.name not in PLACEHOLDERS)
        if strays:
            raise ConfigError(
                f"--prompts {folder}: unknown template(s) {strays}; known: {', '.join(PLACEHOLDERS)}"
            )
    templates, sources = {}, {}
    for name, allowed in PLACEHOLDERS.items():
        path = folder / name if folder is not None and (folder / name).is_file() else DEFAULT_DIR / name
        template = string.Template(path.read_text(encoding="utf-8"))
        _check(template, path, allowed)
        templates[name], sources[name] = template, str(path)
    return Prompts(templates, sources)


def _check(template: string.Template, path: Path, allowed: tuple[str, ...]) -> None:
    if not template.is_valid():
        raise ConfigError(f"{path}: a '$' that is not a placeholder; write '$$' for a literal dollar sign")
    unknown = sorted(set(template.get_identifiers()) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{path}: unknown placeholder(s) {unknown}; this template may use: {', '.join(allowed)}"
        )
