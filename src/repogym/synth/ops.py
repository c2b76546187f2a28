"""Expression-level bug injection: operators, comparisons, booleans, swapped operands, broken chains, constants.

Each is a single-line change, the default mix's favourite: the gold patch is one line, which is what a
small model can learn to repair from the lines around it. Names follow SWE-smith's procedural families
(swesmith/bug_gen/procedural) without their prefixes.
"""

from __future__ import annotations

import libcst as cst

from repogym.synth.mutation import Mutation, method
from repogym.synth.source import SourceFile, Unit, nodes_in


def _expression(source: SourceFile, unit: Unit, name: str, node: cst.CSTNode, new: cst.CSTNode) -> Mutation:
    lines = source.header_lines(source.statement_of(node))
    return Mutation(name, unit, ((node, new),), tuple(lines))


def _spaced(op: cst.CSTNode, kind: type) -> cst.CSTNode:
    """A new operator of `kind` with the old one's spacing."""
    before = getattr(op, "whitespace_before", cst.SimpleWhitespace(" "))
    after = getattr(op, "whitespace_after", cst.SimpleWhitespace(" "))
    if kind in (cst.NotIn, cst.IsNot):
        return kind(
            whitespace_before=before, whitespace_between=cst.SimpleWhitespace(" "), whitespace_after=after
        )
    return kind(whitespace_before=before, whitespace_after=after)


_STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)

# + <-> -, * <-> /, // <-> %, ** -> *, << <-> >>, & <-> |, ^ -> &
_ARITHMETIC = {
    cst.Add: cst.Subtract,
    cst.Subtract: cst.Add,
    cst.Multiply: cst.Divide,
    cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Modulo,
    cst.Modulo: cst.FloorDivide,
    cst.Power: cst.Multiply,
    cst.LeftShift: cst.RightShift,
    cst.RightShift: cst.LeftShift,
    cst.BitAnd: cst.BitOr,
    cst.BitOr: cst.BitAnd,
    cst.BitXor: cst.BitAnd,
}
_AUGMENTED = {
    cst.AddAssign: cst.SubtractAssign,
    cst.SubtractAssign: cst.AddAssign,
    cst.MultiplyAssign: cst.DivideAssign,
    cst.DivideAssign: cst.MultiplyAssign,
    cst.FloorDivideAssign: cst.ModuloAssign,
    cst.ModuloAssign: cst.FloorDivideAssign,
}
_COMPARISON = {
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.LessThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThan,
    cst.GreaterThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.GreaterThan,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
}
#: Operators whose operands' order matters (swapping `a + b` of numbers changes nothing).
_ORDERED_BINARY = (
    cst.Subtract,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
    cst.LeftShift,
    cst.RightShift,
)
_ORDERED_COMPARISON = (
    cst.LessThan,
    cst.LessThanEqual,
    cst.GreaterThan,
    cst.GreaterThanEqual,
    cst.In,
    cst.NotIn,
)


@method(
    "op_change", "an arithmetic or bitwise operator changed (+ -, * /, // %, << >>, & |)", single_line=True
)
def _op_change(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.BinaryOperation, cst.AugAssign)):
        if isinstance(node, cst.BinaryOperation):
            new_kind = _ARITHMETIC.get(type(node.operator))
            if new_kind is None or isinstance(node.left, _STRINGS) or isinstance(node.right, _STRINGS):
                continue  # "a" - "b" is a TypeError, not a bug worth a task
            found.append(
                _expression(
                    source,
                    unit,
                    "op_change",
                    node,
                    node.with_changes(operator=_spaced(node.operator, new_kind)),
                )
            )
        else:
            new_kind = _AUGMENTED.get(type(node.operator))
            if new_kind is not None:
                found.append(
                    _expression(
                        source,
                        unit,
                        "op_change",
                        node,
                        node.with_changes(operator=_spaced(node.operator, new_kind)),
                    )
                )
    return found


@method(
    "op_flip_comparison",
    "a comparison flipped (== !=, < >=, > <=, in / not in, is / is not)",
    single_line=True,
)
def _flip_comparison(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.Comparison,)):
        for index, target in enumerate(node.comparisons):
            new_kind = _COMPARISON.get(type(target.operator))
            if new_kind is None:
                continue
            targets = list(node.comparisons)
            targets[index] = target.with_changes(operator=_spaced(target.operator, new_kind))
            found.append(
                _expression(source, unit, "op_flip_comparison", node, node.with_changes(comparisons=targets))
            )
    return found


@method("op_flip_boolean", "a boolean operator flipped (and / or) or a `not` dropped", single_line=True)
def _flip_boolean(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.BooleanOperation, cst.UnaryOperation)):
        if isinstance(node, cst.BooleanOperation):
            new_kind = cst.Or if isinstance(node.operator, cst.And) else cst.And
            found.append(
                _expression(
                    source,
                    unit,
                    "op_flip_boolean",
                    node,
                    node.with_changes(operator=_spaced(node.operator, new_kind)),
                )
            )
        elif isinstance(node.operator, cst.Not):
            inner = node.expression
            # `not(x)` keeps its parentheses when the `not` goes; a bare `not x` needs none.
            found.append(_expression(source, unit, "op_flip_boolean", node, inner))
    return found


@method(
    "op_swap", "the operands of a binary operator or comparison swapped (a - b -> b - a)", single_line=True
)
def _swap(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.BinaryOperation, cst.Comparison)):
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, _ORDERED_BINARY):
                new = node.with_changes(left=node.right, right=node.left)
                found.append(_expression(source, unit, "op_swap", node, new))
        elif len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, _ORDERED_COMPARISON):
            target = node.comparisons[0]
            new = node.with_changes(
                left=target.comparator, comparisons=[target.with_changes(comparator=node.left)]
            )
            found.append(_expression(source, unit, "op_swap", node, new))
    return found


@method(
    "op_break_chain",
    "one operand of a chain of binary or boolean operators dropped (a + b + c -> a + c)",
    single_line=True,
)
def _break_chain(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.BinaryOperation, cst.BooleanOperation)):
        left = node.left
        if type(left) is not type(node) or left.lpar or node.lpar:
            continue
        # (a op1 b) op2 c: keep a op2 c (drop b) or a op1 b (drop c)
        assert isinstance(left, cst.BinaryOperation | cst.BooleanOperation)
        found.append(_expression(source, unit, "op_break_chain", node, node.with_changes(left=left.left)))
        found.append(
            _expression(
                source, unit, "op_break_chain", node, left.with_changes(lpar=node.lpar, rpar=node.rpar)
            )
        )
    return found


def _integer(value: int) -> cst.BaseExpression:
    return (
        cst.Integer(str(value)) if value >= 0 else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-value)))
    )


@method("const_off_by_one", "an integer constant moved by one (n -> n + 1 or n - 1)", single_line=True)
def _off_by_one(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.Integer,)):
        try:
            value = int(node.value.replace("_", ""), 0)
        except ValueError:
            continue
        for delta in (1, -1):
            found.append(_expression(source, unit, "const_off_by_one", node, _integer(value + delta)))
    return found
