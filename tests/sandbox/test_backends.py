"""The other ways to run: a copied workspace instead of overlayfs, the local backend, and bad names."""

from __future__ import annotations

import pytest

from repogym.errors import UnknownNameError
from repogym.grading.grade import grade
from repogym.sandbox.runtime import TaskRuntime, make_sandbox


def test_copied_workspace_grades_and_resets_like_overlay(toy_task, monkeypatch):
    monkeypatch.setenv("REPOGYM_NO_OVERLAY", "1")
    runtime = TaskRuntime.create(toy_task, "bwrap").prepare()
    assert not runtime.sandbox.supports_overlay
    assert grade(toy_task, toy_task.patch, runtime=runtime).resolved
    assert not grade(toy_task, "", runtime=runtime).resolved
    with runtime.episode() as ep:
        assert ep.layer.workspace.name == "copy"
        assert ep.run("echo 'x = 1' >> src/calc/__init__.py && rm tests/test_calc.py").ok
        assert "+x = 1" in ep.diff()[0]
        ep.reset()
        assert ep.diff()[0] == ""
        assert ep.run("test -f tests/test_calc.py").ok


def test_local_backend_warns_and_grades(toy_task):
    with pytest.warns(UserWarning, match="WITHOUT isolation"):
        sandbox = make_sandbox("local")
    runtime = TaskRuntime.create(toy_task, sandbox).prepare()
    assert grade(toy_task, toy_task.patch, runtime=runtime).resolved
    assert not grade(toy_task, "", runtime=runtime).resolved
    with runtime.episode() as ep:
        assert (
            ep.run("echo 'x = 1' >> src/calc/__init__.py && git status --short")
            .output.strip()
            .endswith("src/calc/__init__.py")
        )
        patch, result = ep.diff()
        assert result.ok, result.output
        assert "+x = 1" in patch


def test_unknown_sandbox_name_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="bwrap, local"):
        make_sandbox("docker")
