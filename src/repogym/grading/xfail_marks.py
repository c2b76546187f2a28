"""Where an xfail mark written in a task's trusted test sources can apply: the judge's guard on XFAIL.

Code under test runs in the test process and is imported while the tests are collected, so it can add an
xfail mark to a running test (found through the stack, gc or ``request.node``), flag a unittest test as an
expected failure, or patch pytest so marks appear while tests are collected. The report plugin ignores marks
added after collection; for the rest, the judge (judge.py) counts an XFAIL as a pass only where this
reading of the trusted sources (test_sources.py: the base commit with the test patch) finds a mark that can
apply to the test.

What counts as an xfail mark that can apply to a test (any spelling whose name holds ``xfail`` or
``expectedFailure``, case aside: ``pytest.mark.xfail``, ``unittest.expectedFailure``, sympy's ``@XFAIL``):

- a decorator on the test function or on an enclosing class, or on the same-named method of a base class
  (in the file, or in a repository module it imports the base from);
- a module or class ``pytestmark``, or any other statement of the module or class body that mentions one
  (``test_x = pytest.mark.xfail(test_x)``, a call applying marks);
- a ``pytest.param(..., marks=...)`` in the test's parametrize, or a module-level name bound to an expression
  holding one (``known_bug = pytest.mark.xfail``, ``CASES = [pytest.param(1, marks=known_bug)]``, a name
  imported from a repository module that binds one);
- a ``conftest.py`` on the test's path (the root's down to the test's folder) that mentions xfail anywhere.

Guarantees: the reading is of trusted text only, the same for every grade of a task (cached per task), and
never says "no mark" for a test that carries one of the marks listed above. A file Python 3 cannot parse
(Python 2 syntax) counts as marked throughout when its text mentions xfail at all.

Not guaranteed: it is a reading, not an evaluation, and errs towards "can apply": a test in a file or under
a conftest that mentions xfail somewhere may be reported XFAIL by code under test. Marks added by plugins the
reading does not follow (``pytest_plugins`` modules, ``-p`` plugins in the configuration, installed plugins)
are not seen: such a test's XFAIL does not count (fail closed; the gold patch then does not resolve, which
the env checker reports). An xfail mark added at run time by the test's own code (``request.applymarker``)
does not count either: the plugin keeps the marks a test had when collection ended.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from repogym import pysyntax
from repogym.grading.test_sources import ReadText, after_test_patch, locate
from repogym.patches import parse_patch

_MARK_WORDS = re.compile(r"xfail|expectedfailure", re.IGNORECASE)
_MAX_IMPORT_DEPTH = 3


@dataclass(frozen=True)
class _Import:
    """A module-level import: `module` (relative at `level`), and `name` in it ('' for the module itself)."""

    module: str
    name: str
    level: int


@dataclass
class _FileMarks:
    """What one file's text says about xfail marks."""

    scopes: set[tuple[str, ...]] = field(default_factory=set)
    """Name paths a mark covers: () the whole file, ("TestC",) a class, ("TestC", "test_x") one test."""
    bases: dict[tuple[str, ...], list[list[str]]] = field(default_factory=dict)
    """Each class's base classes as dotted names, by the class's name path."""
    marked_names: set[str] = field(default_factory=set)
    """Module-level names bound to something that holds a mark."""
    imports: dict[str, _Import] = field(default_factory=dict)
    """Module-level name -> where it was imported from."""


class XfailReading:
    """Which tests an xfail mark in the trusted sources can apply to (see the module docstring). Each file is
    read once, when a test in it (or a class it defines) is first asked about; thread-safe (a race reads a
    file twice, with the same result)."""

    def __init__(self, framework: str, read: ReadText, candidates: Sequence[str] = ()) -> None:
        self.framework = framework
        self.read = read
        self.candidates = tuple(candidates)
        """The files searched for ids that name no file (sympy's: the test patch's Python files)."""
        self._files: dict[str, _FileMarks] = {}
        self._conftests: dict[str, bool] = {}

    def may_xfail(self, test_id: str) -> bool:
        """Whether an xfail mark of the trusted sources can apply to `test_id`.

        >>> source = "import pytest\\nknown = pytest.mark.xfail\\n@known\\ndef test_a(): pass\\ndef test_b(): pass\\n"
        >>> reading = XfailReading("pytest", {"t.py": source}.get)
        >>> reading.may_xfail("t.py::test_a"), reading.may_xfail("t.py::test_b"), reading.may_xfail("u.py::test_a")
        (True, False, False)
        """
        for path, names in locate(self.framework, test_id, self.read, self.candidates):
            if self._conftest_marks(path) or self._covers(path, names, 0):
                return True
        return False

    def _conftest_marks(self, path: str) -> bool:
        folders = PurePosixPath(path).parent.parts
        for depth in range(len(folders) + 1):
            conftest = "/".join([*folders[:depth], "conftest.py"])
            if conftest not in self._conftests:
                text = self.read(conftest)
                self._conftests[conftest] = text is not None and bool(_MARK_WORDS.search(text))
            if self._conftests[conftest]:
                return True
        return False

    def _file(self, path: str, depth: int = 0) -> _FileMarks:
        if path not in self._files:
            text = self.read(path) or ""
            imports = _parse(text)[1]
            imported: set[str] = set()
            if depth < _MAX_IMPORT_DEPTH:  # names bound to a mark in the repository module they come from
                for local, where in imports.items():
                    found = self._import_target(path, where)
                    if found is not None and len(found[1]) == 1 and self._marks_name(found, depth):
                        imported.add(local)
            self._files[path] = _read_file(text, frozenset(imported))
        return self._files[path]

    def _marks_name(self, found: tuple[str, tuple[str, ...]], depth: int) -> bool:
        return found[1][0] in self._file(found[0], depth + 1).marked_names

    def _covers(self, path: str, names: tuple[str, ...], depth: int) -> bool:
        marks = self._file(path)
        if any(names[:cut] in marks.scopes for cut in range(len(names) + 1)):
            return True
        if depth >= _MAX_IMPORT_DEPTH:
            return False
        # A test a class inherits: the base's class marks and its method's decorators apply.
        for cut in range(1, len(names)):
            for base in marks.bases.get(names[:cut], []):
                where = self._resolve(path, marks, base)
                if where is not None and self._covers(where[0], (*where[1], *names[cut:]), depth + 1):
                    return True
        return False

    def _resolve(self, path: str, marks: _FileMarks, dotted: list[str]) -> tuple[str, tuple[str, ...]] | None:
        """(file, name path) of a base class: a class of the same file, or one imported from a repository
        module; None for anything else (``object``, ``unittest.TestCase``, a library's class)."""
        head, rest = dotted[0], tuple(dotted[1:])
        if (head,) in marks.bases:
            return path, (head, *rest)
        where = marks.imports.get(head)
        if where is None:
            return None
        found = self._import_target(path, where)
        if found is None:
            return None
        source, names = found
        # `import pkg.helpers` then `pkg.helpers.Base`: the longest module path wins.
        for cut in range(len(rest), 0, -1):
            module = ".".join([where.module, *rest[:cut]]) if not names else ""
            deeper = _module_file(path, module, where.level, self.read) if module else None
            if deeper is not None:
                return deeper, rest[cut:]
        return source, (*names, *rest)

    def _import_target(self, path: str, where: _Import) -> tuple[str, tuple[str, ...]] | None:
        """(file, names in it) an import names: `from m import C` -> (m's file, ("C",)), unless m.C is a
        module of its own; `import m` -> (m's file, ())."""
        if where.name:
            submodule = _module_file(path, f"{where.module}.{where.name}".lstrip("."), where.level, self.read)
            if submodule is not None:
                return submodule, ()
        source = _module_file(path, where.module, where.level, self.read)
        if source is None:
            return None
        return source, (where.name,) if where.name else ()


def _module_file(importer: str, module: str, level: int, read: ReadText) -> str | None:
    """The repository file of `module` imported from `importer` (relative when `level` > 0), or None."""
    parts = [part for part in module.split(".") if part]
    if level:
        folder = list(PurePosixPath(importer).parent.parts)
        roots = ["/".join(folder[: len(folder) - (level - 1)])]
    else:
        roots = ["", "src"]
    for root in roots:
        stem = "/".join(p for p in [root, *parts] if p)
        for path in (f"{stem}.py", f"{stem}/__init__.py"):
            if stem and read(path) is not None:
                return path
    return None


@functools.lru_cache(maxsize=32)  # syntax trees are large; each reading keeps what it needs of them
def _parse(text: str) -> tuple[ast.Module | None, dict[str, _Import]]:
    """The file's syntax tree (None when Python 3 cannot parse it) and its module-level imports."""
    try:
        tree = pysyntax.parse(text)
    except (SyntaxError, ValueError):
        return None, {}
    imports: dict[str, _Import] = {}
    for statement in _flat(tree.body):
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                imports[alias.asname or alias.name] = _Import(
                    statement.module or "", alias.name, statement.level
                )
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    imports[alias.asname] = _Import(alias.name, "", 0)
                else:
                    imports[alias.name.split(".")[0]] = _Import(alias.name.split(".")[0], "", 0)
    return tree, imports


@functools.lru_cache(maxsize=128)
def _read_file(text: str, imported_marks: frozenset[str]) -> _FileMarks:
    """The marks of one file's text, `imported_marks` being the names it imports that are bound to a mark
    where they come from (cached by text: a test file is read once per process)."""
    tree, imports = _parse(text)
    marks = _FileMarks(imports=dict(imports))
    if tree is None:
        if _MARK_WORDS.search(text):
            marks.scopes.add(())  # Python 2 syntax: the whole file, since it mentions a mark
        return marks
    _collect_bases(tree.body, (), marks)
    if not imported_marks and not _MARK_WORDS.search(text):
        return marks
    marks.marked_names = _marked_names(tree.body, set(imported_marks))
    _walk(tree.body, (), marks)
    return marks


def _mentions(node: ast.AST, marked: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (sub.id in marked or _MARK_WORDS.search(sub.id)):
            return True
        if isinstance(sub, ast.Attribute) and _MARK_WORDS.search(sub.attr):
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and _MARK_WORDS.search(sub.value):
            return True
    return False


def _marked_names(body: list[ast.stmt], marked: set[str]) -> set[str]:
    """Module-level names bound to an expression holding a mark, to a fixed point (a = xfail; b = a(...))."""
    while True:
        before = len(marked)
        for statement in _flat(body):
            if (
                isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign)
                and statement.value is not None
            ):
                if _mentions(statement.value, marked):
                    marked |= {name for target in _targets(statement) for name in _bound_names(target)}
            elif isinstance(statement, ast.ImportFrom | ast.Import):
                marked |= {a.asname or a.name for a in statement.names if _MARK_WORDS.search(a.name)}
        if len(marked) == before:
            return marked


def _flat(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """The statements of a body and of the if / try / with / for blocks in it (not of defs or classes)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list):
                yield from _flat([s for s in inner if isinstance(s, ast.stmt)])
        for handler in getattr(statement, "handlers", None) or []:
            yield from _flat(handler.body)


def _targets(statement: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]


def _bound_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _bound_names(element)]
    return []


def _dotted_name(node: ast.expr) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else []


def _walk(body: list[ast.stmt], scope: tuple[str, ...], marks: _FileMarks) -> None:
    """Record the scopes a mark covers in a module or class body (`scope`: its name path)."""
    marked = marks.marked_names
    for statement in _flat(body):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(_mentions(decorator, marked) for decorator in statement.decorator_list):
                marks.scopes.add((*scope, statement.name))
        elif isinstance(statement, ast.ClassDef):
            inner = (*scope, statement.name)
            if any(_mentions(decorator, marked) for decorator in statement.decorator_list):
                marks.scopes.add(inner)
            _walk(statement.body, inner, marks)
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            if statement.value is not None and _mentions(statement.value, marked):
                for target in _targets(statement):
                    path = _dotted_name(target)
                    # pytestmark, or a name a mark is applied to (`test_x = xfail(test_x)`); a subscript or
                    # an unpacking: anything in scope.
                    marks.scopes.add(scope if path in (["pytestmark"], []) else (*scope, *path))
        elif isinstance(statement, ast.Expr) and _mentions(statement, marked):
            marks.scopes.add(scope)  # a call that may apply a mark to anything in scope


def _collect_bases(body: list[ast.stmt], scope: tuple[str, ...], marks: _FileMarks) -> None:
    for statement in _flat(body):
        if isinstance(statement, ast.ClassDef):
            inner = (*scope, statement.name)
            marks.bases[inner] = [name for name in map(_dotted_name, statement.bases) if name]
            _collect_bases(statement.body, inner, marks)


@functools.lru_cache(maxsize=64)
def reading_for(framework: str, pristine: str, test_patch: str) -> XfailReading:
    """The `XfailReading` of a task's trusted sources: the same for every grade of a task, so cached (keyed by
    the checkout and the test patch)."""
    read = functools.lru_cache(maxsize=256)(after_test_patch(Path(pristine), test_patch))
    sections = (parse_patch(test_patch) or []) if test_patch.strip() else []
    candidates = [s.path for s in sections if s.path.endswith(".py") and not s.is_removed_file]
    return XfailReading(framework, read, candidates)
