"""The grader's canary: a test it adds to the task's tests that must be reported FAILED, or the report lied.

Code under test runs in the same process as the test runner, so it can rewrite the report, monkeypatch the
plugin or pytest itself, or write a report of its own and exit. What it cannot do is know which of the tests
it sees was put there by the grader to fail. The canary is a copy of one FAIL_TO_PASS test under a fresh
random name, in the same test file, with the same fixtures and marks (xfail marks dropped), that runs the
original test and then fails a plain ``assert`` of its own, as any failing test of the file fails. So:

- a forger that turns failures into passes (all of them, or those of tests that touched its code, or those
  of the tests the test patch added, or those that raised an ``AssertionError`` or any ``Exception``) turns
  the canary into a pass too: the grade is REPORT_FORGED;
- a forger that removes ``assert`` statements from the test modules (rewriting their syntax trees at
  import) removes the canary's too: it passes, REPORT_FORGED;
- a forger that writes a report of its own without running the tests leaves the canary out: a report that
  resolves everything but has no failed canary is REPORT_FORGED too;
- a forger that marks the tests xfail while they are collected marks the canary too, and a canary reported
  XFAIL is REPORT_FORGED (unless the trusted sources can xfail the canary's class or module: then it is
  read as an honest failure, see judge.py);
- an honest run fails the canary whatever the patch: the original test fails it on a wrong fix (its own
  exception, as it is), the assertion on a right one.

Every graded run has one where the framework allows (pytest, unittest) and a FAIL_TO_PASS test can be found
in a file that exists after the test patch: a file of the test patch or, for synthetic tasks (no test patch),
the file the test id names (test_sources.py). It is never in an agent's episode (only grading adds it,
after the test patch), its name and values are new each grade, and the grader removes the patch files from
the jail's inbox before the tests run, so the canary's lines are indistinguishable by origin from the task's.

What a forger sees of it: where the file's text can be known on the host (it parses as Python 3, has no carriage
returns, and the test is a ``def`` at the place its id names, without an expected-failure decorator), the canary is
a textual copy of the test written beside it (canary_copy.py): the same decorators, signature and body under a new
name (``test_add`` -> ``test_edge42_add``), one ``assert`` comparing two numbers more at its end. Its source and code
object are its own, like every other test's. A forger can still tell it apart by reading the file (two tests with
the same body, one with an extra assertion of two constants); see grade.py's "Not guaranteed". Elsewhere it is
the code appended at the file's end (below): a function made at run time with ``functools.wraps``, whose
``__wrapped__`` points at the test it copies, which a forger that follows ``inspect``'s view of it treats
differently from a test. Under ``python -O`` (asserts removed) the canary passes and every grade is
REPORT_FORGED: fail closed, and the gold patch's grade shows it.

The appended code is Python 2.7 and 3.6+ (no f-strings, no ``exec`` statement), needs only the
standard library, and falls back to a plain failing test of the same name when it cannot find the test to
copy (a static method, a test made at collection); a FAIL_TO_PASS id that is no attribute path (a doctest)
gets no canary.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from repogym.grading.canary_copy import copied_canary_text

_WORDS = ("again", "basic", "case", "check", "edge", "extra", "input", "more", "other", "repeat", "second")

# One helper function, called and deleted at once: afterwards the module holds the canary (or its class
# holds it) and nothing else new. `make` gives a fresh test each call, so a copy that goes wrong half-way
# never leaks the copied test's marks into the plain fallback. The canary's code is the module's own, so
# pytest rewrites its assert like the others, and a forger that strips asserts strips it too.
# A parametrized test is copied with its first case only (the canary need not run them all); when that
# cannot be done safely (an argument list that is an iterator, which two tests cannot share), or anything
# else goes wrong, the canary stays a plain failing test.
# A coroutine test is awaited by a wrapper made with eval(compile(...)), not exec (a statement under Python
# 2, with rules of its own inside nested functions), which then calls the plain canary for the assertion.
# Cost: pytest's report of an assertion failure (traceback, assertion introspection) is about 30 ms of CPU
# more per grade than the pytest.fail(pytrace=False) this canary once used (toy task, 60 interleaved runs
# each in the jail: median 497 against 466 ms of pytest's CPU time, on a loaded 2-core machine).
_TEMPLATE = """


def _{tag}():
    import functools
    import inspect
    import types

    def make(original):
        def {name}(*args, **kwargs):
            if original is not None:
                original(*args, **kwargs)
            assert {got} - {want} == 0
        return {name}

    def first_case(mark):
        import pytest
        names, values = mark.args[:2] if len(mark.args) >= 2 else (mark.args[0], mark.kwargs["argvalues"])
        if not isinstance(values, (list, tuple, type(range(0)))):
            raise TypeError("parametrize values that are not a sequence cannot be shared")
        options = dict((key, value) for key, value in mark.kwargs.items() if key != "argvalues")
        if isinstance(options.get("ids"), (list, tuple)):
            options["ids"] = list(options["ids"])[:1]
        return pytest.mark.parametrize(names, list(values)[:1], **options).mark

    def copy(found, name):
        if not isinstance(found, types.FunctionType):
            raise TypeError(name)
        old_style = getattr(found, "parametrize", None)  # pytest < 3.6 kept marks as attributes
        for mark in getattr(old_style, "_marks", [old_style] if old_style is not None else []):
            if not isinstance(mark.args[1] if len(mark.args) > 1 else None, (list, tuple, type(range(0)))):
                raise TypeError("parametrize values that are not a sequence cannot be shared")
        marks = getattr(found, "pytestmark", None)
        if isinstance(marks, list):
            marks = [first_case(mark) if getattr(mark, "name", None) == "parametrize" else mark
                     for mark in marks if getattr(mark, "name", None) != "xfail"]
        if getattr(inspect, "iscoroutinefunction", None) is not None and inspect.iscoroutinefunction(found):
            space = {{"original": found, "then": make(None)}}
            eval(compile("async def {name}(*args, **kwargs):\\n"
                         "    await original(*args, **kwargs)\\n"
                         "    then()\\n", found.__code__.co_filename, "exec"), space)
            test = space[name]
        else:
            test = make(found)
        test = functools.wraps(found)(test)
        test.__wrapped__ = found
        test.__name__ = name
        qualname = getattr(found, "__qualname__", None)
        if qualname is not None:
            test.__qualname__ = qualname.rpartition(".")[0] + "." + name if "." in qualname else name
        if isinstance(marks, list):
            test.pytestmark = marks
        for attribute in ("xfail", "__unittest_expecting_failure__"):
            test.__dict__.pop(attribute, None)
        return test

    name = str({name!r})  # a str under Python 2 even with unicode_literals in the test file
    owner = found = None
    try:
        holder = globals()
        for part in {owners!r}:
            owner = holder[part] if isinstance(holder, dict) else getattr(holder, part)
            holder = owner
        scopes = [globals()] if owner is None else inspect.getmro(owner) if isinstance(owner, type) else [owner]
        for scope in scopes:
            space = scope if isinstance(scope, dict) else vars(scope)
            if {target!r} in space:
                found = space[{target!r}]
                break
        test = copy(found, name)
    except Exception:
        owner, test = None, make(None)
    if owner is not None:
        setattr(owner, name, test)
    elif {unittest!r}:
        import unittest
        globals()[str({klass!r})] = type(str({klass!r}), (unittest.TestCase,), {{name: test}})
    else:
        globals()[name] = test


_{tag}()
del _{tag}
"""


@dataclass(frozen=True)
class Canary:
    """A canary test planted in one test file."""

    path: str
    """The test file (relative to the repository root) the code goes into."""
    code: str
    """The Python source appended to it, or (`whole_file`) the file's whole new text."""
    test_ids: tuple[str, ...]
    """The ids it may be reported under; a parametrized canary adds ``[...]`` to them."""
    whole_file: bool = False
    """True: `code` replaces the file (a textual copy of the test beside it, canary_copy.py); False: appended."""

    def matches(self, test_id: str) -> bool:
        """Whether `test_id` is (a parametrization of) the canary.

        >>> Canary("t.py", "", ("t.py::test_edge42_a",)).matches("t.py::test_edge42_a[1-2]")
        True
        """
        return any(test_id == base or test_id.startswith(base + "[") for base in self.test_ids)


def plant_canary(
    framework: str,
    fail_to_pass: Sequence[str],
    files: Iterable[str],
    rng: random.Random | None = None,
    may_xfail: Callable[[str], bool] | None = None,
    text_of: Callable[[str], str | None] | None = None,
) -> Canary | None:
    """A canary copying a FAIL_TO_PASS test that lives in one of `files` (the test patch's files and those
    holding the task's required tests, as they are after the test patch: grade.py), for the 'pytest' or
    'unittest' framework; None when there is none. It copies the first test that is not parametrized and
    that no xfail mark of the trusted sources can apply to (`may_xfail`, xfail_marks.py), else the first.
    `text_of(path)`: the file's text after the test patch (None when unknown); where it is known the canary is a
    textual copy of the test beside it (canary_copy.py), else the code appended at the file's end.

    >>> canary = plant_canary("pytest", ["tests/t.py::TestC::test_add[1]"], ["tests/t.py"], random.Random(1))
    >>> canary.path, canary.test_ids
    ('tests/t.py', ('tests/t.py::TestC::test_case82_add', 'tests/t.py::test_case82_add'))
    >>> plant_canary("unittest", ["pkg.tests.test_t.T.testAdd"], ["pkg/tests/test_t.py"], random.Random(1)).test_ids
    ('pkg.tests.test_t.T.testAddCase82', 'pkg.tests.test_t.TestCase82.testAddCase82')
    """
    rng = rng or secrets.SystemRandom()
    python_files = [p for p in dict.fromkeys(files) if p.endswith(".py")]
    marked = may_xfail or (lambda test_id: False)
    # A test that is not parametrized first: its copy runs once, a parametrized one's once per case kept.
    # One an xfail mark may apply to last: its class or module marks apply to the canary too.
    for test_id in sorted(fail_to_pass, key=lambda test_id: (marked(test_id), "[" in test_id)):
        located = _locate(framework, test_id, python_files)
        if located is not None:
            return _canary(framework, *located, rng, text_of)
    return None


def _locate(framework: str, test_id: str, files: Sequence[str]) -> tuple[str, list[str]] | None:
    """(file, the test's attribute path in it: owners..., function) or None."""
    if framework == "pytest":
        path, _, rest = test_id.partition("::")
        parts = rest.split("[", 1)[0].split("::")
        return (path, parts) if path in files and rest and all(p.isidentifier() for p in parts) else None
    if framework == "unittest":
        for path in sorted(files, key=len, reverse=True):
            module = str(PurePosixPath(path).with_suffix("")).replace("/", ".")
            if test_id.startswith(module + "."):
                parts = test_id[len(module) + 1 :].split(".")
                return (path, parts) if len(parts) >= 2 and all(p.isidentifier() for p in parts) else None
    return None


def _canary(
    framework: str,
    path: str,
    parts: list[str],
    rng: random.Random,
    text_of: Callable[[str], str | None] | None,
) -> Canary:
    owners, target = parts[:-1], parts[-1]
    word, number = rng.choice(_WORDS), rng.randint(10, 99)
    if "_" in target:
        head, tail = target.split("_", 1)
        name = f"{head}_{word}{number}_{tail}"
    else:
        name = f"{target}{word.capitalize()}{number}"
    got = rng.randint(2, 999)
    want = got + rng.randint(1, 99)
    klass = f"Test{word.capitalize()}{number}"
    if framework == "unittest":
        module = str(PurePosixPath(path).with_suffix("")).replace("/", ".")
        ids = (".".join([module, *owners, name]), f"{module}.{klass}.{name}")
    else:
        ids = ("::".join([path, *owners, name]), f"{path}::{name}")
    text = text_of(path) if text_of is not None else None
    copied = copied_canary_text(text, owners, target, name, got, want) if text is not None else None
    if copied is not None:
        return Canary(path=path, code=copied, test_ids=ids[:1], whole_file=True)
    code = _TEMPLATE.format(
        tag=secrets.token_hex(4),
        name=name,
        owners=owners,
        target=target,
        got=got,
        want=want,
        unittest=framework == "unittest",
        klass=klass,
    )
    return Canary(path=path, code=code, test_ids=tuple(dict.fromkeys(ids)))
