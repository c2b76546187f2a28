"""Every filter, each on a real commit, counted under its own name; switches and thresholds."""

from __future__ import annotations

import os

import pytest

from repogym.errors import ConfigError
from repogym.mining import FILTER_NAMES, MiningConfig, mine
from repogym.mining.config import normalise_date


def _code(n: int) -> str:
    return f"def add(a, b):\n    return a + b + {n}\n\n\ndef sub(a, b):\n    return a - b\n"


def _test(n: int) -> str:
    return f"from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == {3 + n}\n"


def _fix(repo, n: int, message: str, author: str = "Dev One", **extra: str | bytes) -> str:
    repo.write("pkg/calc.py", _code(n)).write("tests/test_calc.py", _test(n))
    for path, text in extra.items():
        repo.write(path.replace("__", "/"), text)
    return repo.commit(message, author=author)


@pytest.fixture
def filtered(repo) -> dict[str, str]:
    """A history with one commit per reason; returns reason -> sha."""
    shas = {"root_commit": repo.head()}
    shas["bot_author"] = _fix(repo, 1, "Update calc", author="dependabot[bot]")
    shas["bot_title"] = _fix(repo, 2, "Bump version to 0.2.0")
    shas["reverted_later"] = _fix(repo, 3, "Fix add for large numbers")
    stamp = "1704500000 +0000"
    repo.git("revert", "--no-edit", "HEAD", env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    shas["revert"] = repo.head()
    shas["empty"] = repo.commit("Nothing at all")
    os.chmod(repo.path / "pkg/calc.py", 0o755)
    shas["mode_only"] = repo.commit("Make calc executable")
    shas["lock_only"] = (
        repo.write("poetry.lock", "[[package]]\n").write("CHANGELOG.md", "- lock\n").commit("Lock deps")
    )
    shas["docs_only"] = repo.write("docs/guide.md", "Guide\n").commit("docs: guide")
    shas["vendored"] = _fix(repo, 4, "Patch vendored six", pkg___vendor__six__py="X = 1\n")
    shas["no_python_change"] = (
        repo.write("setup.cfg", "[x]\n").write("tests/test_cfg.py", "X = 1\n").commit("Config")
    )
    shas["no_test_change"] = repo.write("pkg/calc.py", _code(5)).commit("Refactor add")
    shas["binary_change"] = _fix(repo, 6, "Ship a table", pkg__table__bin=bytes(range(256)))
    many = {f"pkg__m{i}__py": f"M = {i}\n" for i in range(11)}
    shas["too_large_files"] = _fix(repo, 7, "Many modules", **many)
    shas["too_large_lines"] = _fix(
        repo, 8, "Big table", pkg__big__py="".join(f"V{i} = {i}\n" for i in range(600))
    )
    shas["good"] = _fix(repo, 9, "Fix add offset")
    shas["undo"] = _fix(repo, 8, "Restore the old offset")
    shas["duplicate"] = _fix(repo, 9, "Fix add offset, again")
    repo.checkout("left", create=True)
    repo.write("pkg/calc.py", _code(10)).write("tests/test_calc.py", _test(10)).commit("Left")
    repo.checkout("main")
    shas["main_side"] = _fix(repo, 11, "Main side")
    shas["merge_conflict"] = repo.merge(
        "left", "Merge branch 'left'", resolve={"pkg/calc.py": _code(12), "tests/test_calc.py": _test(12)}
    )
    return shas


def test_every_filter_counts_its_commit_and_the_funnel_adds_up(repo, filtered) -> None:
    result = mine(repo.path)
    funnel = result.funnel

    def examples(name: str) -> set[str]:
        return {
            example.rsplit("-", 1)[-1]
            for step in funnel.steps
            if step.name == name
            for example in step.examples
        }

    expected = {
        "root_commit": 1, "in_merged_branch": 1, "bot": 2, "revert": 1, "reverted_later": 1, "empty": 2,
        "lock_only": 1, "docs_only": 1, "vendored": 1, "no_python_change": 1, "no_test_change": 1,
        "binary_change": 1, "too_large": 2, "merge_conflict": 1, "duplicate": 1, "over_max": 0,
    }  # fmt: skip
    assert {step.name: step.count for step in funnel.steps if step.count or step.name in expected} == expected
    for name in ("revert", "reverted_later", "lock_only", "docs_only", "vendored", "no_python_change"):
        assert filtered[name][:12] in examples(name), name
    assert {filtered["bot_author"][:12], filtered["bot_title"][:12]} == examples("bot")
    assert {filtered["empty"][:12], filtered["mode_only"][:12]} == examples("empty")
    assert {filtered["too_large_files"][:12], filtered["too_large_lines"][:12]} == examples("too_large")
    assert examples("duplicate") == {filtered["duplicate"][:12]}  # the older copy is the one kept
    written = {task.metadata["mining"]["commit"] for task in result.tasks}
    assert written == {filtered["good"], filtered["undo"], filtered["main_side"]}
    assert funnel.scanned == int(repo.git("rev-list", "--count", "HEAD"))
    assert funnel.scanned == sum(step.count for step in funnel.steps) + funnel.written


def test_switching_filters_off_lets_their_commits_through(repo) -> None:
    refactor = repo.write("pkg/calc.py", _code(5)).commit("Refactor add")
    result = mine(repo.path, MiningConfig(skip_filters=["no_test_change"]))
    assert [task.metadata["mining"]["commit"] for task in result.tasks] == [refactor]
    assert "switched off" in next(s.description for s in result.funnel.steps if s.name == "no_test_change")


def test_size_thresholds_are_configurable(repo) -> None:
    sha = _fix(repo, 1, "Many modules", **{f"pkg__m{i}__py": f"M = {i}\n" for i in range(11)})
    assert mine(repo.path).funnel.count("too_large") == 1
    assert [t.metadata["mining"]["commit"] for t in mine(repo.path, MiningConfig(max_files=20)).tasks] == [
        sha
    ]
    assert mine(repo.path, MiningConfig(max_files=20, max_lines=5)).funnel.count("too_large") == 1
    assert mine(repo.path, MiningConfig(max_files=20, max_test_lines=1)).funnel.count("too_large") == 1


def test_bot_patterns_are_configurable_and_pr_authors_count(repo, write_export) -> None:
    sha = _fix(repo, 1, "chore: sync generated client")
    assert mine(repo.path).funnel.written == 1
    assert mine(repo.path, MiningConfig(bot_titles=["^chore:"])).funnel.count("bot") == 1
    pull = {
        "number": 4,
        "title": "Sync",
        "body": "",
        "merge_commit_sha": sha,
        "user": {"login": "renovate[bot]"},
    }
    assert mine(repo.path, prs=write_export([pull])).funnel.count("bot") == 1


def test_hand_edited_merge_of_an_up_to_date_branch_is_a_merge_conflict(repo) -> None:
    repo.checkout("topic", create=True)
    _fix(repo, 1, "Topic fix")
    repo.checkout("main")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "topic")
    repo.write("pkg/extra.py", "E = 1\n")
    evil = repo.commit("Merge branch 'topic'")
    result = mine(repo.path)
    assert result.funnel.count("merge_conflict") == 1
    assert not any(task.metadata["mining"]["commit"] == evil for task in result.tasks)


def test_unknown_filter_and_bad_values_are_config_errors() -> None:
    from repogym.config import validate_config

    with pytest.raises(ConfigError, match=r"skip_filters.*unknown filter\(s\) \['no_tests'\]"):
        validate_config({"skip_filters": ["no_tests"]}, MiningConfig)
    with pytest.raises(ConfigError, match="since"):
        validate_config({"since": "last tuesday"}, MiningConfig)
    with pytest.raises(ConfigError, match="repo_name"):
        validate_config({"repo_name": "no-slash"}, MiningConfig)
    with pytest.raises(ConfigError, match=r"bot_titles.*'\(' is not a regular expression"):
        validate_config({"bot_titles": ["("]}, MiningConfig)
    with pytest.raises(ConfigError, match="max_fils"):
        validate_config({"max_fils": 3}, MiningConfig)
    assert normalise_date("2024-02-03T04:05:06Z") == "2024-02-03T04:05:06+00:00"
    assert set(FILTER_NAMES) >= {"bot", "duplicate", "merge_conflict", "too_large", "vendored", "lock_only"}
