"""The candidate, the test patch, the canary, the compile check and the tests in one jailed command, with the
check of what the candidate changed made by the host at a checkpoint inside it, before the tests start.

A grade otherwise starts the sandbox twice or more (apply, check on the host, test patch with the canary and
the compile check, then the tests); a bare SWE-bench harness starts it once, and each start costs 20-150 ms
on the benchmark machine, a tenth of a short grade. Here the command runs in two parts:

1. nothing of the candidate runs (git apply, patch, cat, and the compile check with ``python -I -S``, which
   reads only the candidate's files and so runs beside the test patch), all of it from a script in the
   jail's read-only inbox, with stdin from /dev/null; its printed markers carry a nonce that only that
   script holds, so they are the grader's own;
2. at the checkpoint (`repogym.sandbox.base.Checkpoint`) the command waits while the host reads its markers,
   empties the inbox (the patches, the canary's code, the script), checks what the candidate changed and
   reads the compile report; only on the host's "go" does it `exec` the test command, with stdin from
   /dev/null. Nothing the tests print or write can reach what the host decided before they started. What
   the tests can see of the command itself (its line, in /proc/1/cmdline) is the checkpoint's marker and the
   test command: no patch, no canary, not part 1's nonce (tests/grading/test_hostile_one_command.py).

The check at the checkpoint:

- every changed path outside the test patch's files and the canary's file is judged by the candidate rules,
  as before (the files that hold the task's required tests among the protected ones);
- every test patch file, and the canary's file, must hold exactly what the test patch and the canary make of
  the base commit's file (a synthetic task has no test patch: its canary's file must be the base commit's
  with the canary appended); anything else means the candidate touched it, and the grader redoes the grade
  the slow way in a reset episode, whose checks name the fault (the two ways give the same verdict on every
  input).

Used only where that holds and is cheap: overlayfs episodes (the changes are read from the upper layer), a
test patch of plain text edits or none (no renames, copies or binary sections), and a candidate that touches
no packaging file (those need the install step between the two patches).
"""

from __future__ import annotations

import dataclasses
import secrets
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from unidiff import PatchedFile

from repogym.grading.canary import Canary
from repogym.grading.candidate import PristineText, apply_hunks, check_changes
from repogym.grading.compile_check import CompileStep, compile_report
from repogym.grading.parsers.common import shell_join
from repogym.grading.runner import TestCommand
from repogym.patches import changed_paths, parse_patch
from repogym.sandbox.base import Checkpoint, ExecResult
from repogym.sandbox.layerchanges import layer_changes, lookup
from repogym.sandbox.runtime import Episode, touches_packaging


@dataclass(frozen=True)
class Rules:
    """What the check at the checkpoint holds the candidate to (see grade.py's `_prepare`)."""

    test_paths: list[str]
    pristine_text: PristineText
    command_paths: list[str]


@dataclass(frozen=True)
class OnePass:
    """What the one command did; `fallback` set when the slow way must decide instead."""

    applied_with: str = ""
    apply_failure: str = ""
    planted: bool = False
    fallback: str = ""
    """Why the result cannot be used ('' when it can)."""
    landed: str = ""
    """What the candidate changed that it may not ('' when nothing): the tests did not run."""
    compile_errors: tuple[str, ...] = ()
    tests: ExecResult | None = None
    """The test command's result (its output only), when the check let it start."""
    tests_s: float = 0.0
    """Seconds from the host's "go" to the command's end."""


def usable(episode: Episode, candidate: str, test_patch: str) -> list[PatchedFile] | None:
    """The test patch's sections when the one-pass way applies to this grade, else None. An empty candidate
    (the empty patch, an agent that changed nothing) goes this way too, and so does an empty test patch
    (a synthetic task: no sections)."""
    overlay = episode.layer.overlay()
    if overlay is None or overlay.upper is None:
        return None
    if candidate.strip():
        paths = changed_paths(candidate)
        if not paths or touches_packaging(paths):
            return None
    if not test_patch.strip():
        return []  # a synthetic task: the canary alone is added to the tests
    sections = parse_patch(test_patch)
    if not sections:
        return None
    for section in sections:
        if section.is_rename or section.is_binary_file or _is_copy(section) or section.is_removed_file:
            return None
    return list(sections)


def run(
    episode: Episode,
    candidate: str,
    sections: list[PatchedFile],
    test_patch: str,
    canary: Canary | None,
    compiling: CompileStep | None,
    tests: TestCommand,
    rules: Rules,
) -> OnePass:
    """Apply the candidate (git apply, else patch --fuzz=3), the test patch and the canary, compile, then,
    when the check at the checkpoint passes, run `tests`: one jailed command."""
    nonce, marker = f"repogym-{secrets.token_hex(12)}", f"repogym-{secrets.token_hex(12)}"
    inbox = [f"{nonce}-c.patch", f"{nonce}-t.patch", f"{nonce}.sh"]
    script = _applying_script(episode, nonce, candidate, test_patch, canary, compiling, inbox)
    if canary is not None:
        inbox.append(f"{nonce}.py")
    if compiling is not None:
        inbox.append(PurePosixPath(compiling.script).name)
    done: OnePass | None = None
    checked_at = 0.0

    def decide(before: str) -> str:
        nonlocal done, checked_at
        for name in inbox:  # nothing the tests run may read the patches, the canary's code or the script
            (episode.inbox / name).unlink(missing_ok=True)
        done = _judge_applying(episode, nonce, before, sections, canary, compiling, rules)
        checked_at = time.perf_counter()
        return "go\n" if _goes(done) else "stop\n"

    command = (
        f"sh {script} </dev/null; printf '\\n%s\\n' {marker}; "
        f'read -r answer && [ "$answer" = go ] || exit 0; exec /bin/sh -c {shlex.quote(tests.command)} </dev/null'
    )
    try:
        result = episode.run(
            command, limits=tests.limits, binds=tests.binds, checkpoint=Checkpoint(marker, decide)
        )
    finally:
        for name in inbox:
            (episode.inbox / name).unlink(missing_ok=True)
    if done is None:
        why = f"the command ended with {result.reason.value} ({result.exit_code}) before its check"
        return OnePass(fallback=why)
    if not _goes(done):
        return done
    return dataclasses.replace(done, tests=result, tests_s=time.perf_counter() - checked_at)


def _goes(done: OnePass) -> bool:
    return not (done.apply_failure or done.fallback or done.landed)


def _applying_script(
    episode: Episode,
    nonce: str,
    candidate: str,
    test_patch: str,
    canary: Canary | None,
    compiling: CompileStep | None,
    inbox: list[str],
) -> str:
    """Part 1 of the command as a script in the inbox; returns its path in the jail."""
    applying_tests = ""
    if test_patch.strip():
        tests_path = episode.put_file(inbox[1], test_patch)
        applying_tests = (
            f"git apply --whitespace=nowarn {tests_path} || {{ echo {nonce}:tests-failed; wait; exit 0; }}\n"
        )
    planting = ""
    if canary is not None:
        code = episode.put_file(f"{nonce}.py", canary.code)
        target = shell_join([canary.path])
        writes = ">" if canary.whole_file else ">>"
        planting = f"{{ test -f {target} && ! test -L {target} && cat {code} {writes} {target} && echo {nonce}:planted; }}\n"
    # The compile check reads only the candidate's files, never the test patch's (compile_step leaves them
    # out), so it runs beside the test patch and the canary, which write only those.
    applying = ""
    if candidate.strip():
        candidate_path = episode.put_file(inbox[0], candidate)
        applying = (
            f"if git apply --whitespace=nowarn {candidate_path}; then echo {nonce}:git\n"
            f"elif patch --batch --forward -p1 --fuzz=3 --no-backup-if-mismatch -i {candidate_path}; "
            f"then echo {nonce}:patch\nelse echo {nonce}:failed; exit 0; fi\n"
        )
    script = (
        applying
        + (f"{{ {compiling.command}; }} >/dev/null 2>&1 &\n" if compiling is not None else "")
        + applying_tests
        + planting
        + f"wait\necho {nonce}:done\n"
    )
    return episode.put_file(inbox[2], script)


def _judge_applying(
    episode: Episode,
    nonce: str,
    before: str,
    sections: list[PatchedFile],
    canary: Canary | None,
    compiling: CompileStep | None,
    rules: Rules,
) -> OnePass:
    """At the checkpoint: what part 1 did, read from its markers, and the check of what it changed."""
    lines = before.splitlines()
    said = {line.split(":", 1)[1] for line in lines if line.startswith(nonce + ":")}
    if "failed" in said:
        text = " | ".join(line for line in lines[-8:] if not line.startswith(nonce))
        return OnePass(apply_failure=f"git apply, patch --fuzz=3: {text or 'did not apply'}")
    if "tests-failed" in said:
        return OnePass(fallback="the test patch did not apply over the candidate")
    if "done" not in said:
        return OnePass(fallback="the applying part of the command did not finish")
    planted = "planted" in said
    landed, fallback = check(
        episode, sections, canary, planted, rules.test_paths, rules.pristine_text, rules.command_paths
    )
    if fallback or landed:
        return OnePass(fallback=fallback, landed=landed)
    errors = compile_report(episode, compiling, "the one-pass command ended first")
    applied_with = "git apply" if "git" in said else "patch --fuzz=3" if "patch" in said else ""
    return OnePass(applied_with=applied_with, planted=planted, compile_errors=errors)


def check(
    episode: Episode,
    sections: list[PatchedFile],
    canary: Canary | None,
    planted: bool,
    test_paths: list[str],
    pristine_text: PristineText,
    command_paths: list[str],
) -> tuple[str, str]:
    """(what breaks the candidate rules, why the slow way must decide): both '' when the grade goes on."""
    overlay = episode.layer.overlay()
    assert overlay is not None and overlay.upper is not None
    changes = layer_changes(overlay.upper, overlay.lowers)
    if changes is None:
        return "", "the episode's layer cannot be read"
    expected = _expected_test_files(sections, overlay.lowers, canary if planted else None)
    if expected is None:
        return "", "the test patch's result cannot be rebuilt exactly"
    for change in changes:
        if change.path in expected and (change.is_link or _bytes(change.host_path) != expected[change.path]):
            return "", f"{change.path} is not what the test patch makes of it"
    changed = {change.path for change in changes}
    if any(path not in changed for path in expected):
        return "", "a test patch file was left as it was"
    others = [change for change in changes if change.path not in expected]
    return check_changes(others, test_paths, pristine_text, command_paths), ""


def _expected_test_files(
    sections: list[PatchedFile], lowers: tuple[Path, ...], canary: Canary | None
) -> dict[str, bytes] | None:
    """Each test patch file's bytes after the test patch (and the canary's file's, with the canary: a file of
    the test patch, or of the base commit's tree when it holds a test the test patch does not touch) over the
    installed tree."""
    expected: dict[str, bytes] = {}
    for section in sections:
        path = section.path
        before = b"" if section.is_added_file else _installed(path, lowers)
        if before is None:
            return None
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if "\r" in text:
            return None  # apply_hunks writes '\n' line ends
        after = apply_hunks(text, section)
        if after is None or (text and not text.endswith("\n")) or _no_newline_marker(section):
            return None
        expected[path] = after.encode("utf-8")
    if canary is not None and canary.whole_file:
        expected[canary.path] = canary.code.encode("utf-8")
    elif canary is not None:
        before = expected[canary.path] if canary.path in expected else _installed(canary.path, lowers)
        if before is None:
            return None
        expected[canary.path] = before + canary.code.encode("utf-8")
    return expected


def texts_after_test_patch(test_patch: str, lowers: tuple[Path, ...]) -> Callable[[str], str | None]:
    """path -> the file's text once the test patch is applied over the installed tree (None where that cannot be
    known exactly): what the canary is copied from (canary_copy.py)."""
    sections = list(parse_patch(test_patch) or []) if test_patch.strip() else []
    patched = {section.path for section in sections}
    expected = _expected_test_files(sections, lowers, None) or {}

    def text_of(path: str) -> str | None:
        data = expected.get(path) if path in patched else _installed(path, lowers)
        try:
            return data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            return None

    return text_of


def _installed(path: str, lowers: tuple[Path, ...]) -> bytes | None:
    """A regular file's bytes in the episode's lower layers (the installed base commit), else None."""
    entry = lookup(path, lowers)
    if entry is None or entry.is_symlink() or not entry.is_file():
        return None
    return entry.read_bytes()


def _no_newline_marker(section: PatchedFile) -> bool:
    return any("No newline at end of file" in str(line) for hunk in section for line in hunk)


def _is_copy(section: PatchedFile) -> bool:
    return any(str(line).startswith(("copy from ", "copy to ")) for line in section.patch_info or ())


def _bytes(path: Path | None) -> bytes | None:
    try:
        return path.read_bytes() if path is not None and not path.is_symlink() else None
    except OSError:
        return None
