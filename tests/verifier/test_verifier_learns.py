"""The issue's "done when": a verifier trained on graded rollouts ranks resolved above unresolved attempts on
tasks it never saw, and the same run on labels that carry nothing (rotated within each task) does not.

Why the criterion is more than an AUC: AUC only ranks, and these attempts differ so plainly (a code diff, a note
file, nothing) that even the untrained tiny model ranks them perfectly one way or the other (measured: AUC 0.0
before training). A verifier that learnt from its labels must also put the two kinds far apart in p(YES).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app

from .conftest import POLICIES, GradedRollouts

#: Settings the tiny model learns the signal with in a few dozen steps (a high learning rate, short rows).
TRAIN = ["--heldout-share", "0.5", "--max-steps", "36", "--learning-rate", "3e-3", "--batch-size", "8",
         "--max-length", "640", "--device", "cpu", "--seed", "0"]  # fmt: skip


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def train_and_verify(tiny_model: Path, folders: list[str], scored: list[str], out: Path) -> tuple[dict, dict]:
    trained = cli("train", "verifier", *folders, "--base-model", str(tiny_model), "--out", str(out / "v"), *TRAIN,
                  "--json")  # fmt: skip
    assert trained.exit_code == 0, trained.output
    verified = cli("verify", *scored, "--verifier", str(out / "v"), "--out", str(out / "verify"), "--json")
    assert verified.exit_code == 0, verified.output
    return json.loads(trained.stdout), json.loads(verified.stdout)


def learned(summary: dict) -> bool:
    """Ranks resolved first (AUC >= 0.9, its interval clear of 0.5) and puts them >= 0.3 apart in p(YES)."""
    gap = summary["mean_score"]["resolved"] - summary["mean_score"]["unresolved"]
    return summary["auc"] >= 0.9 and summary["intervals"]["auc"][0] > 0.5 and gap >= 0.3


@pytest.mark.slow
def test_a_verifier_ranks_resolved_above_unresolved_on_held_out_tasks(tmp_path, tiny_model, graded_rollouts):
    manifest, summary = train_and_verify(tiny_model, graded_rollouts.all, graded_rollouts.all, tmp_path)
    train, heldout = set(manifest["split"]["train"]), set(manifest["split"]["heldout"])
    assert not train & heldout and len(train | heldout) == 11 and len(heldout) >= 5
    assert (
        manifest["balance"]["after"]["resolved"] == manifest["balance"]["after"]["unresolved"] == len(train)
    )
    assert manifest["base_model"] == str(tiny_model)
    # Only held-out tasks were scored, every attempt on them, and the summary says which.
    assert (
        set(summary["tasks"]["scored"]) == heldout
        and set(summary["tasks"]["left_out_as_trained_on"]) == train
    )
    assert summary["attempts"] == 3 * len(heldout) and summary["resolved"] == len(heldout)
    scores = [json.loads(line) for line in (tmp_path / "verify" / "scores.jsonl").read_text().splitlines()]
    assert {row["instance_id"] for row in scores} == heldout and len(scores) == summary["attempts"]
    print(f"held-out AUC {summary['auc']:.3f} {summary['intervals']['auc']}, ECE {summary['ece']:.3f} "
          f"{summary['intervals']['ece']}, mean p(YES) {summary['mean_score']}")  # fmt: skip
    assert learned(summary), summary
    assert 0.0 <= summary["ece"] <= summary["intervals"]["ece"][1] <= 1.0


def rotate_labels(graded: GradedRollouts, root: Path) -> list[str]:
    """Copies of the rollout folders whose `resolved` labels are permuted within each task: task i's one YES
    goes to the attempt of kind i mod 3, so every kind of attempt is labelled YES on a third of the tasks and
    the labels say nothing about an attempt (each task keeps its counts, the balance is unchanged)."""
    task_ids = sorted(json.loads(line)["instance_id"] for line in graded.tasks_file.read_text().splitlines())
    folders = []
    for kind_index, kind in enumerate(POLICIES):
        copy = root / kind
        shutil.copytree(graded.folders[kind], copy, ignore=shutil.ignore_patterns(".lock"))
        for shard in copy.glob("trajectories-*.jsonl"):
            rows = [json.loads(line) for line in shard.read_text().splitlines()]
            for row in rows:
                row["resolved"] = task_ids.index(row["instance_id"]) % 3 == kind_index
            shard.write_text("".join(json.dumps(row) + "\n" for row in rows))
        folders.append(str(copy))
    return folders


@pytest.mark.slow
def test_labels_that_say_nothing_about_the_attempt_teach_nothing(tmp_path, tiny_model, graded_rollouts):
    """The first test's run on rotated labels, measured on the true ones: it must fail `learned`."""
    rotated = rotate_labels(graded_rollouts, tmp_path / "rotated")
    manifest, summary = train_and_verify(tiny_model, rotated, graded_rollouts.all, tmp_path)
    assert manifest["balance"]["after"]["resolved"] == manifest["balance"]["after"]["unresolved"] > 0
    gap = summary["mean_score"]["resolved"] - summary["mean_score"]["unresolved"]
    print(f"rotated labels: held-out AUC {summary['auc']:.3f} {summary['intervals']['auc']}, gap {gap:.3f}")
    assert abs(gap) < 0.15, summary
    assert not learned(summary)
