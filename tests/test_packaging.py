"""What the package tells a user to install exists: every `repogym[EXTRA]` named in the code or the docs is an
extra pyproject.toml declares (`pip install 'repogym[swebench]'` once installed nothing: pip only warns of an
unknown extra)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_NAMED_EXTRA = re.compile(r"repogym\\?\[([a-z0-9_,-]+)\\?\]")


def _named_extras() -> dict[str, list[str]]:
    """extra -> the files that name it."""
    named: dict[str, list[str]] = {}
    files = [*(ROOT / "src").rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    for path in files:
        for match in _NAMED_EXTRA.finditer(path.read_text(encoding="utf-8")):
            for extra in match.group(1).split(","):
                named.setdefault(extra, []).append(str(path.relative_to(ROOT)))
    return named


def test_every_extra_a_message_names_is_declared() -> None:
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = _named_extras()
    assert "swebench" in named  # the check reads real messages, not an empty set
    missing = {extra: files for extra, files in named.items() if extra not in declared}
    assert not missing, f"extras named but not declared in pyproject.toml: {missing}"
