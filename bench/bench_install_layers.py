"""What install layers cost: per command and per test run at a commit with layers of its own, against the
commit the environment was built at (no extra layer: the baseline), plus the one-off costs.

One generated repo (bench/_common.py: ~1,200 modules, an editable install of `biglib`) and one private
REPOGYM_CACHE. The environment is built at the generated history's last commit; one more commit bumps
the project's version (which the environment key ignores), so it shares the environment and gets
install layers of its own: an overlay upper over the checkout (a lower of every episode's overlay), and
a venv of its own (the editable install's metadata carries the new version; a tree of hard links). Rows, interleaved so that load hits both
sides: `true` (the fixed cost of a command), ten test files (310 tests). One-off costs: the environment
build, the install step at the second commit (its layers and git baseline), and `Episode.reinstall()`
(the grader's re-install after a packaging patch). No target: the figures show what layers add.

    .venv/bin/python bench/bench_install_layers.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from _common import big_task, git, machine_line, make_big_repo, markdown_table, ms, percentile, private_cache

from repogym.sandbox.runtime import TaskRuntime

_TEN_FILES = "python -m pytest -q -p no:cacheprovider " + " ".join(
    f"tests/test_pkg{i:02d}.py" for i in range(10, 20)
)


def _timed(function) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def measure(runs: int) -> tuple[list[list[object]], list[list[object]]]:
    with private_cache() as scratch:
        repo = make_big_repo(scratch / "src")
        built_at = TaskRuntime.create(big_task(repo, repo.commits[-1]), "bwrap")
        build_s = _timed(built_at.prepare)
        pyproject = repo.path / "pyproject.toml"
        pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"', 'version = "0.1.1"'))
        git(repo.path, "commit", "-q", "-am", "biglib 0.1.1")
        bumped = git(repo.path, "rev-parse", "HEAD").strip()
        other = TaskRuntime.create(big_task(repo, bumped, "bench__biglib-2"), "bwrap")
        layers_s = _timed(other.prepare)
        assert other.env is not None and built_at.env is not None and other.env.key == built_at.env.key
        layers = other.commit_layers()
        assert len(layers.repo) == 2 and layers.venv != (other.env.venv,), "the commit should have layers"
        rows = []
        with built_at.episode() as plain, other.episode() as layered:
            for label, command, count in (
                ("`true` (fixed cost per command)", "true", runs * 2),
                ("ten test files (310 tests)", _TEN_FILES, runs),
            ):
                timings: dict[str, list[float]] = {"plain": [], "layered": []}
                for index in range(count):
                    order = [("plain", plain), ("layered", layered)]
                    for side, episode in order if index % 2 == 0 else order[::-1]:
                        started = time.perf_counter()
                        result = episode.run(command)
                        timings[side].append(time.perf_counter() - started)
                        if not result.ok:
                            raise SystemExit(
                                f"{command!r} failed in the {side} episode:\n{result.output[-2000:]}"
                            )
                p50_plain, p50_layered = (statistics.median(timings[s]) for s in ("plain", "layered"))
                paired = statistics.median(
                    b / a for a, b in zip(timings["plain"], timings["layered"], strict=True)
                )
                rows.append([
                    label, count, ms(p50_plain), ms(percentile(timings["plain"], 95)), ms(p50_layered),
                    ms(percentile(timings["layered"], 95)), f"{paired:.2f}x",
                ])  # fmt: skip
            reinstall_s = _timed(layered.reinstall)
        one_off = [
            ["environment build (first commit)", f"{build_s:.2f} s"],
            ["install step + baseline at a second commit", f"{layers_s:.2f} s"],
            ["Episode.reinstall() (offline editable install)", f"{reinstall_s:.2f} s"],
        ]
    return rows, one_off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of the ten-file suite, each side")
    args = parser.parse_args(argv)
    rows, one_off = measure(args.runs)
    print(f"### Install layers (bwrap, overlay episodes)\n\n{machine_line()}\n")
    header = [
        "command", "n", "build commit p50 ms", "p95 ms", "layered commit p50 ms", "p95 ms",
        "median paired ratio (layered / build commit)",
    ]  # fmt: skip
    print(markdown_table(header, rows))
    print()
    print(markdown_table(["one-off cost", "seconds"], one_off))
    return 0


if __name__ == "__main__":
    sys.exit(main())
