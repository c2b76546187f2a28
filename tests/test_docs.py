"""The repository's text holds no one machine's paths or working names, and docs/benchmarks.md stays a reference.

What is scanned: every file `git ls-files` lists that is text (a file with a NUL byte in its first 8 KiB, or
not UTF-8, is binary and skipped). This file is skipped too: it names the patterns in order to forbid them.

Machine paths, forbidden in every text file: ``/work/...``, ``/root/...``, ``/home/NAME``, ``/Users/NAME`` (the
work and home folders of the machine a run was made on), ``/tmp/pytest-of-NAME`` and ``/tmp/tmpXXXXXXXX``
(folders that pytest and `tempfile` made for one run). A match counts only where a path starts: not after a
letter, digit, ``.``, ``_``, ``-``, ``/`` or ``~``, so ``src/work/x`` or ``/proc/1/root/`` are not hits.
Allowed: the jail's paths that the product itself uses (``/opt/repogym/...``, ``/testbed``, the jail's own
``/tmp`` in commands run inside it) and generic examples in code (``/tmp/tiny`` in a CLI help text). In
documentation (``*.md``) any ``/tmp/...`` path is forbidden as well: there it is either the leftover of
someone's run or a command a reader copies into a shared folder; write it relative (``tiny-model``) or as a
placeholder (``OUT``, ``WORK``, ``REPOS``). A hostile test that names a host path because it tries to read
it is listed in DELIBERATE with that path; nothing else is.

Working names, forbidden in every text file: branch names of the form ``h-NAME``, "red team" rounds, "Nth
stop"; in documentation also "lead", "helper(s)" and "session(s)". Issue numbers and commit hashes are fine:
a user can look them up.

docs/benchmarks.md: under 600 lines; every "## " section but "How to read this file" has lines starting
"Command:", "Machine:", "Commit:" (holding a commit hash) and "Date:" (holding a YYYY-MM-DD date); every
benchmark script in bench/ (a ``.py`` file not starting with ``_``) is named in a section's heading.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SELF = "tests/test_docs.py"
BENCHMARKS = "docs/benchmarks.md"
MAX_BENCHMARK_LINES = 600
NOT_A_BENCHMARK = {"How to read this file"}
FIELDS = {
    "Command:": re.compile(r"^Command:"),
    "Machine:": re.compile(r"^Machine:"),
    "Commit: with a commit hash": re.compile(r"^Commit:.*\b[0-9a-f]{7,40}\b"),
    "Date: with a YYYY-MM-DD date": re.compile(r"^Date:.*\b\d{4}-\d{2}-\d{2}\b"),
}

_PATH_START = r"(?<![\w.~/-])"
_REST = r"[^\s`'\")]*"  # the rest of the path, for the message
MACHINE_PATH = re.compile(
    _PATH_START
    + r"(?:/work/|/root/|/home/\w|/Users/\w|/tmp/pytest-of-|/tmp/tmp[a-z0-9_]{8}(?![\w.-]))"
    + _REST
)
DOC_TMP_PATH = re.compile(_PATH_START + r"/tmp/[^\s`'\")]+")
WORKING_NAME = re.compile(
    r"(?<![\w-])h-[a-z]+\d*(?![\w-])|\bred team\b"
    r"|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)) stop\b",
    re.IGNORECASE,
)
DOC_WORKING_NAME = re.compile(r"\b(?:lead|helpers?|sessions?)\b", re.IGNORECASE)

# Hostile tests that name a host path on purpose: the attack is reading it from the jail.
DELIBERATE = {
    ("tests/sandbox/test_hostile_sandbox.py", "/root/.bash_history"),
}
# TEMPORARY: hits in files other work owns right now; each is to be fixed there and its line removed here.
TEMPORARY_ALLOWLIST: set[tuple[str, str]] = set()


def tracked_text_files() -> dict[str, str]:
    """Every tracked text file's content by its path relative to the repository root (binary ones left out)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "ls-files", "-z"], capture_output=True, check=True
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout ({error}): nothing lists the tracked files")
    texts = {}
    for name in filter(None, listed.split("\0")):
        path = REPO_ROOT / name
        if name == SELF or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            texts[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return texts


def text_problems(name: str, text: str) -> list[str]:
    """Machine paths and working names in one file, as 'file:line: what' lines."""
    is_doc = name.endswith(".md")
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        hits = [(m.group(0), "a machine's path") for m in MACHINE_PATH.finditer(line)]
        hits += [(m.group(0), "a working name") for m in WORKING_NAME.finditer(line)]
        if is_doc:
            hits += [(m.group(0), "a /tmp path in documentation") for m in DOC_TMP_PATH.finditer(line)]
            hits += [(m.group(0), "a working name") for m in DOC_WORKING_NAME.finditer(line)]
        for found, what in hits:
            if not _allowed(name, found):
                problems.append(f"{name}:{number}: {what}, {found!r}")
    return problems


def _allowed(name: str, found: str) -> bool:
    return any(
        name == file and found.lower().startswith(prefix.lower())
        for file, prefix in DELIBERATE | TEMPORARY_ALLOWLIST
    )


def benchmark_problems(text: str, bench_scripts: list[str]) -> list[str]:
    """What docs/benchmarks.md lacks: its length, each section's fields, a section per bench script."""
    lines = text.splitlines()
    problems = []
    if len(lines) >= MAX_BENCHMARK_LINES:
        problems.append(
            f"{len(lines)} lines, the limit is {MAX_BENCHMARK_LINES - 1}: move history to docs/CHANGELOG.md"
        )
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    headings = [section.splitlines()[0] for section in sections]
    for heading, section in zip(headings, sections, strict=True):
        if heading in NOT_A_BENCHMARK:
            continue
        body = section.splitlines()
        missing = [field for field, pattern in FIELDS.items() if not any(pattern.search(ln) for ln in body)]
        if missing:
            problems.append(f"section '## {heading}' lacks a line starting " + ", ".join(missing))
    for script in bench_scripts:
        if not any(f"bench/{script}" in heading for heading in headings):
            problems.append(f"no section's heading names bench/{script}")
    return problems


def bench_scripts() -> list[str]:
    return sorted(p.name for p in (REPO_ROOT / "bench").glob("*.py") if not p.name.startswith("_"))


def test_no_tracked_file_holds_a_machine_path_or_a_working_name() -> None:
    problems = [
        problem for name, text in tracked_text_files().items() for problem in text_problems(name, text)
    ]
    assert not problems, "\n".join(problems)


def test_allowlisted_hits_still_exist() -> None:
    """An allowlist entry whose hit is gone must go too, or it would excuse the next hit in that file."""
    texts = tracked_text_files()
    stale = sorted(
        f"{file}: {prefix!r}"
        for file, prefix in DELIBERATE | TEMPORARY_ALLOWLIST
        if prefix.lower() not in texts.get(file, "").lower()
    )
    assert not stale, "remove these from the allowlists in tests/test_docs.py:\n" + "\n".join(stale)


def test_benchmarks_is_short_and_every_figure_has_its_command_machine_commit_and_date() -> None:
    text = (REPO_ROOT / BENCHMARKS).read_text()
    problems = benchmark_problems(text, bench_scripts())
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_they_are_for() -> None:
    """The rules above, each shown failing on a line that breaks it and passing on the allowed forms."""
    bad_lines = {
        "docs/x.md": ["cd /work/coord/run", "see /tmp/pytest-of-root/p0", "OUT=/tmp/lead-qs", "by the lead"],
        "src/x.py": [
            "# made in /home/alice/src",
            "path = '/tmp/tmpab12cd_9/x'",
            "branch h-synth3",
            "red team",
        ],
    }
    for name, lines in bad_lines.items():
        for line in lines:
            assert text_problems(name, line), (name, line)
    good_lines = {
        "docs/x.md": ["binds `/opt/repogym/plugins` and `/testbed`", "REPOS/flask", "src/repogym/work/x"],
        "src/x.py": [
            "episode.run('cat /tmp/answer')",
            "Example: repogym serve /tmp/tiny",
            "ls /proc/1/root/",
        ],
    }
    for name, lines in good_lines.items():
        for line in lines:
            assert not text_problems(name, line), (name, line)
    section = "## A — `bench/bench_a.py`\n\n**1.2x.**\n\nCommand: `x`\\\nMachine: m\\\nCommit: 0123abc\\\nDate: 2026-12-01\n"
    assert benchmark_problems(section, ["bench_a.py"]) == []
    assert benchmark_problems(section.replace("Commit: 0123abc", "Commit: unknown"), ["bench_a.py"])
    assert benchmark_problems(section.replace("Command:", "Run:"), ["bench_a.py"])
    assert benchmark_problems(section, ["bench_a.py", "bench_b.py"])
    assert benchmark_problems(section + "\n" * MAX_BENCHMARK_LINES, ["bench_a.py"])
