"""The episode's upper layer read on the host (sandbox/layerchanges.py) against a git diff of the whole tree.

The grader's anti-forgery check (grading/grade.py `_protected_paths_changed`) reads what a candidate really
changed from the overlay's upper layer instead of a whole-tree `git diff` in the jail. These tests run real
commands in real bwrap episodes (overlayfs, as root) and hold the two to the same answer, case by case and
for tree changes that headers never show (the attacks the check exists for).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from repogym.grading.candidate import check_changes
from repogym.grading.grade import _pristine_reader, _protected_paths_changed
from repogym.sandbox.bwrap import BwrapSandbox, is_root
from repogym.sandbox.layerchanges import LayerChangeKind, layer_changes, tree_changes
from repogym.sandbox.runtime import TaskRuntime

pytestmark = pytest.mark.skipif(not is_root(), reason="overlayfs episodes need root (else copies, no upper)")

# Shell steps run in the episode, each case on its own: what a patch applier fooled by its headers, or a
# jailed command, could leave in the tree.
CASES = {
    "edit a source file": "printf 'x = 1\\n' >> src/calc/__init__.py",
    "new file in a new folder": "mkdir -p src/calc/sub && printf 'y\\n' > src/calc/sub/new.py",
    "remove a file": "rm tests/test_calc.py",
    "remove the tests folder": "rm -rf tests",
    "a file where the tests folder was": "rm -rf tests && printf 'x\\n' > tests",
    "the tests folder made again (opaque)": "rm -rf tests && mkdir tests && printf 'z\\n' > tests/other.py",
    "the same bytes written again": "cp README.md /tmp/r && cat /tmp/r > README.md",
    "executable bit": "chmod +x README.md",
    "a link in a file's place": "rm README.md && ln -s src/calc/__init__.py README.md",
    "an ignored conftest": "printf 'conftest.py\\n' > .gitignore && printf 'import os\\n' > conftest.py",
    "a dot-folder file": "mkdir -p .hidden && printf 'h\\n' > .hidden/conftest.py",
    "a file then removed again": "printf 'q\\n' > tmpfile && rm tmpfile",
}


def _diff_paths(patch: str) -> set[str]:
    return {match for match in re.findall(r"^diff --git a/(\S+) b/", patch, flags=re.M)}


def _layer(episode):
    overlay = episode.layer.overlay()
    assert overlay is not None and overlay.upper is not None
    return overlay.upper, overlay.lowers


@pytest.mark.parametrize("case", sorted(CASES))
def test_upper_layer_names_the_paths_a_whole_tree_git_diff_names(toy_runtime, case):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run(CASES[case]).ok
        changes = layer_changes(*_layer(episode))
        patch, result = episode.diff(include_ignored=True)
    assert result.ok and changes is not None
    assert {change.path for change in changes} == _diff_paths(patch)


def test_upper_layer_kinds_and_texts(episode):
    assert episode.run(
        "rm tests/test_calc.py && printf 'new\\n' > NEW.txt && printf 'more\\n' >> README.md"
        " && ln -s NEW.txt link.txt"
    ).ok
    changes = {change.path: change for change in layer_changes(*_layer(episode)) or []}
    assert {path: change.kind for path, change in changes.items()} == {
        "tests/test_calc.py": LayerChangeKind.REMOVED,
        "NEW.txt": LayerChangeKind.ADDED,
        "README.md": LayerChangeKind.MODIFIED,
        "link.txt": LayerChangeKind.ADDED,
    }
    assert changes["NEW.txt"].new_text() == "new\n"
    assert changes["link.txt"].is_link and changes["link.txt"].new_text() == "NEW.txt"
    assert changes["tests/test_calc.py"].new_text() is None


def test_an_overlay_redirect_is_not_guessed_at(tmp_path: Path):
    """A renamed folder under redirect_dir=on shows the lower's files under a new name: not replayed, so the
    caller must fall back to the git diff rather than see nothing."""
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    (lower / "old").mkdir(parents=True)
    (lower / "old" / "conftest.py").write_text("x")
    (upper / "new").mkdir(parents=True)
    os.setxattr(upper / "new", "trusted.overlay.redirect", b"/old")
    assert layer_changes(upper, [lower]) is None


def test_a_user_overlay_attribute_is_an_ordinary_attribute(tmp_path: Path):
    """Was a hole at 385871c: any `.overlay.` attribute counted as overlayfs's own, so the jail, which may set
    `user.*` attributes on its files, set `user.overlay.redirect` and made `layer_changes` give up (the
    grader then paid for the whole-tree git diff). repogym's overlays are mounted by root: the kernel reads
    `trusted.overlay.*` only, and so does this module."""
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    (lower / "src").mkdir(parents=True)
    (upper / "moved").mkdir(parents=True)
    (upper / "moved" / "a.py").write_text("a")
    os.setxattr(upper / "moved", "user.overlay.redirect", b"/src")
    os.setxattr(upper / "moved" / "a.py", "user.overlay.metacopy", b"")
    os.setxattr(upper / "moved", "user.overlay.opaque", b"y")
    changes = layer_changes(upper, [lower])
    assert changes is not None
    assert [(change.path, change.kind) for change in changes] == [("moved/a.py", LayerChangeKind.ADDED)]


# -- two full trees (no overlayfs: an episode's copy), compared file by file -------------------------------------


@pytest.fixture(scope="module")
def copied_runtime(toy_task):
    with pytest.MonkeyPatch.context() as patcher:
        patcher.setenv("REPOGYM_NO_OVERLAY", "1")  # read once, when the sandbox is made
        sandbox = BwrapSandbox()
    return TaskRuntime.create(toy_task, sandbox).prepare()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_copied_tree_names_the_paths_a_whole_tree_git_diff_names(copied_runtime, case):
    with copied_runtime.episode(readonly_git=True) as episode:
        assert episode.layer.overlay() is None
        assert episode.run(CASES[case]).ok
        changes = tree_changes(episode.layer.workspace, episode.layer.lowers[0])
        patch, result = episode.diff(include_ignored=True)
    assert result.ok
    assert {change.path for change in changes} == _diff_paths(patch)


def test_tree_changes_reports_a_link_to_a_folder_and_never_follows_it(tmp_path: Path):
    old, new = tmp_path / "old", tmp_path / "new"
    for root in (old, new):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "a.py").write_text("a")
        (root / "same.txt").write_text("s")
    (new / "pkg" / "a.py").unlink()
    (new / "pkg").rmdir()
    (new / "pkg").symlink_to("/etc")
    changes = {change.path: change for change in tree_changes(new, old)}
    assert {path: change.kind for path, change in changes.items()} == {
        "pkg": LayerChangeKind.ADDED,
        "pkg/a.py": LayerChangeKind.REMOVED,
    }
    assert changes["pkg"].is_link and changes["pkg"].new_text() == "/etc"


# -- the grader's check on tree changes no header shows --------------------------------------------------


def _check(toy_task, episode) -> str:
    pristine = episode.runtime.pristine
    test_paths = ["tests/test_calc.py"]
    return _protected_paths_changed(episode, test_paths, _pristine_reader(pristine), [])


def test_grading_tree_check_finds_a_conftest_hidden_by_a_gitignore(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run("printf 'conftest.py\\n' > .gitignore && printf 'import os\\n' > conftest.py").ok
        assert _check(toy_task, episode) == "conftest.py (test configuration)"


def test_grading_tree_check_finds_the_tests_folder_removed_whole(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run("rm -rf tests").ok
        assert "tests/test_calc.py (a file of the task's tests)" in _check(toy_task, episode)


def test_grading_tree_check_finds_a_test_file_behind_a_folder_made_again(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run(
            "rm -rf tests && mkdir tests && printf 'def test_x(): pass\\n' > tests/test_x.py"
        ).ok
        found = _check(toy_task, episode)
    assert (
        "tests/test_calc.py (a file of the task's tests)" in found
        and "tests/test_x.py (test file)" in found
    )


def test_grading_tree_check_finds_a_pytest_section_added_to_pyproject(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        script = "printf '\\n[tool.pytest.ini_options]\\naddopts = \"-p evil\"\\n' >> pyproject.toml"
        assert episode.run(script).ok
        assert _check(toy_task, episode) == "pyproject.toml (test configuration section)"


def test_grading_tree_check_finds_setup_cfg_made_a_link(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run("ln -s /etc/hostname setup.cfg").ok
        assert _check(toy_task, episode).startswith("setup.cfg (test configuration (a link")


def test_grading_tree_check_finds_a_nested_git_folder(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run("mkdir -p src/.git && printf '[core]\\n' > src/.git/config").ok
        assert _check(toy_task, episode).startswith("unsafe path 'src/.git/config'")


def test_grading_tree_check_passes_a_plain_fix(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run("printf '# fixed\\n' >> src/calc/__init__.py").ok
        assert _check(toy_task, episode) == ""


def test_check_changes_judges_every_change_not_only_the_first(toy_task, toy_runtime):
    with toy_runtime.episode(readonly_git=True) as episode:
        assert episode.run("printf 'a\\n' > conftest.py && printf 'b\\n' > sitecustomize.py").ok
        changes = layer_changes(*_layer(episode)) or []
    found = check_changes(changes, [], lambda path: "")
    assert found == "conftest.py (test configuration), sitecustomize.py (a module run at interpreter start)"
