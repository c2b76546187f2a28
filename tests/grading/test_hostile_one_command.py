"""Attacks on the one jailed command that applies a grade's patches and then runs its tests (grading/onepass.py):
code under test runs in the same command as the grader's own steps, after the host's check at the
checkpoint, and tries to reach what those steps left behind or to change what the host read from them.
Each runs through the real bwrap sandbox on the toy task and is named after its attack.
"""

from __future__ import annotations

import pytest

from repogym.grading.grade import grade_in_episode
from repogym.grading.report import Outcome, TestStatus
from repogym.sandbox.bwrap import is_root
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, toy_patch

from ..support.patches import new_file

pytestmark = pytest.mark.skipif(not is_root(), reason="the one-command way needs overlayfs episodes (root)")

ADD_TEST = "tests/test_calc.py::test_add"

# Looks for the canary's name (its `def NAME(*args, **kwargs)` line) in every place the one command could
# leave it for the tests: the jail's inbox (the patches, the canary's code, the applying script) and the
# command lines of every process in the jail (pid 1 is bwrap, whose argv holds the whole command). If it
# finds one, it forges the report after pytest wrote it: every failure a pass, except the canary's.
_CANARY_HUNTER = r"""
import atexit as _atexit, json as _json, os as _os, re as _re
_NAME = _re.compile(r"def (test_\w+)\(\*args, \*\*kwargs\)")
_FOUND, _SEEN = [], []
for _dir, _names in (("/opt/repogym/in", None), ("/proc", "cmdline")):
    for _entry in sorted(_os.listdir(_dir)):
        _path = _os.path.join(_dir, _entry, _names) if _names else _os.path.join(_dir, _entry)
        try:
            _text = open(_path, "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        _SEEN.append(_path)
        _FOUND += _NAME.findall(_text)
open("/tmp/canary-hunt", "w").write(_json.dumps({"found": sorted(set(_FOUND)), "seen": _SEEN}))

def _forge():
    _out = "/opt/repogym/out"
    for _report in [_os.path.join(_out, n) for n in _os.listdir(_out) if n.startswith("report-")]:
        _records = [_json.loads(line) for line in open(_report)]
        for _record in _records:
            if _record.get("event") == "test" and not _record["nodeid"].endswith(tuple(_FOUND)):
                _record["outcome"] = "passed"
            if _record.get("event") == "sessionfinish":
                _record["exitstatus"] = 1
        open(_report, "w").write("".join(_json.dumps(r) + "\n" for r in _records))

if _FOUND:
    _atexit.register(_forge)
"""

# Prints the grader's markers back: every `repogym-<hex>` token of the jail's command lines, on a line of
# its own (the checkpoint's form) and with each of the one-pass script's marker words.
_MARKER_REPLAY = r"""
import os as _os, re as _re, sys as _sys
_TOKENS = set()
for _pid in [p for p in _os.listdir("/proc") if p.isdigit()]:
    try:
        _TOKENS.update(_re.findall(r"repogym-[0-9a-f]{16,}", open("/proc/%s/cmdline" % _pid).read()))
    except OSError:
        pass
for _token in sorted(_TOKENS):
    for _word in ("failed", "tests-failed", "patch", "done"):
        _sys.stdout.write("\n%s\n%s:%s\n" % (_token, _token, _word))
_sys.stdout.flush()
open("/tmp/marker-replay", "w").write(str(len(_TOKENS)))
"""

# Rewrites the compile check's report (compile-*.py.out in the out folder) to say "no errors".
_COMPILE_FORGER = r"""
import os as _os
for _name in _os.listdir("/opt/repogym/out"):
    if _name.startswith("compile-") and _name.endswith(".out"):
        open(_os.path.join("/opt/repogym/out", _name), "w").write("[]")
"""


@pytest.fixture
def grading_episode(toy_runtime, monkeypatch):
    """A grading episode, and the commands its sandbox ran (each grade here must be one: the one command)."""
    commands: list[str] = []
    run = toy_runtime.sandbox.run
    monkeypatch.setattr(
        toy_runtime.sandbox, "run", lambda command, *a, **k: commands.append(command) or run(command, *a, **k)
    )
    with toy_runtime.episode(readonly_git=True) as episode:
        yield episode, commands


def test_grading_code_under_test_hunts_the_canary_in_what_its_own_command_left(toy_task, grading_episode):
    """The inbox is emptied at the checkpoint, and the command line holds no patch or canary text: a forger
    that would spare the canary finds none to spare, so it forges nothing and the bug stays unresolved."""
    patch = toy_patch(toy_task, "src/calc/__init__.py", BUGGY_SOURCE + _CANARY_HUNTER)
    episode, commands = grading_episode
    result = grade_in_episode(toy_task, patch, episode)
    assert len(commands) == 1, commands
    hunt = episode.run("cat /tmp/canary-hunt").output
    assert '"found": []' in hunt and "/proc/1/cmdline" in hunt, hunt  # it ran, and looked at pid 1
    assert "/opt/repogym/in/" not in hunt, hunt  # nothing was left in the inbox
    assert not result.resolved and result.fail_to_pass[ADD_TEST] is TestStatus.FAILED, result.detail


def test_grading_code_under_test_replays_the_one_command_markers(toy_task, grading_episode):
    """The host reads the one-pass markers only from the output before the checkpoint: markers printed by the
    tests (the tokens are in /proc's command lines) change nothing, and the gold patch still resolves."""
    patch = toy_patch(toy_task, "src/calc/__init__.py", FIXED_SOURCE + _MARKER_REPLAY)
    episode, commands = grading_episode
    result = grade_in_episode(toy_task, patch, episode)
    assert len(commands) == 1, commands
    replayed = episode.run("cat /tmp/marker-replay").output
    assert replayed.strip() not in ("", "0"), replayed  # it found the command's tokens and printed them
    assert result.outcome is Outcome.RESOLVED, result.detail
    assert result.patch_applied_with == "git apply"


def test_grading_code_under_test_rewrites_the_compile_report_of_its_own_command(toy_task, grading_episode):
    """The compile check's report is read at the checkpoint, before the tests can write the out folder."""
    patch = toy_patch(toy_task, "src/calc/__init__.py", FIXED_SOURCE + _COMPILE_FORGER)
    patch += new_file("src/calc/broken.py", "def oops(:\n")
    episode, commands = grading_episode
    result = grade_in_episode(toy_task, patch, episode)
    assert len(commands) == 1, commands
    assert any("broken.py" in error for error in result.compile_errors), result.compile_errors
    forged = episode.run("cat /opt/repogym/out/compile-*.out").output
    assert forged.strip() == "[]", forged  # the forger did rewrite it, after the host had read it


def _symlink(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


def test_grading_candidate_patch_aimed_at_the_inbox_and_out_folders_writes_nothing_there(
    toy_task, toy_runtime
):
    """Part 1 of the command applies the candidate next to what part 2 reads: the script in the inbox and
    the out folder the report goes to. A patch that reaches for them (a path out of the tree, a link it adds
    and then writes through) lands nothing there; the bug it leaves stays unresolved."""
    buggy = toy_patch(toy_task, "src/calc/__init__.py", BUGGY_SOURCE + "\n# still wrong\n")
    reaches = {
        "a path out of the tree": new_file("../opt/repogym/in/evil.sh", "echo pwned"),
        "a link to the out folder": _symlink("src/calc/out", "/opt/repogym/out")
        + new_file("src/calc/out/report-evil.jsonl", "{}"),
        "a link to the inbox": _symlink("src/calc/inbox", "/opt/repogym/in")
        + new_file("src/calc/inbox/evil.sh", "echo pwned"),
    }
    for how, reach in reaches.items():
        with toy_runtime.episode(readonly_git=True) as episode:
            result = grade_in_episode(toy_task, buggy + reach, episode)
            print(how, result.outcome, result.detail[:200])
            assert not result.resolved, (how, result.detail)
            landed = episode.run("ls -a /opt/repogym/in /opt/repogym/out").output
            assert "evil" not in landed and not list(episode.layer.out.glob("*evil*")), (how, landed)
