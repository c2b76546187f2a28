"""patch_similarity against SWE-RL's reference values, and the agent-mode variant against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.patches import unified_diff
from repogym.rewards import patch_similarity, patch_similarity_diff
from repogym.rewards.similarity import similarity_from_diff, similarity_from_patches
from repogym.search_replace import answer_from_patch, apply_answer
from repogym.task import Task

from ..support.git import git, init_repo

# The reference implementation's own values (data/README.md says where they come from).
CASES_FILE = Path(__file__).parent / "data" / "swe_rl_reward_cases.json"
CASES = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]


def test_the_vectors_cover_every_rule():
    assert len(CASES) == 15
    assert {case["reward"] for case in CASES} >= {1.0, 0.5, -1.0}


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_patch_similarity_reproduces_the_reference(case):
    value = patch_similarity(
        response=case["output"],
        code_context=case["code_context"],
        oracle_new_content=case["oracle_new_content"],
    )
    assert value == pytest.approx(case["reward"], abs=1e-9)


@pytest.mark.parametrize("case", [c for c in CASES if c["reward"] >= 0], ids=lambda c: c["name"])
def test_agent_mode_variant_agrees_on_the_same_edits(case):
    """The diff a SEARCH/REPLACE answer produces, scored against the oracle as a diff, gets the same value."""
    context, oracle = case["code_context"], case["oracle_new_content"]
    candidate = apply_answer(case["output"], context).diff
    task = Task("case", "r", "c", patch=unified_diff(context, oracle))
    assert patch_similarity_diff(patch=candidate, task=task, code_context=context) == pytest.approx(
        case["reward"], abs=1e-9
    )


@pytest.mark.parametrize("case", CASES[:7], ids=lambda c: c["name"])
def test_gold_patch_written_as_an_answer_scores_one(case):
    context, oracle = case["code_context"], case["oracle_new_content"]
    gold = unified_diff(context, oracle)
    answer = answer_from_patch(gold, context)
    assert patch_similarity(response=answer, code_context=context, oracle_new_content=oracle) == 1.0
    # Without oracle contents, the component derives them from the task's gold patch.
    task = Task("case", "r", "c", patch=gold)
    assert patch_similarity(response=answer, code_context=context, task=task) == 1.0


def test_reference_new_file_rule():
    """SWE-RL's own example: an empty SEARCH on an unknown path creates it; that file scores 0."""
    context = {
        "a.py": "def add(a, b):\n    return a + b",
        "b.py": "def sort_list(lst):\n    return sorted(lst)",
    }
    oracle = {"b.py": context["b.py"].replace("(lst):", "(lst: list[int]) -> list[int]:")}
    blocks = [
        "```\n### c.py\n<<<<<<< SEARCH\n\n=======\n# dummy\n>>>>>>> REPLACE\n```",
        "```\n### b.py\n<<<<<<< SEARCH\ndef sort_list(lst):\n=======\n"
        "def sort_list(lst: list[int]) -> list[int]:\n>>>>>>> REPLACE\n```",
    ]
    response = "<think>\nd\n</think>\n<solution>\n" + "\n".join(blocks) + "\n</solution>"
    assert patch_similarity(response=response, code_context=context, oracle_new_content=oracle) == 0.5
    only_new = response.replace(blocks[1], "")
    assert patch_similarity(response=only_new, code_context=context, oracle_new_content=oracle) == 0.0


HELLO = "diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1,3 +1,3 @@\n-Hello world\n+Hello World\n keep\n-{old}\n+{new}\n"


def test_unidiff_variant_compares_hunks_as_written():
    one = HELLO.format(p="foo.txt", old="some lines", new="some changed lines")
    near = HELLO.format(p="foo.txt", old="some lines", new="some changed")
    other = HELLO.format(p="bar.txt", old="some lines", new="some changed")
    assert similarity_from_patches(one, one).reward == 1.0
    assert 0.9 < similarity_from_patches(one, near).reward < 1.0
    assert similarity_from_patches(one, other).reward == 0.0
    assert similarity_from_patches(one, one + other).reward == 0.5
    assert similarity_from_patches(one, "not a diff").reward == 0.0


def test_agent_mode_ignores_how_the_diff_was_written(tmp_path):
    """A candidate equal to the gold change scores 1.0 even if git wrote it with other context or hunks."""
    repo = tmp_path / "r"
    text = "".join(f"v{i} = {i}\n" for i in range(40))
    init_repo(repo, {"m.py": text}, "base")
    (repo / "m.py").write_text(text.replace("v3 = 3", "v3 = -3").replace("v9 = 9", "v9 = -9"))
    gold, terse = git(repo, "diff"), git(repo, "diff", "-U1")
    assert gold.count("@@ -") == 1 and terse.count("@@ -") == 2  # one hunk versus two
    task = Task("t", "r", "c", patch=gold)
    assert patch_similarity_diff(patch=terse, task=task, code_context={"m.py": text}) == 1.0
    assert similarity_from_diff(None, gold, terse).reward < 1.0  # hunks as written differ
    (repo / "reproduce.py").write_text("print('bug')\n")
    git(repo, "add", "-A")
    with_script = git(repo, "diff", "--cached")
    assert patch_similarity_diff(patch=with_script, task=task, code_context={"m.py": text}) == 0.5
    assert patch_similarity_diff(patch="", task=task, code_context={"m.py": text}) == 0.0
    assert patch_similarity_diff(patch=gold, task=None) is None
