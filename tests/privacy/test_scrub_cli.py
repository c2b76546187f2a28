"""`repogym scrub` end to end, as a user runs it: real repositories, a real process, every output byte checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from repogym.dataset import load_tasks, save_tasks
from repogym.task import Task

from ..support.privacy import AWS_KEY, GPL3, MIT, applies, assert_absent, diff_of, init_repo


def _repogym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from repogym.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _tasks(tmp_path: Path) -> tuple[Path, Path]:
    mit_repo, mit_base = init_repo(tmp_path / "billing", {"LICENSE": MIT, "billing.py": "RATE = 1\n"})
    gpl_repo, gpl_base = init_repo(tmp_path / "gplib", {"COPYING": GPL3, "lib.py": "X = 1\n"})
    fix = diff_of(mit_repo, {"billing.py": "RATE = 2\n"})
    leaky = diff_of(mit_repo, {"billing.py": f'RATE = 2\nAWS_ACCESS_KEY_ID = "{AWS_KEY}"\n'})

    def task(instance_id: str, repo: Path, base: str, patch: str, statement: str) -> Task:
        return Task(instance_id=instance_id, repo=f"corp/{repo.name}", base_commit=base, patch=patch,
                    problem_statement=statement, repo_source=str(repo))  # fmt: skip

    tasks = [
        task("billing-1", mit_repo, mit_base, fix, "Rate is wrong."),
        task("billing-2", mit_repo, mit_base, leaky, "Rate is wrong again."),
        task("billing-3", mit_repo, mit_base, fix, "Reported by jane.doe@corp-mail.com from 10.1.2.3."),
        task("gplib-1", gpl_repo, gpl_base, diff_of(gpl_repo, {"lib.py": "X = 2\n"}), "X is wrong."),
    ]
    tasks_file = tmp_path / "tasks.jsonl"
    save_tasks(tasks, tasks_file)
    return tasks_file, mit_repo


def test_scrub_drops_secret_and_gpl_tasks_and_never_writes_the_secret(tmp_path):
    tasks_file, _ = _tasks(tmp_path)
    out, report = tmp_path / "clean.jsonl", tmp_path / "scrub.json"

    run = _repogym("scrub", str(tasks_file), "--out", str(out), "--report", str(report))

    assert run.returncode == 0, run.stderr
    assert [t.instance_id for t in load_tasks(out)] == ["billing-1", "billing-3"]
    data = json.loads(report.read_text())
    assert (data["tasks_in"], data["kept"], data["dropped"]) == (4, 2, 2)
    assert data["dropped_by_reason"] == {"license_not_allowed": 1, "secret": 1}
    reasons = {d["instance_id"]: d["reasons"][0]["code"] for d in data["dropped_tasks"]}
    assert reasons == {"billing-2": "secret", "gplib-1": "license_not_allowed"}
    secret_finding = next(f for f in data["findings"] if f["category"] == "secret")
    assert secret_finding == {
        "instance_id": "billing-2", "field": "patch", "line": 8, "category": "secret", "type": "AWS Access Key",
        "action": "dropped",
    }  # fmt: skip
    assert data["licenses"]["gplib-1"]["spdx_id"] == "GPL-3.0"
    assert "2 kept, 2 dropped" in run.stdout
    assert (
        load_tasks(out).get("billing-3").problem_statement
        == "Reported by <REDACTED:email> from <REDACTED:ipv4>."
    )
    assert_absent(AWS_KEY, out.read_bytes(), report.read_bytes(), run.stdout, run.stderr)


def test_scrub_redacts_and_accepts_gpl_when_allowed(tmp_path):
    tasks_file, mit_repo = _tasks(tmp_path)
    out, report = tmp_path / "clean.json", tmp_path / "scrub.json"

    run = _repogym(
        "scrub", str(tasks_file), "--out", str(out), "--policy", "redact", "--allow-license", "GPL-3.0",
        "--pii", "email", "--report", str(report),
    )  # fmt: skip

    assert run.returncode == 0, run.stderr
    kept = load_tasks(out)
    assert len(kept) == 4
    redacted = kept.get("billing-2")
    assert 'AWS_ACCESS_KEY_ID = "<REDACTED:AWS Access Key>"' in redacted.patch
    assert applies(mit_repo, redacted.patch)
    assert kept.get("gplib-1").license == "GPL-3.0"
    assert kept.get("billing-3").problem_statement == "Reported by <REDACTED:email> from 10.1.2.3."
    assert_absent(AWS_KEY, out.read_bytes(), report.read_bytes(), run.stdout, run.stderr)


def test_scrub_rejects_bad_options_with_one_line_naming_the_option(tmp_path):
    tasks_file, _ = _tasks(tmp_path)
    run = _repogym("scrub", str(tasks_file), "--out", str(tmp_path / "o.jsonl"), "--pii", "postcode")
    assert run.returncode == 2
    assert "pii.0" in run.stderr and "'email', 'phone' or 'ipv4'" in run.stderr
    assert not (tmp_path / "o.jsonl").exists()
