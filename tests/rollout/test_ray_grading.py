"""RayGrader under a trainer's burst: 1,000 grading requests through a real local Ray and the real sandbox, never
more than N in Ray, the requests read lazily, every result returned in its place and equal to a local grade."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.errors import ConfigError
from repogym.grading.batch import guarded_grade
from repogym.grading.report import Outcome
from repogym.rollout.ray_grading import HELD_PER_SLOT, GradeRequest, RayGrader
from repogym.sandbox.pool import RuntimePool
from repogym.testing import BUGGY_SOURCE, toy_patch

BURST = 1000
MAX_IN_FLIGHT = 4


def rss_bytes() -> int:
    """This process's resident memory now (Linux)."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def verdict(result) -> tuple:
    """What a user reads from a grade (not its timings or log path, which differ between any two grades)."""
    return (result.instance_id, result.outcome, result.status, result.fail_to_pass, result.pass_to_pass)


@pytest.fixture
def distinct_candidates(toy_task, tmp_path):
    """Four candidates with four different verdicts: the gold fix, a wrong fix, a non-diff, a task whose
    repository is gone (the grader fails, and that failure must come back as a result too)."""
    wrong = toy_patch(toy_task, "src/calc/__init__.py", BUGGY_SOURCE.replace("a - b", "a * b"))
    gone = toy_task.replace(instance_id="toy__calc-gone", repo_source=str(tmp_path / "no-such-repo"))
    return [(toy_task, toy_task.patch), (toy_task, wrong), (toy_task, "not a diff\n"), (gone, toy_task.patch)]


def test_a_burst_of_a_thousand_grades_is_bounded_in_flight_and_loses_nothing(
    distinct_candidates, monkeypatch
):
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    runtimes = RuntimePool("bwrap")
    expected = [verdict(guarded_grade(t, p, runtimes=runtimes)) for t, p in distinct_candidates]
    assert [e[1] for e in expected] == [
        Outcome.RESOLVED, Outcome.UNRESOLVED, Outcome.PATCH_APPLY_FAILED, Outcome.INFRA_ERROR,
    ]  # fmt: skip
    read = 0

    def burst():  # a generator, as a trainer's batch would be consumed: read only when the grader asks
        nonlocal read
        for index in range(BURST):
            read += 1
            yield GradeRequest(*distinct_candidates[index % len(distinct_candidates)])

    mismatches, rss_at = [], {}
    with RayGrader(max_in_flight=MAX_IN_FLIGHT, local_cpus=2) as grader:
        for index, result in enumerate(grader.grade_many(burst())):
            assert grader.counts.in_flight <= MAX_IN_FLIGHT
            assert read - (index + 1) <= HELD_PER_SLOT * MAX_IN_FLIGHT  # the burst is not slurped into memory
            if verdict(result) != expected[index % len(expected)]:
                mismatches.append((index, result.outcome, result.detail[:200]))
            if index + 1 in (100, BURST):
                rss_at[index + 1] = rss_bytes()
        counts = grader.counts
    assert not mismatches
    assert counts.submitted == counts.returned == read == BURST and counts.ray_failures == 0
    assert counts.peak_in_flight == MAX_IN_FLIGHT  # the bound was reached, so it was what held the burst back
    assert counts.peak_held <= HELD_PER_SLOT * MAX_IN_FLIGHT
    # 900 more requests after the 100th leave the driver's memory where it was (a few MB of allocator noise).
    assert rss_at[BURST] - rss_at[100] < 32 * 2**20, rss_at


def test_max_in_flight_must_be_positive():
    pytest.importorskip("ray")
    with pytest.raises(ConfigError, match="max_in_flight=0"):
        RayGrader(max_in_flight=0)
