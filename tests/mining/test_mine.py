"""`mine` end to end on real repositories: PR merges and exports, Task rows, windows, limits, the funnel."""

from __future__ import annotations

import json

import pytest

from repogym.dataset import load_tasks
from repogym.mining import Funnel, MiningConfig, mine, mine_to_file
from repogym.samples.long_history import generate_long_history
from repogym.task import Source

from ..support.git import apply_check, clone

CODE = "def add(a, b):\n    return a + b + {n}\n"
TEST = "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == {n}\n"


def _fix(repo, n: int, message: str) -> str:
    return (
        repo.write("pkg/calc.py", CODE.format(n=n))
        .write("tests/test_calc.py", TEST.format(n=n))
        .commit(message)
    )


def _pr_history(repo) -> dict[str, str]:
    """A single-commit fix, a PR merged with a merge commit (two branch commits), and a squash-merged PR."""
    shas = {"single": _fix(repo, 1, "Fix add offset\n\nIt was off by one.")}
    repo.checkout("fix-overflow", create=True)
    shas["branch_code"] = repo.write("pkg/calc.py", CODE.format(n=2)).commit("Handle overflow")
    shas["branch_test"] = repo.write("tests/test_calc.py", TEST.format(n=2)).commit("Test overflow")
    repo.checkout("main")
    repo.write("docs/guide.md", "Guide\n").commit("docs: guide")
    shas["merge"] = repo.merge("fix-overflow", "Merge pull request #12 from dev/fix-overflow\n\nFix overflow")
    shas["squash"] = _fix(repo, 3, "Round halves to even (#15)")
    return shas


def _export_rows(shas: dict[str, str]) -> list[dict]:
    return [
        {
            "number": 12, "title": "Fix overflow in add", "body": "Fixes #11", "merge_commit_sha": shas["merge"],
            "created_at": "2024-01-01T05:00:00Z", "merged_at": "2024-01-01T07:00:00Z",
            "base": {"sha": "0" * 40}, "head": {"sha": shas["branch_test"]}, "user": {"login": "dev"},
        },
        {"number": 15, "title": "Round halves to even", "body": "As discussed.", "merge_commit_sha": shas["squash"],
         "head": {}, "base": {}},
        {
            "number": 11, "title": "add overflows", "body": "add(2**63, 1) fails", "created_at": "2024-01-01T00:00:00Z",
            "comments": [
                {"body": "Seen on 3.11 too", "created_at": "2024-01-01T01:30:00Z"},
                {"body": "Fixed by #12", "created_at": "2024-01-01T08:00:00Z"},
            ],
        },
    ]  # fmt: skip


def test_pr_merges_with_an_export_take_issue_text_and_earlier_comments(repo, write_export) -> None:
    shas = _pr_history(repo)
    result = mine(repo.path, MiningConfig(repo_name="acme/calc"), prs=write_export(_export_rows(shas)))
    tasks = {task.metadata["mining"]["commit"]: task for task in result.tasks}

    assert set(tasks) == {shas["single"], shas["merge"], shas["squash"]}
    merged = tasks[shas["merge"]]
    assert merged.instance_id == "acme__calc-12"
    assert merged.problem_statement == "add overflows\nadd(2**63, 1) fails\n"
    assert merged.hints_text == "Seen on 3.11 too"  # the fix's first commit was written at 02:00+
    assert merged.base_commit == repo.git("rev-parse", f"{shas['merge']}^1")
    provenance = merged.metadata["mining"]
    assert (
        provenance["kind"] == "pr_merge"
        and provenance["pr_number"] == 12
        and provenance["issue_numbers"] == [11]
    )
    assert provenance["statement_source"] == "issue" and provenance["branch_commits"] == 2
    assert "docs/guide.md" not in merged.patch  # the docs commit is on main, not in the merge's diff

    squash = tasks[shas["squash"]]
    assert (
        squash.instance_id == "acme__calc-15"
        and squash.problem_statement == "Round halves to even\n\nAs discussed.\n"
    )
    assert (
        squash.metadata["mining"]["kind"] == "commit"
        and squash.metadata["mining"]["statement_source"] == "pr"
    )
    single = tasks[shas["single"]]
    assert single.instance_id == f"acme__calc-{shas['single'][:12]}"
    assert single.problem_statement == "Fix add offset\n\nIt was off by one.\n"
    assert result.funnel.count("in_merged_branch") == 2
    assert result.funnel.count("docs_only") == 1


def test_pr_number_comes_from_the_merge_message_without_an_export(repo) -> None:
    shas = _pr_history(repo)
    tasks = {
        t.metadata["mining"]["commit"]: t for t in mine(repo.path, MiningConfig(repo_name="acme/calc")).tasks
    }
    assert tasks[shas["merge"]].instance_id == "acme__calc-12"
    # GitHub's "Merge pull request #12 from ..." line is boilerplate: the statement starts at the PR title.
    assert tasks[shas["merge"]].problem_statement == "Fix overflow\n"
    assert tasks[shas["merge"]].metadata["mining"]["statement_source"] == "commit"


def test_a_plain_merge_is_a_merge_candidate_without_a_pr_number(repo) -> None:
    repo.checkout("topic", create=True)
    _fix(repo, 1, "Topic fix")
    repo.checkout("main")
    repo.write("docs/guide.md", "Guide\n").commit("docs: guide")
    merge = repo.merge("topic", "Merge branch 'topic'")
    (task,) = mine(repo.path, MiningConfig(repo_name="acme/calc")).tasks
    assert task.metadata["mining"]["commit"] == merge and task.metadata["mining"]["kind"] == "merge"
    assert task.instance_id == f"acme__calc-{merge[:12]}" and task.metadata["mining"]["pr_number"] is None


def test_task_rows_carry_the_candidate_contract_and_no_email(repo, tmp_path) -> None:
    repo.git("remote", "add", "origin", "git@github.com:acme/calc.git")
    sha = _fix(repo, 1, "Fix add")
    out = tmp_path / "out" / "candidates.jsonl"
    result = mine_to_file(repo.path, out, funnel_path=tmp_path / "out" / "funnel.json")

    (task,) = load_tasks(out)
    assert task.instance_id == f"acme__calc-{sha[:12]}" and task.repo == "acme/calc"
    assert task.source is Source.MINED and task.FAIL_TO_PASS == [] and task.PASS_TO_PASS == []
    assert task.repo_source == str(repo.path.resolve())
    assert task.base_commit == repo.git("rev-parse", f"{sha}^")
    assert task.created_at == "2024-01-01T02:00:00Z"
    assert task.metadata["mining"]["author"] == "Dev One"
    assert "corp.example" not in out.read_text() and "dev.one" not in out.read_text()
    funnel = Funnel.from_dict(json.loads((tmp_path / "out" / "funnel.json").read_text()))
    assert funnel == result.funnel and funnel.written == 1


def test_repo_name_falls_back_to_the_folder(repo) -> None:
    _fix(repo, 1, "Fix add")
    (task,) = mine(repo.path).tasks
    assert task.repo == "local/calc" and task.instance_id.startswith("local__calc-")


def test_since_until_max_and_branch(repo) -> None:
    shas = [_fix(repo, n, f"Fix {n}") for n in range(1, 6)]  # 02:00 .. 06:00 on 2024-01-01
    repo.checkout("other", create=True, start=shas[1])
    other = _fix(repo, 9, "Fix on another branch")

    def mined(**options) -> list[str]:
        return [t.metadata["mining"]["commit"] for t in mine(repo.path, MiningConfig(**options)).tasks]

    assert mined(branch="main") == shas[::-1]
    assert mined(branch="main", since="2024-01-01T04:00:00Z") == shas[:1:-1]
    assert mined(branch="main", until="2024-01-01T03:00:00Z") == shas[1::-1]
    assert mined(branch="main", until="2024-01-01") == shas[::-1]  # a bare date means the whole day
    assert mined(branch="other") == [other, shas[1], shas[0]]
    limited = mine(repo.path, MiningConfig(branch="main", max_candidates=2))
    assert [t.metadata["mining"]["commit"] for t in limited.tasks] == [shas[4], shas[3]]  # newest kept
    assert limited.funnel.count("over_max") == 3
    windowed = mine(repo.path, MiningConfig(branch="main", since="2024-01-01T04:00:00Z"))
    assert windowed.funnel.scanned == 3  # commits outside the window are not scanned at all


def test_every_mined_patch_applies_at_its_base(repo) -> None:
    import os

    shas = _pr_history(repo)
    repo.git("mv", "pkg/calc.py", "pkg/arith.py")
    repo.write("tests/test_calc.py", TEST.format(n=7).replace("pkg.calc", "pkg.arith"))
    repo.write("tests/data/sample.bin", bytes(range(256))).write("CHANGELOG.md", "- renamed\n")
    os.chmod(repo.path / "tests/test_calc.py", 0o755)
    rename = repo.commit("Rename calc to arith")

    tasks = mine(repo.path).tasks

    assert rename in {t.metadata["mining"]["commit"] for t in tasks}
    assert len(tasks) == 4
    for task in tasks:
        repo.apply_check(task.base_commit, task.test_patch, task.patch)
    del shas


def test_long_history_funnel_adds_up_and_finds_every_hand_edited_merge(tmp_path) -> None:
    history = generate_long_history(tmp_path / "long", commits=1000, seed=11)
    result = mine(history.path)
    funnel = result.funnel
    assert funnel.scanned == history.commits
    assert funnel.scanned == sum(step.count for step in funnel.steps) + funnel.written
    assert funnel.count("merge_conflict") == history.events["evil_merge"]
    assert funnel.count("bot") == history.events["bot"]
    assert funnel.count("docs_only") == history.events["docs"]
    assert funnel.count("no_test_change") == history.events["refactor"]
    assert funnel.count("no_python_change") == history.events["tests_only"]
    assert funnel.count("revert") == history.events["revert"]
    assert funnel.count("duplicate") <= history.events["reland"]
    assert funnel.written == len(result.tasks) > 0
    ids = [task.instance_id for task in result.tasks]
    assert len(set(ids)) == len(ids)


def test_funnel_table_lists_every_step(repo) -> None:
    from rich.console import Console

    _fix(repo, 1, "Fix add")
    funnel = mine(repo.path).funnel
    console = Console(record=True, width=160)
    console.print(funnel.table())
    text = console.export_text()
    for line in ("commits scanned", "candidates", "written", *(step.name for step in funnel.steps)):
        assert line in text


def test_a_funnel_that_does_not_add_up_is_refused() -> None:
    from repogym.errors import RepogymError
    from repogym.mining import FunnelStep

    with pytest.raises(RepogymError, match="does not add up"):
        Funnel(scanned=5, steps=(FunnelStep("bot", "filter", "", 1),), written=3)
    base = Funnel(scanned=5, steps=(FunnelStep("bot", "filter", "", 1),), written=4)
    later = base.extend([FunnelStep("no_fail_to_pass", "validate", "", 3)], written=1)
    assert later.scanned == 5 and later.candidates == 5 and later.count("no_fail_to_pass") == 3


def test_bare_repository_and_git_errors(repo, tmp_path) -> None:
    _fix(repo, 1, "Fix add")
    bare = tmp_path / "bare.git"
    clone(repo.path, bare, "--bare")
    (task,) = mine(bare).tasks
    assert task.repo_source == str(bare.resolve())


@pytest.mark.parametrize("seed", [1, 2])
def test_sample_repos_yield_every_planted_fix_and_nothing_from_bots_docs_or_refactors(
    tmp_path, seed: int
) -> None:
    from repogym.samples import CommitKind, FixKind, generate_repo

    sample = generate_repo(tmp_path / f"sample{seed}", seed=seed)
    result = mine(sample.path, MiningConfig(repo_name=sample.github), prs=sample.prs_path)
    by_commit = {task.metadata["mining"]["commit"]: task for task in result.tasks}
    kinds = {commit.sha: commit.kind for commit in sample.commits}

    assert {kinds[sha] for sha in by_commit} <= {CommitKind.FIX, CommitKind.FEATURE}
    for fix in sample.fixes:
        task = by_commit[fix.fix_commit]
        assert task.base_commit == fix.base_commit
        split = {d for d in _paths(task.patch)}, {d for d in _paths(task.test_patch)}
        assert split == (set(fix.code_files), set(fix.test_files))
        assert not any(doc in task.patch for doc in fix.doc_files)
        if fix.kind is FixKind.PR:
            owner, name = sample.github.split("/")
            assert task.instance_id == f"{owner}__{name}-{fix.pr_number}"
            assert task.metadata["mining"]["statement_source"] == "issue"
            assert task.metadata["mining"]["issue_numbers"] == [fix.issue_number]
            assert "Fixed in" not in task.hints_text  # comments after the fix are the answer, not a hint
        apply_check(sample.path, task.base_commit, task.test_patch, task.patch)
    assert result.funnel.scanned == len(sample.commits)
    assert result.funnel.count("in_merged_branch") == len(sample.shas(CommitKind.PR_BRANCH))


def _paths(patch: str) -> list[str]:
    from repogym.patches import changed_paths

    return changed_paths(patch)


def test_shallow_clone_fails_closed_on_merges_it_cannot_check(repo, tmp_path) -> None:
    repo.checkout("topic", create=True)
    _fix(repo, 1, "Topic fix")
    repo.checkout("main")
    repo.write("docs/guide.md", "Guide\n").commit("docs: guide")
    repo.merge("topic", "Merge pull request #3 from dev/topic")
    shallow = tmp_path / "shallow"
    clone(f"file://{repo.path}", shallow, "--depth", "2")

    result = mine(shallow)

    assert result.tasks == ()
    assert result.funnel.count("merge_conflict") == 1  # no merge base here: not checkable, so not a task
    assert result.funnel.scanned == sum(step.count for step in result.funnel.steps)


def test_squash_style_number_that_the_export_knows_as_an_issue_is_not_a_pr(repo, write_export) -> None:
    sha = _fix(repo, 1, "Fix add overflow (#45)")
    issue = {
        "number": 45,
        "title": "add overflows",
        "body": "big numbers",
        "created_at": "2024-01-01T00:00:00Z",
    }
    (with_export,) = mine(repo.path, MiningConfig(repo_name="acme/calc"), prs=write_export([issue])).tasks
    (without_export,) = mine(repo.path, MiningConfig(repo_name="acme/calc")).tasks
    assert (
        with_export.instance_id == f"acme__calc-{sha[:12]}"
        and with_export.metadata["mining"]["pr_number"] is None
    )
    assert without_export.instance_id == "acme__calc-45"  # GitHub's squash convention, nothing says otherwise
