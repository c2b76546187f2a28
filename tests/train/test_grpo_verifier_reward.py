"""GRPO's verifier term (`reward.verifier`): a learned verifier's p(YES) rewards the completions of a task without
FAIL_TO_PASS tests; a task with tests keeps its tests' verdict and the verifier is never asked about it.

TRL's own `_calculate_rewards` runs on the real trainer over two tasks on the toy repository: the toy task (its
tests prove a fix) and a copy of it whose tests were never found (no FAIL_TO_PASS, PASS_TO_PASS or test patch).
The verifiers are real model folders: the suite's tiny model (any causal LM with a chat template is a verifier;
its p(YES) differs by diff) and an "approving" copy of it whose weights were edited to answer YES to anything.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import repogym.env
from repogym.config import validate_config
from repogym.dataset import save_tasks
from repogym.search_replace import apply_answer
from repogym.task import Task
from repogym.train.grpo import build_trainer
from repogym.train.rl_checks import load_checked_tokenizer
from repogym.train.rl_tasks import TaskEnvs
from repogym.verifier.score import diff_scorer, load_verifier, score_attempts
from repogym.verifier.train import MANIFEST_FILE

from ..support.cli import cli
from ..support.rl import fast_settings, write_config
from .test_grpo_reward import answers

UNTESTED = "toy__calc-untested"
#: The answers each task gets, in this order, as TRL's batch holds them.
KINDS = ("gold", "wrong_fix", "malformed")


@pytest.fixture(scope="module")
def mixed_tasks(toy_task, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Task, Task]:
    """The toy task and its test-free copy (the same issue and repository, nothing that can prove a fix)."""
    untested = dataclasses.replace(
        toy_task, instance_id=UNTESTED, FAIL_TO_PASS=[], PASS_TO_PASS=[], test_patch=""
    )
    path = tmp_path_factory.mktemp("mixed-tasks") / "tasks.jsonl"
    save_tasks([toy_task, untested], path)
    return path, toy_task, untested


@pytest.fixture(scope="module")
def approving_verifier(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with its weights edited so that p(YES) is 1.0 for any issue and diff: one residual dimension
    held at a constant (embedding column set, no layer writes to it) that the untied output head reads as YES."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = tmp_path_factory.mktemp("approving") / "verifier"
    shutil.copytree(tiny_model, folder)  # tokenizer and chat template as they are
    plain = load_verifier(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    with torch.no_grad():
        model.config.tie_word_embeddings = False
        model.lm_head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())
        model.get_input_embeddings().weight[:, 0] = 10.0
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight[0, :] = 0.0
            layer.mlp.down_proj.weight[0, :] = 0.0
        model.lm_head.weight[plain.yes_id, 0] = 50.0
        model.lm_head.weight[plain.no_id, 0] = -50.0
    model.save_pretrained(folder)
    return folder


class AskedVerifier:
    """A verifier's real scorer that records every (task id, diff) it is asked about, call by call."""

    def __init__(self, folder: Path) -> None:
        self.score = diff_scorer(folder, "reward.verifier.path")
        self.calls: list[list[tuple[str, str]]] = []

    def __call__(self, pairs: Sequence[tuple[Task, str]]) -> list[float]:
        self.calls.append([(task.instance_id, diff) for task, diff in pairs])
        return self.score(pairs)


def batch_rewards(mixed_tasks, verifier: Path, weight: float, tmp_path: Path):
    """TRL's per-term rewards of a real trainer for KINDS on the tested task, then on the untested one; the term
    names, TRL's weights, the scorer's record and each completion's graded diff."""
    tasks_file, toy_task, _ = mixed_tasks
    config = validate_config({
        "base_model": str(verifier), "env": {"task_set": str(tasks_file), "mode": "agentless"},
        "reward": {"verifier": {"path": str(verifier), "weight": weight}},
        "rollout": {"num_candidates": 3}, "batch_size": 6, "output_dir": str(tmp_path / "run"),
        "grpo": fast_settings(),
    })  # fmt: skip
    asked = AskedVerifier(verifier)
    envs = TaskEnvs.open(config, workers=2)
    pool = ThreadPoolExecutor(2)
    try:
        tokenizer = load_checked_tokenizer(verifier, "agentless")
        trainer = build_trainer(config, verifier, tokenizer, envs, pool, 6, verifier_scores=asked)
        env = repogym.env.make(toy_task.instance_id, [toy_task], mode="agentless")
        prompt_text, info = env.reset()
        env.close()
        named = answers(toy_task, info["code_context"])
        texts = [named[kind] for kind in KINDS] * 2
        ids = [toy_task.instance_id] * 3 + [UNTESTED] * 3
        prompt = [{"role": "user", "content": prompt_text}]
        inputs = [{"prompt": prompt, "instance_id": instance_id} for instance_id in ids]
        completions = [[{"role": "assistant", "content": text}] for text in texts]
        per_func = trainer._calculate_rewards(inputs, [prompt] * 6, completions, [[0]] * 6)
    finally:
        pool.shutdown()
        envs.close()
    diffs = {kind: apply_answer(named[kind], info["code_context"]).diff for kind in KINDS[:2]}
    return per_func, trainer.reward_func_names, list(trainer.reward_weights.tolist()), asked, diffs


@pytest.mark.slow
def test_a_task_without_tests_is_rewarded_by_the_verifier_and_one_with_tests_by_its_tests(
    mixed_tasks, tiny_model, tmp_path
):
    per_func, names, weights, asked, diffs = batch_rewards(mixed_tasks, tiny_model, 0.5, tmp_path)
    untested = mixed_tasks[2]
    assert names == ["tests_pass", "compile_pass", "minimal_diff", "format", "verifier"]
    assert weights == pytest.approx([1.0, 0.5, 0.1, 1.0, 0.5])
    column = {name: per_func[:, at].tolist() for at, name in enumerate(names)}
    # The tested task: its tests decide (gold resolves, the wrong fix does not), the verifier term abstains.
    assert column["tests_pass"][:2] == [1.0, 0.0]
    assert all(value != value for value in column["verifier"][:3])
    # The untested task: the verifier's own p(YES) on each diff, asked once for the whole batch; no diff to score
    # (an unparsable answer) is 0, not asked. Nothing can prove a fix there, so the tests term pays nothing.
    assert asked.calls == [[(UNTESTED, diffs["gold"]), (UNTESTED, diffs["wrong_fix"])]]
    direct = score_attempts(
        load_verifier(tiny_model), [(untested, diffs["gold"]), (untested, diffs["wrong_fix"])]
    )
    assert column["verifier"][3:5] == pytest.approx(direct, abs=1e-5) and column["verifier"][5] == 0.0
    assert (
        0.0 < direct[0] < 1.0 and direct[0] != direct[1]
    )  # a real score, one that tells the two diffs apart
    assert column["tests_pass"][3:5] == [0.0, 0.0]
    totals = (per_func.nan_to_num(0.0) * per_func.new_tensor(weights)).sum(dim=1).tolist()
    assert totals[3] == pytest.approx(0.5 * direct[0], abs=1e-5)  # the gold diff: the verifier's term alone


@pytest.mark.slow
def test_verifier_cannot_override_failing_tests(mixed_tasks, approving_verifier, tmp_path):
    """The attack: a policy whose wrong fix fails the task's tests but wins the verifier's approval. A verifier that
    approves anything (p(YES) 1.0, shown on the untested task) must neither be asked about the tested task nor
    move its reward: the wrong fix there is worth exactly its tests' terms."""
    per_func, names, weights, asked, diffs = batch_rewards(mixed_tasks, approving_verifier, 1.0, tmp_path)
    column = {name: per_func[:, at].tolist() for at, name in enumerate(names)}
    assert column["verifier"][4] == pytest.approx(
        1.0
    )  # the same wrong fix, where no test judges it: full marks
    assert all(instance_id == UNTESTED for call in asked.calls for instance_id, _ in call)
    assert column["tests_pass"][1] == 0.0 and column["verifier"][1] != column["verifier"][1]  # NaN: abstained
    totals = (per_func.nan_to_num(0.0) * per_func.new_tensor(weights)).sum(dim=1).tolist()
    without_verifier = sum(
        w * v for w, v, name in zip(weights, per_func[1].tolist(), names, strict=True) if name != "verifier"
    )
    assert totals[1] == pytest.approx(without_verifier) and totals[1] < totals[0] - 0.9
    assert diffs["wrong_fix"] in {diff for call in asked.calls for _, diff in call}  # it was asked, elsewhere


# -- bad config: `repogym config check` names the field -------------------------------------------------------


def check_config(tmp_path: Path, verifier_path: str):
    config = write_config(
        tmp_path / "run.yaml", {"reward": {"verifier": {"path": verifier_path, "weight": 0.5}}}
    )
    return cli("config", "check", str(config))


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


def test_config_check_names_a_missing_verifier_folder(tmp_path):
    output = one_line_error(check_config(tmp_path, str(tmp_path / "nowhere")))
    assert f"reward.verifier.path: {tmp_path / 'nowhere'} does not exist" in output


def test_config_check_names_a_verifier_folder_without_its_tokenizer(tmp_path, tiny_model):
    folder = tmp_path / "v"
    shutil.copytree(tiny_model, folder, ignore=shutil.ignore_patterns("tokenizer*"))
    output = one_line_error(check_config(tmp_path, str(folder)))
    assert f"reward.verifier.path: {folder} has no tokenizer" in output


def test_config_check_accepts_a_verifier_folder_and_prints_its_keys(tmp_path, tiny_model):
    result = check_config(tmp_path, str(tiny_model))
    assert result.exit_code == 0, result.output
    assert f"path: {tiny_model}" in result.output and "weight: 0.5" in result.output


def test_a_run_config_without_a_verifier_loader_is_refused_before_any_sandbox_work(tmp_path, tiny_model):
    """The quickstart and flywheel stages call train_rl without a verifier: a config that sets one must fail at
    once, naming the key, rather than train without the term it asked for."""
    from repogym.errors import ConfigError
    from repogym.train.grpo import train_rl

    config = validate_config({
        "base_model": str(tiny_model), "reward": {"verifier": {"path": str(tiny_model)}},
        "env": {"task_set": str(tmp_path / "missing.jsonl"), "mode": "agentless"},
        "rollout": {"num_candidates": 2}, "batch_size": 2, "output_dir": str(tmp_path / "run"),
    })  # fmt: skip
    with pytest.raises(ConfigError, match=r"reward.verifier: set, but this command loads no verifier"):
        train_rl(config)


def test_a_component_may_not_take_the_verifier_terms_name():
    from repogym.errors import ConfigError
    from repogym.rewards import compose

    components = [{"name": "verifier", "fn": "run_pytest"}]
    compose({"components": components})  # without reward.verifier the name is free
    with pytest.raises(ConfigError, match=r"reward.components.0.name: 'verifier' is the breakdown's term"):
        compose({"components": components, "verifier": {"path": "v"}})


def test_config_check_names_a_verifier_that_reads_trajectories(tmp_path, tiny_model):
    """A verifier trained with --include-trajectory cannot score a completion's diff alone: refused at config time."""
    folder = tmp_path / "v"
    shutil.copytree(tiny_model, folder)
    (folder / MANIFEST_FILE).write_text(json.dumps({"prompt": {"include_trajectory": True}}))
    output = one_line_error(check_config(tmp_path, str(folder)))
    assert f"reward.verifier.path: {folder} was trained on attempts' turns as well as their diffs" in output


def test_a_ray_failure_on_an_untested_task_abstains_on_the_verifier_term_too(toy_task):
    """A completion whose Ray task failed abstains on every term (train/rl_ray.py): an infrastructure failure says
    nothing of the answer. The verifier term must not score it 0.0 behind that, which would give the failure a
    place in its group (a negative advantage beside approved diffs) that no other term gave it."""
    from repogym.dataset import TaskSet
    from repogym.grading.batch import crash_result
    from repogym.rewards import compose
    from repogym.train.rl_ray import _abstained
    from repogym.train.rl_reward import SandboxReward
    from repogym.train.rl_verifier import VerifierTerm

    untested = dataclasses.replace(
        toy_task, instance_id=UNTESTED, FAIL_TO_PASS=[], PASS_TO_PASS=[], test_patch=""
    )
    ray_failure = _abstained(untested, crash_result(untested, ConnectionError("the node died")))
    asked: list[list[str]] = []

    def approve(pairs: Sequence[tuple[Task, str]]) -> list[float]:
        asked.append([diff for _, diff in pairs])
        return [0.9] * len(pairs)

    term = VerifierTerm(1.0, approve, TaskSet([toy_task, untested]))
    reward = SandboxReward(compose({}), lambda completions, kwargs: [ray_failure], verifier=term)
    kwargs = {"instance_id": [UNTESTED]}
    values = [fn(prompts=None, completions=["answer"], **kwargs) for fn in reward.functions()]
    assert values == [[None]] * len(values)  # TRL reads NaN on every term: no advantage
    assert asked == []


def test_a_diff_too_long_for_the_verifier_to_read_whole_earns_no_approval(mixed_tasks, approving_verifier):
    """The attack: a diff longer than the verifier's context. Its prompt keeps the diff's head and cuts its tail, so
    whatever the tail does is never judged, and a policy could pad past the cut to earn approval for what the
    verifier did not read (or learn the cut mark as a sign of a large, approved fix). The reward's scorer gives such
    a diff 0.0, as it gives no diff, and approves only what it read whole (here: anything, p(YES) 1.0)."""
    _, toy_task, untested = mixed_tasks
    score = diff_scorer(approving_verifier, "reward.verifier.path")
    padding = "".join(f"+# line {n} of a file the verifier never reads to its end\n" for n in range(3000))
    padded = toy_task.patch + f"--- /dev/null\n+++ b/src/calc/padding.py\n@@ -0,0 +1,3000 @@\n{padding}"
    assert score([(untested, toy_task.patch), (untested, padded)]) == [pytest.approx(1.0), 0.0]
