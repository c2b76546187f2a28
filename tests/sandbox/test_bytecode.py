"""The commit's compiled bytecode under every episode (sandbox/bytecode.py): test runs load the repository's
modules instead of compiling them, git never sees the bytecode, and an edited module always runs its new text."""

from __future__ import annotations

import shutil

import pytest

from repogym.grading.grade import grade
from repogym.sandbox.envbuild import env_stamp
from repogym.sandbox.runtime import TaskRuntime

# No .gitignore and no packaging: the bytecode layer is the commit's only layer, and git would show it.
_FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def answer():\n    return 41\n",
    "tests/test_core.py": "from pkg import core\n\n\ndef test_answer():\n    assert core.answer() == 42\n",
}
_FIX = {"pkg/core.py": _FILES["pkg/core.py"].replace("41", "42")}

# The module's import, verbose: a line "<pyc> matches <source>" when Python ran the compiled file.
_IMPORT = "python -v -c 'from pkg import core; print(\"answer\", core.answer())' 2>&1"


@pytest.fixture(scope="module")
def bare_runtime(git_repo):
    repo = git_repo("bytecode")
    base = repo.commit(_FILES, "bytecode")
    task = repo.task(
        "local__bytecode-1", base, patch=repo.patch(_FIX), FAIL_TO_PASS=["tests/test_core.py::test_answer"]
    )
    return TaskRuntime.create(task).prepare()


@pytest.mark.slow
def test_a_test_run_loads_the_commits_modules_compiled(bare_runtime):
    layers = bare_runtime.commit_layers()
    assert layers.repo[0].name == "pyc" and layers.repo[-1] == bare_runtime.pristine
    with bare_runtime.episode() as episode:
        output = episode.run(_IMPORT).output
    assert "answer 41" in output
    assert "pkg/__pycache__/core." in output and "matches /testbed/pkg/core.py" in output, output[-3000:]


@pytest.mark.slow
def test_git_never_sees_the_bytecode_of_a_repo_that_does_not_ignore_it(bare_runtime):
    with bare_runtime.episode() as episode:
        assert episode.run("find . -name '*.pyc' | grep -q core").ok  # it is there
        assert episode.run("git status --porcelain").output.strip() == ""
        assert episode.diff()[0] == "" and episode.diff(include_ignored=True)[0] == ""
        assert episode.run("echo '# edit' >> pkg/core.py").ok
        assert episode.diff(include_ignored=True)[0].count("+++ b/") == 1
    task = bare_runtime.task
    assert grade(task, task.patch, runtime=bare_runtime).resolved
    assert not grade(task, "", runtime=bare_runtime).resolved


_SAME_SIZE_SAME_TIME = (
    'python -c \'import os; path = "pkg/core.py"; before = os.stat(path); '
    'text = open(path).read().replace("41", "43"); open(path, "w").write(text); '
    "os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns)); after = os.stat(path); "
    "assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)'"
)


@pytest.mark.slow
def test_a_module_edited_to_the_same_size_and_time_runs_its_new_text(bare_runtime):
    """A timestamp pyc would run the commit's code for a source edited to its size and mtime; the layer's
    pycs are checked against the source's hash, so the edit is what runs."""
    with bare_runtime.episode() as episode:
        assert episode.run(_SAME_SIZE_SAME_TIME).ok
        output = episode.run(_IMPORT).output
    assert "answer 43" in output, output[-3000:]
    assert "matches /testbed/pkg/core.py" not in output


@pytest.mark.slow
def test_layers_made_before_bytecode_get_it_without_installing_again(hello_repo):
    repo, base = hello_repo
    runtime = TaskRuntime.create(repo.task("local__hello-pyc", base)).prepare()
    layers = runtime.commit_layers()
    folder = layers.repo[0].parent
    assert [layer.name for layer in layers.repo[:2]] == ["pyc", "repo"]
    # The layers as the code before bytecode left them: its done-marker, no pyc layer.
    shutil.rmtree(folder / "pyc")
    folder.with_name(folder.name + ".ok").write_text(env_stamp(runtime.env.venv))
    (folder / "made-before").write_text("")  # the install step's run starts from an empty folder
    again = TaskRuntime.create(repo.task("local__hello-pyc", base)).prepare()
    assert (folder / "made-before").exists()
    assert again.commit_layers().repo[0] == folder / "pyc"
    with again.episode() as episode:
        assert "matches /testbed/hello.py" in episode.run("python -v -c 'import hello' 2>&1").output
