"""What a verifier is trained on and how it scores: rows from real graded rollouts, the balance, the split, the
prompt cut to fit, the loss on the answer alone, and LoRA training whose folder scores (task, diff) pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.dataset import load_tasks
from repogym.verifier.data import (
    CUT_MARK,
    NO,
    YES,
    balance,
    draw_split,
    prompt_messages,
    read_attempts,
    read_split,
)
from repogym.verifier.score import load_verifier, score_attempts
from repogym.verifier.train import (
    MANIFEST_FILE,
    VerifierTrainConfig,
    build_verifier_trainer,
    sft_config_of,
    train_verifier,
)


def test_attempts_carry_the_tasks_issue_the_final_diff_and_the_graded_label(graded_rollouts):
    attempts = read_attempts(graded_rollouts.all)
    tasks = {task.instance_id: task for task in load_tasks(graded_rollouts.tasks_file)}
    assert len(attempts) == 33 and sum(a.resolved for a in attempts) == 11
    for attempt in attempts:
        assert attempt.problem_statement == tasks[attempt.instance_id].problem_statement
        kind = Path(attempt.folder).name
        assert attempt.resolved == (kind == "gold")
        assert (attempt.diff == "") == (kind == "empty")
        assert ("NOTES.md" in attempt.diff) == (kind == "note")
    with_turns = read_attempts([str(graded_rollouts.folders["note"])], include_trajectory=True)
    assert all("create_file" in a.trajectory and "NOTES.md" in a.trajectory for a in with_turns)


def test_balance_downsamples_the_majority_with_the_seed(graded_rollouts):
    attempts = read_attempts(graded_rollouts.all)
    kept = balance(attempts, seed=0)
    assert sum(a.resolved for a in kept) == sum(not a.resolved for a in kept) == 11
    assert kept == balance(attempts, seed=0) and kept != balance(attempts, seed=1)
    assert [a for a in attempts if a in kept] == kept  # order kept


def test_a_drawn_split_puts_each_task_on_one_side(tmp_path):
    ids = [f"t{i}" for i in range(11)]
    split = draw_split(ids, 0.5, seed=0)
    assert not set(split.train) & set(split.heldout) and set(split.train) | set(split.heldout) == set(ids)
    assert len(split.heldout) == 6 and split == draw_split(reversed(ids), 0.5, seed=0)
    assert draw_split(ids, 0.0, seed=0).heldout == ()
    manifest = tmp_path / "manifest.json"  # a verifier's manifest is a split file too
    manifest.write_text(json.dumps({"kind": "repogym.verifier", "split": split.to_dict()}))
    assert read_split(manifest) == split


def test_a_long_diff_is_cut_to_fit_and_marked(graded_rollouts, tiny_model):
    from repogym.train.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(tiny_model)
    gold = next(a for a in read_attempts([str(graded_rollouts.folders["gold"])]))
    huge = gold.__class__(**{**gold.__dict__, "diff": gold.diff * 200})
    messages = prompt_messages(huge, tokenizer, max_tokens=400)
    rendered = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    assert len(rendered["input_ids"] if hasattr(rendered, "keys") else rendered) <= 400
    assert CUT_MARK.strip() in messages[1]["content"] and gold.problem_statement in messages[1]["content"]


def test_the_loss_is_on_the_answer_alone(tmp_path, tiny_model, graded_rollouts):
    from repogym.train.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(tiny_model)
    attempts = read_attempts(graded_rollouts.all)
    rows = [{"prompt": prompt_messages(a, tokenizer, 640),
             "completion": [{"role": "assistant", "content": YES if a.resolved else NO}]}
            for a in (attempts[0], attempts[-1])]  # fmt: skip
    config = VerifierTrainConfig(
        graded_rollouts.all, str(tiny_model), str(tmp_path), max_steps=1, device="cpu"
    )
    trainer = build_verifier_trainer(
        sft_config_of(config, tmp_path), tiny_model, tokenizer, rows, progress=False
    )
    for example, answer in zip(trainer.train_dataset, (YES, NO), strict=True):
        trained = [
            token
            for token, label in zip(example["input_ids"], example["labels"], strict=True)
            if label != -100
        ]
        assert tokenizer.decode(trained).strip() == answer + "<|im_end|>"


@pytest.mark.slow
def test_a_lora_verifier_saves_a_loadable_folder_that_scores_task_diff_pairs(
    tmp_path, tiny_model, graded_rollouts
):
    out = tmp_path / "v"
    manifest = train_verifier(VerifierTrainConfig(
        graded_rollouts.all, str(tiny_model), str(out), max_steps=2, batch_size=4, max_length=640, lora_rank=4,
        device="cpu",
    ), progress=False)  # fmt: skip
    assert (
        manifest["training"]["lora_rank"] == 4
        and (out / "adapter").is_dir()
        and (out / MANIFEST_FILE).is_file()
    )
    assert not list(out.glob("checkpoint-*"))  # the folder is the verifier, not a resumable run
    verifier = load_verifier(out)
    assert verifier.tokenizer.chat_template and verifier.training_tasks == set(manifest["split"]["train"])
    task = load_tasks(graded_rollouts.tasks_file).get("toy__calc-1")
    scores = score_attempts(verifier, [(task, task.patch), (task, "")])
    assert len(scores) == 2 and all(0.0 < score < 1.0 for score in scores)
    assert scores == score_attempts(verifier, [(task, task.patch), (task, "")])  # scoring is deterministic
