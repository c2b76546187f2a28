"""The import graph of src/repogym as the code shows it: imports at the top, no cycles, layers as drawn.

Three rules, each a test that names what broke it:

- Imports live at the top of a module (ruff's PLC0415), except the heavy optional packages listed
  in pyproject.toml's `banned-module-level-imports`, which may only be imported inside the function
  that needs them (TID253). A function-local import of repogym's own module hides a real edge.
- No import cycle between modules at import time: the graph is built from each module's syntax tree
  (module-level imports; `if TYPE_CHECKING:` blocks left out, as they never run).
- Every package -> package import is an arrow of the picture in docs/architecture.md, and every
  arrow of the picture is an import of the code, so the picture cannot drift from the code; the
  picture has no cycle, so the layers point down. Here every import counts (at the top, inside a
  function, under TYPE_CHECKING): a dependency is a dependency, whenever it is loaded.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
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


# -- the layers, as docs/architecture.md draws them ----------------------------------------------------

_ARROW = re.compile(r"^\s*(\w+)\s*-->\s*(\w+)\s*$")


def package_of(module: str) -> str:
    """The box of the picture a module is in: its package under repogym, `core` for the modules at the top
    of src/repogym, `repogym` for its __init__ (the public names), `cli` for `python -m repogym`."""
    parts = module.split(".")
    if len(parts) == 1:
        return "repogym"
    if parts[1] == "__main__":
        return "cli"
    return parts[1] if (PACKAGE / parts[1]).is_dir() else "core"


def package_imports() -> dict[tuple[str, str], list[str]]:
    """(package, package) -> the imports that make the edge ('module imports module'), from every import
    statement of every module: at the top, inside functions and under TYPE_CHECKING alike."""
    modules = library_modules()
    names = set(modules)
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in sorted(_imported(node, name, is_package, names)):
                    edge = (package_of(name), package_of(target))
                    if edge[0] != edge[1]:
                        edges[edge].append(f"{name} imports {target}")
    return edges


def picture_arrows(text: str) -> set[tuple[str, str]]:
    """The arrows of the mermaid block of docs/architecture.md, one `a --> b` per line.

    >>> sorted(picture_arrows("```mermaid\\ngraph TD\\n    cli --> core\\n    a --> b\\n```\\nx --> y\\n"))
    [('a', 'b'), ('cli', 'core')]
    """
    block = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert block is not None, f"{PICTURE}: no ```mermaid block (the layers' picture)"
    return {(found[1], found[2]) for line in block[1].splitlines() if (found := _ARROW.match(line))}


def test_every_package_import_is_an_arrow_of_the_picture():
    """A new upward (or sideways) import fails here, naming the module that made it."""
    arrows = picture_arrows(PICTURE.read_text(encoding="utf-8"))
    undrawn = {edge: found for edge, found in package_imports().items() if edge not in arrows}
    assert not undrawn, (
        "imports that are not arrows of docs/architecture.md (dependencies point down: move the shared type or "
        "function down to a module both can import; draw the arrow only if it points down):\n"
        + "\n".join(f"{a} --> {b}: {'; '.join(found[:3])}" for (a, b), found in sorted(undrawn.items()))
    )


def test_every_arrow_of_the_picture_is_an_import():
    arrows = picture_arrows(PICTURE.read_text(encoding="utf-8"))
    stale = sorted(arrows - set(package_imports()))
    assert not stale, (
        "arrows of docs/architecture.md that no import makes (take them out of the picture):\n"
        + ("\n".join(f"{a} --> {b}" for a, b in stale))
    )


def test_the_layers_point_down():
    """The picture itself has no cycle, so the imports it holds (all of them) point down."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in picture_arrows(PICTURE.read_text(encoding="utf-8")):
        graph[a].add(b)
        graph.setdefault(b, set())
    cycles = find_cycles(dict(graph))
    assert not cycles, "packages that import each other:\n" + "\n".join(" -> ".join(c) for c in cycles)
