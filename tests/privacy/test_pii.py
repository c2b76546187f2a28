"""Personal data in task text is redacted; things that are not personal, and code, are left alone."""

from __future__ import annotations

import pytest

from repogym.privacy import PiiKind, ScrubConfig, scrub_tasks
from repogym.privacy.pii import redact_pii
from repogym.task import Task

from ..support.privacy import MIT, applies, diff_of, init_repo

ISSUE = """Crash when syncing contacts

Reported by jane.doe@corp-mail.com (cc: 4711+jdoe@users.noreply.github.com).
Call me on +44 20 7946 0958 or (415) 555-0142, or 415-555-0199.
The worker at 10.20.30.40 and the proxy 172.16.5.4 both log it; 127.0.0.1 is fine.
Automated mail comes from noreply@github.com and tests use alice@example.com.
Released 2024-01-02 in version 1.2.3, build 20240102123456, issue #4242.
"""


def _task(tmp_path, **fields) -> Task:
    repo, base = init_repo(tmp_path / "contacts", {"LICENSE": MIT, "sync.py": "def sync():\n    return 1\n"})
    return Task(instance_id="contacts-1", repo="corp/contacts", base_commit=base, patch=fields.pop("patch", ""),
                repo_source=str(repo), **fields)  # fmt: skip


def test_personal_data_in_the_problem_statement_is_redacted(tmp_path):
    (kept,) = scrub_tasks(
        [_task(tmp_path, problem_statement=ISSUE, hints_text="ping bob@corp-mail.com")]
    ).tasks
    text = kept.problem_statement
    for personal in (
        "jane.doe@",
        "jdoe@users",
        "7946 0958",
        "555-0142",
        "555-0199",
        "10.20.30.40",
        "172.16.5.4",
    ):
        assert personal not in text
    assert "Reported by <REDACTED:email> (cc: <REDACTED:email>)." in text
    assert "Call me on <REDACTED:phone> or <REDACTED:phone>, or <REDACTED:phone>." in text
    assert (
        "The worker at <REDACTED:ipv4> and the proxy <REDACTED:ipv4> both log it; 127.0.0.1 is fine." in text
    )
    # not personal, or not personal data at all: kept as written
    assert "noreply@github.com and tests use alice@example.com" in text
    assert "Released 2024-01-02 in version 1.2.3, build 20240102123456, issue #4242." in text
    assert kept.hints_text == "ping <REDACTED:email>"
    assert kept.metadata["privacy"]["pii_redacted"] == {"email": 3, "phone": 3, "ipv4": 2}


def test_only_the_configured_kinds_are_redacted(tmp_path):
    (kept,) = scrub_tasks([_task(tmp_path, problem_statement=ISSUE)], ScrubConfig(pii=(PiiKind.EMAIL,))).tasks
    assert "<REDACTED:email>" in kept.problem_statement
    assert "+44 20 7946 0958" in kept.problem_statement and "10.20.30.40" in kept.problem_statement
    (untouched,) = scrub_tasks([_task(tmp_path / "b", problem_statement=ISSUE)], ScrubConfig(pii=())).tasks
    assert untouched.problem_statement == ISSUE


def test_metadata_strings_are_scrubbed_too(tmp_path):
    task = _task(tmp_path, metadata={"pr": {"author": "Jane <jane.doe@corp-mail.com>", "labels": ["bug"]}})
    (kept,) = scrub_tasks([task]).tasks
    assert kept.metadata["pr"] == {"author": "Jane <<REDACTED:email>>", "labels": ["bug"]}


def test_in_patches_only_python_comments_on_added_lines_change(tmp_path):
    """Strings may be test fixtures (an e-mail validator's); comments cannot change what a test checks."""
    repo, base = init_repo(tmp_path / "v", {"LICENSE": MIT, "check.py": "# by old@corp-mail.com\nOK = 1\n"})
    new = '# by old@corp-mail.com\nOK = 1\nSAMPLE = "fixture@corp-mail.com"  # ask jane@corp-mail.com\n'
    patch = diff_of(repo, {"check.py": new, "README.txt": "mail jane@corp-mail.com\n"})
    task = Task(instance_id="v-1", repo="corp/v", base_commit=base, patch=patch, repo_source=str(repo))

    (kept,) = scrub_tasks([task]).tasks

    assert '+SAMPLE = "fixture@corp-mail.com"  # ask <REDACTED:email>' in kept.patch
    assert " # by old@corp-mail.com" in kept.patch  # context line: must stay for the patch to apply
    assert "+mail jane@corp-mail.com" in kept.patch  # not a Python file
    assert applies(repo, kept.patch)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("phone: +1 415 555 0142", "phone: <REDACTED:phone>"),
        ("sum +1 2 3", "sum +1 2 3"),
        ("ids 123 456 7890 and 12345678901", "ids 123 456 7890 and 12345678901"),
        ("ratio 1.2.3.4.5 and 300.1.1.1", "ratio 1.2.3.4.5 and 300.1.1.1"),
        (
            "see docs at 192.0.2.10, broadcast 255.255.255.255",
            "see docs at 192.0.2.10, broadcast 255.255.255.255",
        ),
        ("git@github.com:corp/contacts.git", "git@github.com:corp/contacts.git"),
        ("x = a@b.T  # matmul", "x = a@b.T  # matmul"),
    ],
)
def test_what_is_and_is_not_personal(text, expected):
    assert redact_pii(text, "problem_statement", list(PiiKind))[0] == expected
