"""Each bug-injection method on a small function: the change it makes, and code that still compiles."""

from __future__ import annotations

import pytest

from repogym.errors import ConfigError, UnknownNameError
from repogym.synth.methods import METHODS, method_names, resolve_methods
from repogym.synth.source import SourceFile, compiles, same_program

SOURCE = '''"""A module."""


class Base:
    pass


class Box(Base, dict):
    def __init__(self, size):
        self.size = size
        self._check()

    def _check(self):
        if self.size < 0:
            raise ValueError("negative")

    def grow(self, by):
        return Box(self.size + by)


def f(a, b, items):
    """Doc."""
    total = a - b * 2
    if a < b and not items:
        total += 1
    else:
        total = 0
    for item in items:
        total = total + item
    with open("x") as handle:
        handle.read()
    try:
        total = total // 3
    except ZeroDivisionError:
        pass
    return total
'''


def mutations(name: str, unit: str):
    source = SourceFile.parse("m.py", SOURCE)
    target = next(u for u in source.units if u.qualname == unit)
    found = METHODS.get(name).find(source, target)
    return source, [source.rewrite(dict(m.replacements)) for m in found], found


def changed_lines(new: str) -> list[tuple[str, str]]:
    old_lines, new_lines = SOURCE.splitlines(), new.splitlines()
    return [(o.strip(), n.strip()) for o, n in zip(old_lines, new_lines, strict=False) if o != n]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("op_change", ("total = a - b * 2", "total = a + b * 2")),
        ("op_flip_comparison", ("if a < b and not items:", "if a >= b and not items:")),
        ("op_flip_boolean", ("if a < b and not items:", "if a < b or not items:")),
        ("op_swap", ("total = a - b * 2", "total = b * 2 - a")),
        ("const_off_by_one", ("total = a - b * 2", "total = a - b * 3")),
    ],
)
def test_single_line_methods_change_exactly_one_line(name, expected):
    _, texts, found = mutations(name, "f")
    assert all(m.method == name for m in found)
    assert all(compiles(text, "m.py") == "" for text in texts)
    singles = [changed_lines(text) for text in texts if len(SOURCE.splitlines()) == len(text.splitlines())]
    assert [expected] in singles
    assert all(len(lines) == 1 for lines in singles)  # one line each, the rest of the file untouched


def test_break_chain_drops_one_operand_of_a_chain():
    source = SourceFile.parse("c.py", "def g(a, b, c):\n    return a + b + c\n")
    unit = source.units[0]
    found = [source.rewrite(dict(m.replacements)) for m in METHODS.get("op_break_chain").find(source, unit)]
    assert sorted(found) == ["def g(a, b, c):\n    return a + b\n", "def g(a, b, c):\n    return a + c\n"]


def test_invert_if_swaps_the_bodies():
    _, texts, _ = mutations("ctrl_invert_if", "f")
    assert len(texts) == 1
    assert "    if a < b and not items:\n        total = 0\n    else:\n        total += 1\n" in texts[0]


@pytest.mark.parametrize(
    ("name", "gone"),
    [
        ("remove_loop", "for item in items:"),
        ("remove_assign", "total = a - b * 2"),
        ("remove_wrapper", "with open"),
        ("remove_wrapper", "try:"),
    ],
)
def test_removals_take_the_statement_out_and_keep_the_file_valid(name, gone):
    _, texts, _ = mutations(name, "f")
    assert any(gone not in text for text in texts)
    assert all(compiles(text, "m.py") == "" for text in texts)


def test_remove_wrapper_keeps_the_body_at_the_outer_indentation():
    _, texts, _ = mutations("remove_wrapper", "f")
    without_with = next(t for t in texts if "with open" not in t)
    assert "\n    handle.read()\n" in without_with


def test_removal_never_empties_a_block():
    source = SourceFile.parse("e.py", "def g(x):\n    if x:\n        y = 1\n    return x\n")
    found = METHODS.get("remove_assign").find(source, source.units[0])
    assert found == []  # `y = 1` is its block's only statement


def test_shuffle_reorders_the_body_and_keeps_the_docstring_first():
    _, texts, _ = mutations("ctrl_shuffle", "f")
    assert len(texts) == 1 and texts[0] != SOURCE
    body = texts[0].split("def f(a, b, items):\n", 1)[1]
    assert body.startswith('    """Doc."""\n')
    assert sorted(body.splitlines()) == sorted(SOURCE.split("def f(a, b, items):\n", 1)[1].splitlines())


def test_remove_method_also_removes_its_calls_on_self():
    _, texts, found = mutations("class_remove_method", "Box")
    check_removed = next(t for t in texts if "def _check" not in t)
    assert "self._check()" not in check_removed
    assert all(m.method == "class_remove_method" for m in found)


def test_remove_base_drops_one_base_at_a_time():
    _, texts, _ = mutations("class_remove_base", "Box")
    assert sorted(line for t in texts for line in t.splitlines() if line.startswith("class Box")) == [
        "class Box(Base):",
        "class Box(dict):",
    ]


def test_class_level_methods_do_not_apply_to_functions_and_vice_versa():
    assert mutations("class_remove_method", "f")[1] == []
    assert all(METHODS.get(n).class_level == n.startswith("class_") for n in method_names())


def test_same_program_sees_through_formatting_but_not_through_a_change():
    assert same_program("x = a + b\n", "x = (a + b)  # same\n")
    assert not same_program("x = a + b\n", "x = a - b\n")


def test_an_unknown_method_lists_the_known_ones():
    with pytest.raises(UnknownNameError) as caught:
        resolve_methods(["op_flip"])
    assert "op_flip_comparison" in str(caught.value) and "class_remove_base" in str(caught.value)
    assert [m.name for m in resolve_methods(["op_swap", "op_change", "op_swap"])] == ["op_swap", "op_change"]


def test_a_file_that_does_not_parse_names_its_line():
    with pytest.raises(ConfigError, match=r"^bad\.py:\d+: does not parse"):
        SourceFile.parse("bad.py", "def f(:\n    pass\n")


def test_every_method_has_a_site_in_the_sample_libraries_code():
    # The sample repositories are where the "every method represented" figure is measured: a method with no
    # site there (class_remove_base had none before textutils' WidthError) silently drops out of it.
    from repogym.samples import LIBRARIES
    from repogym.samples.spec import render

    found: set[str] = set()
    for kind in LIBRARIES.names():
        for name, text in LIBRARIES.get(kind).modules.items():
            source = SourceFile.parse(name, render(text, "pkg"))
            for unit in source.units:
                found |= {
                    m.method for method in method_names() for m in METHODS.get(method).find(source, unit)
                }
    assert found == set(method_names())
