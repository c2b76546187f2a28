"""The seam of bug injection: a `Method` (a stable name and a finder of sites) and the `Mutation`s it finds.

A method looks at one unit (a function, or a class for the class-level methods) of a parsed file and
returns every `Mutation` it could make there; `repogym.synth.inject` picks among them. The methods
themselves live in `ops` (expressions) and `structure` (statements, classes); `methods` lists them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from repogym.registry import Registry
from repogym.synth.source import Replacement, SourceFile, Unit


@dataclass(frozen=True)
class Mutation:
    """One concrete change: which nodes become what, and which lines' tests can notice it."""

    method: str
    unit: Unit
    replacements: tuple[tuple[cst.CSTNode, Replacement], ...]
    affected_lines: tuple[int, ...]
    """Lines of the original file whose tests are the ones this change can break (coverage picks them)."""


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    single_line: bool
    """The gold patch is (almost always) one changed line."""
    class_level: bool
    """Applies to classes, not to functions."""
    find: Callable[[SourceFile, Unit], list[Mutation]]


METHODS: Registry[Method] = Registry("synth method")


def method(name: str, description: str, *, single_line: bool, class_level: bool = False):  # type: ignore[no-untyped-def]
    def decorator(
        find: Callable[[SourceFile, Unit], list[Mutation]],
    ) -> Callable[[SourceFile, Unit], list[Mutation]]:
        METHODS.add(name, Method(name, description, single_line, class_level, find))
        return find

    return decorator
