#!/bin/bash
# Twice the SFT data and steps of the three-seed run's seed 0 (32,000 corpus rows asked for, 2,000 steps: the
# three-seed run took 1,000 steps over 16,000 rows), the same cached 35-minute pretraining, then GRPO setting C
# (48 x 32, lr 5e-5, T 0.8). Placeholders: W the work folder (copies of repogym's src and bench, and of the three-seed run's
# data folder), C the cache, REPO this repository's checkout (for its .venv).
cd W
export REPOGYM_CACHE=C PYTHONPATH=W/src OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
REPO/.venv/bin/python bench/bench_learning.py --work W \
    --data W/data --seeds 0 --pretrain-seed 0 --pretrain-minutes 35 --demo-rows 32000 --sft-steps 2000 \
    --grpo-steps 48 --grpo-batch 32 --grpo-lr 5e-5 --grpo-temperature 0.8 --workers 1 --no-report > seed-0.log 2>&1
