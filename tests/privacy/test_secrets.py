"""Secrets in every field of a task, under both policies: found, reported by place only, never copied out."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from repogym.dataset import save_tasks
from repogym.files import write_json
from repogym.privacy import DropCode, ScrubConfig, SecretPolicy, scrub_tasks
from repogym.privacy.gitread import applies_at
from repogym.task import EnvSpec, Task

from ..support.git import git
from ..support.privacy import (
    AWS_KEY,
    GITHUB_TOKEN,
    HIGH_ENTROPY,
    MIT,
    PRIVATE_KEY,
    applies,
    assert_absent,
    diff_of,
    fragments,
    init_repo,
)

SECRETS = {
    "aws": (AWS_KEY, "AWS Access Key"),
    "github": (GITHUB_TOKEN, "GitHub Token"),
    "private_key": (PRIVATE_KEY, "Private Key"),
    "high_entropy": (HIGH_ENTROPY, "Base64 High Entropy String"),
}
FIELDS = ("patch", "test_patch", "problem_statement", "hints_text", "metadata.note")
SETTINGS = "TIMEOUT = 10\nRETRIES = 3\n"
TEST_SETTINGS = "from app import settings\n\n\ndef test_timeout():\n    assert settings.TIMEOUT == 10\n"


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    files = {
        "LICENSE": MIT,
        "app/__init__.py": "",
        "app/settings.py": SETTINGS,
        "tests/test_settings.py": TEST_SETTINGS,
    }
    return init_repo(tmp_path_factory.mktemp("secrets") / "service", files)


_DIFFS: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}


def _diff(repo: Path, files: dict[str, str]) -> str:
    """diff_of, remembered: the same change is asked for by many parametrised cases."""
    key = (str(repo), tuple(sorted(files.items())))
    if key not in _DIFFS:
        _DIFFS[key] = diff_of(repo, files)
    return _DIFFS[key]


def _python_value(secret: str) -> str:
    return f'"""{secret}\n"""' if "\n" in secret else f'"{secret}"'


def _text_with(secret: str) -> str:
    if "\n" in secret:
        return f"Deploying fails with this key:\n\n```\n{secret}\n```\n\nWhat is wrong?"
    return f'Deploying fails.\nThe client sends "{secret}" and the server says 403.\nWhat is wrong?'


def _task_with(secret: str, field: str, repo: Path, base: str) -> Task:
    code_patch = _diff(repo, {"app/settings.py": SETTINGS + "TIMEOUT = 30\n"})
    test_patch = _diff(repo, {"tests/test_settings.py": TEST_SETTINGS.replace("10", "30")})
    text = "Deploying fails with a timeout.\nWhat is wrong?"
    values = {
        "patch": code_patch,
        "test_patch": test_patch,
        "problem_statement": text,
        "hints_text": "",
        "metadata.note": "",
    }
    if field == "patch":
        values["patch"] = _diff(repo, {"app/settings.py": SETTINGS + f"API_KEY = {_python_value(secret)}\n"})
    elif field == "test_patch":
        body = TEST_SETTINGS + f"\n\nFAKE_KEY = {_python_value(secret)}\n"
        values["test_patch"] = _diff(repo, {"tests/test_settings.py": body})
    else:
        values[field] = _text_with(secret)
    return Task(
        instance_id=f"svc__{field}",
        repo="corp/service",
        base_commit=base,
        patch=values["patch"],
        test_patch=values["test_patch"],
        problem_statement=values["problem_statement"],
        hints_text=values["hints_text"],
        repo_source=str(repo),
        metadata={"note": values["metadata.note"]} if values["metadata.note"] else {},
    )


def _field_text(task: Task, field: str) -> str:
    return task.metadata["note"] if field == "metadata.note" else getattr(task, field)


def _first_line_with(text: str, secret: str) -> int:
    piece = secret.split("\n")[0]
    return next(i for i, line in enumerate(text.split("\n"), start=1) if piece in line)


def _outputs(result, tmp_path: Path) -> list[bytes]:
    save_tasks(result.tasks, tmp_path / "out.jsonl")
    write_json(tmp_path / "report.json", result.to_report())
    return [
        (tmp_path / "out.jsonl").read_bytes(),
        (tmp_path / "report.json").read_bytes(),
        repr(result).encode(),
    ]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("kind", list(SECRETS))
def test_drop_policy_removes_the_task_and_reports_only_the_place(kind, field, base_repo, tmp_path):
    secret, secret_type = SECRETS[kind]
    repo, base = base_repo
    task = _task_with(secret, field, repo, base)

    result = scrub_tasks([task], ScrubConfig(policy=SecretPolicy.DROP))

    assert result.tasks == ()
    assert result.dropped_ids == [task.instance_id]
    assert result.dropped[0].reasons[0].code is DropCode.SECRET
    expected_line = _first_line_with(_field_text(task, field), secret)
    assert (field, expected_line, secret_type) in {(f.field, f.line, f.type) for f in result.findings}
    assert result.counts[f"secret:{secret_type}"] >= 1
    assert_absent(secret, *_outputs(result, tmp_path), *(r.message for r in result.dropped[0].reasons))


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("kind", list(SECRETS))
def test_redact_policy_replaces_the_secret_and_keeps_patches_applying(kind, field, base_repo, tmp_path):
    secret, secret_type = SECRETS[kind]
    repo, base = base_repo
    task = _task_with(secret, field, repo, base)

    result = scrub_tasks([task], ScrubConfig(policy=SecretPolicy.REDACT))

    assert result.dropped == ()
    (kept,) = result.tasks
    before, after = _field_text(task, field), _field_text(kept, field)
    assert f"<REDACTED:{secret_type}>" in after
    assert len(after.split("\n")) == len(before.split("\n"))
    assert_absent(secret, *_outputs(result, tmp_path))
    for name in ("patch", "test_patch"):
        assert applies(repo, getattr(kept, name)), f"{name} no longer applies after redaction"
    assert kept.metadata["privacy"]["patch_changed"] is (field in ("patch", "test_patch"))
    assert kept.license == "MIT"


def test_a_clean_task_keeps_its_text_and_gets_its_licence(base_repo):
    repo, base = base_repo
    task = _task_with("", "problem_statement", repo, base).replace(problem_statement="Timeout is too short.")
    (kept,) = scrub_tasks([task]).tasks
    assert (kept.patch, kept.test_patch, kept.problem_statement) == (
        task.patch,
        task.test_patch,
        task.problem_statement,
    )
    assert kept.license == "MIT"
    assert kept.metadata["privacy"]["secrets_redacted"] == 0


def test_github_token_is_redacted_whole_not_just_its_prefix(base_repo):
    """detect-secrets reports only 'ghp' as the token's value; the redaction must take all of it."""
    repo, base = base_repo
    task = _task_with(GITHUB_TOKEN, "hints_text", repo, base)
    (kept,) = scrub_tasks([task], ScrubConfig(policy=SecretPolicy.REDACT)).tasks
    assert "ghp_" not in kept.hints_text
    assert '"<REDACTED:GitHub Token>"' in kept.hints_text


def test_secret_on_a_context_line_cannot_be_redacted_so_the_task_is_dropped(tmp_path):
    repo, base = init_repo(
        tmp_path / "leaky", {"LICENSE": MIT, "conf.py": f'KEY = "{AWS_KEY}"\nDEBUG = False\n'}
    )
    patch = diff_of(repo, {"conf.py": f'KEY = "{AWS_KEY}"\nDEBUG = True\n'})
    task = Task(
        instance_id="leaky-1", repo="corp/leaky", base_commit=base, patch=patch, repo_source=str(repo)
    )

    result = scrub_tasks([task], ScrubConfig(policy=SecretPolicy.REDACT))

    assert result.dropped_ids == ["leaky-1"]
    assert [r.code for r in result.dropped[0].reasons] == [DropCode.SECRET_UNREDACTABLE]
    assert f"patch:{_first_line_with(patch, AWS_KEY)}: AWS Access Key" in result.dropped[0].reasons[0].message
    assert_absent(AWS_KEY, *_outputs(result, tmp_path))


def test_secret_in_env_commands_drops_the_task_even_when_redacting(base_repo, tmp_path):
    repo, base = base_repo
    task = _task_with("", "problem_statement", repo, base)
    password = "Xk9mQ2vR7tLp4wZs"
    env = EnvSpec(install=(f"pip install --index-url https://deploy:{password}@pypi.corp.internal/simple .",))
    result = scrub_tasks([task.replace(env=env)], ScrubConfig(policy=SecretPolicy.REDACT))
    assert [r.code for r in result.dropped[0].reasons] == [DropCode.SECRET_UNREDACTABLE]
    assert "env.install[0]:1: Basic Auth Credentials" in result.dropped[0].reasons[0].message
    assert_absent(password, *_outputs(result, tmp_path))


def test_a_value_found_in_one_task_is_removed_from_every_task(base_repo, tmp_path):
    """The entropy plugin needs quotes; pasted bare into another task's issue, the value must still go."""
    repo, base = base_repo
    quoted = _task_with(HIGH_ENTROPY, "patch", repo, base)
    bare = _task_with("", "problem_statement", repo, base).replace(
        instance_id="svc__bare", problem_statement=f"Login fails with token {HIGH_ENTROPY} since Monday."
    )
    result = scrub_tasks([quoted, bare], ScrubConfig(policy=SecretPolicy.REDACT))
    assert len(result.tasks) == 2
    assert "token <REDACTED:Base64 High Entropy String> since" in result.tasks[1].problem_statement
    assert_absent(HIGH_ENTROPY, *_outputs(result, tmp_path))

    dropped = scrub_tasks([quoted, bare], ScrubConfig(policy=SecretPolicy.DROP))
    assert dropped.dropped_ids == ["svc__patch", "svc__bare"]


def test_nothing_secret_reaches_logs_or_the_terminal(base_repo, caplog, capsys):
    repo, base = base_repo
    tasks = [
        _task_with(secret, "patch", repo, base).replace(instance_id=kind)
        for kind, (secret, _) in SECRETS.items()
    ]
    with caplog.at_level(logging.DEBUG):
        for policy in SecretPolicy:
            scrub_tasks(tasks, ScrubConfig(policy=policy))
    captured = capsys.readouterr()
    for secret, _ in SECRETS.values():
        assert_absent(secret, caplog.text, captured.out, captured.err)


def test_findings_do_not_carry_the_value_in_repr_or_json(base_repo):
    repo, base = base_repo
    result = scrub_tasks([_task_with(AWS_KEY, "problem_statement", repo, base)])
    dumped = json.dumps([f.to_dict() for f in result.findings]) + repr(result.findings) + repr(result.dropped)
    assert not any(piece in dumped for piece in fragments(AWS_KEY))


def test_applies_at_checks_a_patch_against_a_bare_repository(base_repo, tmp_path):
    repo, base = base_repo
    patch = diff_of(repo, {"app/settings.py": SETTINGS + "X = 1\n"})
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert applies_at(str(bare), base, patch) is True
    assert applies_at(str(bare), base, patch.replace(" RETRIES = 3", " RETRIES = 4")) is False
    assert applies_at("", base, patch) is None
