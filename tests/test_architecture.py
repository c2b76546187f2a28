"""The import graph of src/repogym as the code shows it: imports at the top, no cycles, layers as drawn.

Three rules, each a test that names what broke it:

- Imports live at the top of a module (ruff's PLC0415), except the heavy optional packages listed
  in pyproject.toml's `banned-module-level-imports`, which may only be imported inside the function
  that needs them (TID253). A function-local import of repogym's own module hides a real edge.
- No import cycle between modules at import time: the graph is built from each module's syntax tree
  (module-level imports; `if TYPE_CHECKING:` blocks left out, as they never run).
- Every package -> package import is an arrow of the picture in docs/architecture.md, and every
  arrow of the picture is an import of the code, so the picture cannot drift from the code.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "repogym"
PICTURE = ROOT / "docs" / "architecture.md"
#: Folders of scripts run inside the jail by the task's interpreter: never imported by repogym.
JAIL_SCRIPTS = ("pytest_plugin", "unittest_runner", "spectrum_plugin", "coverage_plugin")
JAIL_FILES = ("repogym/env/fileops.py",)


def test_imports_are_at_the_top_of_each_module_but_the_heavy_optional_ones():
    """ruff PLC0415 + TID253 over src/ (the settings, heavy list and jail exclusions in pyproject.toml)."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "PLC0415,TID253", "--output-format", "concise",
         "--no-cache", "src/"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, (
        "imports inside functions hide the import graph; move them to the top of the module (only the "
        "heavy packages of pyproject.toml's banned-module-level-imports stay inside functions):\n"
        + result.stdout
        + result.stderr
    )


# -- the module graph -------------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def library_modules() -> dict[str, Path]:
    """Every importable module of repogym (the jail's scripts left out), by dotted name."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if any(f"/{folder}/" in relative for folder in JAIL_SCRIPTS) or relative in JAIL_FILES:
            continue
        modules[module_name(path)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements that run when the module is imported: the top level, inside if/try/with blocks."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += _module_level_imports(node.body)
            found += _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            found += _module_level_imports(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                found += _module_level_imports(handler.body)
        elif isinstance(node, ast.With):
            found += _module_level_imports(node.body)
    return found


def _imported(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: set[str]
) -> set[str]:
    """The repogym modules an import statement makes Python run (or find already running).

    `from package import name` needs the package's own module when `name` is not a submodule (a name
    its __init__ defines or re-exports): that is how a package's __init__ and a submodule importing the
    package back form a cycle. `from package.sub import name` needs package.sub (its parents are only
    initialised, they are not asked for a name).
    """
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = importer.split(".") if is_package else importer.split(".")[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        targets = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
        ]
    found = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != importer:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the repogym modules it imports at import time."""
    modules = library_modules()
    names = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[name] = set()
        for node in _module_level_imports(tree.body):
            graph[name] |= _imported(node, name, is_package, names)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path a -> ... -> a) per strongly connected component of more than one module.

    >>> find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    [['a', 'b', 'c', 'a']]
    >>> find_cycles({"a": {"b"}, "b": set()})
    []
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (the graph is deep enough to matter)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_through(sorted(component)[0], component, graph) for component in components]


def _cycle_through(start: str, component: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path start -> ... -> start inside the component (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & component):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if successor not in previous:
                    previous[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"{start} is in a cycle but no path leads back to it")


def test_no_module_imports_itself_back_at_import_time():
    cycles = find_cycles(import_graph())
    assert not cycles, (
        "import cycles (break each by moving the shared type or function down into a module both can import, "
        "not by importing inside a function):\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)
    )


def test_the_graph_sees_a_package_that_re_exports_a_module_importing_it_back():
    """A package's __init__ re-exporting a submodule that does `from package import X` is a cycle."""
    names = {"repogym.pkg", "repogym.pkg.sub", "repogym.pkg.other"}
    init = ast.parse("from repogym.pkg.sub import thing\nX = 1\n")
    sub = ast.parse("from repogym.pkg import X\nfrom repogym.pkg import other\nthing = X\n")
    graph = {
        "repogym.pkg": set().union(
            *(_imported(n, "repogym.pkg", True, names) for n in _module_level_imports(init.body))
        ),
        "repogym.pkg.sub": set().union(
            *(_imported(n, "repogym.pkg.sub", False, names) for n in _module_level_imports(sub.body))
        ),
    }
    assert graph["repogym.pkg.sub"] == {"repogym.pkg", "repogym.pkg.other"}
    assert find_cycles(graph) == [["repogym.pkg", "repogym.pkg.sub", "repogym.pkg"]]
    guarded = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from repogym.pkg import X\n"
    )
    assert _module_level_imports(guarded.body)[1:] == []  # type-only imports never run
