"""Fixtures for validation tests: toy repositories, candidates of every kind, and one shared batch run.

The batch validates every kind of candidate once (two workers, scrubbing on);
most tests read its outcomes instead of validating again, so the module
stays fast. The environment is built once per test run (shared cache).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.task import EnvSpec, Task
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, TESTS_AFTER, toy_patch
from repogym.validate import ValidateConfig, validate_candidates

from ..support.candidates import FLAKY_FIX_TEST, FLAKY_TEST, NEW_TEST_MODULE, PLANTED_SECRET, Batch
from ..support.tasks import as_candidate, make_licensed_toy_task


@pytest.fixture(scope="session")
def toy(toy_task) -> Task:
    """The toy task (the root conftest's, which also points REPOGYM_CACHE at the run's shared cache).

    Its repository has no licence file, so the privacy stage refuses its tasks.
    """
    return toy_task


@pytest.fixture(scope="session")
def licensed_toy(toy_task, tmp_path_factory) -> Task:
    """The toy task one commit later, when an MIT LICENSE was added (same dependencies, same environment)."""
    return make_licensed_toy_task(tmp_path_factory.mktemp("licensed"))


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


@pytest.fixture(scope="session")
def batch(candidates, tmp_path_factory) -> Batch:
    folder = tmp_path_factory.mktemp("batch")
    out, funnel = folder / "tasks.jsonl", folder / "funnel.json"
    run = validate_candidates(list(candidates.values()), out, ValidateConfig(workers=2), funnel_path=funnel)
    return Batch(run, out, funnel)
