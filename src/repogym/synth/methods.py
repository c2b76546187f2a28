"""Every bug-injection method, by its stable name (the name recorded in a synthetic task's metadata).

Single-line (the default mix favours them): op_change, op_flip_comparison, op_flip_boolean, op_swap,
op_break_chain, const_off_by_one. Structural: ctrl_invert_if, ctrl_shuffle, remove_cond, remove_loop,
remove_assign, remove_wrapper. Class-level: class_remove_method, class_remove_base.
"""

from __future__ import annotations

from repogym.errors import UnknownNameError
from repogym.synth import ops, structure
from repogym.synth.mutation import METHODS, Method, Mutation

__all__ = [
    "METHODS",
    "Method",
    "Mutation",
    "method_groups",
    "method_names",
    "ops",
    "resolve_methods",
    "structure",
]


def method_names() -> list[str]:
    return METHODS.names()


def method_groups() -> dict[str, list[str]]:
    """Names for sets of methods: `single_line` (the small-model-friendly mix), `structural`, `class`.

    >>> method_groups()["single_line"]
    ['const_off_by_one', 'op_break_chain', 'op_change', 'op_flip_boolean', 'op_flip_comparison', 'op_swap']
    """
    methods = [METHODS.get(name) for name in METHODS.names()]
    return {
        "single_line": [m.name for m in methods if m.single_line],
        "structural": [m.name for m in methods if not m.single_line and not m.class_level],
        "class": [m.name for m in methods if m.class_level],
    }


def resolve_methods(names: list[str] | None = None) -> list[Method]:
    """The methods for these names (all when empty); an unknown name raises UnknownNameError listing the known.

    >>> [m.name for m in resolve_methods(["op_swap", "op_change"])]
    ['op_swap', 'op_change']
    >>> resolve_methods(["op_flip"])
    Traceback (most recent call last):
    ...
    repogym.errors.UnknownNameError: unknown synth method 'op_flip'; known: class_remove_base, class_remove_method, const_off_by_one, ctrl_invert_if, ctrl_shuffle, op_break_chain, op_change, op_flip_boolean, op_flip_comparison, op_swap, remove_assign, remove_cond, remove_loop, remove_wrapper
    """
    known = METHODS.names()
    if not names:
        return [METHODS.get(name) for name in known]
    resolved: list[Method] = []
    for name in names:
        if name not in known:  # never a dotted import: a method is one of ours
            raise UnknownNameError(f"unknown synth method {name!r}; known: {', '.join(known)}")
        if METHODS.get(name) not in resolved:
            resolved.append(METHODS.get(name))
    return resolved
