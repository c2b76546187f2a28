"""Small repositories shaped like SWE-bench's heavy ones, for grading them with the specs repogym ships: a
Django-shaped one (its `tests/runtests.py`, unittest's verbose log, SWE-bench's `test_x (module.Class)` ids)
and a compiled-extension one (scikit-learn's and matplotlib's shape: a C extension built by the install step).

Guarantees: each builder makes a real git repository under the folder it is given and a Task over it whose
env is the one `builtin_specs("swebench")` gives the named repository and version; the extension shape's
`packages` are replaced so that no heavy dependency installs, and nothing else is: test_cmd, log_parser,
install and python are the rule's.
Not guaranteed: that the shapes cover what the real repositories' test suites do (settings, databases,
migrations, numpy); they reproduce the runner's command line, its log format and the build, nothing more.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from repogym.data import builtin_specs
from repogym.sandbox.envbuild import names_package
from repogym.task import Source, Task

from .git import commit_files, git, init_repo, staged_diff

# -- django/django -------------------------------------------------------------------------------------------

#: Django versions graded -> their rule's Python: 3.0's (3.6) and 4.0's (3.8) print unittest's
#: `test_x (module.Class)`, the id format of SWE-bench's Django instances of that era; 5.0's (3.11) prints
#: `test_x (module.Class.test_x)`.
DJANGO_PYTHONS = {"3.0": "3.6", "4.0": "3.8", "5.0": "3.11"}


#: A runner with the command line of Django's tests/runtests.py and the log of Django's DiscoverRunner at
#: --verbosity 2 (unittest's TextTestRunner, whose format Django's runner prints).
RUNTESTS = '''#!/usr/bin/env python
"""A small stand-in for Django's tests/runtests.py: the same options, the same verbose log."""
import argparse
import importlib
import os
import sys
import unittest

import django

RUNTESTS_DIR = os.path.abspath(os.path.dirname(__file__))


def main():
    parser = argparse.ArgumentParser(description="Run the Django test suite.")
    parser.add_argument("modules", nargs="*", metavar="module")
    parser.add_argument("-v", "--verbosity", default=1, type=int, choices=[0, 1, 2, 3])
    parser.add_argument("--settings")
    parser.add_argument("--parallel", nargs="?", default=0, type=int)
    options = parser.parse_args()
    os.environ["DJANGO_SETTINGS_MODULE"] = options.settings or "test_sqlite"
    importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    print("Testing against Django installed in %r with up to %d processes"
          % (os.path.dirname(django.__file__), options.parallel or 1))
    loader = unittest.TestLoader()
    if options.modules:
        suite = loader.loadTestsFromNames(options.modules)
    else:
        suite = loader.discover(RUNTESTS_DIR, pattern="test*.py", top_level_dir=RUNTESTS_DIR)
    print("Creating test database for alias 'default'...", file=sys.stderr)
    print("System check identified no issues (0 silenced).", file=sys.stderr)
    result = unittest.TextTestRunner(verbosity=options.verbosity).run(suite)
    print("Destroying test database for alias 'default'...", file=sys.stderr)
    return bool(result.failures or result.errors)


if __name__ == "__main__":
    sys.exit(main())
'''

DJANGO_TEXT_BUGGY = '''"""Text helpers."""


def capfirst(x):
    """Capitalize the first letter of a string."""
    if not x:
        return x
    x = str(x)
    return x[0].upper() + x[1:].lower()


def wrap(text, width):
    """Wrap text at `width` characters, keeping words whole."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = (line + " " + word) if line else word
    if line:
        lines.append(line)
    return "\\n".join(lines)
'''
DJANGO_TEXT_FIXED = DJANGO_TEXT_BUGGY.replace("x[1:].lower()", "x[1:]")

DJANGO_TESTS = '''import unittest

from django.utils.text import capfirst, wrap


class TestUtilsText(unittest.TestCase):
    def test_capfirst(self):
        self.assertEqual(capfirst("hello"), "Hello")
        self.assertEqual(capfirst(""), "")

    def test_wrap(self):
        """wrap() keeps words whole."""
        self.assertEqual(wrap("a bb ccc", 4), "a bb\\nccc")

    @unittest.skip("needs a PostgreSQL database")
    def test_on_postgres(self):
        pass
'''
DJANGO_NEW_TEST = """
    def test_capfirst_keeps_the_rest(self):
        self.assertEqual(capfirst("hELLO wORLD"), "HELLO wORLD")
"""


def django_id(name: str, version: str) -> str:
    """SWE-bench's id of the shape's test `name`, as the Python of `version`'s rule prints it.

    >>> django_id("test_x", "4.0")
    'test_x (utils_tests.test_text.TestUtilsText)'
    >>> django_id("test_x", "5.0")
    'test_x (utils_tests.test_text.TestUtilsText.test_x)'
    """
    owner = "utils_tests.test_text.TestUtilsText"
    return f"{name} ({owner}.{name})" if _python(version) >= (3, 11) else f"{name} ({owner})"


def _python(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in DJANGO_PYTHONS[version].split("."))


#: A docstring's first line stands for its test in SWE-bench's ids, as unittest prints it.
DJANGO_DOCSTRING_ID = "wrap() keeps words whole."


def django_ids(version: str) -> tuple[list[str], list[str], str]:
    """(FAIL_TO_PASS, PASS_TO_PASS, the skipped test) of the shape's task for Django `version`."""
    return (
        [django_id("test_capfirst_keeps_the_rest", version)],
        [django_id("test_capfirst", version), DJANGO_DOCSTRING_ID],
        django_id("test_on_postgres", version),
    )


DJANGO_FILES = {
    "setup.py": 'from setuptools import setup\n\nsetup(name="Django", version="4.0.dev0", '
    'packages=["django", "django.utils"])\n',
    "django/__init__.py": 'VERSION = (4, 0, 0, "alpha", 0)\n',
    "django/utils/__init__.py": "",
    "django/utils/text.py": DJANGO_TEXT_BUGGY,
    "tests/runtests.py": RUNTESTS,
    "tests/test_sqlite.py": 'DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3"}}\n'
    'SECRET_KEY = "django_tests_secret_key"\n',
    "tests/requirements/py3.txt": "# the shape's tests need nothing beyond the standard library\n",
    "tests/utils_tests/__init__.py": "",
    "tests/utils_tests/test_text.py": DJANGO_TESTS,
}


def swebench_env(task: Task, **changes: object) -> Task:
    """`task` with the env the shipped SWE-bench specs give its repo and version, `changes` applied over it."""
    spec, rules = builtin_specs("swebench").spec_for(task)
    if not rules:
        raise AssertionError(f"no rule of swebench.toml matches {task.repo}@{task.version}")
    return task.replace(env=dataclasses.replace(spec, **changes))


def make_django_task(root: Path, version: str) -> Task:
    """A Django-shaped repository (an executable tests/runtests.py) and a task fixing `capfirst`, graded with
    the rule of Django `version` (a key of DJANGO_PYTHONS)."""
    repo = root / "django"
    init_repo(repo, {k: v for k, v in DJANGO_FILES.items() if k != "tests/runtests.py"}, "django")
    (repo / "tests").mkdir(exist_ok=True)
    runner = repo / "tests" / "runtests.py"
    runner.write_text(RUNTESTS)
    os.chmod(runner, 0o755)
    base = commit_files(repo, {}, "tests: runtests.py")
    if "100755" not in git(repo, "ls-files", "-s", "tests/runtests.py"):
        raise AssertionError("tests/runtests.py was not committed executable")
    patch = staged_diff(repo, {"django/utils/text.py": DJANGO_TEXT_FIXED})
    test_patch = staged_diff(repo, {"tests/utils_tests/test_text.py": DJANGO_TESTS + DJANGO_NEW_TEST})
    task = Task(
        instance_id=f"django__django-9{version.replace('.', '')}01",
        repo="django/django",
        base_commit=base,
        patch=patch,
        test_patch=test_patch,
        problem_statement="capfirst() lowercases the rest of the string.",
        FAIL_TO_PASS=django_ids(version)[0],
        PASS_TO_PASS=django_ids(version)[1],
        version=version,
        source=Source.IMPORTED,
        repo_source=str(repo),
    )
    # tests/requirements/py3.txt and `pip install -e .` stay the rule's: the shape's requirements are empty.
    return swebench_env(task)


# -- a compiled extension (scikit-learn, matplotlib) ---------------------------------------------------------

CORE_C_BUGGY = r"""#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b))
        return NULL;
    return PyLong_FromLong(a + b);
}

static PyObject *mul(PyObject *self, PyObject *args) {
    long x, y;
    if (!PyArg_ParseTuple(args, "ll", &x, &y))
        return NULL;
    return PyLong_FromLong(x + y);
}

static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, "a + b"},
    {"mul", mul, METH_VARARGS, "a * b"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
"""
CORE_C_FIXED = CORE_C_BUGGY.replace("PyLong_FromLong(x + y)", "PyLong_FromLong(x * y)")

EXTENSION_FILES = {
    "setup.py": "from setuptools import Extension, setup\n\n"
    'setup(name="fastops", version="0.1.0", packages=["fastops"],\n'
    '      ext_modules=[Extension("fastops._core", ["fastops/_core.c"])])\n',
    "fastops/__init__.py": '"""Arithmetic in C."""\nfrom fastops._core import add, mul\n',
    "fastops/_core.c": CORE_C_BUGGY,
    "fastops/tests/__init__.py": "",
    "fastops/tests/test_core.py": "from fastops import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n",
    ".gitignore": "build/\n*.so\n*.egg-info/\n",
}
EXTENSION_NEW_TESTS = (
    "\n\ndef test_mul():\n    assert mul(3, 4) == 12\n\n\ndef test_mul_by_one():\n    assert mul(7, 1) == 7\n"
)
EXTENSION_TEST_FILE = "fastops/tests/test_core.py"

#: (repository, version) of rules whose install step builds extensions in place, and what they are.
EXTENSION_RULES = {
    "scikit-learn": ("scikit-learn/scikit-learn", "1.3"),  # pip --no-use-pep517 --no-build-isolation -e .
    "scikit-learn-0.22": ("scikit-learn/scikit-learn", "0.22"),  # the same, on Python 3.6
    "matplotlib": ("matplotlib/matplotlib", "3.5"),  # pip install -e .
}


def make_extension_task(root: Path, flavour: str, extra_packages: tuple[str, ...] = ()) -> Task:
    """A package whose `mul` is a C function with a bug, graded with `flavour`'s rule (EXTENSION_RULES): the
    gold patch changes only fastops/_core.c, so it takes effect only if the extension is rebuilt.
    `extra_packages` go after the kept ones (pytest, setuptools)."""
    repo_name, version = EXTENSION_RULES[flavour]
    repo = root / flavour
    base = init_repo(repo, EXTENSION_FILES, "fastops")
    patch = staged_diff(repo, {"fastops/_core.c": CORE_C_FIXED})
    test_patch = staged_diff(
        repo, {EXTENSION_TEST_FILE: EXTENSION_FILES[EXTENSION_TEST_FILE] + EXTENSION_NEW_TESTS}
    )
    task = Task(
        instance_id=f"{repo_name.replace('/', '__')}-90001",
        repo=repo_name,
        base_commit=base,
        patch=patch,
        test_patch=test_patch,
        problem_statement="mul(3, 4) returns 7.",
        FAIL_TO_PASS=[f"{EXTENSION_TEST_FILE}::test_mul", f"{EXTENSION_TEST_FILE}::test_mul_by_one"],
        PASS_TO_PASS=[f"{EXTENSION_TEST_FILE}::test_add"],
        version=version,
        source=Source.IMPORTED,
        repo_source=str(repo),
    )
    # The rule's packages (numpy, scipy, pandas, pillow...) are what the real repository needs, not the
    # shape: pytest and setuptools (to build the extension without build isolation) are kept, and a pip the
    # rule names, as it decides which pip runs the install step.
    pips = [p for p in rule_packages(repo_name, version) if names_package([p], "pip")]
    packages = tuple(dict.fromkeys(("pytest", "setuptools", *pips, *extra_packages)))
    return swebench_env(task, packages=packages)


def rule_packages(repo: str, version: str) -> tuple[str, ...]:
    """The packages the shipped SWE-bench rule for `repo`@`version` installs (before any test's override)."""
    spec, _ = builtin_specs("swebench").spec_for(Task("x", repo, "0" * 40, "", version=version))
    return spec.packages
