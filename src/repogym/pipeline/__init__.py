"""repogym's own jobs, stage by stage: `repogym quickstart` (the main job) and `repogym train flywheel`.

    quickstart:  data -> split -> model -> eval baseline -> [demos] -> sft_data -> sft -> eval sft
                 -> grpo -> eval grpo -> report                                  (pipeline/quickstart.py)
    flywheel:    eval baseline, then per round: rollout -> sft_data -> sft -> grpo -> eval
                                                                                (pipeline/flywheel.py)

Each stage is a function from a typed input to a frozen result that is recorded in the stage's folder
(`record.py`), run through one seam (`runner.Runner`) that reads a finished stage's result back instead of
running it again: that is what resuming either job means. The stages live one module per step (data,
split, model, demos, sft, grpo, evaluate); the quickstart's sizes are `plan.py`, and the config objects it
builds for each stage `quickstart_inputs.py`. Progress reaches the caller through `runner.Hooks`: the CLI
supplies the callbacks, the library never draws.
"""
