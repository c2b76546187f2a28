"""Helpers of the sandbox tests: small real git repositories, and the projects built from them.

Imported by the test modules as `sandbox_support` (conftest puts this folder on sys.path).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from repogym.sandbox.base import Limits
from repogym.task import EnvSpec, Source, Task


class GitRepo:
    """A real git repository in a temporary folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.path),
            "GIT_AUTHOR_NAME": "Env",
            "GIT_AUTHOR_EMAIL": "env@example.invalid",
            "GIT_COMMITTER_NAME": "Env",
            "GIT_COMMITTER_EMAIL": "env@example.invalid",
            "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=env, check=True, capture_output=True, text=True
        )
        return done.stdout

    def commit(self, files: Mapping[str, str], message: str = "change") -> str:
        """Write `files` (path -> text) and commit them; returns the commit's sha."""
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def patch(self, files: Mapping[str, str]) -> str:
        """A patch that sets `files` (path -> text) over HEAD, without committing it."""
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        self.git("add", "-A")
        patch = self.git("diff", "--cached", "--binary")
        self.git("reset", "-q", "--hard", "HEAD")
        return patch

    def task(self, instance_id: str, commit: str, **fields: object) -> Task:
        values: dict[str, object] = {"patch": "", "env": EnvSpec(), **fields}
        return Task(
            instance_id=instance_id,
            repo=f"local/{self.path.name}",
            base_commit=commit,
            source=Source.SYNTHETIC,
            repo_source=str(self.path),
            **values,  # type: ignore[arg-type]
        )


#: A setup.py project with a flat module: its editable install maps `hello` to /testbed/hello.py.
HELLO_FILES = {
    "setup.py": 'from setuptools import setup\n\nsetup(name="hello", version="1.0", py_modules=["hello"])\n',
    "hello.py": 'def greet():\n    return "hi"\n',
    "tests/test_hello.py": 'import hello\n\n\ndef test_greet():\n    assert hello.greet() == "hi"\n',
}


def plant_undeletable_tree(episode, files_per_folder: int) -> None:  # type: ignore[no-untyped-def]
    """Run jailed code in `episode` that leaves what its deletion must still remove: many files in /tmp,
    /testbed and the output folder, and folders it has made unreadable (chmod 000) in each."""
    result = episode.run(
        'python -c "import os\n'
        "for d in ('/tmp/many', '/testbed/many', '/opt/repogym/out/many'):\n"
        "    os.makedirs(d)\n"
        f"    for i in range({files_per_folder}): open(os.path.join(d, str(i)), 'w').close()\n\"; "
        "mkdir -p /tmp/locked/inner /testbed/locked/inner && "
        "touch /tmp/locked/inner/f /testbed/locked/inner/f && "
        "chmod 000 /tmp/locked/inner /tmp/locked /testbed/locked/inner /testbed/locked /opt/repogym/out && "
        "echo ok",
        limits=Limits(wall_s=60),
    )
    assert "ok" in result.output, result.output
