"""One Python source file as libcst sees it: its functions and classes, their lines, and rewriting one node.

libcst keeps the file's formatting (comments, spacing, quotes), so an injected bug changes only the
tokens it means to change and the gold patch is the smallest diff. Nodes are found in the metadata
wrapper's module (libcst copies the tree when it wraps it), so node identity is what a rewrite targets.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from repogym import pysyntax
from repogym.errors import ConfigError

#: A replacement for a node: a new node, libcst's RemoveFromParent(), or a FlattenSentinel of statements.
Replacement = Any


@dataclass(frozen=True)
class Unit:
    """A function or method (or a class, for the class-level methods) that mutations target."""

    file: str
    qualname: str
    """Dotted name inside the module: `parse`, `Interval.overlaps`, `outer.inner`."""
    node: cst.FunctionDef | cst.ClassDef
    body_start: int
    """First line of the body (1-based); lines before it run at import time, not when tests call it."""
    end: int
    """Last line of the unit."""

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, cst.ClassDef)

    @property
    def body_lines(self) -> range:
        return range(self.body_start, self.end + 1)


@dataclass
class SourceFile:
    """A parsed file with positions and parents of every node, and its units."""

    path: str
    text: str
    module: cst.Module
    positions: Mapping[cst.CSTNode, Any]
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    units: list[Unit] = field(default_factory=list)

    @classmethod
    def parse(cls, path: str, text: str) -> SourceFile:
        """Parse `text`; raises ConfigError naming the file (and line) when it is not valid UTF-8 Python."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # Read with surrogateescape: the bytes are not UTF-8 (a latin-1 coding cookie, say). The gold
            # patch and the commits are UTF-8 text, so such a file is left alone rather than re-encoded.
            raise ConfigError(f"{path}: not UTF-8 text; synth mutates UTF-8 sources only") from None
        try:
            wrapper = MetadataWrapper(cst.parse_module(text))
        except cst.ParserSyntaxError as exc:
            raise ConfigError(f"{path}:{exc.raw_line}: does not parse: {exc.message}") from None
        source = cls(
            path=path,
            text=text,
            module=wrapper.module,
            positions=wrapper.resolve(PositionProvider),
            parents=wrapper.resolve(ParentNodeProvider),
        )
        source.units = _find_units(source)
        return source

    def lines(self, node: cst.CSTNode) -> range:
        position = self.positions[node]
        return range(position.start.line, position.end.line + 1)

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The innermost statement holding `node` (itself when it is one)."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(
            current, cst.SimpleStatementLine | cst.BaseCompoundStatement
        ):
            current = self.parents.get(current)
        return current if current is not None else node

    def header_lines(self, statement: cst.CSTNode) -> range:
        """Lines a statement runs when it is reached: a simple statement's lines, a compound one's header."""
        lines = self.lines(statement)
        body = getattr(statement, "body", None)
        if isinstance(statement, cst.BaseCompoundStatement) and isinstance(body, cst.IndentedBlock):
            first_body = self.positions[body].start.line
            return range(lines.start, max(lines.start + 1, first_body))
        return lines

    def rewrite(self, replacements: Mapping[cst.CSTNode, Replacement]) -> str:
        """The file's text with each node (by identity) replaced, removed or flattened."""
        return self.module.visit(_Replace(dict(replacements))).code


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self._by_id = {id(node): new for node, new in replacements.items()}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        replacement = self._by_id.get(id(original_node))
        if replacement is None:
            return updated_node
        return replacement


class _UnitFinder(cst.CSTVisitor):
    def __init__(self, source: SourceFile) -> None:
        super().__init__()
        self.source = source
        self.scope: list[str] = []
        self.units: list[Unit] = []

    def _enter(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        self.scope.append(node.name.value)
        body = node.body
        if isinstance(
            body, cst.IndentedBlock
        ):  # `def f(): return 1` on one line has no body lines of its own
            positions = self.source.positions
            self.units.append(
                Unit(
                    file=self.source.path,
                    qualname=".".join(self.scope),
                    node=node,
                    body_start=positions[body].start.line,
                    end=positions[node].end.line,
                )
            )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scope.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scope.pop()


def _find_units(source: SourceFile) -> list[Unit]:
    finder = _UnitFinder(source)
    source.module.visit(finder)
    return finder.units


def nodes_in(unit_node: cst.CSTNode, kinds: tuple[type, ...]) -> list[cst.CSTNode]:
    """Nodes of `kinds` inside a unit's body, in source order, not descending into nested functions or classes
    (each of those is a unit of its own)."""
    found: list[cst.CSTNode] = []

    class _Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is not unit_node and isinstance(node, cst.FunctionDef | cst.ClassDef):
                return False
            if isinstance(node, kinds):
                found.append(node)
            return True

    body = getattr(unit_node, "body", None)
    if body is not None:
        body.visit(_Collect())
    return found


def same_program(old: str, new: str) -> bool:
    """True when two sources compile to the same syntax tree (a mutation that changed nothing that runs).

    >>> same_program("x = a + b  # sum", "x = (a + b)")
    True
    >>> same_program("x = a + b", "x = a - b")
    False
    """
    try:
        return ast.dump(pysyntax.parse(old)) == ast.dump(pysyntax.parse(new))
    except SyntaxError:
        return False


def compiles(text: str, path: str) -> str:
    """'' when `text` compiles, else why not (libcst accepts some code CPython refuses, e.g. a moved
    `nonlocal`)."""
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""
