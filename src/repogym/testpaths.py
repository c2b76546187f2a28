"""Whether a repository path is a test file: one rule for every stage (grading's, the reference).

A path is a test file when

- a folder on it is named ``tests`` or ``test``, at any depth (``pkg/tests/data.json`` is test data), or
- it is under a top-level ``testing/`` folder (pytest's own layout, whose modules are named freely), or
- its file name is ``test_*.py`` or ``*_test.py`` (pytest's default ``python_files``), anywhere, or
- it is one of the task's test patch's files (`test_patch_paths`), whatever its path.

A ``testing/`` folder below the top is a package of the code under test (``sympy/testing/`` since
sympy 1.6, ``numpy/testing/``, ``matplotlib/testing/``), and a fix there is a fix: SWE-bench's dataset
split calls any path containing "test" a test, which is why its gold patches never touch one, but its
harness runs the test patch's files, not a path rule. Tests inside such a package are still tests by
their ``tests/`` folder or their name.

Callers and the one option they may take (`support_files=True`: also the files that exist only for
the tests although the rule above does not name them: pytest's ``conftest.py``, and the ``tests.py`` /
``test.py`` modules of unittest and Django):

- grading (`repogym.grading.candidate`) and the audit: the rule alone. The grader treats conftest.py as
  test configuration, which it protects more strictly than tests (`check_changes`).
- sorting a change into code and tests, with support files: mining's split (the test patch),
  the minimal-diff reward (changes that do not count), synth (files never mutated) and the training
  corpus of mutation demos (files left out).
- `is_test_module` asks another question: which files a test runner collects by their name
  (validation runs a test patch's modules, not its data or helpers).

The jail's spectrum plugin (`repogym/env/spectrum_plugin/`) keeps a copy of the rule with support files:
it runs under the task's interpreter, which cannot import repogym.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection
from pathlib import PurePosixPath

#: File names pytest collects by default (python_files), wherever they are.
TEST_NAME_GLOBS = ("test_*.py", "*_test.py")
#: Folders whose every file is test code or test data, at any depth.
TEST_DIR_NAMES = frozenset({"tests", "test"})
#: A top-level folder of this name holds tests; below the top it is a package of the code.
TOP_TESTING_DIR = "testing"
#: Files that exist for the tests though the rule does not name them (see `support_files`).
SUPPORT_FILE_NAMES = frozenset({"conftest.py", "tests.py", "test.py"})
#: Module names a runner collects as tests: pytest's defaults, and unittest's and Django's tests.py / test.py.
TEST_MODULE_GLOBS = (*TEST_NAME_GLOBS, "tests.py", "test.py")


def is_test_path(path: str, test_patch_paths: Collection[str] = (), *, support_files: bool = False) -> bool:
    """Whether `path` (relative, '/'-separated) is a test file by the module's rule.

    >>> [is_test_path(p) for p in ("tests/util.py", "pkg/tests/data.json", "testing/python/fixtures.py")]
    [True, True, True]
    >>> [is_test_path(p) for p in ("sympy/testing/runtests.py", "sympy/testing/tests/test_pytest.py", "pkg/io_test.py")]
    [False, True, True]
    >>> [is_test_path(p) for p in ("src/_pytest/python.py", "pkg/latest.py", "contest.py", "conftest.py")]
    [False, False, False, False]
    >>> is_test_path("conftest.py", support_files=True), is_test_path("app/tests.py", support_files=True)
    (True, True)
    >>> is_test_path("pkg/checks.py", {"pkg/checks.py"})
    True
    """
    if path in test_patch_paths:
        return True
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    if any(part in TEST_DIR_NAMES for part in parts[:-1]):
        return True
    if len(parts) > 1 and parts[0] == TOP_TESTING_DIR:
        return True
    if support_files and parts[-1] in SUPPORT_FILE_NAMES:
        return True
    return any(fnmatch.fnmatchcase(parts[-1], glob) for glob in TEST_NAME_GLOBS)


def is_test_module(path: str) -> bool:
    """Whether a runner collects `path` as a test module by its file name (its folder does not matter).

    >>> [is_test_module(p) for p in ("tests/test_io.py", "app/tests.py", "tests/helpers.py", "tests/conftest.py")]
    [True, True, False, False]
    """
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(name, glob) for glob in TEST_MODULE_GLOBS)
