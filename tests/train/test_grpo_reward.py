"""The reward inside GRPO training is `repogym grade` plus the reward components, completion by completion.

TRL's own `_calculate_rewards` (what a training step calls) runs on the real trainer over the
toy task, with the seed's components plus SWE-RL's similarity; each completion is then graded
again with the `repogym grade` command and composed with `repogym.rewards.compose`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import repogym.env
from repogym.config import validate_config
from repogym.grading.report import GradeResult
from repogym.rewards import compose
from repogym.rewards.similarity import oracle_contents
from repogym.search_replace import FormatError, answer_from_patch, apply_answer
from repogym.train.grpo import build_trainer
from repogym.train.rl_checks import load_checked_tokenizer
from repogym.train.rl_tasks import TaskEnvs

from ..support.rl import fast_settings

pytestmark = pytest.mark.slow

SEED_AND_SIMILARITY = {
    "components": [
        {"name": "tests_pass", "weight": 1.0, "fn": "run_pytest"},
        {"name": "compile_pass", "weight": 0.5, "fn": "type_check"},
        {"name": "minimal_diff", "weight": 0.1, "fn": "diff_size_penalty"},
        {"name": "similarity", "weight": 1.0, "fn": "patch_similarity"},
    ]
}


def block(path: str, search: str, replace: str) -> str:
    """One SEARCH/REPLACE block as SWE-RL writes it (an empty SEARCH is an empty line: a new file)."""
    return f"```python\n### {path}\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n"


def answers(task, code_context) -> dict[str, str]:
    path, buggy = "src/calc/__init__.py", "    return a - b"
    gold = answer_from_patch(task.patch, code_context)

    def answer(*blocks: str) -> str:
        return "<think>x</think>\n<solution>\n" + "".join(blocks) + "</solution>"

    return {
        "gold": gold,
        "breaks_compile": answer(block(path, buggy, "    return a +")),
        "wrong_fix": answer(block(path, buggy, "    return a * b")),
        "gold_plus_new_file": gold.replace("</solution>", block("extra.py", "", "x = 1") + "</solution>"),
        "malformed": "I think the bug is in add.",
    }


def graded_by_cli(tasks_file: Path, instance_id: str, patch: str, tmp_path: Path) -> GradeResult:
    patch_file = tmp_path / f"{abs(hash(patch))}.diff"
    patch_file.write_text(patch, encoding="utf-8")
    repogym = Path(sys.executable).with_name("repogym")
    done = subprocess.run(
        [str(repogym), "grade", str(tasks_file), "--instance", instance_id, "--patch", str(patch_file), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return GradeResult.from_dict(json.loads(done.stdout))


def test_training_reward_equals_repogym_grade_plus_components(tiny_model, toy_task, toy_tasks_file, tmp_path):
    config = validate_config({
        "base_model": str(tiny_model), "reward": SEED_AND_SIMILARITY,
        "env": {"task_set": str(toy_tasks_file), "mode": "agentless"},
        "rollout": {"num_candidates": 5}, "batch_size": 5, "output_dir": str(tmp_path / "run"),
        "grpo": fast_settings(),
    })  # fmt: skip
    envs = TaskEnvs.open(config, workers=2)
    pool = ThreadPoolExecutor(2)
    try:
        tokenizer = load_checked_tokenizer(tiny_model, "agentless")
        trainer = build_trainer(config, tiny_model, tokenizer, envs, pool, per_device=5)
        env = repogym.env.make(toy_task.instance_id, [toy_task], mode="agentless")
        prompt_text, info = env.reset()
        env.close()
        code_context = info["code_context"]
        named = answers(toy_task, code_context)
        prompt = [{"role": "user", "content": prompt_text}]
        inputs = [{"prompt": prompt, "instance_id": toy_task.instance_id} for _ in named]
        completions = [[{"role": "assistant", "content": text}] for text in named.values()]
        per_func = trainer._calculate_rewards(inputs, [prompt] * len(named), completions, [[0]] * len(named))
        totals = (per_func * trainer.reward_weights).nansum(dim=1).tolist()
        assert trainer.reward_func_names == [c["name"] for c in SEED_AND_SIMILARITY["components"]]
    finally:
        pool.shutdown()
        envs.close()

    reward = compose(SEED_AND_SIMILARITY)
    oracle = oracle_contents(toy_task.patch, code_context)
    expected = {}
    for name, text in named.items():
        try:
            patch, format_errors = apply_answer(text, code_context).diff, 0
        except FormatError:
            patch, format_errors = "", 1
        grade = (
            graded_by_cli(toy_tasks_file, toy_task.instance_id, patch, tmp_path)
            if not format_errors
            else None
        )
        expected[name] = reward(
            grade=grade, task=toy_task, patch=patch, format_errors=format_errors, response=text,
            code_context=code_context, oracle_new_content=oracle,
        )  # fmt: skip
    for index, (name, breakdown) in enumerate(expected.items()):
        assert totals[index] == pytest.approx(breakdown.total, abs=1e-5), name
        for column, component in enumerate(reward.components):
            raw = breakdown.raw[component.name]
            got = per_func[index, column].item()
            assert (raw is None and got != got) or got == pytest.approx(raw, abs=1e-6), (name, component.name)
    # The cases are the ones they claim to be: the grader and every term took part.
    assert expected["gold"].total == pytest.approx(2.0)
    assert expected["malformed"].total == pytest.approx(-1.0)
    assert expected["breaks_compile"].components["compile_pass"] == pytest.approx(-0.5)
    assert expected["gold_plus_new_file"].components["minimal_diff"] == pytest.approx(-0.1)
    assert expected["wrong_fix"].raw["tests_pass"] == 0.0 and 0 < expected["wrong_fix"].raw["similarity"] < 1


def test_masked_format_errors_get_no_score_and_no_advantage(
    tiny_model, toy_task, toy_tasks_file, tmp_path, caplog
):
    """`grpo.format_errors: mask`: every term abstains on a malformed answer, so TRL leaves it out of the group's
    baseline and the loss drops it, while the answers that parse keep their grades (and TRL's warning about a
    completion nothing scored, which prints the whole prompt, stays out of the log)."""
    import torch

    from repogym.train.rl_groups import rows_without_advantage

    config = validate_config({
        "base_model": str(tiny_model), "env": {"task_set": str(toy_tasks_file), "mode": "agentless"},
        "rollout": {"num_candidates": 3}, "batch_size": 3, "output_dir": str(tmp_path / "run"),
        "grpo": fast_settings(format_errors="mask"),
    })  # fmt: skip
    envs = TaskEnvs.open(config, workers=2)
    pool = ThreadPoolExecutor(2)
    try:
        trainer = build_trainer(
            config, tiny_model, load_checked_tokenizer(tiny_model, "agentless"), envs, pool, 3
        )
        env = repogym.env.make(toy_task.instance_id, [toy_task], mode="agentless")
        prompt_text, info = env.reset()
        env.close()
        named = answers(toy_task, info["code_context"])
        texts = [named["gold"], named["malformed"], named["wrong_fix"]]
        prompt = [{"role": "user", "content": prompt_text}]
        inputs = [{"prompt": prompt, "instance_id": toy_task.instance_id} for _ in texts]
        completions = [[{"role": "assistant", "content": text}] for text in texts]
        per_func = trainer._calculate_rewards(inputs, [prompt] * 3, completions, [[0]] * 3)
    finally:
        pool.shutdown()
        envs.close()
    assert torch.isnan(per_func[1]).all(), "a masked format error must get no score from any term"
    totals = (per_func * trainer.reward_weights).nansum(dim=1)
    assert totals[0] > totals[2], "the answers that parse are graded as ever"
    assert rows_without_advantage(per_func, trainer.reward_weights, 3).tolist() == [False, True, False]
    assert "All reward functions returned None" not in caplog.text
