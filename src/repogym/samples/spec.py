"""What a sample library is made of: its initial files and the changes its history applies to them.

A `LibrarySpec` is pure data (source text with the placeholder `__pkg__` for the
import name). The planner in `repogym.samples.plan` turns it into commits;
nothing here touches git.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from repogym import pysyntax

#: Stands for the package's import name in paths and source text.
PKG = "__pkg__"


@dataclass(frozen=True)
class Edit:
    """Replace `old` (which must occur exactly once) by `new`; an empty `old` appends `new` to the file."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Change:
    """One commit's worth of edits with its message (features, refactors, tests-only and docs commits)."""

    message: str
    edits: tuple[Edit, ...]
    changelog: str = ""
    """A line for CHANGELOG.md's "Unreleased" section, or empty for none."""


@dataclass(frozen=True)
class BugSpec:
    """A bug planted by one commit and fixed later together with a regression test."""

    slug: str
    path: str
    good: str
    """The correct code as it first appears in `path`."""
    bad: str
    """What the bug-introducing commit turns `good` into; no existing test notices."""
    intro_message: str
    """The bug-introducing commit's message: an innocent-looking clean-up."""
    fix_title: str
    fix_body: str
    test_path: str
    regression_test: str
    """Test functions appended to `test_path` by the fix; each fails while the bug is present."""
    issue_title: str
    issue_body: str
    hints: tuple[str, ...] = ()
    """Comments on the issue before the fix (a maintainer narrowing it down)."""
    fixed: str = ""
    """The code after the fix; empty means `good`."""

    @property
    def fixed_code(self) -> str:
        return self.fixed or self.good

    @property
    def test_names(self) -> tuple[str, ...]:
        return collect_test_names(self.regression_test)


@dataclass(frozen=True)
class LibrarySpec:
    """A small library: initial modules and tests, and the changes its history is built from."""

    kind: str
    names: tuple[str, ...]
    summary: str
    modules: Mapping[str, str]
    """File name under src/<package>/ -> source."""
    tests: Mapping[str, str]
    """File name under tests/ -> source."""
    usage: str
    """A Python snippet for the README's usage section."""
    features: tuple[Change, ...]
    refactors: tuple[Change, ...]
    tests_only: tuple[Change, ...]
    docs: tuple[Change, ...]
    bugs: tuple[BugSpec, ...] = field(default=())


def apply_edit(text: str, edit: Edit, where: str) -> str:
    """`text` with `edit` applied; a missing or ambiguous `old` is a defect in the spec.

    >>> apply_edit("a = 1\\n", Edit("m.py", "1", "2"), "m.py")
    'a = 2\\n'
    >>> apply_edit("a = 1\\n", Edit("m.py", "", "b = 2\\n"), "m.py")
    'a = 1\\n\\n\\nb = 2\\n'
    """
    if not edit.old:
        return text.rstrip("\n") + "\n\n\n" + edit.new.strip("\n") + "\n"
    count = text.count(edit.old)
    if count != 1:
        raise ValueError(
            f"{where}: edit of {edit.path} expects its old text once, found it {count} times:\n{edit.old}"
        )
    return text.replace(edit.old, edit.new)


def collect_test_names(source: str) -> tuple[str, ...]:
    """Names of the top-level pytest test functions in `source`, in file order.

    >>> collect_test_names("import x\\n\\ndef test_a():\\n    pass\\n\\ndef helper():\\n    pass\\n")
    ('test_a',)
    """
    tree = pysyntax.parse(source)
    return tuple(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    )


def render(text: str, package: str) -> str:
    """Source or path text with the package placeholder filled in.

    >>> render("from __pkg__ import ops", "spanwise")
    'from spanwise import ops'
    """
    return text.replace(PKG, package)
