"""The structural bug-injection methods: statements removed, if/else inverted, statements shuffled, and the
class-level ones (a method removed with its uses, a base class removed).

A removal never empties a block (that would not parse); where a removed use of a method was a block's
only statement, `pass` takes its place.
"""

from __future__ import annotations

import random

import libcst as cst

from repogym.synth.mutation import Mutation, method
from repogym.synth.source import SourceFile, Unit, nodes_in


def _removable(source: SourceFile, statement: cst.CSTNode) -> bool:
    """A statement that sits in an indented block with at least one other statement."""
    block = source.parents.get(statement)
    return isinstance(block, cst.IndentedBlock) and len(block.body) > 1


def _remove(source: SourceFile, unit: Unit, name: str, statement: cst.CSTNode) -> Mutation:
    return Mutation(name, unit, ((statement, cst.RemoveFromParent()),), tuple(source.lines(statement)))


@method("ctrl_invert_if", "the bodies of an if and its else swapped", single_line=False)
def _invert_if(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.If,)):
        assert isinstance(node, cst.If)
        if not isinstance(node.orelse, cst.Else):
            continue
        new = node.with_changes(body=node.orelse.body, orelse=node.orelse.with_changes(body=node.body))
        found.append(Mutation("ctrl_invert_if", unit, ((node, new),), tuple(source.header_lines(node))))
    return found


@method("remove_cond", "an if statement (without else) removed", single_line=False)
def _remove_cond(source: SourceFile, unit: Unit) -> list[Mutation]:
    return [
        _remove(source, unit, "remove_cond", node)
        for node in nodes_in(unit.node, (cst.If,))
        if isinstance(node, cst.If) and node.orelse is None and _removable(source, node)
    ]


@method("remove_loop", "a for or while loop removed", single_line=False)
def _remove_loop(source: SourceFile, unit: Unit) -> list[Mutation]:
    return [
        _remove(source, unit, "remove_loop", node)
        for node in nodes_in(unit.node, (cst.For, cst.While))
        if _removable(source, node)
    ]


@method("remove_assign", "an assignment statement removed", single_line=False)
def _remove_assign(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for line in nodes_in(unit.node, (cst.SimpleStatementLine,)):
        assert isinstance(line, cst.SimpleStatementLine)
        if len(line.body) == 1 and isinstance(line.body[0], cst.Assign | cst.AugAssign | cst.AnnAssign):
            if isinstance(line.body[0], cst.AnnAssign) and line.body[0].value is None:
                continue  # `x: int` assigns nothing
            if _removable(source, line):
                found.append(_remove(source, unit, "remove_assign", line))
    return found


@method("remove_wrapper", "a with or try statement replaced by its body", single_line=False)
def _remove_wrapper(source: SourceFile, unit: Unit) -> list[Mutation]:
    found = []
    for node in nodes_in(unit.node, (cst.With, cst.Try)):
        body = getattr(node, "body", None)
        if not isinstance(body, cst.IndentedBlock) or not isinstance(
            source.parents.get(node), cst.IndentedBlock
        ):
            continue
        flattened = cst.FlattenSentinel(list(body.body))
        found.append(Mutation("remove_wrapper", unit, ((node, flattened),), tuple(source.header_lines(node))))
    return found


@method("ctrl_shuffle", "the statements of a function body shuffled", single_line=False)
def _shuffle(source: SourceFile, unit: Unit) -> list[Mutation]:
    if unit.is_class or not isinstance(unit.node.body, cst.IndentedBlock):
        return []
    block = unit.node.body
    statements = list(block.body)
    head = 1 if statements and _is_docstring(statements[0]) else 0
    movable = statements[head:]
    if len(movable) < 2:
        return []
    # One shuffle per function, drawn from the function's own text so it does not depend on the run's order.
    rng = random.Random(f"{unit.file}:{unit.qualname}:{len(source.text)}")
    order = list(range(len(movable)))
    while order == sorted(order):
        rng.shuffle(order)
    new_block = block.with_changes(body=[*statements[:head], *(movable[i] for i in order)])
    return [Mutation("ctrl_shuffle", unit, ((block, new_block),), tuple(unit.body_lines))]


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


@method(
    "class_remove_method",
    "a method removed from its class, with the statements that call it on self",
    single_line=False,
    class_level=True,
)
def _remove_method(source: SourceFile, unit: Unit) -> list[Mutation]:
    node = unit.node
    if not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock):
        return []
    methods = [s for s in node.body.body if isinstance(s, cst.FunctionDef)]
    found = []
    for victim in methods:
        if len(node.body.body) < 2:
            continue  # the class body would be empty
        replacements: list[tuple[cst.CSTNode, object]] = [(victim, cst.RemoveFromParent())]
        lines = set(_body_lines(source, victim))
        for use in _self_calls(node, victim.name.value):
            if victim in _ancestors(source, use):
                continue
            block = source.parents.get(use)
            alone = isinstance(block, cst.IndentedBlock) and len(block.body) == 1
            replacements.append(
                (use, cst.SimpleStatementLine([cst.Pass()]) if alone else cst.RemoveFromParent())
            )
            lines |= set(source.lines(use))
        found.append(Mutation("class_remove_method", unit, tuple(replacements), tuple(sorted(lines))))
    return found


def _body_lines(source: SourceFile, function: cst.CSTNode) -> range:
    """A def's body: the lines that run when it is called (its `def` line runs at import, for everyone)."""
    body = getattr(function, "body", None)
    start = (
        source.positions[body].start.line
        if isinstance(body, cst.IndentedBlock)
        else source.lines(function).start
    )
    return range(start, source.lines(function).stop)


def _method_lines(source: SourceFile, unit: Unit) -> tuple[int, ...]:
    """The body lines of every function defined in a class (nested ones too)."""
    prefix = unit.qualname + "."
    return tuple(
        line
        for other in source.units
        if other.qualname.startswith(prefix) and not other.is_class
        for line in other.body_lines
    )


def _self_calls(class_node: cst.ClassDef, name: str) -> list[cst.SimpleStatementLine]:
    """Statements of the class that are just `self.<name>(...)`."""
    uses = []
    for line in _all(class_node, cst.SimpleStatementLine):
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
            continue
        call = line.body[0].value
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Name)
            and call.func.value.value == "self"
            and call.func.attr.value == name
        ):
            uses.append(line)
    return uses


def _all(root: cst.CSTNode, kind: type) -> list:
    found: list = []

    class _Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, kind):
                found.append(node)
            return True

    root.visit(_Collect())
    return found


def _ancestors(source: SourceFile, node: cst.CSTNode) -> list[cst.CSTNode]:
    chain = []
    current = source.parents.get(node)
    while current is not None:
        chain.append(current)
        current = source.parents.get(current)
    return chain


@method(
    "class_remove_base", "a base class removed from a class statement", single_line=False, class_level=True
)
def _remove_base(source: SourceFile, unit: Unit) -> list[Mutation]:
    node = unit.node
    if not isinstance(node, cst.ClassDef):
        return []
    found = []
    bases = list(node.bases)
    for index, base in enumerate(bases):
        if isinstance(base.value, cst.Name) and base.value.value == "object":
            continue  # removing `object` changes nothing on Python 3
        kept = bases[:index] + bases[index + 1 :]
        if kept and index == len(bases) - 1:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new = node.with_changes(bases=kept)
        if not kept and not node.keywords:
            new = new.with_changes(lpar=cst.MaybeSentinel.DEFAULT, rpar=cst.MaybeSentinel.DEFAULT)
        # The tests that run the class's methods are the ones that use it; a test that only calls inherited
        # methods is missed (it is not chosen, never misjudged).
        found.append(Mutation("class_remove_base", unit, ((node, new),), _method_lines(source, unit)))
    return found
