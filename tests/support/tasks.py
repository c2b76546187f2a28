"""Tasks over small real repositories: the toy task's variants, one-line-bug tasks, a generated library's
planted fixes, and one-commit repositories for a given test file.

Guarantees: every builder makes a real git repository under the folder it is given and a Task whose
repo_source points at it; nothing is shared between two calls.
Not guaranteed: that the task validates: some are made broken on purpose by the tests that use them.
"""

from __future__ import annotations

from pathlib import Path

from repogym.samples import generate_repo
from repogym.samples.licenses import MIT
from repogym.task import EnvSpec, Source, Task
from repogym.testing import TESTS_AFTER, make_toy_task

from .git import commit_files, git, init_repo


def make_synthetic_toy_task(
    root: str | Path, test_file: str = "tests/test_calc.py", instance_id: str = "toy__calc-synth"
) -> Task:
    """The toy repo with its regression test committed in `test_file` (the bug stays): a task with no test
    patch whose FAIL_TO_PASS test is an existing test of the repository, the shape repogym's synthetic tasks
    have."""
    toy = make_toy_task(root, instance_id=instance_id)
    base = commit_files(Path(toy.repo_source), {test_file: TESTS_AFTER}, "tests: add")
    ids = [f"{test_file}::test_mul", f"{test_file}::test_mul_zero"]
    return toy.replace(
        base_commit=base, test_patch="", FAIL_TO_PASS=[f"{test_file}::test_add"], PASS_TO_PASS=ids
    )


def make_licensed_toy_task(root: Path) -> Task:
    """The toy task one commit later, when an MIT LICENSE was added (same dependencies, same environment)."""
    task = make_toy_task(root, instance_id="toy__calc-mit")
    license_text = MIT.format(year=2024, holder="The calc developers")
    base = commit_files(Path(task.repo_source), {"LICENSE": license_text}, "Add the MIT licence")
    return task.replace(base_commit=base)


def as_candidate(task: Task, instance_id: str, **changes: object) -> Task:
    """What the miner hands over: the task without its test lists."""
    return task.replace(instance_id=instance_id, FAIL_TO_PASS=[], PASS_TO_PASS=[], **changes)


def git_task(root: Path, files: dict[str, str], env: EnvSpec, instance_id: str, fail_to_pass: str) -> Task:
    """A one-commit git repo of `files` (a pytest.ini pins the rootdir) and a task over it."""
    repo = root / "repo"
    base = init_repo(repo, {"pytest.ini": "[pytest]\n", **files}, "tests")
    return Task(
        instance_id, "t/" + instance_id, base, "", FAIL_TO_PASS=[fail_to_pass], repo_source=str(repo), env=env
    )


#: Buggy functions at the base commit; each task fixes one line (bug, fix, issue text).
BUGS = [
    (
        "def add(a, b):\n    return a - b\n",
        "    return a - b",
        "    return a + b",
        "add(2, 3) returns -1 instead of 5.",
    ),
    (
        "def mul(a, b):\n    return a + b\n",
        "    return a + b",
        "    return a * b",
        "mul(2, 4) returns 6 instead of 8.",
    ),
    ("def neg(a):\n    return a\n", "    return a", "    return -a", "neg(3) returns 3 instead of -3."),
    ("def is_pos(a):\n    return a < 0\n", "    return a < 0", "    return a > 0", "is_pos(2) is False."),
    (
        "def half(a):\n    return a * 2\n",
        "    return a * 2",
        "    return a / 2",
        "half(8) returns 16, not 4.",
    ),
]


def make_bug_tasks(root: Path) -> list[Task]:
    """A git repo `ops` with one file of five buggy functions (padding between them) and a task per bug."""
    repo = root / "ops"
    padding = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(4))
    source = "\n\n".join(
        code + padding.replace("helper_", f"helper{n}_") for n, (code, *_) in enumerate(BUGS)
    )
    base = init_repo(repo, {"ops.py": source}, "ops")
    tasks = []
    for n, (_, bug, fix, issue) in enumerate(BUGS):
        (repo / "ops.py").write_text(source.replace(bug + "\n", fix + "\n", 1))
        patch = git(repo, "diff")
        git(repo, "checkout", "-q", "--", "ops.py")
        tasks.append(
            Task(
                instance_id=f"ops__ops-{n}",
                repo="ops/ops",
                base_commit=base,
                patch=patch,
                test_patch="",
                problem_statement=issue,
                FAIL_TO_PASS=[f"tests/test_ops.py::test_{n}"],
                PASS_TO_PASS=[],
                source=Source.SYNTHETIC,
                repo_source=str(repo),
                license="MIT",
            )
        )
    return tasks


def sample_library_tasks(root: Path, seed: int = 1, n_bug_fixes: int = 3) -> list[Task]:
    """The planted fixes of a generated sample library under `root/lib`, as tasks (gold patch = the fix's
    code change, test patch = its tests)."""
    repo = generate_repo(root / "lib", seed=seed, n_bug_fixes=n_bug_fixes)
    return [
        Task(
            instance_id=f"{repo.name}__{fix.slug}",
            repo=repo.github,
            base_commit=fix.base_commit,
            patch=git(repo.path, "diff", fix.base_commit, fix.fix_commit, "--", *fix.code_files),
            test_patch=git(repo.path, "diff", fix.base_commit, fix.fix_commit, "--", *fix.test_files),
            problem_statement=fix.title,
            FAIL_TO_PASS=list(fix.FAIL_TO_PASS),
            PASS_TO_PASS=list(fix.PASS_TO_PASS),
            source=Source.SYNTHETIC,
            repo_source=str(repo.path),
        )
        for fix in repo.fixes
    ]
