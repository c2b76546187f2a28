"""Episode reset latency on a 1,200-module repository, against a fresh `git clone --shared` + checkout.

Measured in one run, on one generated repo (bench/_common.py) and one private
REPOGYM_CACHE: `Episode.reset()` right after a jailed command modified, added
and deleted files (and, for scale, reset plus waiting for the background
thread that deletes the old layer); creating a fresh episode and closing it;
the copied workspace that repogym falls back to without overlayfs (not root,
or REPOGYM_NO_OVERLAY=1); and the baseline, `git clone --shared
--no-checkout` of the cached mirror plus `git checkout` of the same commit.
The clones are interleaved with the resets so that both see the same load,
and the workspace is checked to be pristine after the resets. Targets: reset p50
<= 20 ms and >= 50x faster than the baseline.

    .venv/bin/python bench/bench_reset.py [--quick] [--resets 200] [--clones 30] [--copies 10]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _common import (
    big_task,
    machine_line,
    make_big_repo,
    markdown_table,
    ms,
    percentile,
    private_cache,
    wait_for_background_deletions,
)

from repogym.sandbox.runtime import Episode, TaskRuntime
from repogym.sandbox.workspace import EpisodeLayer

TARGET_P50_S = 0.020
TARGET_RATIO = 50
# What an agent's episode typically leaves behind: edited modules, a new file, a deleted one, a scratch dir.
_MODIFY = (
    "sed -i 's/FACTOR = /FACTOR = 1 + /' biglib/pkg01/m00*.py && echo draft > notes.txt && "
    "rm biglib/pkg02/m001.py && mkdir -p scratch/a && echo 1 > scratch/a/b.py"
)


def _timed(
    action: Callable[[], object], repeat: int, before: Callable[[], object] | None = None
) -> list[float]:
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def _check_pristine(episode: Episode) -> None:
    """A fast reset that does not restore the checkout must not post a figure."""
    result = episode.run(
        "test -f biglib/pkg02/m001.py && ! test -e notes.txt && ! test -e scratch && "
        "grep -q '^FACTOR = 3$' biglib/pkg01/m000.py && test -z \"$(git status --porcelain)\""
    )
    if not result.ok:
        raise SystemExit(f"the workspace is not pristine after reset: {result.output}")


def _modify(episode: Episode) -> None:
    result = episode.run(_MODIFY)
    if not result.ok:
        raise SystemExit(f"the modifying command failed: {result.output}")


def _clone_and_checkout(mirror: Path, commit: str, dest: Path) -> None:
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run(
        [*git, "clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(dest)], check=True
    )
    subprocess.run([*git, "-C", str(dest), "checkout", "--quiet", "--detach", commit], check=True)


def measure(resets: int, clones: int, copies: int) -> tuple[list[list[object]], float, float]:
    with private_cache() as scratch:
        repo = make_big_repo(scratch / "src")
        runtime = TaskRuntime.create(big_task(repo), "bwrap").prepare()
        assert runtime.pristine is not None and runtime.mirror_path is not None
        samples: dict[str, list[float]] = {}
        clone_root = scratch / "clones"
        clone_root.mkdir()
        resets_timed: list[float] = []
        clones_timed: list[float] = []
        every = max(1, resets // clones)
        with runtime.episode() as episode:
            _modify(episode)
            episode.reset()  # warm: the first reset pays for page-cache misses
            # Clones are interleaved with the resets so that both see the same load on a shared machine.
            for index in range(resets):
                if index % every == 0 and len(clones_timed) < clones:
                    dest = clone_root / str(index)
                    clones_timed += _timed(
                        lambda dest=dest: _clone_and_checkout(
                            runtime.mirror_path, runtime.task.base_commit, dest
                        ),
                        1,
                    )
                resets_timed += _timed(episode.reset, 1, before=lambda: _modify(episode))
            samples["reset after a modifying episode"] = resets_timed
            # What the reset left to the background thread, for scale: on a quiet disk it is the same work.
            samples["reset + waiting for its background deletion"] = _timed(
                lambda: (episode.reset(), wait_for_background_deletions()),
                resets,
                before=lambda: _modify(episode),
            )
            _check_pristine(episode)
        shutil.rmtree(clone_root)
        fresh: list[Episode] = []
        samples["fresh episode (runtime.episode())"] = _timed(lambda: fresh.append(runtime.episode()), resets)
        closing = iter(fresh)
        samples["closing an episode"] = _timed(lambda: next(closing).close(), len(fresh))
        copied = EpisodeLayer.create(runtime.pristine, overlay=False)
        samples["reset, copied workspace (REPOGYM_NO_OVERLAY=1 / not root)"] = _timed(copied.reset, copies)
        copied.close()
        samples["baseline: git clone --shared + checkout"] = clones_timed
        files = repo.files
    baseline = percentile(samples["baseline: git clone --shared + checkout"], 50)
    rows = []
    for name, values in samples.items():
        p50 = percentile(values, 50)
        rows.append([name, len(values), ms(p50), ms(percentile(values, 95)), f"{baseline / p50:.0f}x"])
    reset_p50 = percentile(samples["reset after a modifying episode"], 50)
    print(f"repository: {files} tracked files", file=sys.stderr)
    return rows, reset_p50, baseline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (fewer samples)")
    parser.add_argument("--resets", type=int, default=200, help="resets and fresh episodes timed")
    parser.add_argument("--clones", type=int, default=30, help="baseline clones timed")
    parser.add_argument("--copies", type=int, default=10, help="copied-workspace resets timed")
    args = parser.parse_args(argv)
    if args.quick:
        args.resets, args.clones, args.copies = 30, 8, 5
    rows, reset_p50, baseline = measure(args.resets, args.clones, args.copies)
    ratio = baseline / reset_p50
    print(f"### Episode reset (1,200-module repo)\n\n{machine_line()}\n")
    print(markdown_table(["operation", "n", "p50 ms", "p95 ms", "baseline p50 / p50"], rows))
    met = reset_p50 <= TARGET_P50_S and ratio >= TARGET_RATIO
    print(
        f"\nreset p50 {ms(reset_p50)} ms (target <= {TARGET_P50_S * 1000:.0f} ms), "
        f"{ratio:.0f}x faster than clone + checkout (target >= {TARGET_RATIO}x): "
        f"{'targets met' if met else 'targets NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
