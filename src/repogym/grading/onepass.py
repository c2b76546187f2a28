"""The candidate, the test patch, the canary and the compile check in one jailed command, checked afterwards.

A grade otherwise starts the sandbox three times before the tests (apply the candidate, check what it
changed on the host, then the test patch with the canary and the compile check); a bare SWE-bench harness
starts it once. Each start costs 30-150 ms on the benchmark machine, a tenth of a short grade. Here nothing
of the candidate runs in that command (git apply, patch, cat, and the compile check with ``python -I -S``),
so its printed markers are the grader's own, and the check of what the candidate changed is made after it:

- every changed path outside the test patch's files is judged by the candidate rules, as before;
- every test patch file must hold exactly what the test patch (and the canary) make of the base commit's
  file; anything else means the candidate touched it, and the grader redoes the grade the slow way in a
  reset episode, whose checks name the fault (the two ways give the same verdict on every input).

Used only where that holds and is cheap: overlayfs episodes (the changes are read from the upper layer), a
test patch of plain text edits (no renames, copies or binary sections), and a candidate that touches no
packaging file (those need the install step between the two patches).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from unidiff import PatchedFile

from repogym.grading.canary import Canary
from repogym.grading.candidate import PristineText, apply_hunks, check_changes
from repogym.grading.parsers.common import shell_join
from repogym.patches import parse_patch
from repogym.sandbox.layerchanges import layer_changes, lookup
from repogym.sandbox.runtime import Episode, touches_packaging


@dataclass(frozen=True)
class OnePass:
    """What the one command did; `fallback` set when the slow way must decide instead."""

    applied_with: str = ""
    apply_failure: str = ""
    planted: bool = False
    fallback: str = ""
    """Why the result cannot be used ('' when it can)."""


def usable(episode: Episode, candidate_paths: list[str], test_patch: str) -> list[PatchedFile] | None:
    """The test patch's sections when the one-pass way applies to this grade, else None."""
    overlay = episode.layer.overlay()
    if overlay is None or overlay.upper is None or not candidate_paths or touches_packaging(candidate_paths):
        return None
    sections = parse_patch(test_patch) if test_patch.strip() else None
    if not sections:
        return None
    for section in sections:
        if section.is_rename or section.is_binary_file or _is_copy(section) or section.is_removed_file:
            return None
    return list(sections)


def run(
    episode: Episode,
    candidate: str,
    test_patch: str,
    canary: Canary | None,
    compile_command: str | None,
) -> OnePass:
    """Apply the candidate (git apply, else patch --fuzz=3), then the test patch and the canary, then the
    compile check, in one jailed command; the inbox is emptied before the tests ever run."""
    nonce = f"repogym-{time.monotonic_ns()}"
    names = {"candidate": f"{nonce}-c.patch", "tests": f"{nonce}-t.patch"}
    candidate_path = episode.put_file(names["candidate"], candidate)
    tests_path = episode.put_file(names["tests"], test_patch)
    planting = ""
    if canary is not None:
        names["canary"] = f"{nonce}.py"
        code = episode.put_file(names["canary"], canary.code)
        target = shell_join([canary.path])
        planting = f"{{ test -f {target} && ! test -L {target} && cat {code} >> {target} && echo {nonce}:planted; }}; "
    script = (
        f"if git apply --whitespace=nowarn {candidate_path}; then echo {nonce}:git; "
        f"elif patch --batch --forward -p1 --fuzz=3 --no-backup-if-mismatch -i {candidate_path}; "
        f"then echo {nonce}:patch; else echo {nonce}:failed; exit 0; fi; "
        f"git apply --whitespace=nowarn {tests_path} || {{ echo {nonce}:tests-failed; exit 0; }}; "
        + planting
        + (f"{{ {compile_command}; }} >/dev/null 2>&1; " if compile_command else "")
        + "true"
    )
    try:
        result = episode.run(script)
    finally:
        for name in names.values():
            (episode.inbox / name).unlink(missing_ok=True)
    said = {line.split(":", 1)[1] for line in result.output.splitlines() if line.startswith(nonce + ":")}
    if not result.ok:
        return OnePass(fallback=f"the command ended with {result.reason.value} ({result.exit_code})")
    if "failed" in said:
        text = " | ".join(line for line in result.output.splitlines()[-8:] if not line.startswith(nonce))
        return OnePass(apply_failure=f"git apply, patch --fuzz=3: {text or 'did not apply'}")
    if "tests-failed" in said:
        return OnePass(fallback="the test patch did not apply over the candidate")
    applied_with = "git apply" if "git" in said else "patch --fuzz=3"
    return OnePass(applied_with=applied_with, planted="planted" in said)


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
    """Each test patch file's bytes after the test patch (and the canary) over the installed tree."""
    expected: dict[str, bytes] = {}
    for section in sections:
        path = section.path
        before = b""
        if not section.is_added_file:
            entry = lookup(path, lowers)
            if entry is None or entry.is_symlink() or not entry.is_file():
                return None
            before = entry.read_bytes()
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
    if canary is not None:
        if canary.path not in expected:
            return None
        expected[canary.path] += canary.code.encode("utf-8")
    return expected


def _no_newline_marker(section: PatchedFile) -> bool:
    return any("No newline at end of file" in str(line) for hunk in section for line in hunk)


def _is_copy(section: PatchedFile) -> bool:
    return any(str(line).startswith(("copy from ", "copy to ")) for line in section.patch_info or ())


def _bytes(path: Path | None) -> bytes | None:
    try:
        return path.read_bytes() if path is not None and not path.is_symlink() else None
    except OSError:
        return None
