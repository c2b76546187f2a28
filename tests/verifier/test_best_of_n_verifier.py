"""`repogym eval -n 4 --select verifier:V|hybrid:V` with a tiny verifier trained on the graded rollouts (as
test_verifier_learns trains it): the pick is the attempt the verifier scores highest, hybrid ranks by the visible
tests first, and a folder that is not a verifier is refused before any attempt runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.dataset import load_tasks
from repogym.verifier.score import load_verifier, score_attempts

from ..support.best_of_n import BestOfNWorld, build_world, picked
from ..support.cli import cli
from .test_verifier_learns import TRAIN

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory, tiny_model, graded_rollouts, toy_task
) -> tuple[Path, BestOfNWorld]:
    root = tmp_path_factory.mktemp("best-of-n-verifier")
    result = cli("train", "verifier", *graded_rollouts.all, "--base-model", str(tiny_model), "--out",
                 str(root / "v"), *TRAIN)  # fmt: skip
    assert result.exit_code == 0, result.output
    return root / "v", build_world(root / "world", toy_task)


def test_verifier_selection_picks_the_highest_p_yes_among_attempts_with_a_diff(trained, tmp_path):
    verifier, world = trained
    summary = world.select(f"verifier:{verifier}", tmp_path / "verifier")
    assert summary["select"] == f"verifier:{verifier}"
    for task_id, row in summary["per_task"].items():
        scores = row["selection"]["scores"]["verifier"]
        with_diff = [i for i, score in enumerate(scores) if score is not None]
        assert row["selection"]["attempt"] == max(with_diff, key=lambda i: (scores[i], -i)), (task_id, scores)
    # The recorded scores are the verifier's own p(YES) for each attempt's diff, empty diffs never scored.
    tasks = {task.instance_id: task for task in load_tasks(world.tasks)}
    rows = [json.loads(line) for shard in (tmp_path / "verifier" / "rollout").glob("trajectories-*.jsonl")
            for line in shard.read_text().splitlines()]  # fmt: skip
    calc2 = sorted((r for r in rows if r["instance_id"] == "toy__calc-2"), key=lambda r: r["attempt"])
    direct = score_attempts(
        load_verifier(verifier), [(tasks["toy__calc-2"], r["final_patch"]) for r in calc2[:3]]
    )
    assert summary["per_task"]["toy__calc-2"]["selection"]["scores"]["verifier"] == pytest.approx(
        [*direct, None]
    )
    # It learnt the fix from the note: on calc-2 and calc-3 (a note and the fix to choose from) it picks the fix.
    assert picked(summary)["toy__calc-2"] in (1, 2) and picked(summary)["toy__calc-3"] == 2
    print(
        f"verifier best@4 {summary['best@4']:.3f} (pass@1 {summary['pass@1']:.3f}, pass@4 {summary['pass@4']:.3f})"
    )


def test_hybrid_ranks_by_the_visible_tests_then_the_verifier(trained, tmp_path):
    verifier, world = trained
    summary = world.select(f"hybrid:{verifier}", tmp_path / "hybrid")
    # calc-1: break passes 1 visible test, the rest 2: the verifier chooses among fix, note, note (not break);
    # calc-2: no visible test, so the verifier alone decides.
    assert picked(summary) == {"toy__calc-1": 1, "toy__calc-2": 1, "toy__calc-3": 2, "toy__calc-4": 0}
    assert summary["per_task"]["toy__calc-1"]["selection"]["scores"]["tests_passed"] == [1.0, 2.0, 2.0, 2.0]
    # calc-4: the verifier prefers break to the note, the tests the note to break: the tests decide.
    calc4 = summary["per_task"]["toy__calc-4"]["selection"]["scores"]
    assert calc4["verifier"][1] > calc4["verifier"][0] and calc4["tests_passed"] == [2.0, 1.0, 2.0, 1.0]
    assert summary["best@4"] == summary["pass@4"] == 0.75 > summary["pass@1"]


def test_a_folder_that_is_not_a_verifier_is_one_line_and_exit_2(tmp_path, toy_task):
    (tmp_path / "v").mkdir()
    result = cli("eval", "tasks.jsonl", "--policy", "scripted:gold", "-n", "2", "--select", f"verifier:{tmp_path / 'v'}",
                 "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 2
    assert f"error: --select verifier:V: {tmp_path / 'v'} is not a model folder" in result.output
    assert len(" ".join(result.output.split()).splitlines()) == 1 and not (tmp_path / "out").exists()


def test_a_verifier_that_reads_trajectories_is_refused_before_any_attempt(tmp_path, tiny_model):
    """Best-of-n scores each attempt's diff alone; a verifier trained with --include-trajectory cannot, and must be
    refused when loaded, naming the option, not after every attempt has run."""
    import shutil

    from repogym.verifier.train import MANIFEST_FILE

    folder = tmp_path / "v"
    shutil.copytree(tiny_model, folder)
    (folder / MANIFEST_FILE).write_text(json.dumps({"prompt": {"include_trajectory": True}}))
    result = cli("eval", "tasks.jsonl", "--policy", "scripted:gold", "-n", "2", "--select", f"verifier:{folder}",
                 "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"--select verifier:V: {folder} was trained on attempts' turns" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()
