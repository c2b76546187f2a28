"""The secret leaked by one fix commit: detect-secrets finds it there, and nowhere else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings
from unidiff import PatchSet

from repogym.samples import SampleRepo, generate_repo, read_export

from ..support.git import git

DETECTOR = {"github-token": "GitHub Token", "aws-access-key": "AWS Access Key"}


def findings(diff: str) -> list[tuple[str, str]]:
    """(detector type, line) of every secret detect-secrets finds on the added lines of a unified diff.

    `is_invalid_file` is switched off: by default `scan_diff` skips files that do not exist
    relative to the current directory, which would hide everything in a diff of another repo.
    """
    with default_settings() as settings:
        settings.disable_filters("detect_secrets.filters.common.is_invalid_file")
        secrets = SecretsCollection()
        secrets.scan_diff(diff)
    added = {
        (patch.path, line.target_line_no): line.value.rstrip("\n")
        for patch in PatchSet.from_string(diff)
        for hunk in patch
        for line in hunk.target_lines()
        if line.is_added
    }
    return [(secret.type, added[(path, secret.line_number)]) for path, secret in secrets]


def repo_with_secret_kind(root: Path, kind: str) -> SampleRepo:
    for seed in range(20):
        repo = generate_repo(root / f"seed{seed}", seed=seed, library="calculator")
        if repo.secret.kind == kind:
            return repo
    raise AssertionError(f"no seed below 20 leaks a {kind}")


@pytest.mark.parametrize("kind", sorted(DETECTOR))
def test_detect_secrets_finds_the_secret_in_the_commit_that_adds_it(tmp_path: Path, kind: str) -> None:
    repo = repo_with_secret_kind(tmp_path, kind)
    secret = repo.secret
    diff = git(repo.path, "show", "--format=", secret.added_in)
    assert any(text.startswith("+") and secret.value in text for text in diff.splitlines())
    assert any(kind_found == DETECTOR[kind] and secret.value in line for kind_found, line in findings(diff))
    (fix,) = [fix for fix in repo.fixes if fix.contains_secret]
    assert fix.fix_commit == secret.added_in and secret.path in fix.code_files


def test_secret_is_removed_later_and_absent_at_head(tmp_path: Path) -> None:
    repo = generate_repo(tmp_path / "lib", seed=8)
    secret = repo.secret
    order = [commit.sha for commit in repo.commits]
    assert order.index(secret.added_in) < order.index(secret.removed_in)
    removal = git(repo.path, "show", "--format=", secret.removed_in)
    assert any(line.startswith("-") and secret.value in line for line in removal.splitlines())
    head_grep = subprocess.run(
        ["git", "grep", "-F", secret.value, "HEAD"], cwd=repo.path, capture_output=True
    )
    assert head_grep.returncode == 1  # not found
    assert secret.value not in (repo.path / secret.path).read_text()


def test_no_other_fix_patch_or_issue_text_trips_detect_secrets(tmp_path: Path) -> None:
    repo = generate_repo(tmp_path / "lib", seed=3, library="textutils", n_bug_fixes=6)
    for fix in repo.fixes:
        patch = git(repo.path, "diff", fix.base_commit, fix.fix_commit)
        assert bool(findings(patch)) == fix.contains_secret, fix.slug
    assert repo.prs_path is not None
    assert repo.secret.value not in repo.prs_path.read_text()
    pulls, issues = read_export(repo.prs_path)
    texts = [
        text
        for row in [*pulls.values(), *issues.values()]
        for text in [row["title"], row["body"], *(comment["body"] for comment in row["comments"])]
    ]
    lines = "\n".join(texts).splitlines()
    as_new_file = f"--- /dev/null\n+++ b/texts.md\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(
        f"+{x}\n" for x in lines
    )
    assert findings(as_new_file) == []
