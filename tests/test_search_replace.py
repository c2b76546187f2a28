"""SWE-RL's SEARCH/REPLACE answers: parsing, applying, git-compatible diffs and the gold-patch inverse."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repogym.search_replace import (
    FormatError,
    FormatErrorReason,
    PatchError,
    SearchReplace,
    answer_from_patch,
    apply_answer,
    apply_edits,
    apply_patch,
    parse_answer,
    render_answer,
    unified_diff,
)

from .support.git import git, init_repo

GEO = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * w + h\n"
FIX = "```python\n### geo.py\n<<<<<<< SEARCH\n    return 2 * w + h\n=======\n    return 2 * (w + h)\n>>>>>>> REPLACE\n```"


def answer(*blocks: str, thought: str = "Perimeter adds h once.") -> str:
    return f"<think>\n{thought}\n</think>\n<solution>\n" + "\n".join(blocks) + "\n</solution>"


# -- parsing and applying -----------------------------------------------------------------------


def test_answer_is_parsed_and_applied():
    result = apply_answer(answer(FIX), {"geo.py": GEO})
    assert result.answer.thought == "Perimeter adds h once."
    assert result.new_contents == {"geo.py": GEO.replace("2 * w + h", "2 * (w + h)")}
    assert "-    return 2 * w + h\n+    return 2 * (w + h)\n" in result.diff


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"<solution>\n{FIX}\n</solution>", FormatErrorReason.BAD_TAGS),
        (answer(FIX) + "<think>again</think>", FormatErrorReason.BAD_TAGS),
        (answer(FIX, thought="  \n "), FormatErrorReason.EMPTY_THOUGHT),
        (answer("I would fix perimeter."), FormatErrorReason.NO_BLOCKS),
        (answer(FIX.replace(">>>>>>> REPLACE\n", "")), FormatErrorReason.NO_BLOCKS),
        (answer(FIX.replace("2 * w + h\n===", "3 * w + h\n===")), FormatErrorReason.SEARCH_NOT_FOUND),
        (
            answer(FIX.replace("\n    return 2 * w + h\n", "\nreturn 2 * w + h\n")),
            FormatErrorReason.SEARCH_NOT_FOUND,
        ),
        (answer(FIX.replace("2 * (w + h)", "2 * w + h")), FormatErrorReason.SEARCH_EQUALS_REPLACE),
        (answer(FIX.replace("### geo.py", "### ../geo.py")), FormatErrorReason.BAD_PATH),
        (answer(FIX.replace("### geo.py", "### /etc/geo.py")), FormatErrorReason.BAD_PATH),
        (answer(FIX.replace("### geo.py", "### .git/hooks/pre-commit")), FormatErrorReason.BAD_PATH),
    ],
    ids=[
        "missing_think",
        "repeated_think",
        "blank_thought",
        "prose_only",
        "unclosed_block",
        "search_absent",
        "search_without_indentation",
        "search_equals_replace",
        "parent_dir",
        "absolute",
        "git_dir",
    ],
)
def test_each_format_problem_has_its_reason(text, reason):
    with pytest.raises(FormatError) as caught:
        apply_answer(text, {"geo.py": GEO})
    assert caught.value.reason is reason
    assert reason.value in str(caught.value)


def test_format_error_survives_pickling_for_ray():
    error = FormatError(FormatErrorReason.SEARCH_NOT_FOUND, "no line starts with 'x'", "a.py")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.reason, copy.path, str(copy)) == (error.reason, "a.py", str(error))


def test_search_replaces_every_occurrence_and_blocks_apply_in_order():
    text = "a = 0\nb = 0\n"
    edits = [SearchReplace("x.py", "a = 0", "a = 1"), SearchReplace("x.py", "a = 1\nb = 0", "a = 2\nb = 2")]
    assert apply_edits({"x.py": text}, edits) == {"x.py": "a = 2\nb = 2\n"}
    # SWE-RL's str.replace changes every match, not just the first.
    assert apply_edits({"x.py": "x = 0\nx = 0\n"}, [SearchReplace("x.py", "x = 0", "x = 1")]) == {
        "x.py": "x = 1\nx = 1\n"
    }


def test_search_must_start_a_line_but_may_end_mid_line():
    edits = [SearchReplace("x.py", "value", "result")]
    assert apply_edits({"x.py": "value = 1\n"}, edits) == {"x.py": "result = 1\n"}
    with pytest.raises(FormatError):
        apply_edits({"x.py": "my_value = 1\n"}, edits)


def test_file_missing_from_contents_is_new_and_needs_empty_search():
    new = apply_edits({}, [SearchReplace("pkg/new.py", "", "X = 1\n")])
    assert new == {"pkg/new.py": "X = 1\n"}
    with pytest.raises(FormatError) as caught:
        apply_edits({}, [SearchReplace("pkg/new.py", "X = 0", "X = 1")])
    assert caught.value.reason is FormatErrorReason.SEARCH_NOT_FOUND


def test_contents_may_be_a_lazy_view_of_a_checkout(tmp_path):
    class Checkout(dict):
        def get(self, path, default=None):
            file = tmp_path / path
            return file.read_text() if file.is_file() else default

    (tmp_path / "geo.py").write_text(GEO)
    assert apply_answer(answer(FIX), Checkout()).new_contents["geo.py"].endswith("2 * (w + h)\n")


# -- diffs that git accepts ----------------------------------------------------------------------


def test_diff_applies_with_git_including_new_files_and_missing_final_newline(tmp_path):
    original = {"geo.py": GEO, "tail.py": "x = 1\ny = 2", "crlf.txt": "a\r\nb\r\n"}
    repo = tmp_path / "repo"
    init_repo(repo, original)
    blocks = [
        FIX,
        "```python\n### tail.py\n<<<<<<< SEARCH\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE\n```",
        "```python\n### pkg/new.py\n<<<<<<< SEARCH\n\n=======\nNEW = True\n>>>>>>> REPLACE\n```",
        "```\n### crlf.txt\n<<<<<<< SEARCH\nb\r\n=======\nc\r\n>>>>>>> REPLACE\n```",
    ]
    result = apply_answer(answer(*blocks), original)
    assert "\\ No newline at end of file" in result.diff
    assert "--- /dev/null\n+++ b/pkg/new.py" in result.diff
    git(repo, "apply", "--check", "-", stdin=result.diff)
    git(repo, "apply", "-", stdin=result.diff)
    for path, text in result.new_contents.items():
        assert (repo / path).read_bytes() == text.encode(), path


def test_unchanged_and_empty_new_files(tmp_path):
    repo = tmp_path / "repo"
    init_repo(repo, {"a.py": "a = 1\n"})
    diff = unified_diff({"a.py": "a = 1\n"}, {"a.py": "a = 1\n", "pkg/__init__.py": ""})
    assert diff == "diff --git a/pkg/__init__.py b/pkg/__init__.py\nnew file mode 100644\n"
    git(repo, "apply", "-", stdin=diff)
    assert (repo / "pkg/__init__.py").read_text() == ""


# -- unified diffs applied in memory -------------------------------------------------------------


def test_apply_patch_matches_git_on_a_real_commit(tmp_path):
    repo = tmp_path / "repo"
    init_repo(repo, {"geo.py": GEO, "old.py": "gone = True\n", "keep.py": "k = 1\n"})
    (repo / "geo.py").write_text(
        GEO.replace("w * h\n", "w * h  # area\n").replace("2 * w + h", "2 * (w + h)")
    )
    (repo / "old.py").unlink()
    (repo / "added.py").write_text("added = 1")
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached")
    new = apply_patch(patch, {"geo.py": GEO, "old.py": "gone = True\n", "keep.py": "k = 1\n"})
    assert new == {"geo.py": (repo / "geo.py").read_text(), "old.py": None, "added.py": "added = 1"}


def test_apply_patch_tolerates_moved_hunks_but_not_changed_context():
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    assert apply_patch(patch, {"x.py": "# header\n\na = 1\nb = 2\n"}) == {
        "x.py": "# header\n\na = 1\nb = 3\n"
    }
    with pytest.raises(PatchError, match="does not match"):
        apply_patch(patch, {"x.py": "a = 1\nb = 5\n"})
    with pytest.raises(PatchError, match="original content was not given"):
        apply_patch(patch, {})
    assert apply_patch(patch, {}, partial=True) == {}


def test_apply_patch_rejects_garbage():
    with pytest.raises(PatchError, match="not a unified diff"):
        apply_patch("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a\n", {"x.py": "a\n"})


# -- the inverse: a gold patch as an answer -------------------------------------------------------


def test_gold_patch_round_trips_through_an_answer_and_git(tmp_path):
    lines = [f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(30)]
    base = {"mod.py": "".join(lines), "dup.py": "x = 0\nx = 0\nx = 0\n", "gone.py": "bye = 1\n"}
    repo = tmp_path / "repo"
    init_repo(repo, base)
    (repo / "mod.py").write_text("".join(lines).replace("x + 3\n", "x - 3\n").replace("x + 25\n", "x * 25\n"))
    (repo / "dup.py").write_text("x = 0\nx = 1\nx = 0\n")  # the changed line is not unique: context needed
    (repo / "new.py").write_text("NEW = 1\n")
    (repo / "gone.py").unlink()
    git(repo, "add", "-A")
    gold = git(repo, "diff", "--cached")
    text = answer_from_patch(gold, base)
    result = apply_answer(text, base)
    assert len([e for e in result.answer.edits if e.path == "mod.py"]) == 2  # one block per changed region
    for path in ("mod.py", "dup.py", "new.py"):
        assert result.new_contents[path] == (repo / path).read_text()
    assert result.new_contents["gone.py"] == ""  # the format cannot delete: the file is emptied


def test_inverse_widens_a_block_until_its_search_is_unique_and_merges_neighbours():
    base = "a = 1\nx = 0\nb = 2\nx = 0\nc = 3\nd = 4\ne = 5\nf = 6\n"
    one = unified_diff({"f.py": base}, {"f.py": base.replace("b = 2\nx = 0", "b = 2\nx = 9")})
    edits = parse_answer(answer_from_patch(one, {"f.py": base}, context=0)).edits
    assert edits == (SearchReplace("f.py", "b = 2\nx = 0\nc = 3", "b = 2\nx = 9\nc = 3"),)
    # Blocks apply in order, so a later block only has to be unique in the already-edited text.
    two = unified_diff(
        {"f.py": base}, {"f.py": base.replace("x = 0\nb", "x = 7\nb").replace("x = 0\nc", "x = 9\nc")}
    )
    edits = parse_answer(answer_from_patch(two, {"f.py": base}, context=0)).edits
    assert [e.search for e in edits] == ["a = 1\nx = 0\nb = 2", "x = 0"]
    # Here the second line x stays ambiguous, so it widens into the first block and they merge.
    three = unified_diff({"f.py": "a\nx\nb\nx\nc\nx\n"}, {"f.py": "a\nX1\nb\nX3\nc\nx\n"})
    edits = parse_answer(answer_from_patch(three, {"f.py": "a\nx\nb\nx\nc\nx\n"}, context=0)).edits
    assert edits == (SearchReplace("f.py", "a\nx\nb\nx\nc", "a\nX1\nb\nX3\nc"),)


def test_inverse_refuses_text_that_the_format_cannot_hold():
    base = {"notes.rst": "Title\n=======\nold\n"}
    gold = "--- a/notes.rst\n+++ b/notes.rst\n@@ -1,3 +1,3 @@\n Title\n =======\n-old\n+new\n"
    with pytest.raises(PatchError, match="marker"):
        answer_from_patch(gold, base, context=3)


def test_render_answer_refuses_a_thought_that_would_break_the_tags():
    with pytest.raises(ValueError, match="thought"):
        render_answer([SearchReplace("a.py", "a", "b")], "see </think>")
    assert parse_answer(render_answer([SearchReplace("a.py", "a", "b")])).edits[0].replace == "b"


_line = st.sampled_from(["x = 0", "x = 1", "", "    return x", "pass", "# c", "y = x\r"])


@settings(max_examples=150, deadline=None)
@given(
    old=st.lists(_line, max_size=12),
    new=st.lists(_line, max_size=12),
    old_eol=st.booleans(),
    new_eol=st.booleans(),
    context=st.integers(0, 3),
)
def test_any_change_round_trips_through_an_answer(old, new, old_eol, new_eol, context):
    before = "\n".join(old) + ("\n" if old_eol and old else "")
    after = "\n".join(new) + ("\n" if new_eol and new else "")
    if before == after:
        return
    gold = unified_diff({"f.py": before}, {"f.py": after})
    result = apply_answer(answer_from_patch(gold, {"f.py": before}, context=context), {"f.py": before})
    assert result.new_contents == {"f.py": after}
