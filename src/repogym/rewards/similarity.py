"""SWE-RL's patch-similarity reward (arXiv 2502.18449; facebookresearch/swe-rl, src/swerl/core/reward.py).

The reward compares changes, not test results. For each file changed by the prediction or the
oracle, a unified diff of the new content against the original (3 context lines, the ---/+++
headers dropped) is computed for both sides and compared with
`difflib.SequenceMatcher(None, pred, oracle, autojunk=False).ratio()`; a file changed by one
side only scores 0; the reward is the mean over those files (1.0 when neither side changes
anything). An answer with a format error scores -1.0 (see `repogym.search_replace`).

The functions mirror the reference one to one, so they can be checked against it: the values
on ../shared/testdata/swe_rl_reward_cases.json match to 1e-9.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from unidiff import PatchSet

from repogym.patches import PatchError, apply_patch
from repogym.search_replace import FormatError, apply_answer

FORMAT_ERROR_REWARD = -1.0


@dataclass(frozen=True)
class FileSimilarity:
    """How close the prediction's change to one file is to the oracle's ('' = that side left it alone)."""

    path: str
    pred_change: str
    oracle_change: str
    similarity: float


@dataclass(frozen=True)
class SimilarityResult:
    """The reward and how it came about: per-file similarities, or the format error that set it to -1."""

    reward: float
    files: tuple[FileSimilarity, ...] = ()
    error: FormatError | None = None


def normalized_diff(old: str, new: str, context: int = 3) -> str:
    """SWE-RL's `generate_unified_diff`: the diff's hunks without the ---/+++ header lines.

    >>> print(normalized_diff("a\\nb\\n", "a\\nc\\n"))
    @@ -1,2 +1,2 @@
     a
    -b
    +c
    >>> normalized_diff("same\\n", "same")
    ''
    """
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile="old", tofile="new", lineterm="", n=context
    )
    body = list(lines)[2:]  # the reference drops the two header lines the same way
    return "\n".join(body)


def normalized_changes(code_context: Mapping[str, str], new_contents: Mapping[str, str]) -> dict[str, str]:
    """SWE-RL's `get_normalized_patch`: path -> normalized diff, files without a change left out."""
    changes: dict[str, str] = {}
    for path, new in new_contents.items():
        change = normalized_diff(code_context.get(path, ""), new)
        if change:
            changes[path] = change
    return changes


def change_similarities(pred: Mapping[str, str], oracle: Mapping[str, str]) -> tuple[FileSimilarity, ...]:
    """SWE-RL's `compute_change_similarities`, over the union of paths (in path order).

    >>> [f.similarity for f in change_similarities({"a": "+x", "b": "+y"}, {"a": "+x"})]
    [1.0, 0.0]
    """
    files = []
    for path in sorted(set(pred) | set(oracle)):
        pred_change, oracle_change = pred.get(path, ""), oracle.get(path, "")
        if not pred_change or not oracle_change:
            similarity = 0.0  # changed by one side only (an empty change would be a reward hack)
        else:
            similarity = difflib.SequenceMatcher(None, pred_change, oracle_change, autojunk=False).ratio()
        files.append(FileSimilarity(path, pred_change, oracle_change, similarity))
    return tuple(files)


def _mean(files: tuple[FileSimilarity, ...]) -> SimilarityResult:
    if not files:  # neither side changes anything: identical (the reference's current behaviour)
        return SimilarityResult(1.0)
    return SimilarityResult(sum(f.similarity for f in files) / len(files), files)


def similarity_from_contents(
    code_context: Mapping[str, str],
    oracle_new_content: Mapping[str, str],
    pred_new_content: Mapping[str, str],
) -> SimilarityResult:
    """SWE-RL's `calculate_reward`: compare predicted and oracle new contents against the originals.

    >>> similarity_from_contents({"a.py": "x = 1\\n"}, {"a.py": "x = 2\\n"}, {"a.py": "x = 2\\n"}).reward
    1.0
    >>> similarity_from_contents({"a.py": "x = 1\\n"}, {"a.py": "x = 2\\n"}, {"b.py": "y = 2\\n"}).reward
    0.0
    """
    oracle = normalized_changes(code_context, oracle_new_content)
    pred = normalized_changes(code_context, pred_new_content)
    return _mean(change_similarities(pred, oracle))


def similarity_from_response(
    code_context: Mapping[str, str], oracle_new_content: Mapping[str, str], response: str
) -> SimilarityResult:
    """SWE-RL's `calculate_search_replace_reward`: -1.0 on any format error, else the content similarity.

    `code_context` holds the original text of the files the oracle changes (and any other file the
    model may edit); `oracle_new_content` their text after the oracle patch.
    """
    try:
        edited = apply_answer(response, code_context)
    except FormatError as error:
        return SimilarityResult(FORMAT_ERROR_REWARD, error=error)
    return similarity_from_contents(code_context, oracle_new_content, edited.new_contents)


def oracle_contents(patch: str, code_context: Mapping[str, str]) -> dict[str, str]:
    """New text of every file a gold patch touches, applied to `code_context` (a deleted file is '')."""
    return {path: new or "" for path, new in apply_patch(patch, code_context).items()}


# -- unified-diff inputs (agent mode) ------------------------------------------------------------


def filelevel_changes(patch: str) -> dict[str, str]:
    """SWE-RL's `get_filelevel_diff`: path -> the file's hunks as written in the patch ({} if unparsable).

    >>> filelevel_changes("--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-a\\n+b\\n")
    {'x.py': '@@ -1,1 +1,1 @@\\n-a\\n+b'}
    """
    try:
        parsed = PatchSet(patch)
    except Exception:  # the reference treats any unidiff failure as "no files"
        return {}
    changes: dict[str, str] = {}
    for patched in parsed:
        if patched.is_binary_file:
            continue
        header, path = "", patched.path
        if patched.is_rename:
            source = patched.source_file.removeprefix("a/")
            target = patched.target_file.removeprefix("b/")
            header, path = f"rename from {source} to {target}", source
        body = "\n".join(str(hunk).strip() for hunk in patched)
        changes[path] = (header + "\n" + body).strip()
    return changes


def similarity_from_patches(oracle_patch: str, pred_patch: str) -> SimilarityResult:
    """SWE-RL's `calculate_reward_unidiff` for one oracle and one predicted diff: hunks compared as written."""
    return _mean(change_similarities(filelevel_changes(pred_patch), filelevel_changes(oracle_patch)))


def similarity_from_diff(
    code_context: Mapping[str, str] | None, oracle_patch: str, pred_patch: str
) -> SimilarityResult:
    """The SWE-RL reward for a candidate given as a unified diff (agent mode: no answer text).

    Per file touched by either diff: when both diffs touch it and both apply to its original in
    `code_context`, the two new contents are compared exactly as `similarity_from_contents` does,
    so the result does not depend on how either diff was written (context size, hunk split, git's
    diff algorithm). Otherwise the file's hunks are compared as written (SWE-RL's
    `calculate_reward_unidiff`). A file changed by one side only scores 0; a candidate diff that
    does not parse changes nothing.
    """
    context = code_context or {}
    pred_hunks, oracle_hunks = filelevel_changes(pred_patch), filelevel_changes(oracle_patch)
    pred_new, oracle_new = _applied_files(pred_patch, context), _applied_files(oracle_patch, context)
    pred: dict[str, str] = {}
    oracle: dict[str, str] = {}
    for path in set(pred_hunks) | set(oracle_hunks) | set(pred_new) | set(oracle_new):
        if path in context and path in pred_new and path in oracle_new:
            pred[path] = normalized_diff(context[path], pred_new[path])
            oracle[path] = normalized_diff(context[path], oracle_new[path])
        else:
            pred[path], oracle[path] = pred_hunks.get(path, ""), oracle_hunks.get(path, "")
    return _mean(
        change_similarities({p: c for p, c in pred.items() if c}, {p: c for p, c in oracle.items() if c})
    )


def _applied_files(patch: str, context: Mapping[str, str]) -> dict[str, str]:
    """New content of each file of `patch` that applies cleanly to `context` (a deleted file is '')."""
    try:
        applied = apply_patch(patch, context, partial=True)
    except PatchError:  # the diff does not parse: it changes nothing we can read
        return {}
    return {path: new or "" for path, new in applied.items()}
