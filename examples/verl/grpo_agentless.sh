#!/usr/bin/env bash
# GRPO with verl on repogym tasks, agentless mode: one SWE-RL answer (SEARCH/REPLACE blocks) per completion,
# graded in repogym's sandbox by the reward workers. One node; see docs/integrations-verl.md.
#
# UNTESTED ON A GPU: the flags are verl 0.9.1's (read from verl/trainer/config/_generated_ppo_trainer.yaml);
# the dataset, the reward function and the agent classes are tested on CPU against verl 0.9.1's own
# classes (tests/integrations/). Sizes are a starting point for a 1.5B-7B model on 8 x 80 GB.
#
# Usage: MODEL=HF_MODEL_DIR TASKS=train.jsonl VAL_TASKS=heldout.jsonl bash examples/verl/grpo_agentless.sh [OVERRIDES...]
set -euo pipefail
: "${MODEL:?an HF model folder or hub id (for instance what repogym train sft wrote)}"
: "${TASKS:?the training task file (validated: repogym validate)}"
: "${VAL_TASKS:?the held-out task file}"
DATA=${DATA:-verl-data}
GPUS=${GPUS:-8}
PROMPT_TOKENS=${PROMPT_TOKENS:-8192}  # agentless prompts carry the gold patch's files whole
ANSWER_TOKENS=${ANSWER_TOKENS:-2048}

repogym export verl "$TASKS" --out "$DATA/train" --mode agentless -j 8
repogym export verl "$VAL_TASKS" --out "$DATA/val" --mode agentless -j 8

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    data.train_files="$DATA/train/$(basename "${TASKS%.*}").parquet" \
    data.val_files="$DATA/val/$(basename "${VAL_TASKS%.*}").parquet" \
    data.train_batch_size=32 \
    data.max_prompt_length="$PROMPT_TOKENS" \
    data.max_response_length="$ANSWER_TOKENS" \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    actor_rollout_ref.model.path="$MODEL" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$((PROMPT_TOKENS + ANSWER_TOKENS)) \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.max_num_batched_tokens=$((PROMPT_TOKENS + ANSWER_TOKENS)) \
    reward.custom_reward_function.path=pkg://repogym.integrations.verl \
    reward.custom_reward_function.name=compute_score \
    reward.num_workers=8 \
    trainer.n_gpus_per_node="$GPUS" \
    trainer.nnodes=1 \
    trainer.total_epochs=10 \
    trainer.logger='["console"]' \
    trainer.project_name=repogym \
    trainer.experiment_name=grpo-agentless \
    trainer.val_before_train=True \
    trainer.test_freq=5 \
    trainer.save_freq=20 \
    "$@"
