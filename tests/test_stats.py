"""What `repogym tasks stats` reports, checked against figures counted by hand."""

from __future__ import annotations

import json

from repogym.dataset import load_tasks
from repogym.stats import Distribution, task_stats
from repogym.task import Source, Task


def test_sample_figures(swebench_sample_path):
    figures = task_stats(load_tasks(swebench_sample_path))
    assert figures.count == 4
    assert figures.per_repo == {"pallets/flask": 1, "psf/requests": 1, "sympy/sympy": 1, "django/django": 1}
    assert figures.per_source == {"imported": 4}
    # Each patch touches two files; lines added + removed: flask 11, requests 9, sympy 9, django 8.
    assert figures.patch_files == Distribution(2.0, 2.0, 2)
    assert figures.patch_lines == Distribution(9.25, 9.0, 11)
    # Test patches: flask 13 (new toml file + test), requests 5, sympy 7, django 4.
    assert figures.test_patch_lines == Distribution(7.25, 6.0, 13)
    assert figures.fail_to_pass == Distribution(1.25, 1.0, 2)
    assert figures.pass_to_pass == Distribution(4.0, 5.0, 6)
    assert figures.without_fail_to_pass == 0
    assert json.loads(json.dumps(figures.to_dict()))["patch_lines"] == {
        "mean": 9.25,
        "median": 9.0,
        "max": 11,
    }


def test_counts_per_repo_are_sorted_by_size_and_unvalidated_tasks_counted():
    tasks = [
        Task("a__x-1", "a/x", "c", "not a diff"),
        Task("b__y-1", "b/y", "c", "not a diff", source=Source.MINED, FAIL_TO_PASS=["t"]),
        Task("b__y-2", "b/y", "c", "not a diff", source=Source.MINED),
    ]
    figures = task_stats(tasks)
    assert list(figures.per_repo.items()) == [("b/y", 2), ("a/x", 1)]
    assert figures.per_source == {"mined": 2, "imported": 1}
    assert figures.patch_lines == Distribution(0.0, 0.0, 0), "an unparsable patch counts as empty"
    assert figures.without_fail_to_pass == 2


def test_no_tasks_gives_zeros():
    figures = task_stats([])
    assert figures.count == 0
    assert figures.patch_lines == Distribution(0.0, 0.0, 0)
