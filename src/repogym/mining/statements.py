"""Problem statements from commit and PR messages: boilerplate out, and a guard against statements that give the fix away.

`clean_message` turns a commit or PR message into the text a task shows:
GitHub's "Merge pull request #N from ..." line, trailers (Signed-off-by,
Co-authored-by, ...), lines that only reference issues ("Fixes #12"; the
numbers are kept in the task's metadata, not in its text), PR template
comments and checklists are removed.

`leaks_fix(statement, patch)` is the never-reveal guard: the gold patch's
added lines that the statement quotes. It is pure and small so that other
writers of statements (synthetic tasks) can share it.
"""

from __future__ import annotations

import re

_MERGE_LINE = re.compile(
    r"^(Merge pull request #\d+ from \S+|Merge (remote-tracking )?branch '[^']*'( of \S+)?( into \S+)?)\s*$"
)
_TRAILER = re.compile(
    r"^(Signed-off-by|Co-authored-by|Co-Authored-By|Reviewed-by|Acked-by|Tested-by|Reported-by|Suggested-by|"
    r"Helped-by|Cc|Change-Id|Reviewed-on|PR-URL|Approved-by)\s*:\s",
    re.IGNORECASE,
)
_REFERENCE = r"(?:#\d+|[\w.-]+/[\w.-]+#\d+|https?://\S+/(?:issues|pull)/\d+\S*)"
_REFERENCE_ONLY = re.compile(
    rf"^\s*(?:[-*]\s*)?(?:(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|refs?|see|related(?: to)?|part of|follow-?up (?:to|of))\b\s*:?\s*)?"
    rf"{_REFERENCE}(?:\s*(?:,|and|&|;)?\s*{_REFERENCE})*\s*[.;]?\s*$",
    re.IGNORECASE,
)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CHECKLIST = re.compile(r"^\s*[-*] \[[ xX]\] ")
_SQUASH_NUMBER = re.compile(r"\s*\(#\d+\)\s*$")
_WHITESPACE = re.compile(r"\s+")
#: Added lines shorter than this (whitespace collapsed) are too common to count as quoting the fix.
MIN_QUOTED_CHARS = 16


def clean_message(message: str) -> str:
    """A commit or PR message as a problem statement (see the module docstring); ends with one newline.

    >>> print(clean_message('''Merge pull request #42 from dev/fix-x
    ...
    ... Fix x for empty input (#42)
    ...
    ... The parser crashed on "".
    ...
    ... Fixes #41
    ... Signed-off-by: Dev <dev@example.com>
    ... Co-authored-by: Other <o@example.com>'''), end="")
    Fix x for empty input
    <BLANKLINE>
    The parser crashed on "".
    """
    text = _HTML_COMMENT.sub("", message.replace("\r\n", "\n"))
    kept: list[str] = []
    for line in text.split("\n"):
        if _MERGE_LINE.match(line.strip()) or _TRAILER.match(line.strip()):
            continue
        if _REFERENCE_ONLY.match(line) or _CHECKLIST.match(line):
            continue
        kept.append(line.rstrip())
    lines = "\n".join(kept).strip().split("\n")
    if lines:
        lines[0] = _SQUASH_NUMBER.sub("", lines[0])
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return cleaned + "\n" if cleaned else ""


def leaks_fix(statement: str, patch: str) -> list[str]:
    """The lines the gold `patch` adds that `statement` quotes (whitespace-insensitive), in patch order.

    Lines the patch also removes (moved code), and lines under MIN_QUOTED_CHARS
    characters, do not count: quoting them says nothing about the fix.

    >>> patch = "--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n-    return a + b\\n+    return a - b if swap else a + b\\n+    x = 1\\n"
    >>> leaks_fix("Change it to `return a - b if  swap else a + b` please", patch)
    ['return a - b if swap else a + b']
    >>> leaks_fix("return a + b gives the wrong answer", patch)
    []
    """
    added: list[str] = []
    removed: set[str] = set()
    for line in patch.split("\n"):
        if line.startswith("+") and not line.startswith("+++ "):
            added.append(_WHITESPACE.sub(" ", line[1:]).strip())
        elif line.startswith("-") and not line.startswith("--- "):
            removed.add(_WHITESPACE.sub(" ", line[1:]).strip())
    text = _WHITESPACE.sub(" ", statement)
    quoted = [
        line for line in added if len(line) >= MIN_QUOTED_CHARS and line not in removed and line in text
    ]
    return list(dict.fromkeys(quoted))
