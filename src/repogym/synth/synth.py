"""`synthesize`: inject bugs into the covered functions of one repo state and write them as candidate tasks.

The steps, in order:

1. resolve REV in the source repository and bring it into the task set's repository (`store.TaskRepo`);
2. build the environment (the pytest suite's, plus `coverage`) and run the suite once with per-test
   coverage (`coverage.measure`, cached per repo state);
3. parse every covered Python file that is not excluded (tests, packaging, docs) with libcst and draw
   mutations in its covered functions (`inject.inject_file`);
4. drop duplicate bugs, keep at most `max_candidates` (a seeded sample);
5. write each bug as a commit on top of REV plus a parentless twin (the task's base commit);
6. build Task rows: gold patch = the reverse of the injected diff, empty test patch, the tests to run,
   and metadata `method`, `file`, `function`, `lines` and `difficulty`.

Validation (`repogym validate`) then proves each candidate and writes its problem statement.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repogym.errors import ConfigError
from repogym.hostgit import git
from repogym.mining.gitcmd import resolve_revision
from repogym.mining.mine import default_repo_name
from repogym.mining.split import compile_patterns
from repogym.privacy.licenses import detect_license
from repogym.sandbox.runtime import TaskRuntime
from repogym.synth.config import SynthConfig
from repogym.synth.coverage import CoverageMap, measure
from repogym.synth.funnel import MethodYield, SynthFunnel
from repogym.synth.inject import Bug, FileYield, inject_file, top_up
from repogym.synth.methods import resolve_methods
from repogym.synth.source import SourceFile
from repogym.synth.store import BugCommit, TaskRepo
from repogym.task import EnvSpec, Source, Task
from repogym.testpaths import is_test_path

#: Progress callback: (stage, done, total).
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SynthResult:
    tasks: tuple[Task, ...]
    funnel: SynthFunnel
    repo_path: Path
    """The task set's repository (every task's repo_source)."""
    elapsed_s: float


def id_prefix(repo_name: str) -> str:
    """SWE-bench's owner__name form.

    >>> id_prefix("local/my tool")
    'local__my-tool'
    """
    return re.sub(r"[^A-Za-z0-9._-]", "-", repo_name.replace("/", "__", 1))


def task_env(config: SynthConfig) -> EnvSpec:
    packages = tuple(dict.fromkeys([*config.packages, "coverage"]))
    return EnvSpec(
        python=config.python, install=tuple(config.install), packages=packages, test_cmd=config.test_cmd
    )


def synthesize(
    repo: str | Path, config: SynthConfig, store_dir: str | Path, progress: Progress | None = None
) -> SynthResult:
    """Candidate tasks for one repository (see the module docstring)."""
    started = time.perf_counter()
    source = Path(repo).resolve()
    rev = resolve_revision(source, config.rev)
    repo_name = config.repo_name or default_repo_name(source)
    prefix = id_prefix(repo_name)
    store = TaskRepo(Path(store_dir).resolve() / f"{prefix}.git")
    store.ensure(source, rev)
    clean = Task(
        instance_id=f"{prefix}-synth-clean",
        repo=repo_name,
        base_commit=rev,
        patch="",
        repo_source=str(store.path),
        env=task_env(config),
        source=Source.SYNTHETIC,
    )
    if progress:
        progress("environment and coverage run", 0, 1)
    runtime = TaskRuntime.create(clean, config.sandbox, limits=config.limits).prepare()
    assert runtime.env is not None
    cache = store.path.with_name(f"{prefix}.coverage") / f"{rev[:16]}-{runtime.env.key}.json"
    coverage = measure(runtime, cache)
    if progress:
        progress("environment and coverage run", 1, 1)
    files = _candidate_files(store, rev, config)
    covered = [path for path in files if path in coverage.lines]
    if not covered:
        raise ConfigError(
            f"{source} at {rev[:12]}: no function is covered by the tests ({len(files)} Python file(s) "
            f"considered, {len(coverage.passing)} passing test(s)); check --include/--exclude and that the "
            "tests import the package from the repository"
        )
    yields, unparsable = _inject(store, rev, covered, coverage, config, progress)
    bugs, dropped = _dedupe_and_cap([bug for y in yields for bug in y.bugs], config)
    ids = {bug.digest: f"{prefix}-synth-{bug.method}-{bug.digest[:10]}" for bug in bugs}
    if progress:
        progress("writing commits", 0, 1)
    written = store.write(
        [
            BugCommit(
                ids[bug.digest],
                rev,
                {bug.file: bug.buggy_text},
                f"synth: {bug.method} in {bug.file} ({bug.function})\n",
            )
            for bug in bugs
        ]
    )
    if progress:  # a bar left at 0/1 reads as a stage that never finished
        progress("writing commits", 1, 1)
    license_id = detect_license(source, rev).spdx_id or ""
    created_at = git(source, "show", "-s", "--format=%cI", rev).strip()
    tasks = tuple(
        _task(bug, ids[bug.digest], written[ids[bug.digest]].base_commit, written[ids[bug.digest]].bug_commit,
              clean, rev, coverage, config, license_id, created_at)
        for bug in bugs
    )  # fmt: skip
    funnel = _funnel(
        repo_name,
        rev,
        files,
        covered,
        unparsable,
        coverage,
        yields,
        dropped,
        bugs,
        resolve_methods(config.methods),
    )
    return SynthResult(tasks, funnel, store.path, time.perf_counter() - started)


def _inject(
    store: TaskRepo,
    rev: str,
    covered: list[str],
    coverage: CoverageMap,
    config: SynthConfig,
    progress: Progress | None,
) -> tuple[list[FileYield], list[tuple[str, str]]]:
    """Every covered file parsed and drawn from; the files libcst cannot read are named, not fatal."""
    methods = resolve_methods(config.methods)
    yields: list[FileYield] = []
    unparsable: list[tuple[str, str]] = []
    for done, path in enumerate(covered):
        if progress:
            progress("injecting", done, len(covered))
        try:
            parsed = SourceFile.parse(path, store.read(rev, path))
        except ConfigError as exc:
            unparsable.append((path, str(exc)))
            continue
        yields.append(inject_file(parsed, coverage, methods, config))
    top_up(yields, methods, coverage, config)
    if progress:
        progress("injecting", len(covered), len(covered))
    return yields, unparsable


def _candidate_files(store: TaskRepo, rev: str, config: SynthConfig) -> list[str]:
    excluded = compile_patterns(config.exclude)
    included = compile_patterns(config.include) if config.include else None
    files = []
    for path, mode in sorted(store.tree_files(rev).items()):
        if not path.endswith(".py") or mode not in ("100644", "100755"):
            continue
        if is_test_path(path, support_files=True) or excluded(path):
            continue
        if included is not None and not included(path):
            continue
        files.append(path)
    return files


def _dedupe_and_cap(bugs: list[Bug], config: SynthConfig) -> tuple[list[Bug], dict[str, Counter[str]]]:
    """The first bug of each buggy file, then a seeded sample of max_candidates (in their original order)."""
    dropped: dict[str, Counter[str]] = {"duplicate": Counter(), "over_max": Counter()}
    seen: set[str] = set()
    unique = []
    for bug in bugs:
        if bug.digest in seen:
            dropped["duplicate"][bug.method] += 1
            continue
        seen.add(bug.digest)
        unique.append(bug)
    if config.max_candidates and len(unique) > config.max_candidates:
        rng = random.Random(config.seed)
        # One of each method first (a rare method must not be sampled away), then uniformly.
        by_method: dict[str, list[int]] = {}
        for index, bug in enumerate(unique):
            by_method.setdefault(bug.method, []).append(index)
        firsts = [rng.choice(indexes) for _, indexes in sorted(by_method.items())][: config.max_candidates]
        rest = [i for i in range(len(unique)) if i not in set(firsts)]
        keep = set(firsts) | set(rng.sample(rest, config.max_candidates - len(firsts)))
        for index, bug in enumerate(unique):
            if index not in keep:
                dropped["over_max"][bug.method] += 1
        unique = [bug for index, bug in enumerate(unique) if index in keep]
    return unique, dropped


def _task(
    bug: Bug,
    instance_id: str,
    base_commit: str,
    bug_commit: str,
    clean: Task,
    rev: str,
    coverage: CoverageMap,
    config: SynthConfig,
    license_id: str,
    created_at: str,
) -> Task:
    metadata = {
        "method": bug.method,
        "file": bug.file,
        "function": bug.function,
        "lines": list(bug.lines),
        "difficulty": {"lines_changed": bug.lines_changed, "fail_to_pass": None},
        "synth": {
            "clean_commit": rev,
            "bug_commit": bug_commit,
            "seed": config.seed,
            "tests": list(bug.tests),
            "affected_tests": bug.affected,
            "test_files": sorted({t.split("::", 1)[0] for t in bug.tests}),
            "suite_files": list(coverage.test_files),
        },
    }
    return clean.replace(
        instance_id=instance_id,
        base_commit=base_commit,
        patch=bug.gold_patch,
        created_at=created_at,
        license=license_id,
        metadata=metadata,
    )


def _funnel(
    repo_name: str,
    rev: str,
    files: list[str],
    covered: list[str],
    unparsable: list[tuple[str, str]],
    coverage: CoverageMap,
    yields: list[FileYield],
    dropped: dict[str, Counter[str]],
    bugs: list[Bug],
    methods: list,
) -> SynthFunnel:
    def total(name: str, method: str) -> int:
        return sum(getattr(y, name)[method] for y in yields)

    written = Counter(bug.method for bug in bugs)
    rows = []
    for chosen in methods:
        name = chosen.name
        sites, uncovered, drawn = total("sites", name), total("uncovered", name), total("drawn", name)
        rows.append(
            MethodYield(
                method=name,
                sites=sites,
                uncovered=uncovered,
                not_drawn=sites - uncovered - drawn,
                no_change=total("no_change", name),
                does_not_compile=total("does_not_compile", name),
                duplicate=dropped["duplicate"][name],
                over_max=dropped["over_max"][name],
                written=written[name],
            )
        )
    return SynthFunnel(
        repo=repo_name,
        rev=rev,
        files=len(files),
        files_covered=len(covered),
        unparsable=tuple(unparsable),
        units=sum(y.units for y in yields),
        covered_units=sum(y.covered_units for y in yields),
        tests=len(coverage.statuses),
        passing_tests=len(coverage.passing),
        coverage_s=coverage.seconds,
        methods=tuple(rows),
    )
