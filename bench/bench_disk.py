"""Disk added per extra episode and per extra task of a repo already cached, against git clones.

Sizes are blocks actually allocated, from one `du -sk` over the whole private
REPOGYM_CACHE before and after (du counts a hardlinked inode once, so
checkouts that share the blob store are not counted twice; `du
--apparent-size` would be). An extra episode is measured empty, after a
command that edits files, and after a whole pytest run; an extra task is
another commit of the generated repo (same dependencies, so the environment
is shared). Baselines: a `git clone --shared` + checkout (objects borrowed
from the mirror) and a full `git clone --no-local` + checkout. Target: under
1 MB per extra episode and per extra task.

    .venv/bin/python bench/bench_disk.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from _common import big_task, disk_kib, machine_line, make_big_repo, markdown_table, private_cache

from repogym.sandbox.cache import cache_root
from repogym.sandbox.runtime import TaskRuntime

TARGET_KIB = 1024
_EDIT = "sed -i 's/FACTOR = /FACTOR = 1 + /' biglib/pkg01/m00*.py && echo draft > notes.txt && rm biglib/pkg02/m001.py"
_PYTEST = "python -m pytest -q -p no:cacheprovider tests"


def _kib(value: int) -> str:
    return f"{value:,}"


def _clone_kib(mirror: Path, commit: str, dest: Path, *flags: str) -> int:
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "clone", "--quiet", *flags, "--no-checkout", str(mirror), str(dest)], check=True)
    subprocess.run([*git, "-C", str(dest), "checkout", "--quiet", "--detach", commit], check=True)
    return disk_kib(dest)


def measure(quick: bool) -> tuple[list[list[object]], list[list[object]], int]:
    with private_cache() as scratch:
        repo = make_big_repo(scratch / "src", fixes=2)
        root = cache_root()
        runtime = TaskRuntime.create(big_task(repo, repo.commits[-1]), "bwrap").prepare()
        assert runtime.pristine is not None and runtime.env is not None and runtime.mirror_path is not None
        one_time = [
            ["git mirror (bare)", _kib(disk_kib(runtime.mirror_path))],
            ["blob store (every file of every cached commit, once)", _kib(disk_kib(root / "blobs"))],
            ["uv environment (pytest + editable install)", _kib(disk_kib(runtime.env.venv))],
            ["whole cache after the first task", _kib(disk_kib(root))],
        ]
        with runtime.episode() as warm:
            warm.run(_EDIT)  # the first episode pays for lazily created cache folders
        rows: list[list[object]] = []
        before = disk_kib(root)
        with runtime.episode() as episode:
            rows.append(["extra episode, just created", _kib(disk_kib(root) - before)])
            episode.run(_EDIT)
            rows.append(
                ["extra episode, after editing 10 files, adding 1, deleting 1", _kib(disk_kib(root) - before)]
            )
            if not quick:
                result = episode.run(_PYTEST)
                rows.append(["extra episode, after a whole pytest run", _kib(disk_kib(root) - before)])
                if result.exit_code not in (0, 1):
                    raise SystemExit(f"the test run did not run: {result.output[-2000:]}")
        before = disk_kib(root)
        other = TaskRuntime.create(big_task(repo, repo.commits[-2], "bench__biglib-2"), "bwrap").prepare()
        assert other.env is not None
        if other.env.key != runtime.env.key:
            raise SystemExit(
                "the second commit did not reuse the environment: the figure would include an env build"
            )
        extra_task = disk_kib(root) - before
        rows.append(["extra task (another commit of the cached repo)", _kib(extra_task)])
        clones = scratch / "clones"
        commit = runtime.task.base_commit
        shared = _clone_kib(runtime.mirror_path, commit, clones / "shared", "--shared")
        full = _clone_kib(runtime.mirror_path, commit, clones / "full", "--no-local")
        rows.append(["baseline: git clone --shared + checkout", _kib(shared)])
        rows.append(["baseline: git clone --no-local + checkout", _kib(full)])
        worst = max(int(str(r[1]).replace(",", "")) for r in rows[:-2])
        print(f"repository: {repo.files} tracked files", file=sys.stderr)
    return rows, one_time, worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="skip the episode that runs the whole test suite"
    )
    args = parser.parse_args(argv)
    rows, one_time, worst = measure(args.quick)
    print(f"### Disk per extra episode and per extra task (1,200-module repo)\n\n{machine_line()}\n")
    print(markdown_table(["what is added", "KiB on disk (du, hardlinks once)"], rows))
    print("\nOne-time costs per repository (shared by every task and episode of it):\n")
    print(markdown_table(["cached once", "KiB on disk"], one_time))
    met = worst < TARGET_KIB
    print(
        f"\nlargest per-episode/per-task figure: {worst:,} KiB (target < {TARGET_KIB:,}): {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
