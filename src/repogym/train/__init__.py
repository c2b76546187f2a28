"""Training: tiny models built locally (init, pretraining), SFT data and SFT, GRPO, the flywheel.

Everything here needs the `train` extra (torch, transformers, trl, peft, datasets, accelerate).
"""
