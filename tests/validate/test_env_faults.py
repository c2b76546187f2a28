"""The environment's faults are named as such (real sandbox, real git), and a validated task rebuilds exactly.

A repository built to break (a conftest that imports a package nobody installs) must come out as
`env_broken` quoting the import error, never as `no_fail_to_pass`; a test that dials out comes out
as `tests_need_network`; a task written by validation rebuilds the same package set from what it records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.dataset import load_tasks
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.envbuild import EnvBuilder
from repogym.sandbox.repos import mirror
from repogym.sandbox.runtime import make_sandbox
from repogym.sandbox.workspace import pristine_checkout
from repogym.validate import ValidateConfig, Verdict, validate_candidates
from repogym.validate.envresolve import resolve_task_env

from ..support.git import git
from ..support.tasks import as_candidate

NETWORK_TEST = """diff --git a/tests/test_remote.py b/tests/test_remote.py
new file mode 100644
--- /dev/null
+++ b/tests/test_remote.py
@@ -0,0 +1,7 @@
+import socket
+
+from calc import add
+
+
+def test_add_matches_the_remote_calculator():
+    assert socket.getaddrinfo("pypi.org", 443) and add(2, 3) == 5
"""


@pytest.fixture(scope="module")
def faults(toy, tmp_path_factory):
    """The toy fix at a commit whose conftest imports a missing package, and one whose test dials out."""
    repo = tmp_path_factory.mktemp("broken") / "calc"
    git(repo.parent, "clone", "-q", toy.repo_source, str(repo))
    (repo / "tests" / "conftest.py").write_text("import repogym_missing_plugin  # noqa: F401\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "conftest: load our plugin")
    broken_base = git(repo, "rev-parse", "HEAD").strip()
    candidates = [
        as_candidate(toy, "broken-env", base_commit=broken_base, repo_source=str(repo)),
        as_candidate(toy, "dials-out", test_patch=NETWORK_TEST),
    ]
    out = tmp_path_factory.mktemp("faults") / "tasks.jsonl"
    run = validate_candidates(candidates, out, ValidateConfig(workers=2, scrub=False))
    return run.outcomes


@pytest.mark.slow
def test_a_conftest_import_error_before_and_after_the_fix_is_env_broken_not_no_fail_to_pass(faults):
    outcome = faults["broken-env"]
    assert outcome.verdict is Verdict.ENV_BROKEN
    assert (
        "same error before and after the fix: ModuleNotFoundError: No module named 'repogym_missing_plugin'"
        in (outcome.detail)
    )
    log = outcome.detail.rsplit("(log ", 1)[1].rstrip(")")
    assert Path(log).is_file()


@pytest.mark.slow
def test_a_test_that_resolves_a_host_name_is_tests_need_network(faults):
    outcome = faults["dials-out"]
    assert outcome.verdict is Verdict.TESTS_NEED_NETWORK
    assert "name resolution" in outcome.detail or "not known" in outcome.detail
    assert "(log " in outcome.detail


@pytest.mark.slow
def test_a_validated_task_records_its_environment_and_rebuilds_the_same_package_set(
    batch, tmp_path, monkeypatch
):
    (task,) = load_tasks(batch.out)
    env = task.env
    assert env.python.count(".") == 2 and env.exclude_newer and env.install  # every field explicit
    assert task.metadata["env_recipe"]["steps"][0].startswith(f"python {env.python}")
    first_venv = cache_dir("envs") / task.metadata["validation"]["env"]["env_key"]
    pristine = pristine_checkout(mirror(task.repo_source, (task.base_commit,)), task.base_commit)
    assert resolve_task_env(task, pristine) == task  # nothing left to fill: the rebuild uses the record
    monkeypatch.setenv("REPOGYM_CACHE", str(tmp_path / "fresh-cache"))  # no environment to reuse
    fresh = mirror(task.repo_source, (task.base_commit,))
    handle = EnvBuilder(make_sandbox("bwrap")).ensure(task, pristine_checkout(fresh, task.base_commit))
    assert handle.venv != first_venv and handle.build_s > 0
    assert _distributions(handle.venv) == _distributions(first_venv)


def _distributions(venv: Path) -> set[str]:
    """name-version of every installed distribution (their .dist-info folders)."""
    return {p.name.removesuffix(".dist-info") for p in venv.glob("lib/python*/site-packages/*.dist-info")}
