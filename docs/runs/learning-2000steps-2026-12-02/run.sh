#!/bin/bash
# Twice the SFT data and steps of learn4's seed 0 (32,000 corpus rows, 2,000 steps: one epoch, as learn4's 1,000
# steps over 16,000 were), same cached 35-minute pretraining, then GRPO setting C (48 x 32, lr 5e-5, T 0.8).
cd /work/coord/learn8
export REPOGYM_CACHE=/work/coord/cache-learn3 PYTHONPATH=/work/coord/learn8/src OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
/work/main/.venv/bin/python bench/bench_learning.py --work /work/coord/learn8 \
    --data /work/coord/learn8/data --seeds 0 --pretrain-seed 0 --pretrain-minutes 35 --demo-rows 32000 --sft-steps 2000 \
    --grpo-steps 48 --grpo-batch 32 --grpo-lr 5e-5 --grpo-temperature 0.8 --workers 1 --no-report > seed-0.log 2>&1
