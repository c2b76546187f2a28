"""`split --by function` keys a line a commit adds by the function it lands in after the patch.

The hole: added lines were keyed to the function above their insertion point in the base file, so a mined
commit that adds `g()` below `f()` was keyed to `f`, while the synthetic bugs later injected into `g` were keyed
to `g`: the two could land on opposite sides, and the training answer held the held-out function whole (on the
learning benchmark's split a training task added the held-out `mode`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.locate import task_locations
from repogym.split import split_tasks
from repogym.task import Source, Task

from ..support.git import commit_files, init_repo, staged_diff

HELPERS = 6


def module(with_g: bool) -> str:
    """`f`, then (with_g) `g`, then helpers `h0`..`h5`: g is added below f, not at the end of the file."""
    parts = ['"""Stats."""\n\nSCALE = 1\n\n\ndef f(xs):\n    total = sum(xs)\n    return total * SCALE\n']
    if with_g:
        parts.append("\n\ndef g(xs):\n    counts = {}\n    for x in xs:\n        counts[x] = counts.get(x, 0) + 1\n"
                     "    return max(counts, key=counts.get)\n")  # fmt: skip
    parts += [f"\n\ndef h{i}(x):\n    y = x + {i}\n    return y * {i + 1}\n" for i in range(HELPERS)]
    return "".join(parts)


def task(repo: Path, base: str, new_text: str, instance_id: str, **metadata: object) -> Task:
    """A task whose gold patch turns `stats.py` at `base` (the repository's HEAD) into `new_text`."""
    patch = staged_diff(repo, {"stats.py": new_text})
    source = Source.SYNTHETIC if metadata else Source.MINED
    return Task(instance_id, "o/stats", base, patch, source=source, repo_source=str(repo), metadata=metadata)


@pytest.fixture
def repo_tasks(tmp_path) -> dict[str, Task]:
    """The commit adding g (mined, on the base without g), a synthetic bug fixed inside g and a mined fix
    inside g (both on the commit with g), and two fixes in each helper."""
    repo = tmp_path / "stats"
    without_g = init_repo(repo, {"stats.py": module(with_g=False)})
    built = {"adds_g": task(repo, without_g, module(with_g=True), "o__stats-adds-g")}
    with_g = commit_files(repo, {"stats.py": module(with_g=True)}, "add g")
    text = module(with_g=True)
    built["synthetic_g"] = task(
        repo, with_g, text.replace("counts.get(x, 0) + 1", "counts.get(x, 1) + 1"), "o__stats-synth-g",
        method="literal_change", file="stats.py", function="g",
    )  # fmt: skip
    built["mined_g"] = task(
        repo, with_g, text.replace("key=counts.get", "key=counts.__getitem__"), "o__stats-g"
    )
    built["only_f"] = task(repo, with_g, text.replace("sum(xs)", "sum(xs) + 0"), "o__stats-f")
    for i in range(HELPERS):
        for n, old in enumerate((f"x + {i}\n", f"y * {i + 1}\n")):
            new = old.replace("+", "-") if n == 0 else old.replace("*", "//")
            built[f"h{i}-{n}"] = task(repo, with_g, text.replace(old, new), f"o__stats-h{i}-{n}")
    return built


def test_a_commit_adding_g_below_f_is_keyed_to_g_not_f(repo_tasks):
    # The insertion point of every added line is in f (or the blank line after it); where they land is g.
    assert task_locations(repo_tasks["adds_g"]) == [("stats.py", "g")]
    assert task_locations(repo_tasks["mined_g"]) == [("stats.py", "g")]


def test_a_task_changing_only_f_is_keyed_to_f_alone(repo_tasks):
    assert task_locations(repo_tasks["only_f"]) == [("stats.py", "f")]


@pytest.mark.parametrize("seed", range(8))
def test_split_added_function_straddling_the_sides(repo_tasks, seed):
    """The commit that adds g and the bugs fixed inside g land on one side, and no function is on both."""
    split = split_tasks(list(repo_tasks.values()), "function", ratio=0.5, seed=seed)
    assert split.train and split.test
    side = {
        t.instance_id: name for name, tasks in (("train", split.train), ("test", split.test)) for t in tasks
    }
    ids = [repo_tasks[key].instance_id for key in ("adds_g", "synthetic_g", "mined_g")]
    assert len({side[i] for i in ids}) == 1, {i: side[i] for i in ids}
    train, test = ({loc for t in tasks for loc in task_locations(t)} for tasks in (split.train, split.test))
    assert not train & test


def test_an_added_file_is_keyed_by_the_functions_it_defines(tmp_path):
    repo = tmp_path / "pkg"
    base = init_repo(repo, {"stats.py": module(with_g=False)})
    patch = staged_diff(repo, {"extra.py": "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"})
    added = Task("o__pkg-1", "o/pkg", base, patch, source=Source.MINED, repo_source=str(repo))
    assert task_locations(added) == [("extra.py", "<module>"), ("extra.py", "area")]
    # The added file's text is in the patch itself: no repository is needed to read it.
    assert task_locations(added.replace(repo_source=str(tmp_path / "missing"))) == task_locations(added)
