"""`repogym eval --route ... --by verifier:V`: the verifier judges the small policy's stored attempt of each task
(the tiny model as the verifier: any causal-LM folder with a chat template is one), and the cascade's spend
counts the small policy on every task, the verifier's time and the large policy where it was sent."""

from __future__ import annotations

import pytest

from repogym.dataset import load_tasks
from repogym.evaluate.routing import keeps_small
from repogym.verifier.score import load_verifier, score_attempts

from ..support.cli import cli
from ..support.routing import RoutingWorld, attempt_seconds, build_world, stored_rows, went

pytestmark = pytest.mark.slow
ALONE = ("resolve_rate", "tokens", "seconds", "cost")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, toy_task) -> RoutingWorld:
    return build_world(tmp_path_factory.mktemp("routing-verifier"), toy_task)


def test_the_verifier_judges_the_small_attempt_and_an_empty_one_goes_on(world, tmp_path, tiny_model):
    out = tmp_path / "by-verifier"
    summary = world.route(out, "--by", f"verifier:{tiny_model}", "--threshold", "0.7")
    small = stored_rows(out / "small")
    tasks = {task.instance_id: task for task in load_tasks(world.tasks)}
    judged = ["toy__calc-1", "toy__calc-2", "toy__calc-3"]  # calc-4's attempt has no diff: nothing to judge
    direct = score_attempts(load_verifier(tiny_model), [(tasks[t], small[t]["final_patch"]) for t in judged])
    for task_id, p_yes in zip(judged, direct, strict=True):
        route = summary["per_task"][task_id]["route"]
        assert route["p_yes"] == pytest.approx(p_yes) and route["risk"] == pytest.approx(1 - p_yes)
    calc4 = summary["per_task"]["toy__calc-4"]["route"]
    assert (calc4["p_yes"], calc4["risk"], calc4["to"]) == (None, 1.0, "large")
    for task_id, row in summary["per_task"].items():
        assert row["route"]["to"] == ("small" if keeps_small(row["route"]["risk"], 0.7) else "large"), task_id
    routing = summary["routing"]
    assert routing["by"] == f"verifier:{tiny_model}" and routing["verifier_s"] > 0
    # A cascade between the ends: the small policy ran on every task and the verifier judged it; the large
    # policy only on the tasks sent on. The ends run one policy alone (nothing judged, nothing sent).
    chosen, large = routing["chosen"], stored_rows(out / "large")
    sent = [task_id for task_id, to in went(summary).items() if to == "large"]
    attempt_s = sum(map(attempt_seconds, small.values())) + sum(attempt_seconds(large[t]) for t in sent)
    assert chosen["seconds"] == pytest.approx(attempt_s + routing["verifier_s"])
    assert chosen["share_to_large"] == len(sent) / 4
    resolved = sum((large if to == "large" else small)[t]["resolved"] for t, to in went(summary).items())
    assert chosen["resolve_rate"] == summary["pass@1"] == resolved / 4
    curve = {row["threshold"]: row for row in routing["curve"]}
    assert {name: curve[0.0][name] for name in ALONE} == {name: routing["large"][name] for name in ALONE}
    assert {name: curve[1.0][name] for name in ALONE} == {name: routing["small"][name] for name in ALONE}


def test_verifier_may_be_named_by_its_own_option_and_only_with_by_verifier(world, tmp_path, tiny_model):
    summary = world.route(tmp_path / "spelled", "--by", "verifier", "--verifier", str(tiny_model))
    assert summary["routing"]["by"] == f"verifier:{tiny_model}" and went(summary)["toy__calc-4"] == "large"
    refused = cli("eval", *world.command(tmp_path / "refused"), "--verifier", str(tiny_model))
    assert refused.exit_code == 2 and f"--verifier {tiny_model}: only --by verifier reads" in refused.output
    assert not (tmp_path / "refused").exists()


def test_a_verifier_that_reads_trajectories_is_refused_before_any_attempt(tmp_path, tiny_model):
    """Routing judges the small policy's diff alone; a verifier trained with --include-trajectory cannot. It must be
    refused when loaded, naming the option, not after both policies have run on every task."""
    import json
    import shutil

    from repogym.verifier.train import MANIFEST_FILE

    folder = tmp_path / "v"
    shutil.copytree(tiny_model, folder)
    (folder / MANIFEST_FILE).write_text(json.dumps({"prompt": {"include_trajectory": True}}))
    result = cli("eval", "tasks.jsonl", "--route", "small=scripted:gold,large=scripted:gold",
                 "--by", f"verifier:{folder}", "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"--by verifier:V: {folder} was trained on attempts' turns" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()
