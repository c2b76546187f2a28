"""An episode's checkout has the tags of its commit's past (git describe, setuptools_scm), never a later one:
a tag on a later commit would name the fix."""

from __future__ import annotations

from repogym.sandbox.runtime import TaskRuntime


def test_future_tag_naming_the_fix_is_not_in_the_episode(git_repo):
    repo = git_repo("tagged")
    repo.commit({"pkg.py": "VALUE = 1\n"}, "first release")
    repo.git("tag", "-a", "v1.0", "-m", "v1.0")
    base = repo.commit({"README.md": "tagged\n"}, "work after the release")
    repo.commit({"pkg.py": "VALUE = 2\n"}, "the fix")
    repo.git("tag", "v1.1-fix")
    runtime = TaskRuntime.create(repo.task("local__tagged-1", base)).prepare()
    with runtime.episode() as episode:
        described = episode.run("git describe --tags")
        assert described.ok and described.output.strip() == f"v1.0-1-g{base[:7]}", described.output
        listed = episode.run("git tag --list; git for-each-ref; git log --all --oneline")
        assert "v1.1-fix" not in listed.output and "the fix" not in listed.output, listed.output
        assert episode.run("git show v1.1-fix").exit_code != 0
