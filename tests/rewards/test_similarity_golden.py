"""The golden table of patch_similarity: every hand-made pair keeps its value, and the bench prints it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from repogym.rewards import patch_similarity
from repogym.rewards.golden import CASES
from repogym.rewards.similarity import similarity_from_response
from repogym.search_replace import FormatErrorReason

ROOT = Path(__file__).resolve().parents[2]


def test_table_has_at_least_ten_pairs_and_every_format_reason():
    assert len(CASES) >= 10
    reasons = set()
    for case in CASES:
        error = similarity_from_response(case.code_context, case.oracle_new_content, case.response).error
        if error is not None:
            reasons.add(error.reason)
    # bad_line_count belongs to window mode's lines answers, which are converted before similarity is
    # computed (tests/env/test_lines_answer.py); a SWE-RL response cannot break that rule.
    assert reasons == set(FormatErrorReason) - {FormatErrorReason.BAD_LINE_COUNT}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_value(case):
    value = patch_similarity(
        response=case.response, code_context=case.code_context, oracle_new_content=case.oracle_new_content
    )
    assert value == pytest.approx(case.expected, abs=1e-9)


def test_bench_prints_the_table_as_markdown():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_patch_similarity.py"), "--repeat", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("| case | rule | expected | patch_similarity |")
    rows = [line for line in lines[2:] if line.startswith("| ")]
    assert len(rows) == len(CASES)
    assert all("| yes |" in row for row in rows)
    assert f"{len(CASES)}/{len(CASES)} cases match" in done.stdout
