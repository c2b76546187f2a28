"""SWE-RL's answer format: `<think>...</think><solution>...</solution>` with SEARCH/REPLACE blocks.

Parsing and applying follow facebookresearch/swe-rl (src/swerl/core/reward.py) exactly, so the
agentless env grades the same edit that the patch-similarity reward scores:

- each of `<think>`, `</think>`, `<solution>`, `</solution>` occurs exactly once, and the thought
  (stripped) is not empty;
- blocks are matched in the stripped solution by SWE-RL's regex (any fence tag, even none);
- a block's SEARCH text must occur in the file at the start of a line (`"\\n" + search` is looked
  up in `"\\n" + file`) and differ from its REPLACE text; every occurrence is replaced, as in
  SWE-RL; the blocks of one file apply in order;
- a path missing from the original contents is a new file: only an empty SEARCH matches it.

One departure, for safety: a path that is empty, absolute, or steps outside the repository
(`..`, `.git`) is a format error (BAD_PATH); SWE-RL does not check paths.

It also goes the other way: `answer_from_patch` turns a unified diff (a gold patch) and the
original contents into an answer that reproduces the patch's new contents exactly.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from repogym.errors import RepogymError
from repogym.patches import PatchError, apply_patch, split_lines, unified_diff

THINK_START, THINK_END, ANSWER_START, ANSWER_END = "<think>", "</think>", "<solution>", "</solution>"
TAGS = (THINK_START, THINK_END, ANSWER_START, ANSWER_END)
#: SWE-RL's block pattern, unchanged (lazy groups: the first "\n=======\n" ends the SEARCH text).
SEARCH_REPLACE_REGEX = re.compile(
    r"```.*?\n### (.*)\n<<<<<<< SEARCH\n([\s\S]*?)\n=======\n([\s\S]*?)\n>>>>>>> REPLACE\n```"
)
DEFAULT_THOUGHT = "The patch below applies the fix."


class FormatErrorReason(enum.StrEnum):
    """Why an answer is malformed; each one scores -1.0 under SWE-RL's reward."""

    BAD_TAGS = "bad_tags"
    """One of <think>, </think>, <solution>, </solution> is missing or repeated."""
    EMPTY_THOUGHT = "empty_thought"
    """The text between <think> and </think> is blank."""
    NO_BLOCKS = "no_blocks"
    """The solution holds no well-formed SEARCH/REPLACE block."""
    BAD_PATH = "bad_path"
    """A block names an empty or absolute path, or one with a '..' or '.git' component (repogym's rule)."""
    SEARCH_EQUALS_REPLACE = "search_equals_replace"
    """A block's SEARCH and REPLACE texts are identical."""
    SEARCH_NOT_FOUND = "search_not_found"
    """A block's SEARCH text does not occur at the start of a line of its file."""
    BAD_LINE_COUNT = "bad_line_count"
    """A lines answer (window mode's `answer_format="lines"`) holds not one line per suspicious line."""


class FormatError(RepogymError):
    """A malformed answer; `reason` says which rule it broke, `path` which file (when one is involved)."""

    def __init__(self, reason: FormatErrorReason, detail: str, path: str | None = None) -> None:
        super().__init__(reason, detail, path)  # all in args, so the error pickles (Ray)
        self.reason, self.detail, self.path = reason, detail, path

    def __str__(self) -> str:
        where = f" in {self.path!r}" if self.path is not None else ""
        return f"{self.reason.value}{where}: {self.detail}"


@dataclass(frozen=True)
class SearchReplace:
    """One block: in `path`, replace `search` (at line starts, every occurrence) with `replace`."""

    path: str
    search: str
    replace: str


@dataclass(frozen=True)
class Answer:
    """A parsed answer: the stripped thought and solution, and the blocks in order."""

    thought: str
    solution: str
    edits: tuple[SearchReplace, ...]


@dataclass(frozen=True)
class EditResult:
    """An answer applied to original contents."""

    answer: Answer
    new_contents: dict[str, str]
    """New text of every file a block names (new files included)."""
    diff: str
    """Git-style unified diff of the change (a/ b/ headers), for `git apply`."""


def extract_thought_solution(text: str) -> tuple[str, str]:
    """The stripped thought and solution; FormatError when a tag count is not 1 or the thought is blank.

    >>> extract_thought_solution("<think> why </think>\\n<solution>\\nhow\\n</solution>")
    ('why', 'how')
    >>> extract_thought_solution("<solution>how</solution>")
    Traceback (most recent call last):
    ...
    repogym.search_replace.FormatError: bad_tags: <think> occurs 0 times (expected once)
    """
    for tag in TAGS:
        count = text.count(tag)
        if count != 1:
            raise FormatError(FormatErrorReason.BAD_TAGS, f"{tag} occurs {count} times (expected once)")
    thought = text.split(THINK_START)[1].split(THINK_END)[0].strip()
    solution = text.split(ANSWER_START)[1].split(ANSWER_END)[0].strip()
    if not thought:
        raise FormatError(FormatErrorReason.EMPTY_THOUGHT, "the text between <think> and </think> is blank")
    return thought, solution


def parse_blocks(solution: str) -> tuple[SearchReplace, ...]:
    """Every SEARCH/REPLACE block of a solution, in order (no error when there is none).

    >>> parse_blocks("```python\\n### a.py\\n<<<<<<< SEARCH\\nx = 1\\n=======\\nx = 2\\n>>>>>>> REPLACE\\n```")
    (SearchReplace(path='a.py', search='x = 1', replace='x = 2'),)
    """
    return tuple(SearchReplace(p, s, r) for p, s, r in SEARCH_REPLACE_REGEX.findall(solution))


def parse_answer(text: str) -> Answer:
    """Tags, thought and blocks of a model's answer; FormatError (BAD_TAGS, EMPTY_THOUGHT, NO_BLOCKS)."""
    thought, solution = extract_thought_solution(text)
    edits = parse_blocks(solution)
    if not edits:
        raise FormatError(FormatErrorReason.NO_BLOCKS, "no well-formed SEARCH/REPLACE block in <solution>")
    return Answer(thought, solution, edits)


def check_path(path: str) -> None:
    """FormatError(BAD_PATH) unless `path` is a relative path inside the repository.

    >>> check_path("pkg/mod.py")
    >>> check_path("../etc/passwd")
    Traceback (most recent call last):
    ...
    repogym.search_replace.FormatError: bad_path in '../etc/passwd': paths must be relative and stay inside the repository
    """
    parts = path.split("/")
    if not path.strip() or path.startswith("/") or "\x00" in path or ".." in parts or ".git" in parts:
        raise FormatError(
            FormatErrorReason.BAD_PATH, "paths must be relative and stay inside the repository", path
        )


def apply_edits(contents: Mapping[str, str], edits: Sequence[SearchReplace]) -> dict[str, str]:
    """New text of each file the edits name, applied exactly as SWE-RL does.

    `contents` maps paths to original text (any Mapping, so a lazy view of a checkout works); a
    path it lacks is a new, empty file. Blocks are grouped by file in order of first appearance.

    >>> apply_edits({"a.py": "x = 1\\ny = 1\\n"}, [SearchReplace("a.py", "y = 1", "y = 2")])
    {'a.py': 'x = 1\\ny = 2\\n'}
    >>> apply_edits({}, [SearchReplace("new.py", "", "print(1)\\n")])
    {'new.py': 'print(1)\\n'}
    """
    for edit in edits:
        check_path(edit.path)
    by_path: dict[str, list[SearchReplace]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    new_contents: dict[str, str] = {}
    for path, file_edits in by_path.items():
        text = "\n" + (contents.get(path) or "")
        for edit in file_edits:
            if edit.search == edit.replace:
                raise FormatError(
                    FormatErrorReason.SEARCH_EQUALS_REPLACE, "SEARCH and REPLACE are identical", path
                )
            search = "\n" + edit.search
            if search not in text:
                raise FormatError(
                    FormatErrorReason.SEARCH_NOT_FOUND, f"no line starts with {_preview(edit.search)}", path
                )
            text = text.replace(search, "\n" + edit.replace)
        new_contents[path] = text[1:]
    return new_contents


def apply_answer(text: str, contents: Mapping[str, str]) -> EditResult:
    """Parse a model's answer and apply it: new contents and a `git apply`-able diff; raises FormatError."""
    answer = parse_answer(text)
    new_contents = apply_edits(contents, answer.edits)
    return EditResult(answer, new_contents, unified_diff(contents, new_contents))


def _preview(text: str, limit: int = 60) -> str:
    first = text.split("\n", 1)[0]
    return repr(first if len(first) <= limit else first[: limit - 3] + "...")


# -- the inverse: a unified diff as SEARCH/REPLACE ----------------------------------------------


def render_answer(edits: Sequence[SearchReplace], thought: str = DEFAULT_THOUGHT) -> str:
    """A SWE-RL answer holding `edits` (each as a ```python fenced block).

    >>> text = render_answer([SearchReplace("a.py", "x = 1", "x = 2")], "Fix x.")
    >>> text.splitlines()[:7]
    ['<think>', 'Fix x.', '</think>', '<solution>', '```python', '### a.py', '<<<<<<< SEARCH']
    >>> parse_answer(text).edits
    (SearchReplace(path='a.py', search='x = 1', replace='x = 2'),)
    """
    if not thought.strip() or any(tag in thought for tag in TAGS):
        raise ValueError("thought must be non-blank and free of <think>/<solution> tags")
    blocks = [
        f"```python\n### {e.path}\n<<<<<<< SEARCH\n{e.search}\n=======\n{e.replace}\n>>>>>>> REPLACE\n```"
        for e in edits
    ]
    return (
        f"{THINK_START}\n{thought.strip()}\n{THINK_END}\n{ANSWER_START}\n"
        + "\n".join(blocks)
        + f"\n{ANSWER_END}"
    )


def answer_from_patch(
    patch: str, contents: Mapping[str, str], thought: str = DEFAULT_THOUGHT, context: int = 3
) -> str:
    """A SWE-RL answer whose blocks turn `contents` into what `patch` produces, checked by re-applying it.

    Each changed region becomes one block with `context` lines around it, widened until its SEARCH
    text is unique. The format cannot delete a file or create an empty one: a deleted file (or a
    renamed file's old path) is emptied instead, and an empty new file is left out. Raises
    PatchError when the patch does not apply or its text cannot be written in the format (a line
    "=======" inside a block).
    """
    edits: list[SearchReplace] = []
    for path, new in apply_patch(patch, contents).items():
        old = contents.get(path)
        new = new or ""
        if new == (old or ""):
            continue
        check_path(path)
        file_edits = _file_edits(path, old, new, context)
        if _applied(path, old, file_edits) != new:
            file_edits = [SearchReplace(path, old or "", new)]
        edits.extend(file_edits)
    if not edits:
        raise PatchError("the patch changes nothing that SEARCH/REPLACE blocks can express")
    answer = render_answer(edits, thought)
    if parse_answer(answer).edits != tuple(edits):
        raise PatchError(
            "the patch's text contains a SEARCH/REPLACE marker line, so it cannot be written as blocks"
        )
    return answer


def _applied(path: str, old: str | None, edits: list[SearchReplace]) -> str | None:
    try:
        return apply_edits({} if old is None else {path: old}, edits)[path]
    except FormatError:
        return None


def _file_edits(path: str, old: str | None, new: str, context: int) -> list[SearchReplace]:
    """Blocks for one file: its changed regions, each widened (or merged) until its SEARCH is unique."""
    if old is None or not old:
        return [SearchReplace(path, "", new)]
    a, b = split_lines(old), split_lines(new)
    groups = difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context)
    spans = [[g[0][1], g[-1][2], g[0][3], g[-1][4]] for g in groups]  # old i1:i2 -> new j1:j2
    k = 0
    while k < len(spans):
        # What the file looks like once the blocks before this one have been applied.
        current = "".join(b[: spans[k - 1][3]] + a[spans[k - 1][1] :]) if k else old
        search, replace = _block_text(a, b, spans[k])
        if _unique("\n" + search, "\n" + current) and search != replace:
            k += 1
            continue
        i1, i2, j1, j2 = spans[k]
        if i1 == 0 and i2 == len(a):
            return [SearchReplace(path, old, new)]
        spans[k] = [max(i1 - 1, 0), min(i2 + 1, len(a)), j1 - (i1 > 0), j2 + (i2 < len(a))]
        if k and spans[k][0] < spans[k - 1][1]:
            spans[k - 1 : k + 1] = [[spans[k - 1][0], spans[k][1], spans[k - 1][2], spans[k][3]]]
            k -= 1
        if k + 1 < len(spans) and spans[k][1] > spans[k + 1][0]:
            spans[k : k + 2] = [[spans[k][0], spans[k + 1][1], spans[k][2], spans[k + 1][3]]]
    return [SearchReplace(path, *_block_text(a, b, span)) for span in spans]


def _block_text(a: list[str], b: list[str], span: list[int]) -> tuple[str, str]:
    search, replace = "".join(a[span[0] : span[1]]), "".join(b[span[2] : span[3]])
    if search.endswith("\n") and replace.endswith("\n"):
        # The block format ends each text before the marker's newline; keep the file's own.
        search, replace = search[:-1], replace[:-1]
    return search, replace


def _unique(needle: str, haystack: str) -> bool:
    first = haystack.find(needle)
    return first != -1 and haystack.find(needle, first + 1) == -1
