"""The candidate filter's rules for test configuration, on patches built here, and for what an install step
may write (no sandbox: the rules are pure).

Each hostile case is named after the spelling it tries; each control is an edit a real fix makes and that
must be kept. The end-to-end attacks are in test_hostile_report_forgery.py and test_hostile_grading.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.grading.candidate import check_changes, filter_candidate
from repogym.sandbox.layerchanges import LayerChange, LayerChangeKind

from ..support.patches import edit

SETUP_CFG = "[metadata]\nname = calc\n\n[tool:pytest]\ntestpaths = tests\n\n[flake8]\nmax-line-length = 99\n"
PYPROJECT = (
    '[project]\nname = "calc"\ndependencies = ["attrs"]\n\n'
    '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.ruff]\nline-length = 99\n'
)


def _ignored(path: str, old: str, new: str, command_paths: tuple[str, ...] = ()) -> tuple[str, ...]:
    result = filter_candidate(edit(path, old, new), [], lambda p: old if p == path else "", command_paths)
    assert not result.rejected, result.rejected
    return result.ignored


HOSTILE = {
    "indented_next_header_joins_the_pytest_section": (
        "setup.cfg",
        SETUP_CFG,
        SETUP_CFG.replace("[flake8]\nmax-line-length = 99", " [flake8]\naddopts = -p calc.hooks"),
    ),
    "header_with_spaces_and_capitals": (
        "tox.ini",
        "[tox]\nenvlist = py\n",
        "[tox]\nenvlist = py\n\n[ PyTest ]\naddopts = -p calc.hooks\n",
    ),
    "header_after_a_byte_order_mark": ("setup.cfg", "", "\ufeff[tool:pytest]\naddopts = -p calc.hooks\n"),
    "new_setup_cfg_in_a_package_folder": (
        "src/calc/setup.cfg",
        "",
        "[tool:pytest]\naddopts = -p calc.hooks\n",
    ),
    "old_pytest_section_in_setup_cfg": (
        "setup.cfg",
        "[metadata]\nname = calc\n",
        "[metadata]\nname = calc\n[pytest]\nx = 1\n",
    ),
    "toml_inline_table": (
        "pyproject.toml",
        '[project]\nname = "calc"\n',
        'tool = {pytest = {ini_options = {addopts = "-p calc.hooks"}}}\n[project]\nname = "calc"\n',
    ),
    "toml_dotted_keys_under_tool": (
        "pyproject.toml",
        '[project]\nname = "calc"\n',
        '[project]\nname = "calc"\n\n[tool]\npytest.ini_options.addopts = "-p calc.hooks"\n',
    ),
    "toml_quoted_keys": (
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT.replace(
            "[tool.pytest.ini_options]", '["tool" . "pytest".ini_options]\naddopts = "-p calc.hooks"'
        ),
    ),
    "pytest9_native_table": (
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT + '\n[tool.pytest]\naddopts = ["-p", "x"]\n',
    ),
    "toml_that_does_not_parse": ("pyproject.toml", PYPROJECT, PYPROJECT + "\n[tool.pytest.ini_options\n"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_pytest_section_by_another_spelling_is_dropped(case: str) -> None:
    path, old, new = HOSTILE[case]
    assert _ignored(path, old, new) == (f"{path} (test configuration section)",)


@pytest.mark.parametrize("name", ["pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "conftest.py"])
def test_dedicated_config_files_are_dropped_in_any_folder(name: str) -> None:
    assert _ignored(f"src/calc/{name}", "", "[pytest]\naddopts = -p calc.hooks\n") == (
        f"src/calc/{name} (test configuration)",
    )


CONTROLS = {
    "a_flake8_setting": ("setup.cfg", SETUP_CFG, SETUP_CFG.replace("99", "120")),
    "the_package_metadata": ("setup.cfg", SETUP_CFG, SETUP_CFG.replace("name = calc", "name = calc2")),
    "a_dependency": ("pyproject.toml", PYPROJECT, PYPROJECT.replace('["attrs"]', '["attrs", "numpy"]')),
    "the_same_table_respelled": (
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT.replace("[tool.pytest.ini_options]", '["tool" . "pytest".ini_options]'),
    ),
    "another_tools_table": (
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT.replace("line-length = 99", "line-length = 120"),
    ),
    "a_new_tox_ini_without_pytest": ("tox.ini", "", "[tox]\nenvlist = py311\n"),
}


@pytest.mark.parametrize("case", sorted(CONTROLS))
def test_edits_outside_the_pytest_section_are_kept(case: str) -> None:
    path, old, new = CONTROLS[case]
    assert _ignored(path, old, new) == ()


def test_a_hunk_that_does_not_fit_the_file_cannot_be_judged_and_is_dropped() -> None:
    """The pytest section cannot be told apart in a hunk whose context is not the file's (a patch that
    would need fuzz to apply); it is dropped, and the check after applying sees the real file."""
    patch = edit("setup.cfg", SETUP_CFG, SETUP_CFG.replace("99", "120")).replace("[flake8]", "[flake9]")
    result = filter_candidate(patch, [], lambda p: SETUP_CFG if p == "setup.cfg" else "")
    assert result.ignored == ("setup.cfg (test configuration section)",)


def test_the_test_commands_own_files_are_dropped() -> None:
    """sympy's bin/test or django's runtests.py print the lines a log parser reads: a candidate that
    rewrites them writes its own results."""
    assert _ignored("bin/test", "#!/usr/bin/env python\nrun()\n", "print('ok')\n", ("bin/test",)) == (
        "bin/test (run by the test command)",
    )


def test_a_shared_config_file_made_a_link_to_an_unprotected_file_is_dropped() -> None:
    """tox.ini is read before setup.cfg: a new tox.ini that is a link to evil.ini (a name nothing protects,
    holding a [pytest] section) showed the filter only the link's target text, which has no section."""
    link = (
        "diff --git a/tox.ini b/tox.ini\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n"
        "+++ b/tox.ini\n@@ -0,0 +1 @@\n+src/calc/evil.ini\n\\ No newline at end of file\n"
    )
    result = filter_candidate(link, [], lambda p: "")
    assert result.ignored == ("tox.ini (test configuration (a link: what pytest reads is not in the patch))",)


# -- what the install step may write: compiled code, unless it stands in for what no patch may change -----------


def _by_install(*paths: str) -> str:
    changes = [LayerChange(path, LayerChangeKind.ADDED, Path("/nonexistent")) for path in paths]
    return check_changes(changes, ["tests/test_calc.py"], lambda path: "", by_install=True)


def test_install_step_builds_an_extension_module_named_sitecustomize() -> None:
    """Was a hole at 385871c: an install's compiled code was allowed by its reason ('compiled code'), so a
    packaging patch whose setup.py builds `Extension('sitecustomize', ...)` in place put start-up code in the
    tree the install rule passed. Start-up code is judged first, whatever form it takes."""
    so = "src/sitecustomize.cpython-311-x86_64-linux-gnu.so"
    assert _by_install(so, "src/usercustomize.abi3.so") == (
        f"{so} (a module run at interpreter start), src/usercustomize.abi3.so (a module run at interpreter start)"
    )


def test_install_step_writes_a_cached_pytest_module_of_a_test_file() -> None:
    """pytest loads a test module's rewritten cache from __pycache__ when its header matches the source: a
    cache the install writes for a test file (named test_*.py outside a tests/ folder) is that test file."""
    cached = "src/calc/__pycache__/test_core.cpython-311-pytest-8.0.0.pyc"
    beside = "src/calc/conftest.cpython-311-x86_64-linux-gnu.so"
    assert _by_install(cached, beside) == (
        f"{cached} (compiled code standing in for src/calc/test_core.py: test file), "
        f"{beside} (compiled code standing in for src/calc/conftest.py: test configuration)"
    )


def test_install_step_builds_the_projects_own_compiled_code() -> None:
    """Control: an in-place extension module and the cache of a module of the project are build outputs."""
    assert (
        _by_install(
            "src/calc/_speedups.cpython-311-x86_64-linux-gnu.so",
            "src/calc/__pycache__/core.cpython-311.pyc",
            "src/calc.egg-info/SOURCES.txt",
        )
        == ""
    )
