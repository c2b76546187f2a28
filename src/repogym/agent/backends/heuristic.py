"""`heuristic:swap`: a non-learned baseline that rewrites a suspicious line by one common operator swap.

A learned pass@1 means little until it stands beside what no learning gets: this policy reads the lines a
window prompt lists as suspicious (`context="window"`), and answers with one of them changed by a single
token swap from a fixed table, ranked as the table is written (comparisons first, then boolean connectives,
arithmetic, boolean constants, off-by-one integers, a dropped `not`), left to right within a rank. It
never reads the task, the tests or any training data; the rank is a prior, not a count.

- Greedy (temperature 0) answers the first candidate: its pass@1 is the "most frequent operator swap".
- Sampled answers draw one candidate uniformly (seeded by the sampling seed and the attempt), so its
  attempts are independent and pass@k reads as it does for a model: the chance that k random swaps hold
  a fix.
- A prompt that shows the SEARCH/REPLACE format gets one block of the changed line (every occurrence of
  that line is replaced, as SEARCH/REPLACE does); otherwise (`answer_format="lines"`) the suspicious lines
  rewritten, one changed.
- A prompt that lists no suspicious line (files context) is refused with `PolicyUnavailable`; a line with
  nothing to swap is answered unchanged, which the env counts as a malformed answer, as it would a
  model's.

Why by hand: no library proposes single-token repairs of one line; Python's `tokenize` finds the tokens
(a line cut from its statement, e.g. an open bracket, still yields the tokens before the cut).
"""

from __future__ import annotations

import io
import random
import re
import tokenize
from dataclasses import dataclass

from repogym.agent.policies import (
    AssistantTurn,
    PolicyConfig,
    PolicyRequest,
    PolicyUnavailable,
    policy_backends,
)
from repogym.errors import ConfigError

#: Token -> its replacements, in rank order (the first table entries are tried first).
SWAPS: tuple[dict[str, tuple[str, ...]], ...] = (
    {
        "==": ("!=",), "!=": ("==",), "<": ("<=", ">=", ">"), "<=": ("<", ">", ">="),
        ">": (">=", "<=", "<"), ">=": (">", "<", "<="), "is": ("is not",), "is not": ("is",),
        "in": ("not in",), "not in": ("in",),
    },
    {"and": ("or",), "or": ("and",)},
    {
        "+": ("-",), "-": ("+",), "*": ("/",), "/": ("*", "//"), "//": ("/", "%"), "%": ("//",),
        "<<": (">>",), ">>": ("<<",), "&": ("|",), "|": ("&",), "^": ("&",), "**": ("*",),
        "+=": ("-=",), "-=": ("+=",), "*=": ("/=",), "/=": ("*=",),
    },
    {"True": ("False",), "False": ("True",)},
)  # fmt: skip
_PAIRS = ("is not", "not in")
#: What a prompt asking for SEARCH/REPLACE blocks shows of their format (the policy layer sits below the env's).
_SEARCH = "<<<<<<< SEARCH"
_SUSPICIOUS = "Suspicious lines:\n"
_LISTED = re.compile(r"^(?:(?P<path>\S.*?):)?(?P<number>\d+): ?(?P<text>.*)$")
_HEADER = re.compile(r"^(?:```python\n)?### (?P<path>.+?) \(lines \d+-\d+\)$", re.MULTILINE)


@dataclass(frozen=True)
class Suspicious:
    """One line a window prompt lists: where it is and what it reads (indentation kept)."""

    path: str
    number: int
    text: str


def listed_lines(prompt: str) -> list[Suspicious]:
    """The suspicious lines of a window prompt, in its order ([] when it lists none).

    >>> prompt = "### pkg/m.py (lines 3-5)\\nx\\n\\nSuspicious lines:\\n4:     return a < b\\n"
    >>> listed_lines(prompt)
    [Suspicious(path='pkg/m.py', number=4, text='    return a < b')]
    """
    if _SUSPICIOUS not in prompt:
        return []
    headers = _HEADER.findall(prompt)
    listing = prompt.rsplit(_SUSPICIOUS, 1)[1].split("\n\n", 1)[0]
    found = []
    for line in listing.splitlines():
        match = _LISTED.match(line)
        if match is None:
            break
        path = match["path"] or (headers[0] if len(set(headers)) == 1 else "")
        found.append(Suspicious(path, int(match["number"]), match["text"]))
    return found


def swaps(line: str) -> list[str]:
    """`line` with one token swapped, every way the table allows, best-ranked first.

    >>> swaps("    if a < b and c:")[:4]
    ['    if a <= b and c:', '    if a >= b and c:', '    if a > b and c:', '    if a < b or c:']
    >>> swaps("    return n + 1")
    ['    return n - 1', '    return n + 2', '    return n + 0', '    return n']
    >>> swaps("for x in items if not x:")[-1], swaps("pass")
    ('for x in items if x:', [])
    """
    tokens = _tokens(line)
    ranked: list[list[str]] = [[] for _ in range(len(SWAPS) + 2)]
    for index, (word, start, end) in enumerate(tokens):
        if word == "in" and any(t[0] == "for" for t in tokens[:index]):
            continue  # `for x in`: `not in` there is a syntax error, not a fix
        for rank, table in enumerate(SWAPS):
            for replacement in table.get(word, ()):
                ranked[rank].append(line[:start] + replacement + line[end:])
        if word.isdigit() and (word == "0" or not word.startswith("0")):
            value = int(word)
            for other in (value + 1, value - 1):
                if other >= 0:
                    ranked[len(SWAPS)].append(line[:start] + str(other) + line[end:])
            before = line[:start].rstrip()
            if word == "1" and before[-1:] in ("+", "-"):
                ranked[len(SWAPS)].append(before[:-1].rstrip() + line[end:])
        if word == "not":
            ranked[len(SWAPS) + 1].append(line[:start] + line[end:].lstrip())
    return list(dict.fromkeys(candidate for rank in ranked for candidate in rank if candidate != line))


def _tokens(line: str) -> list[tuple[str, int, int]]:
    """(text, start column, end column) of each operator, name and number of `line`; `is not` and `not in`
    as one token each."""
    indent = len(line) - len(line.lstrip())
    found: list[tuple[str, int, int]] = []
    readline = io.StringIO(line.strip() + "\n").readline
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type in (tokenize.OP, tokenize.NAME, tokenize.NUMBER) and token.start[0] == 1:
                start, end = indent + token.start[1], indent + token.end[1]
                if found and f"{found[-1][0]} {token.string}" in _PAIRS:
                    found[-1] = (f"{found[-1][0]} {token.string}", found[-1][1], end)  # `is not`, `not in`
                else:
                    found.append((token.string, start, end))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a line cut from its statement: the tokens before the cut are what there is
    return found


class SwapPolicy:
    """Answers a window prompt with one suspicious line changed by one table swap (see the module)."""

    policy_id = "heuristic:swap"

    def act(self, request: PolicyRequest) -> AssistantTurn:
        prompt = next(
            (m.get("content") or "" for m in reversed(request.messages) if m.get("role") == "user"), ""
        )
        lines = listed_lines(prompt)
        if not lines:
            raise PolicyUnavailable(
                "heuristic:swap needs a window prompt that lists suspicious lines (agentless mode with "
                "env option context=window)"
            )
        options = [(i, new) for i, line in enumerate(lines) for new in swaps(line.text)]
        if not options:
            changed, new = 0, lines[0].text
        elif request.sampling.temperature == 0:
            changed, new = options[0]
        else:
            seed = f"{request.sampling.seed}:{request.instance_id}:{request.attempt}"
            changed, new = random.Random(seed).choice(options)
        if _SEARCH not in prompt:  # the prompt asks for the lines rewritten (answer_format=lines)
            body = "\n".join(new if i == changed else line.text for i, line in enumerate(lines))
            return AssistantTurn(text=f"<solution>\n{body}\n</solution>")
        line = lines[changed]
        block = (
            f"```python\n### {line.path}\n<<<<<<< SEARCH\n{line.text}\n=======\n{new}\n>>>>>>> REPLACE\n```"
        )
        think = f"<think>\nline {line.number}: one operator swapped\n</think>"
        return AssistantTurn(text=f"{think}\n<solution>\n{block}\n</solution>")

    def close(self) -> None:
        """Nothing to free."""


@policy_backends.register("heuristic")
def make_heuristic_policy(argument: str, config: PolicyConfig) -> SwapPolicy:
    if argument != "swap":
        raise ConfigError(f"--policy heuristic:{argument}: the heuristic policies are: heuristic:swap")
    return SwapPolicy()
