"""Fixtures for validation tests: toy repositories, candidates of every kind, and one shared batch run.

The batch validates every kind of candidate once (two workers, scrubbing on);
most tests read its outcomes instead of validating again, so the module
stays fast. The environment is built once per test run (shared cache).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from repogym.samples.licenses import MIT
from repogym.task import EnvSpec, Task
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, TESTS_AFTER, make_toy_task, toy_patch
from repogym.validate import ValidateConfig, ValidationRun, validate_candidates

#: An AWS access key id that detect-secrets recognises (not a real key).
PLANTED_SECRET = "AKIAZ3MHQW7XK2RT5BNP"

FLAKY_TEST = """

def test_flaky():
    # Passes on a phase's first run only: the counter lives in the jail's /tmp, which the runs share.
    import os
    path = "/tmp/flaky-counter"
    count = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as handle:
        handle.write(str(count + 1))
    assert count % 2 == 0
"""

FLAKY_FIX_TEST = TESTS_AFTER.replace(
    "from calc import add, mul", "import os\n\nfrom calc import add, mul"
).replace(
    "def test_add():\n    assert add(2, 3) == 5\n",
    "def test_add():\n"
    '    path = "/tmp/add-counter"\n'
    "    count = int(open(path).read()) if os.path.exists(path) else 0\n"
    '    open(path, "w").write(str(count + 1))\n'
    "    assert count % 2 == 0 and add(2, 3) == 5\n",
)

#: A test module for a function the fix adds: before the fix it cannot even be imported.
NEW_TEST_MODULE = """diff --git a/tests/test_sub.py b/tests/test_sub.py
new file mode 100644
--- /dev/null
+++ b/tests/test_sub.py
@@ -0,0 +1,5 @@
+from calc import sub
+
+
+def test_sub():
+    assert sub(5, 3) == 2
"""


def _git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),
        "GIT_AUTHOR_NAME": "Toy",
        "GIT_AUTHOR_EMAIL": "toy@example.invalid",
        "GIT_COMMITTER_NAME": "Toy",
        "GIT_COMMITTER_EMAIL": "toy@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return done.stdout


@pytest.fixture(scope="session")
def toy(toy_task) -> Task:
    """The toy task (the root conftest's, which also points REPOGYM_CACHE at the run's shared cache).

    Its repository has no licence file, so the privacy stage refuses its tasks.
    """
    return toy_task


@pytest.fixture(scope="session")
def licensed_toy(toy_task, tmp_path_factory) -> Task:
    """The toy task one commit later, when an MIT LICENSE was added (same dependencies, same environment)."""
    task = make_toy_task(tmp_path_factory.mktemp("licensed"), instance_id="toy__calc-mit")
    repo = Path(task.repo_source)
    (repo / "LICENSE").write_text(MIT.format(year=2024, holder="The calc developers"))
    _git(repo, "add", "LICENSE")
    _git(repo, "commit", "-q", "-m", "Add the MIT licence")
    return task.replace(base_commit=_git(repo, "rev-parse", "HEAD").strip())


def as_candidate(task: Task, instance_id: str, **changes) -> Task:
    """What the miner hands over: the task without its test lists."""
    return task.replace(instance_id=instance_id, FAIL_TO_PASS=[], PASS_TO_PASS=[], **changes)


@pytest.fixture(scope="session")
def candidates(toy, licensed_toy) -> dict[str, Task]:
    refactor = BUGGY_SOURCE.replace("    return a * b\n", "    product = a * b\n    return product\n")
    mul_one = TESTS_AFTER.replace("from calc import add, mul", "from calc import mul").split(
        "\n\ndef test_add"
    )[0]
    mul_one += "\n\ndef test_mul_one():\n    assert mul(1, 9) == 9\n"
    broken_test_patch = toy.test_patch.replace("-from calc import mul", "-from calc import nothing")
    with_sub = FIXED_SOURCE + "\n\ndef sub(a, b):\n    return a - b\n"
    secret_fix = FIXED_SOURCE + f'\n\nUPLOAD_KEY = "{PLANTED_SECRET}"\n'
    built = [
        as_candidate(toy, "exact"),
        as_candidate(toy, "test-patch-does-not-apply", test_patch=broken_test_patch),
        as_candidate(
            toy,
            "refactor",
            patch=toy_patch(toy, "src/calc/__init__.py", refactor),
            test_patch=toy_patch(toy, "tests/test_calc.py", mul_one),
        ),
        as_candidate(
            toy, "flaky-beside-fix", test_patch=toy_patch(toy, "tests/test_calc.py", TESTS_AFTER + FLAKY_TEST)
        ),
        as_candidate(toy, "only-flaky", test_patch=toy_patch(toy, "tests/test_calc.py", FLAKY_FIX_TEST)),
        as_candidate(
            toy,
            "new-test-module",
            patch=toy_patch(toy, "src/calc/__init__.py", with_sub),
            test_patch=toy.test_patch + NEW_TEST_MODULE,
        ),
        as_candidate(toy, "python-3.5", env=EnvSpec(python="3.5")),
        as_candidate(toy, "no-such-repo", repo_source=str(Path(toy.repo_source).parent / "moved-away")),
        as_candidate(licensed_toy, "licensed-clean"),
        as_candidate(
            licensed_toy, "licensed-secret", patch=toy_patch(licensed_toy, "src/calc/__init__.py", secret_fix)
        ),
    ]
    return {task.instance_id: task for task in built}


@dataclass(frozen=True)
class Batch:
    run: ValidationRun
    out: Path
    funnel: Path


@pytest.fixture(scope="session")
def batch(candidates, tmp_path_factory) -> Batch:
    folder = tmp_path_factory.mktemp("batch")
    out, funnel = folder / "tasks.jsonl", folder / "funnel.json"
    run = validate_candidates(list(candidates.values()), out, ValidateConfig(workers=2), funnel_path=funnel)
    return Batch(run, out, funnel)
