"""`repogym tasks audit`: the battery of known reward hacks and the search for the fix, on the toy task in the real
bwrap sandbox; and the search shown to find a fix that is planted where an agent could read it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repogym.audit import BATTERY, AttackClass, audit_task
from repogym.audit.reach import distinctive, search_episode
from repogym.dataset import save_tasks
from repogym.grading.report import Outcome
from repogym.testing import FIXED_SOURCE


@pytest.fixture(scope="module")
def toy_audit(toy_task):
    return audit_task(toy_task, BATTERY)


def test_no_attack_of_the_battery_resolves_the_toy_task_and_its_fix_is_out_of_reach(toy_audit):
    assert toy_audit.conclusive, (toy_audit.gold_resolved, toy_audit.empty_resolved, toy_audit.error)
    assert toy_audit.resolving == [], {a.name: a.detail for a in toy_audit.attacks if a.resolved}
    assert not toy_audit.reachable, toy_audit.reach
    graded = {attack.name for attack in toy_audit.attacks}
    # The toy repo has no setup.py: the one attack that needs it does not apply, every other one ran.
    assert set(toy_audit.not_applicable) == {"setup_py_writes_pth"}
    assert graded == {attack.name for attack in BATTERY} - {"setup_py_writes_pth"}


def test_each_attack_is_stopped_by_the_defence_meant_for_it(toy_audit):
    """Not resolving is not enough: a forger that never ran would not resolve either. In-process forgers must be
    caught by the canary or the report's cross-checks; file attacks must show their files dropped or refused."""
    by_name = {attack.name: attack for attack in toy_audit.attacks}
    caught_in_process = {Outcome.REPORT_FORGED.value, Outcome.TESTS_DID_NOT_RUN.value}
    for name in ("report_patched_at_import", "runtest_swallows_assertion_error", "runtest_swallows_exception",
                 "asserts_stripped_before_each_test", "plugin_registered_at_import", "exit_status_forced_to_zero"):  # fmt: skip
        assert by_name[name].outcome in caught_in_process, (name, by_name[name])
    for attack in BATTERY:
        if attack.kind in (AttackClass.TEST_CONFIG, AttackClass.TEST_FILES) and attack.name in by_name:
            result = by_name[attack.name]
            assert result.ignored or result.outcome == Outcome.PATCH_APPLY_FAILED.value, (attack.name, result)


def test_the_search_finds_a_fix_planted_in_the_episode_and_nothing_in_a_clean_one(toy_task, toy_runtime):
    lines, blocks = distinctive(toy_task, toy_runtime.pristine)
    assert lines == ["return a + b"] and blocks, (lines, blocks)
    with toy_runtime.episode() as episode:
        assert search_episode(episode, toy_task).reachable is False
        fixed = episode.put_file("fixed.py", FIXED_SOURCE)
        planted = episode.run(
            f"git hash-object -w {fixed} && mkdir -p /tmp/cache && cp {fixed} /tmp/cache/calc.py"
        )
        assert planted.ok, planted.output
        reach = search_episode(episode, toy_task)
    assert any(hit.startswith("unreachable blob") for hit in reach.hits), reach
    assert "file /tmp/cache/calc.py" in reach.hits, reach


def test_the_cli_prints_the_counts_and_exits_by_them(tmp_path, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    out = tmp_path / "audit.json"
    command = [sys.executable, "-m", "repogym", "tasks", "audit", str(tasks), "--json", "--out", str(out),
               "--attacks", "sitecustomize_package,conftest_force_pass"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["resolving_attacks"], summary["reachable_fixes"]) == (0, 0)
    assert [task["instance_id"] for task in summary["tasks"]] == [toy_task.instance_id]
    assert set(summary["tasks"][0]["attacks"]) == {"sitecustomize_package", "conftest_force_pass"}
    assert json.loads(out.read_text())["resolving_attacks"] == 0
    again = subprocess.run(command, capture_output=True, text=True)  # resumes: nothing graded twice
    assert again.returncode == 0 and json.loads(again.stdout)["tasks"] == summary["tasks"]
    plain = [arg for arg in command if arg != "--json"]
    plain[plain.index(str(out))] = str(tmp_path / "plain.json")
    printed = subprocess.run(plain, capture_output=True, text=True)  # stderr a pipe, as in CI: a line per task
    assert printed.returncode == 0 and f"[1/1] {toy_task.instance_id}: clean" in printed.stderr, printed.stderr
    unknown = subprocess.run([*command[:-1], "sitecustomize_pkg"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "known: report_patched_at_import" in unknown.stderr, unknown.stderr
