"""Validation: prove each mined candidate with its tests in the sandbox, and keep only the ones that prove a fix.

`validate_candidates(candidates, out)` runs the whole stage (parallel,
resumable, scrubbed, with a funnel); `validate_candidate(task, pool)` validates
one. A validated task has FAIL_TO_PASS (fail before the gold patch, pass after
it, in every run), PASS_TO_PASS (pass both, in every run) and
`metadata["validation"]` (environment spec, runs, flaky tests, timings).
"""

from __future__ import annotations

from repogym.validate.batch import ValidateConfig, ValidationRun, partial_path, validate_candidates
from repogym.validate.classify import SuiteClassification, classify, test_files
from repogym.validate.funnel import FunnelReason, ValidationFunnel, build_funnel
from repogym.validate.outcome import CandidateOutcome, Stage, Verdict
from repogym.validate.pool import ValidationPool
from repogym.validate.validate import validate_candidate

__all__ = [
    "CandidateOutcome",
    "FunnelReason",
    "Stage",
    "SuiteClassification",
    "ValidateConfig",
    "ValidationFunnel",
    "ValidationPool",
    "ValidationRun",
    "Verdict",
    "build_funnel",
    "classify",
    "partial_path",
    "test_files",
    "validate_candidate",
    "validate_candidates",
]
