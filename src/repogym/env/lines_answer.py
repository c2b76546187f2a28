"""Window mode's compact answer (`answer_format="lines"`): the suspicious lines as they should read.

SWE-RL's SEARCH/REPLACE answer makes a model copy a path and a SEARCH text before it writes the
token that fixes a single-line bug: with the tiny model's 4,096-token BPE a window answer is ~110
tokens, of which a handful are the fix. Measured (docs/benchmarks.md, "Learning"): 960 SFT steps
taught the tiny model the block format but not the copying, 0% on held-out functions. The lines
answer asks only for what the window prompt already points at, one line per suspicious line, in
the order the prompt lists them:

    <solution>
        return sum(values) / len(values)
    </solution>

Each answer line replaces its suspicious line (the line's own newline is kept), so the answer
reaches no other line of the repository: less than a SEARCH/REPLACE block can. `to_search_replace`
turns it into SWE-RL's answer, so grading, the similarity reward and every reward component see
what they see in the default format. No library parses this format; it is three rules (one
<solution>, one line per suspicious line, some line changed), written here.
"""

from __future__ import annotations

from collections.abc import Mapping

from repogym.patches import PatchError, apply_patch, split_lines, unified_diff
from repogym.search_replace import ANSWER_END, ANSWER_START, FormatError, FormatErrorReason, answer_from_patch

LINES_FORMAT = (
    "Answer with <solution>\nthe suspicious lines as they should read, one per line, in order\n</solution>\n"
)


def spot_order(spots: Mapping[str, tuple[int, ...]], contents: Mapping[str, str]) -> list[tuple[str, int]]:
    """The suspicious lines in the order the window prompt lists them (path, then line number)."""
    order = []
    for path in sorted(spots):
        total = len(split_lines(contents.get(path, "")))
        order.extend((path, number) for number in spots[path] if 1 <= number <= total)
    return order


def parse_lines(text: str, count: int) -> list[str]:
    """The answer's lines (indentation kept); FormatError unless one <solution> holds exactly `count` lines.

    >>> parse_lines("<solution>\\n    return a / b\\n</solution>", 1)
    ['    return a / b']
    >>> parse_lines("<solution>\\nx = 1\\ny = 2\\n</solution>", 1)
    Traceback (most recent call last):
    ...
    repogym.search_replace.FormatError: bad_line_count: the solution holds 2 lines; the prompt lists 1 suspicious line(s)
    """
    for tag in (ANSWER_START, ANSWER_END):
        if text.count(tag) != 1:
            raise FormatError(
                FormatErrorReason.BAD_TAGS, f"{tag} occurs {text.count(tag)} times (expected once)"
            )
    body = text.split(ANSWER_START)[1].split(ANSWER_END)[0]
    body = body[1:] if body.startswith("\n") else body
    body = body[:-1] if body.endswith("\n") else body
    lines = body.split("\n")
    if len(lines) != count:
        raise FormatError(
            FormatErrorReason.BAD_LINE_COUNT,
            f"the solution holds {len(lines)} lines; the prompt lists {count} suspicious line(s)",
        )
    return lines


def apply_lines(
    text: str, spots: Mapping[str, tuple[int, ...]], contents: Mapping[str, str]
) -> dict[str, str]:
    """New text of each file with a suspicious line, every such line replaced by its answer line."""
    order = spot_order(spots, contents)
    if not order:
        raise FormatError(FormatErrorReason.BAD_LINE_COUNT, "the prompt lists no suspicious line to rewrite")
    answer = parse_lines(text, len(order))
    files = {path: split_lines(contents[path]) for path, _ in order}
    for (path, number), line in zip(order, answer, strict=True):
        old = files[path][number - 1]
        files[path][number - 1] = line + _ending(old)
    new_contents = {path: "".join(lines) for path, lines in files.items()}
    if all(new_contents[path] == contents[path] for path in new_contents):
        raise FormatError(FormatErrorReason.SEARCH_EQUALS_REPLACE, "every suspicious line is left as it was")
    return new_contents


def to_search_replace(text: str, spots: Mapping[str, tuple[int, ...]], contents: Mapping[str, str]) -> str:
    """SWE-RL's answer making the same change as the lines answer `text` (FormatError when it is malformed)."""
    new_contents = apply_lines(text, spots, contents)
    originals = {path: contents[path] for path in new_contents}
    try:
        return answer_from_patch(unified_diff(originals, new_contents), originals, context=0)
    except PatchError as exc:
        raise FormatError(
            FormatErrorReason.NO_BLOCKS, f"the rewritten lines cannot be applied as blocks: {exc}"
        ) from None


def lines_answer(patch: str, spots: Mapping[str, tuple[int, ...]], contents: Mapping[str, str]) -> str | None:
    """The gold answer in lines form: None unless `patch` only rewrites suspicious lines, one for one."""
    try:
        new_contents = apply_patch(patch, contents)
    except PatchError:
        return None
    order = spot_order(spots, contents)
    allowed: dict[str, set[int]] = {}
    for path, number in order:
        allowed.setdefault(path, set()).add(number)
    answer = []
    for path, new in new_contents.items():
        old = contents.get(path)
        if old is None or new is None:
            return None
        a, b = split_lines(old), split_lines(new)
        if len(a) != len(b):
            return None  # a line added or removed is not a rewrite
        lines = allowed.get(path, set())
        if any(x != y and i + 1 not in lines for i, (x, y) in enumerate(zip(a, b, strict=True))):
            return None
    for path, number in order:
        new = new_contents.get(path, contents[path])
        line = split_lines(new or "")[number - 1]
        answer.append(line[: len(line) - len(_ending(line))])
    text = f"{ANSWER_START}\n" + "\n".join(answer) + f"\n{ANSWER_END}"
    try:
        apply_lines(text, spots, contents)
    except FormatError:
        return None
    return text


def _ending(line: str) -> str:
    """The line's own end ("\\r\\n", "\\n" or none), which the answer line keeps."""
    return line[len(line.rstrip("\r\n")) :] if line.endswith("\n") else ""
