"""Evaluation: pass@k with bootstrap intervals, paired comparisons of two runs, and the HTML report.

- `repogym.evaluate.passk`: the unbiased pass@k estimator (Chen et al. 2021).
- `repogym.evaluate.bootstrap`: percentile intervals from resampling tasks.
- `repogym.evaluate.run`: `run_eval(EvalConfig)` rolls a policy out n times per task and writes the
  eval folder (summary.json, SWE-bench predictions and report, the trajectories).
- `repogym.evaluate.compare`: paired per-task deltas between two eval folders.
- `repogym.evaluate.report`: one self-contained HTML page from run folders.
"""
