"""`split_tasks`: no function (by file: no file) on both sides, identical diffs once, the same split from a seed."""

from __future__ import annotations

import json

import pytest

from repogym.dataset import load_tasks, save_tasks
from repogym.errors import ConfigError
from repogym.locate import MODULE, task_locations
from repogym.split import split_tasks, write_split
from repogym.task import Source, Task

from ..support.git import git

LIB = '''"""A library."""

LIMIT = 10


def alpha(x):
    return x + 1


def beta(x):
    return x * 2


class Gamma:
    def delta(self, x):
        return x - 1

    def epsilon(self, x):
        return x // 2
'''


def synthetic(index: int, file: str, function: str, line: str = "x") -> Task:
    patch = f"--- a/{file}\n+++ b/{file}\n@@ -{index} +{index} @@\n-{line}{index}a\n+{line}{index}b\n"
    metadata = {"method": "op_change", "file": file, "function": function, "lines": [index, index]}
    return Task(f"o__r-synth-{index}", "o/r", f"c{index}", patch, source=Source.SYNTHETIC, metadata=metadata)


@pytest.fixture
def tasks() -> list[Task]:
    built = []
    for index in range(60):
        file = f"src/m{index % 4}.py"
        built.append(synthetic(index, file, f"f{index % 7}"))
    return built


def sides(split):
    def keys(side):
        return {(t.repo, loc) for t in side for loc in task_locations(t)}

    return keys(split.train), keys(split.test)


def test_by_function_leaves_no_function_on_both_sides(tasks):
    split = split_tasks(tasks, "function", ratio=0.8, seed=3)
    train, test = sides(split)
    assert split.train and split.test
    assert not train & test
    assert len(split.train) + len(split.test) == len(tasks)
    assert 0.6 <= len(split.train) / len(tasks) <= 0.95


def test_by_file_leaves_no_file_on_both_sides(tasks):
    split = split_tasks(tasks, "file", ratio=0.75, seed=0)
    files = [{loc[0] for t in side for loc in task_locations(t)} for side in (split.train, split.test)]
    assert split.train and split.test and not files[0] & files[1]


def test_a_task_touching_two_functions_ties_them_to_one_side(tasks):
    bridge = synthetic(99, "src/m0.py", "f0").replace(
        instance_id="bridge",
        metadata={
            **synthetic(99, "src/m0.py", "f0").metadata,
            "locations": [{"file": "src/m1.py", "function": "f1"}],
        },
    )
    split = split_tasks([*tasks, bridge], "function", ratio=0.5, seed=5)
    train, test = sides(split)
    assert split.train and split.test  # an empty side shares nothing whatever the split did
    assert not train & test
    bridged = {("o/r", ("src/m0.py", "f0")), ("o/r", ("src/m1.py", "f1"))}
    assert bridged <= (test if "bridge" in {t.instance_id for t in split.test} else train)


def test_the_split_is_the_same_from_the_same_seed_and_differs_from_another(tasks):
    first, again = split_tasks(tasks, "function", 0.8, 7), split_tasks(list(tasks), "function", 0.8, 7)
    assert [t.instance_id for t in first.test] == [t.instance_id for t in again.test]
    assert first.manifest["digests"] == again.manifest["digests"]
    other = split_tasks(tasks, "function", 0.8, 8)
    assert {t.instance_id for t in other.test} != {t.instance_id for t in first.test}


def test_identical_diffs_are_kept_once_and_recorded(tasks):
    twin = tasks[0].replace(
        instance_id="twin",
        base_commit="elsewhere",
        patch=tasks[0].patch.replace("@@ -0 +0 @@", "@@ -40 +40 @@"),
    )
    split = split_tasks([*tasks, twin], "function", 0.8, 0)
    assert split.manifest["duplicates"] == [{"instance_id": "twin", "same_diff_as": tasks[0].instance_id}]
    assert "twin" not in {t.instance_id for t in (*split.train, *split.test)}


def test_by_time_holds_out_later_tasks_whose_function_is_in_train(tasks):
    dated = [t.replace(created_at=f"2024-01-01T00:{i:02d}:00Z") for i, t in enumerate(tasks)]
    split = split_tasks(dated, "time", 0.3, 0)
    assert max(t.created_at for t in split.train) <= min(t.created_at for t in split.test)
    train, test = sides(split)
    assert not train & test
    held = split.manifest["held_out"]
    assert held and all("also in train" in h["why"] for h in held)
    assert len(split.train) + len(split.test) + len(held) == len(tasks)


def test_write_split_makes_one_jsonl_per_side_and_a_manifest(tasks, tmp_path):
    split = split_tasks(tasks, "function", 0.8, 1)
    manifest = write_split(split, tmp_path / "out")
    assert [t.instance_id for t in load_tasks(tmp_path / "out" / "test.jsonl")] == [
        t.instance_id for t in split.test
    ]
    data = json.loads(manifest.read_text())
    assert data["by"] == "function" and data["counts"]["train"] == len(split.train)
    assert data["test_keys"] and all(key.startswith("function:") for key in data["test_keys"])


def test_bad_ratio_and_empty_input_are_refused(tasks):
    with pytest.raises(ConfigError, match="between 0 and 1"):
        split_tasks(tasks, "function", 1.5)
    with pytest.raises(ConfigError, match="no tasks"):
        split_tasks([], "function")


# -- where a mined task's fix is ----------------------------------------------------------------------


@pytest.fixture
def mined_repo(tmp_path):
    repo = tmp_path / "lib"
    repo.mkdir()
    (repo / "lib.py").write_text(LIB)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lib")
    return repo


def mined(repo, new_text: str, instance_id: str = "o__lib-1") -> Task:
    (repo / "lib.py").write_text(new_text)
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", "lib.py")
    base = git(repo, "rev-parse", "HEAD").strip()
    return Task(instance_id, "o/lib", base, patch, source=Source.MINED, repo_source=str(repo))


def test_a_mined_fix_is_located_in_the_functions_its_lines_touch(mined_repo):
    task = mined(mined_repo, LIB.replace("x - 1", "x - 2").replace("x + 1", "x + 3"))
    assert task_locations(task) == [("lib.py", "alpha"), ("lib.py", "Gamma.delta")]
    module_level = mined(mined_repo, LIB.replace("LIMIT = 10", "LIMIT = 11"))
    assert task_locations(module_level) == [("lib.py", MODULE)]


def test_without_the_repository_the_hunk_header_names_the_function(mined_repo):
    task = mined(mined_repo, LIB.replace("x // 2", "x // 3"))
    gone = task.replace(repo_source=str(mined_repo / "missing"))
    # git's hunk header names the nearest def or class above the hunk's first (context) line: coarser than
    # the source lookup ("Gamma.epsilon"), but never empty.
    assert task_locations(task) == [("lib.py", "Gamma.epsilon")]
    assert task_locations(gone) == [("lib.py", "Gamma")]


def test_mined_tasks_split_by_function_share_no_function(mined_repo, tmp_path):
    variants = [
        LIB.replace("x + 1", f"x + {n}") if n % 2 else LIB.replace("x * 2", f"x * {n}") for n in range(3, 11)
    ]
    tasks = [mined(mined_repo, text, f"o__lib-{i}") for i, text in enumerate(variants)]
    split = split_tasks(tasks, "function", 0.5, 0)
    train, test = sides(split)
    assert split.train and split.test  # an empty side shares nothing whatever the split did
    assert not train & test
    save_tasks(list(split.test), tmp_path / "t.jsonl")


def test_by_repo_leaves_no_repository_on_both_sides(tasks):
    spread = [
        t.replace(repo=f"o/r{i % 5}", instance_id=f"{t.instance_id}-{i % 5}") for i, t in enumerate(tasks)
    ]
    split = split_tasks(spread, "repo", 0.6, 2)
    repos = [{t.repo for t in side} for side in (split.train, split.test)]
    assert split.train and split.test and not repos[0] & repos[1]
    assert split.manifest["test_keys"] == sorted(f"repo:{r}" for r in repos[1])


def test_the_same_line_broken_in_two_functions_is_two_tasks_not_a_duplicate(tasks):
    # toolz's check_valid and check_partial share `if num_pos_only < len(args):`; flipping it in each is two
    # bugs with two fixes, and dropping one lost 31 of 381 validated toolz tasks before the key held the function.
    other_function = tasks[0].replace(
        instance_id="same-line-elsewhere",
        patch=tasks[0].patch.replace("@@ -0 +0 @@", "@@ -40 +40 @@"),
        metadata={**tasks[0].metadata, "function": "f_elsewhere"},
    )
    split = split_tasks([*tasks, other_function], "function", 0.8, 0)
    assert split.manifest["duplicates"] == []
    assert "same-line-elsewhere" in {t.instance_id for t in (*split.train, *split.test)}
