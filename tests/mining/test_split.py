"""The code/test split: every path rule, renames, binaries, modes, odd names; patches apply with `git apply`."""

from __future__ import annotations

import os

import pytest

from repogym.mining.config import MiningConfig
from repogym.mining.history import fetch_patches, iter_first_parent
from repogym.mining.split import PathKind, PathRules, SplitPatch, parse_file_diffs, split_patch


def split_of(builder, sha: str, config: MiningConfig | None = None) -> SplitPatch:
    commit = next(iter_first_parent(builder.path, sha))
    patch = fetch_patches(builder.path, [commit])[commit.sha].decode()
    return split_patch(patch, PathRules(config or MiningConfig()))


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("tests/test_calc.py", PathKind.TEST),
        ("test/helpers.py", PathKind.TEST),
        ("pkg/testing/fixtures.json", PathKind.CODE),  # a testing/ package below the top is code (repogym.testpaths)
        ("pkg/test_util.py", PathKind.TEST),
        ("pkg/util_test.py", PathKind.TEST),
        ("conftest.py", PathKind.TEST),
        ("pkg/sub/conftest.py", PathKind.TEST),
        ("tests/README.md", PathKind.TEST),  # test rules win over docs rules
        ("docs/index.rst", PathKind.DOCS),
        ("README.md", PathKind.DOCS),
        ("CHANGELOG", PathKind.DOCS),
        ("CHANGES.rst", PathKind.DOCS),
        ("NEWS.txt", PathKind.DOCS),
        ("poetry.lock", PathKind.LOCK),
        ("requirements-dev.txt", PathKind.LOCK),
        ("pkg/_vendor/six.py", PathKind.VENDORED),
        ("vendor/lib/tests/test_x.py", PathKind.VENDORED),  # vendored wins over everything
        ("proto/api_pb2.py", PathKind.VENDORED),
        ("pkg/contest.py", PathKind.CODE),
        ("pkg/mytests/a.py", PathKind.CODE),
        ("pkg/attestation.py", PathKind.CODE),
        ("setup.cfg", PathKind.CODE),
    ],
)
def test_default_path_rules(path: str, kind: PathKind) -> None:
    assert PathRules(MiningConfig()).kind(path) is kind


def test_path_rules_are_configurable() -> None:
    rules = PathRules(MiningConfig(test_paths=["spec/", "*_spec.py"], docs_paths=["manual/"]))
    assert rules.kind("spec/calc.py") is PathKind.TEST
    assert rules.kind("pkg/calc_spec.py") is PathKind.TEST
    assert rules.kind("tests/test_calc.py") is PathKind.CODE
    assert rules.kind("manual/intro.md") is PathKind.DOCS
    assert rules.kind("README.md") is PathKind.CODE


def test_code_tests_and_docs_are_split_and_each_patch_applies(repo) -> None:
    base = repo.head()
    repo.write("pkg/calc.py", repo.path.joinpath("pkg/calc.py").read_text().replace("a - b", "b - a"))
    repo.write(
        "tests/test_calc.py", "from pkg.calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
    )
    repo.write("CHANGELOG.md", "- fixed sub\n").write("docs/usage.rst", "Use sub.\n")
    sha = repo.commit("Fix sub")

    split = split_of(repo, sha)

    assert [d.path for d in split.code] == ["pkg/calc.py"]
    assert [d.path for d in split.tests] == ["tests/test_calc.py"]
    assert sorted(split.dropped) == [("CHANGELOG.md", "docs"), ("docs/usage.rst", "docs")]
    assert "CHANGELOG" not in split.code_patch and "usage.rst" not in split.code_patch
    repo.apply_check(base, split.code_patch)
    repo.apply_check(base, split.test_patch)
    repo.apply_check(base, split.test_patch, split.code_patch)
    repo.apply_check(base, split.code_patch, split.test_patch)
    after = repo.tree_after(base, split.code_patch, split.test_patch)
    assert after["pkg/calc.py"] == (repo.path / "pkg/calc.py").read_bytes()
    assert "CHANGELOG.md" not in after


def test_pure_rename_and_rename_with_changes_apply(repo) -> None:
    cases = "".join(f"\n\ndef test_add_{n}():\n    assert add({n}, 1) == {n + 1}\n" for n in range(8))
    repo.write("tests/test_calc.py", "from pkg.calc import add\n" + cases).commit("More tests")
    base = repo.head()
    repo.git("mv", "pkg/calc.py", "pkg/arith.py")
    repo.git("mv", "tests/test_calc.py", "tests/test_arith.py")
    text = repo.path.joinpath("tests/test_arith.py").read_text().replace("pkg.calc", "pkg.arith")
    repo.write("tests/test_arith.py", text)
    sha = repo.commit("Rename calc to arith")

    split = split_of(repo, sha)

    (code,), (test,) = split.code, split.tests
    assert (code.old_path, code.new_path, code.rename, code.added) == ("pkg/calc.py", "pkg/arith.py", True, 0)
    assert (test.old_path, test.new_path, test.rename) == ("tests/test_calc.py", "tests/test_arith.py", True)
    assert test.added > 0  # a rename with content changes keeps its hunks
    after = repo.tree_after(base, split.code_patch, split.test_patch)
    assert "pkg/calc.py" not in after
    assert after["pkg/arith.py"] == (repo.path / "pkg/arith.py").read_bytes()
    assert after["tests/test_arith.py"] == (repo.path / "tests/test_arith.py").read_bytes()


def test_binary_test_fixture_goes_to_the_test_patch_and_applies(repo) -> None:
    base = repo.head()
    blob = bytes(range(256)) * 4
    repo.write("tests/data/sample.bin", blob).write("pkg/calc.py", "def add(a, b):\n    return b + a\n")
    sha = repo.commit("Read binary samples")

    split = split_of(repo, sha)

    (fixture,) = [d for d in split.tests if d.path == "tests/data/sample.bin"]
    assert fixture.binary and "GIT binary patch" in split.test_patch
    assert not any(d.binary for d in split.code)
    assert repo.tree_after(base, split.test_patch)["tests/data/sample.bin"] == blob


def test_mode_only_change_is_dropped_and_mode_lines_leave_content_changes(repo) -> None:
    base = repo.head()
    repo.write("tools/run.py", "print('run')\n").commit("Add a tool")
    base = repo.head()
    os.chmod(repo.path / "tools/run.py", 0o755)
    os.chmod(repo.path / "pkg/calc.py", 0o755)
    repo.write("pkg/calc.py", "def add(a, b):\n    return b + a\n")
    repo.write("tests/test_calc.py", "def test_nothing():\n    pass\n")
    sha = repo.commit("Make executable")

    split = split_of(repo, sha)

    assert ("tools/run.py", "mode_only") in split.dropped
    (calc,) = split.code
    assert "old mode" not in calc.text and "new mode" not in calc.text and calc.added == 1
    repo.apply_check(base, split.code_patch, split.test_patch)


@pytest.mark.parametrize("name", ["pkg/my module.py", "pkg/café.py", 'pkg/say "hi".py', "pkg/tab\there.py"])
def test_unusual_file_names_are_parsed_and_apply(repo, name: str) -> None:
    base = repo.head()
    repo.write(name, "x = 1\n").write("tests/test_more.py", "def test_more():\n    pass\n")
    sha = repo.commit("Add an oddly named module")

    split = split_of(repo, sha)

    assert [d.path for d in split.code] == [name]
    assert repo.tree_after(base, split.code_patch)[name] == b"x = 1\n"


def test_empty_new_file_and_deletion(repo) -> None:
    base = repo.head()
    repo.write("pkg/py.typed", "").delete("pkg/calc.py")
    sha = repo.commit("Typed, no calc")

    split = split_of(repo, sha)

    assert {(d.old_path, d.new_path) for d in split.code} == {(None, "pkg/py.typed"), ("pkg/calc.py", None)}
    after = repo.tree_after(base, split.code_patch)
    assert after["pkg/py.typed"] == b"" and "pkg/calc.py" not in after


def _patch(path: str, start: int, context: str, removed: str, added: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{start},2 +{start},2 @@\n {context}\n-{removed}\n+{added}\n"
    )


def test_fingerprint_ignores_line_numbers_context_and_blob_ids() -> None:
    rules = PathRules(MiningConfig())
    one = split_patch(_patch("pkg/a.py", 10, "def f():", "    return 1", "    return 2"), rules)
    moved = split_patch(_patch("pkg/a.py", 90, "# other context", "    return 1", "    return 2  "), rules)
    other_change = split_patch(_patch("pkg/a.py", 10, "def f():", "    return 1", "    return 3"), rules)
    other_file = split_patch(_patch("pkg/b.py", 10, "def f():", "    return 1", "    return 2"), rules)
    assert one.fingerprint == moved.fingerprint
    assert one.fingerprint != other_change.fingerprint
    assert one.fingerprint != other_file.fingerprint


def test_parse_counts_added_lines_that_look_like_headers() -> None:
    text = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-a\n+++b\n+--c\n"
    (diff,) = parse_file_diffs(text)
    assert (diff.added, diff.removed) == (2, 1)
