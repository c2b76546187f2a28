"""Start pytest for repogym's grader with pytest and the report plugin imported before the repository is on
sys.path, so that nothing in the repository (a ``pytest.py``, a ``repogym_report/`` package, a ``pluggy/``
folder) can stand in for them.

Run inside the sandbox as ``python /opt/repogym/plugins/repogym_pytest.py [--cwd-first] ARGS...``: run as a
script, Python puts this folder (not the working directory) first on sys.path. ``--cwd-first`` then puts the
working directory first, as ``python -m pytest`` does, once pytest and the plugin are loaded; without it the
path is what the ``pytest`` console script sees. The plugin is registered by the launcher (``-p no:repogym_report``
still blocks it, which leaves no report). The exit status is pytest's.

When pytest itself is the repository under test, it can only be imported from there; that one case is
inherent to such a task.

Python 2.7 and 3.6+ syntax (no f-strings, no annotations), standard library only.
"""

# ruff: noqa: UP010

from __future__ import absolute_import, print_function

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _inside(path, folder):
    real = os.path.realpath(path or ".")
    return real == folder or real.startswith(folder + os.sep)


def _load_harness():
    """Import pytest (with its own dependencies) and the plugin while no folder of the repository is on
    sys.path (PYTHONPATH=src or a flat editable install would put one before site-packages), then put
    sys.path back as it was."""
    saved = list(sys.path)
    repo = os.path.realpath(os.getcwd())
    sys.path[:] = [_HERE] + [p for p in saved if not _inside(p, repo) and p != _HERE]
    try:
        import pytest
    except ImportError:
        pass  # pytest is the repository under test (its editable install): it can only come from there
    finally:
        sys.path[:] = saved
    import pytest  # noqa: F401
    import repogym_report  # this folder's, first on sys.path

    return repogym_report


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    cwd_first = argv[:1] == ["--cwd-first"]
    if cwd_first:
        argv = argv[1:]
    plugin = _load_harness()
    if cwd_first:
        sys.path.insert(0, os.getcwd())
    import pytest

    # Registered as an object, not with -p: -p would ask the assertion rewriter for a module that is
    # already imported, a config-time warning that `filterwarnings = error` turns into a crash.
    return pytest.main(argv, plugins=[plugin])


if __name__ == "__main__":
    sys.exit(main())
