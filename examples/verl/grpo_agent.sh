#!/usr/bin/env bash
# GRPO with verl on repogym tasks, agent mode: each trajectory is a sandbox episode of repogym's tools
# (bash, view_file, search, edit_file, str_replace, create_file, run_tests, submit) driven by verl's tool
# agent loop through repogym's (RepogymAgentLoop, RepogymTool); the episode's diff is graded when it submits
# or when verl's turn or token budget ends it. One node; see docs/integrations-verl.md.
#
# UNTESTED ON A GPU: the flags are verl 0.9.1's (read from verl/trainer/config/_generated_ppo_trainer.yaml);
# the dataset, the reward function and the agent classes are tested on CPU against verl 0.9.1's own
# classes (tests/integrations/). The model needs a chat template with tool calls in verl's
# multi_turn.format (hermes: Qwen2.5/Qwen3 style <tool_call> blocks).
#
# Usage: MODEL=HF_MODEL_DIR TASKS=train.jsonl VAL_TASKS=heldout.jsonl bash examples/verl/grpo_agent.sh [OVERRIDES...]
set -euo pipefail
: "${MODEL:?an HF model folder or hub id with a tool-calling chat template}"
: "${TASKS:?the training task file (validated: repogym validate)}"
: "${VAL_TASKS:?the held-out task file}"
DATA=${DATA:-verl-data-agent}
GPUS=${GPUS:-8}
PROMPT_TOKENS=${PROMPT_TOKENS:-4096}
TRAJECTORY_TOKENS=${TRAJECTORY_TOKENS:-16384}  # every turn: the model's tokens and the tools' observations

repogym export verl "$TASKS" --out "$DATA/train" --mode agent -j 8
repogym export verl "$VAL_TASKS" --out "$DATA/val" --mode agent -j 8

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    data.train_files="$DATA/train/$(basename "${TASKS%.*}").parquet" \
    data.val_files="$DATA/val/$(basename "${VAL_TASKS%.*}").parquet" \
    data.train_batch_size=16 \
    data.max_prompt_length="$PROMPT_TOKENS" \
    data.max_response_length="$TRAJECTORY_TOKENS" \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    actor_rollout_ref.model.path="$MODEL" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$((PROMPT_TOKENS + TRAJECTORY_TOKENS)) \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.max_num_batched_tokens=$((PROMPT_TOKENS + TRAJECTORY_TOKENS)) \
    actor_rollout_ref.rollout.multi_turn.enable=True \
    actor_rollout_ref.rollout.multi_turn.format=hermes \
    actor_rollout_ref.rollout.multi_turn.tool_config_path="$DATA/train/tool_config.yaml" \
    actor_rollout_ref.rollout.multi_turn.max_assistant_turns=30 \
    actor_rollout_ref.rollout.multi_turn.max_tool_response_length=4000 \
    actor_rollout_ref.rollout.agent.agent_loop_config_path="$DATA/train/agent_loop.yaml" \
    actor_rollout_ref.rollout.agent.num_workers=8 \
    reward.custom_reward_function.path=pkg://repogym.integrations.verl \
    reward.custom_reward_function.name=compute_score \
    reward.num_workers=8 \
    trainer.n_gpus_per_node="$GPUS" \
    trainer.nnodes=1 \
    trainer.total_epochs=10 \
    trainer.logger='["console"]' \
    trainer.project_name=repogym \
    trainer.experiment_name=grpo-agent \
    trainer.val_before_train=True \
    trainer.test_freq=5 \
    trainer.save_freq=20 \
    "$@"
