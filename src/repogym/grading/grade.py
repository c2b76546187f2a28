"""grade(task, patch) -> GradeResult, with SWE-bench's resolved semantics.

Steps, each with its own failure outcome: prepare the task's runtime
(ENV_BUILD_FAILED, INFRA_ERROR) -> filter the candidate (candidate.py) and
apply it, falling back to fuzzier applies, then check what really changed
(PATCH_APPLY_FAILED) -> apply the test patch over it, when the task has one
(INFRA_ERROR: the task is broken) -> plant the canary (canary.py) and empty the
jail's inbox -> compile the changed Python files -> run FAIL_TO_PASS and
PASS_TO_PASS -> judge the report (judge.py: TIMEOUT, TESTS_DID_NOT_RUN,
REPORT_FORGED, RESOLVED only when every one of them passed and the canary
failed) -> name the network as the cause of a run that failed where its log
shows a test dialling out (TESTS_NEED_NETWORK). The test run has no network
unless the grader opts in (`allow_network`, for imported tasks whose tests
need it; the result says so), and then it alone has it. Where it can (onepass.py), all of the jailed steps are one sandbox
start, with the check of what really changed made by the host at a checkpoint
before the tests; elsewhere each is a jailed command of its own. Both ways give
the same verdict.

Guarantees (each has a hostile test in tests/grading/test_hostile_*.py and, through the gym,
tests/env/test_hostile_submit.py and test_hostile_forgery_gym.py):

- The tests graded are the task's: test files (the test patch's, every file that holds a FAIL_TO_PASS or
  PASS_TO_PASS test, and any path that looks like a test), test configuration, the test command's own files
  and whatever Python or pytest would load by themselves (candidate.py's list) are the base commit's.
- Nothing of the repository stands in for the harness: pytest and the report plugin (or the unittest
  runner) are imported before the repository is on sys.path (pytest_plugin/repogym_pytest.py).
- Results come from the structured report, cross-checked with the exit code (parsers/). An expected failure
  counts only for a test that carried an xfail mark when collection ended and where a static reading of
  the trusted test sources finds one that can apply (xfail_marks.py): a mark that code under test adds,
  while the tests run or while they are collected, does not make a pass.
- Every graded run of a pytest or unittest task has a canary (canary.py), synthetic tasks included: a copy
  of a FAIL_TO_PASS test in its own file that fails like any failing test (a plain assert, the copied
  test's exceptions as they are). A report that turns failures into passes (by hook, by swallowing
  exceptions in the runner, by stripping asserts, by rewriting reports) or that code under test wrote
  itself is REPORT_FORGED as long as it does not single out the canary; a REPORT_FORGED grade is worth a
  fixed penalty, never any reward term (rewards/compose.py).

Not guaranteed:

- Code under test runs in the test runner's process and can do anything that process can. A patch written
  against this grader, that finds the canary by reading the test file's code (a test whose body repeats
  another's, plus an assertion of two constants; where the canary could not be copied as text, the block
  appended at the file's end, a test whose ``__wrapped__`` is another test of its module) and spares it while
  forging the rest, is graded RESOLVED; so is code that behaves differently when it sees it is being tested.
  Both need an attacker who knows repogym's canary; neither can be learnt from an agent's episode, where the
  canary never is. `repogym tasks audit` grades the known generic forgers against a task set.
- The static xfail reading errs towards "can apply": in a test file or under a conftest.py that mentions
  xfail, code under test can still make a failing test XFAIL by marking it while tests are collected.
- Frameworks without a structured report (django, sympy: their parsers read printed lines) get no canary,
  and nor does a task whose FAIL_TO_PASS ids name no attribute path (doctests).
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym.errors import EnvBuildError, RepogymError, RepoSourceError
from repogym.grading import onepass
from repogym.grading.canary import Canary, plant_canary
from repogym.grading.candidate import (
    FilteredPatch,
    PristineText,
    check_changes,
    filter_candidate,
    is_build_output,
)
from repogym.grading.compile_check import CompileStep, compile_report, compile_step
from repogym.grading.installcheck import check_reinstall
from repogym.grading.judge import Judgement, judge
from repogym.grading.parsers import get_parser
from repogym.grading.parsers.common import shell_join
from repogym.grading.parsers.swebench_ids import id_file
from repogym.grading.report import GradeResult, Outcome, ResolvedStatus, SkipRule, TestReport
from repogym.grading.runner import (
    TestCommand,
    log_path,
    read_test_run,
    run_test_command,
    test_command,
    test_directives,
)
from repogym.grading.test_needs import environment_lacks, missing_system_packages, provided_modules
from repogym.grading.test_sources import required_test_files
from repogym.grading.verdicts import verdict_key, verdicts_for
from repogym.grading.xfail_marks import XfailReading, reading_for
from repogym.patches import changed_paths
from repogym.sandbox.base import ExecResult, Limits, Sandbox
from repogym.sandbox.layerchanges import layer_changes
from repogym.sandbox.network_attempts import needs_network
from repogym.sandbox.pool import RuntimePool
from repogym.sandbox.runtime import Episode, TaskRuntime, reinstall_if_packaging_changed
from repogym.task import Task

# --3way is not among them: grading episodes see .git read-only, and a three-way merge writes the index.
_APPLY_STRATEGIES = (
    ("git apply", "git apply --whitespace=nowarn {patch}"),
    ("patch --fuzz=3", "patch --batch --forward -p1 --fuzz=3 --no-backup-if-mismatch -i {patch}"),
)


def grade(
    task: Task,
    patch: str,
    *,
    sandbox: str | Sandbox = "bwrap",
    repos_dir: str | None = None,
    limits: Limits | None = None,
    runtime: TaskRuntime | None = None,
    runtimes: RuntimePool | None = None,
    log_dir: str | Path | None = None,
    skip_rule: SkipRule = SkipRule.STRICT,
    test_limits: Limits | None = None,
    allow_network: bool = False,
    share_verdicts: bool = False,
) -> GradeResult:
    """Grade `patch` (a unified diff) for `task` in a fresh episode of the sandbox: of `runtime`, else of the
    runtime `runtimes` holds for the task's repository state, else of one prepared here. `skip_rule`: how a skipped
    required test counts (judge.py): STRICT, the default, for anything a reward is computed from; SWEBENCH
    for SWE-bench's own verdict on SWE-bench instances. `test_limits`: the test run's limits where they
    differ from the runtime's (the gym's, from the task's validated test time: `repogym.grading.timelimit`).
    `allow_network`: let the test run (only it) reach the network, for imported tasks whose tests need it
    (`GradeResult.network_open` says so); off by default, and never for a reward. `share_verdicts`: one
    grade per distinct candidate over this runtime (verdicts.py): a copy of a candidate already graded, or
    being graded, with the same settings gets that verdict instead of a sandbox run of its own."""
    started = time.perf_counter()
    if not task.FAIL_TO_PASS:
        return _result(
            task, Outcome.INFRA_ERROR, "the task has no FAIL_TO_PASS tests: nothing can prove a fix"
        )
    try:
        if runtime is None and runtimes is not None:
            runtime = runtimes.runtime(task)
        runtime = runtime or TaskRuntime.create(task, sandbox, repos_dir, limits).prepare()
    except EnvBuildError as exc:
        return _result(task, Outcome.ENV_BUILD_FAILED, str(exc))
    except (RepoSourceError, RepogymError) as exc:
        return _result(task, Outcome.INFRA_ERROR, str(exc))
    except OSError as exc:  # the host's side of preparing it: a checkout or layer the disk would not write
        return _result(task, Outcome.INFRA_ERROR, f"preparing the task's runtime failed: {exc}")
    if share_verdicts:
        key = verdict_key(task, patch, skip_rule, test_limits, allow_network)
        prepared_runtime = runtime
        return verdicts_for(runtime).verdict(
            key,
            lambda: _grade_fresh(
                task, patch, prepared_runtime, log_dir, skip_rule, test_limits, allow_network, started
            ),
        )
    return _grade_fresh(task, patch, runtime, log_dir, skip_rule, test_limits, allow_network, started)


def _grade_fresh(
    task: Task,
    patch: str,
    runtime: TaskRuntime,
    log_dir: str | Path | None,
    skip_rule: SkipRule,
    test_limits: Limits | None,
    allow_network: bool,
    started: float,
) -> GradeResult:
    """`grade` in a fresh episode of the prepared `runtime`."""
    with runtime.episode(readonly_git=True) as episode:
        result = grade_in_episode(task, patch, episode, log_dir, skip_rule, test_limits, allow_network)
    timings = {**runtime.timings, **result.timings, "total_s": time.perf_counter() - started}
    return dataclasses.replace(result, timings=timings)


def grade_in_episode(
    task: Task,
    patch: str,
    episode: Episode,
    log_dir: str | Path | None = None,
    skip_rule: SkipRule = SkipRule.STRICT,
    test_limits: Limits | None = None,
    allow_network: bool = False,
) -> GradeResult:
    """Grade in an episode that is at its pristine state (it is modified); `allow_network` as for `grade`."""
    started = time.perf_counter()
    ids = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    directives = test_directives(ids, task.test_patch, episode.runtime.pristine)
    # Files of ids no run has (test_directives left them out): SWE-bench read such ids from printed output.
    absent = frozenset(id_file(test_id) for test_id in ids) - {"", *directives}
    tests = test_command(task, directives, test_limits or episode.runtime.limits, allow_network)
    prepared = _prepare(task, patch, episode, tests)
    if isinstance(prepared, GradeResult):
        return prepared
    result, tests_s = prepared.tests, prepared.tests_s
    apply_s = time.perf_counter() - started - tests_s
    if result is None:  # the slow way: the tests are a command of their own
        ran = time.perf_counter()
        result = run_test_command(episode, tests)
        tests_s = time.perf_counter() - ran
    report = read_test_run(task, episode, tests, result, log_path(task, log_dir), tests_s)
    verdict = judge(task, report, prepared.canary, skip_rule, prepared.sources.may_xfail, absent)
    log = _failed_run_log(verdict, report)
    verdict = name_network(verdict, log, tests)
    lacks = name_lacks(task, verdict, report, log, episode.runtime)
    return GradeResult(
        instance_id=task.instance_id,
        outcome=verdict.outcome,
        status=verdict.status,
        fail_to_pass=verdict.fail_to_pass,
        pass_to_pass=verdict.pass_to_pass,
        patch_applied_with=prepared.applied_with,
        ignored_paths=prepared.filtered.ignored,
        detail="; ".join(
            filter(None, [verdict.detail, lacks and "the environment lacks " + ", ".join(lacks)])
        ),
        report=report,
        compile_errors=prepared.compile_errors,
        timings={"apply_s": apply_s, "tests_s": tests_s},
        not_counted=verdict.not_counted,
        skip_rule=skip_rule,
        network_open=tests.network,
        lacks=lacks,
    )


def _failed_run_log(verdict: Judgement, report: TestReport) -> str | None:
    """The log of a run that did not pass (UNRESOLVED, or tests that did not run), read once for the causes
    below; None for any other run, or when there is no log to read."""
    if verdict.outcome not in (Outcome.UNRESOLVED, Outcome.TESTS_DID_NOT_RUN) or not report.log_path:
        return None
    try:
        return Path(report.log_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def name_network(verdict: Judgement, log: str | None, tests: TestCommand) -> Judgement:
    """TESTS_NEED_NETWORK for a run that did not pass whose log (`_failed_run_log`) shows a test reaching for
    the network (`needs_network`, validation's detector): the cause named, never a pass. The tests' statuses
    and SWE-bench's status are kept as judged."""
    attempt = needs_network(log) if log is not None else ""
    if not attempt:
        return verdict
    if tests.network:
        why = f"the tests tried to reach the network and failed, though the test run's network was open: {attempt}"
    else:
        why = (
            f"the tests tried to reach the network, which the sandbox closes: {attempt}; no offline grade can "
            "resolve this task as it stands (`repogym grade --allow-network` opens the test run's network)"
        )
    detail = f"{why}; {verdict.detail}" if verdict.detail else why
    return dataclasses.replace(verdict, outcome=Outcome.TESTS_NEED_NETWORK, detail=detail)


def name_lacks(
    task: Task, verdict: Judgement, report: TestReport, log: str | None, runtime: TaskRuntime
) -> tuple[str, ...]:
    """What a run that did not pass lacked from its environment (`environment_lacks`: a module nothing
    provides, a program or a Debian package the machine does not have), read from the skip reasons of its
    required tests that did not pass (and of the files skipped whole that hold them), the errors in its log
    and the task's system packages; () for any other run."""
    if log is None:
        return ()
    not_passed = verdict.not_passed
    reasons = [report.skip_reasons[test] for test in not_passed if test in report.skip_reasons]
    reasons += [  # files and folders skipped whole (few): their tests have no result of their own
        report.skip_reasons[skipped]
        for skipped in report.skipped_modules
        if skipped in report.skip_reasons
        and any(test.startswith((skipped + "::", skipped.rstrip("/") + "/")) for test in not_passed)
    ]
    venv = runtime.env.venv if runtime.env is not None else None
    provided = provided_modules(task, runtime.pristine, venv) if runtime.pristine else (lambda name: True)
    return environment_lacks(log, reasons, provided, missing_system_packages(task))


@dataclass(frozen=True)
class _Prepared:
    """The episode ready for the tests, or (`tests` set) already past them: the one-pass way runs them."""

    filtered: FilteredPatch
    applied_with: str
    canary: Canary | None
    compile_errors: tuple[str, ...]
    sources: XfailReading
    tests: ExecResult | None = None
    tests_s: float = 0.0


def _prepare(task: Task, patch: str, episode: Episode, tests: TestCommand) -> _Prepared | GradeResult:
    """Apply what is accepted of the candidate, then the test patch and the canary, and compile the changed
    Python files (in the test patch's jailed command: one sandbox start, not two; in the one-pass way, the
    tests too); a GradeResult when that already decides the grade."""
    pristine = episode.runtime.pristine
    assert pristine is not None
    pristine_text = _pristine_reader(pristine)
    sources = task_sources(task, pristine)
    test_paths = _test_paths(task, sources)
    command_paths = command_files(task.env.test_cmd, pristine)
    filtered = filter_candidate(patch, test_paths, pristine_text, command_paths)
    if filtered.rejected:
        return _result(task, Outcome.PATCH_APPLY_FAILED, f"patch refused: {filtered.rejected}")
    canary = _plant(
        task, test_paths, sources, onepass.texts_after_test_patch(task.test_patch, episode.layer.lowers)
    )
    applied_with = ""
    # With the network opened, the test run is a command of its own: the applying steps stay offline.
    sections = None if tests.network else onepass.usable(episode, filtered.patch, task.test_patch)
    if sections is not None:
        rules = onepass.Rules(test_paths, pristine_text, command_paths)
        done = _prepare_in_one_pass(task, episode, filtered, sections, tests, rules, canary, sources)
        if done is not None:
            return done
        episode.reset()  # the slow way decides, from the pristine state
    if filtered.patch:
        applied_with, failure = _apply(episode, filtered.patch, "candidate.patch")
        if not applied_with:
            return _result(task, Outcome.PATCH_APPLY_FAILED, failure, ignored=filtered.ignored)
        landed = _protected_paths_changed(episode, test_paths, pristine_text, command_paths)
        if landed:
            detail = f"applying the patch changed paths a candidate may not change: {landed}"
            return _result(task, Outcome.PATCH_APPLY_FAILED, detail, ignored=filtered.ignored)
        if reinstall_if_packaging_changed(episode, filtered.patch, tests.limits) is not None:  # as SWE-bench
            # The install ran the candidate's setup.py, which can write anything in the venv and the tree.
            found = check_reinstall(episode)
            if found:
                detail = f"the install step, run for the patch's packaging changes, changed the venv: {found}"
                return _result(task, Outcome.PATCH_APPLY_FAILED, detail, ignored=filtered.ignored)
            landed = _protected_paths_changed(
                episode, test_paths, pristine_text, command_paths, by_install=True
            )
            if landed:
                detail = f"the install step, run for the patch's packaging changes, changed protected paths: {landed}"
                return _result(task, Outcome.PATCH_APPLY_FAILED, detail, ignored=filtered.ignored)
    compiling = compile_step(episode, filtered.patch, test_paths)
    applied, failure, planted = _apply_test_patch(episode, task.test_patch, canary, compiling)
    if not applied:
        return _result(task, Outcome.INFRA_ERROR, f"the task's test patch does not apply: {failure}")
    errors = compile_report(episode, compiling, "the command that applied the test patch ended first")
    return _Prepared(filtered, applied_with, canary if planted else None, errors, sources)


def _prepare_in_one_pass(
    task: Task,
    episode: Episode,
    filtered: FilteredPatch,
    sections: list,
    tests: TestCommand,
    rules: onepass.Rules,
    canary: Canary | None,
    sources: XfailReading,
) -> _Prepared | GradeResult | None:
    """`_prepare` and the test run in one jailed command (onepass.py); None when the slow way must decide."""
    compiling = compile_step(episode, filtered.patch, rules.test_paths)
    done = onepass.run(episode, filtered.patch, sections, task.test_patch, canary, compiling, tests, rules)
    if done.apply_failure:
        return _result(task, Outcome.PATCH_APPLY_FAILED, done.apply_failure, ignored=filtered.ignored)
    if done.landed:
        detail = f"applying the patch changed paths a candidate may not change: {done.landed}"
        return _result(task, Outcome.PATCH_APPLY_FAILED, detail, ignored=filtered.ignored)
    if done.fallback or done.tests is None:
        return None
    planted = canary if done.planted else None
    return _Prepared(
        filtered, done.applied_with, planted, done.compile_errors, sources, done.tests, done.tests_s
    )


def task_sources(task: Task, pristine: Path) -> XfailReading:
    """The task's trusted test sources (the base commit's checkout with the test patch), read once per task:
    where its required tests are (test_sources.py), which of them an xfail mark can apply to
    (xfail_marks.py)."""
    return reading_for(_framework(task), str(pristine), task.test_patch)


def _framework(task: Task) -> str:
    """The test framework of the task's parser: 'pytest' for every pytest-family parser (pytest-v2, ...)."""
    parser = get_parser(task.env.log_parser)
    return str(getattr(parser, "framework", parser.name))


def _test_paths(task: Task, sources: XfailReading) -> list[str]:
    """What the candidate may not change as tests: the test patch's files and every file that holds a
    required test (a synthetic task's tests are files of the repository that no test patch overwrites, and
    need not look like tests)."""
    required = required_test_files(sources.framework, [*task.FAIL_TO_PASS, *task.PASS_TO_PASS], sources.read)
    return list(dict.fromkeys([*changed_paths(task.test_patch), *required]))


def _plant(
    task: Task, files: list[str], sources: XfailReading, text_of: Callable[[str], str | None]
) -> Canary | None:
    """The canary for this task, in a file of the test patch or one holding a FAIL_TO_PASS test; None when
    the framework or the FAIL_TO_PASS ids leave no place for one. `text_of`: a file's text after the test patch."""
    return plant_canary(
        _framework(task), task.FAIL_TO_PASS, files, may_xfail=sources.may_xfail, text_of=text_of
    )


def _apply_test_patch(
    episode: Episode, test_patch: str, canary: Canary | None, compiling: CompileStep | None = None
) -> tuple[bool, str, bool]:
    """(applied, why not, canary planted): the test patch (when there is one) with git apply and, in the same
    jailed command (one sandbox start, not two), the canary appended by the sandbox uid to its file, never
    through a link, then the compile check when there is one."""
    inbox: list[str] = []
    steps: list[str] = []
    if test_patch.strip():
        inbox.append(episode.put_file("test.patch", test_patch))
        steps.append(f"git apply --whitespace=nowarn {inbox[-1]}")
    marker = ""
    if canary is not None:
        inbox.append(episode.put_file(f"{time.monotonic_ns()}.py", canary.code))
        target = shell_join([canary.path])
        marker = f"planted-{time.monotonic_ns()}"
        writes = ">" if canary.whole_file else ">>"
        steps.append(
            f"{{ test -f {target} && ! test -L {target} && cat {inbox[-1]} {writes} {target} && echo {marker}; true; }}"
        )
    if compiling is not None:
        steps.append(f"{{ {compiling.command} >/dev/null 2>&1; true; }}")
        inbox.append(compiling.script)
    if not steps:
        return True, "", False
    try:
        result = episode.run(" && ".join(steps))
    finally:
        # Nothing the tests run may read the patches: the canary is the one test the task's files lack.
        _remove_from_inbox(episode, *inbox)
    if not result.ok:
        return False, f"git apply: {_tail(result)}", False
    return True, "", bool(marker) and marker in result.output


def _remove_from_inbox(episode: Episode, *jail_paths: str) -> None:
    for jail_path in jail_paths:
        (episode.inbox / PurePosixPath(jail_path).name).unlink(missing_ok=True)


def _apply(
    episode: Episode, patch: str, name: str, strategies: tuple[tuple[str, str], ...] = _APPLY_STRATEGIES
) -> tuple[str, str]:
    """Apply with the first strategy that works; returns (strategy, '') or ('', why it failed)."""
    path = episode.put_file(name, patch)
    failures = []
    try:
        for label, template in strategies:
            result = episode.run(template.format(patch=path))
            if result.ok:
                return label, ""
            failures.append(
                f"{label}: {_tail(result)}"
            )  # git apply is atomic: nothing to undo before the next
    finally:
        _remove_from_inbox(episode, path)
    return "", "; ".join(failures)


def _protected_paths_changed(
    episode: Episode,
    test_paths: list[str],
    pristine_text: PristineText,
    command_paths: list[str],
    by_install: bool = False,
) -> str:
    """What the applied candidate really changed, checked with the same rules as its headers.

    Header parsing can be fooled (quoting, rename headers, patch(1)'s own rules); the working tree
    cannot. Ignored files count too: a .gitignore must not hide a conftest.py. With overlayfs the changed
    paths are read from the episode's upper layer, the kernel's record of what was written (a few ms);
    without it, or when the layer uses features that are not replayed, from a git diff of the whole tree
    in the jail (0.2-2.5 s on pytest's repo).
    """
    overlay = episode.layer.overlay()
    if overlay is not None and overlay.upper is not None:
        changes = layer_changes(overlay.upper, overlay.lowers)
        if changes is not None:
            return check_changes(changes, test_paths, pristine_text, command_paths, by_install=by_install)
    actual, result = episode.diff(include_ignored=True)
    if not result.ok:
        return f"(could not list the changes: {_tail(result)})"
    check = filter_candidate(actual, test_paths, pristine_text, command_paths)
    return check.rejected or ", ".join(i for i in check.ignored if not (by_install and is_build_output(i)))


def command_files(test_cmd: str, pristine: Path) -> list[str]:
    """The repository files a test command names (a runner script such as bin/test, a `-c` file), which a
    candidate must not change: they decide how the tests run and what they print.

    >>> import tempfile; root = Path(tempfile.mkdtemp()); (root / "bin").mkdir()
    >>> _ = (root / "bin" / "test").write_text("")
    >>> command_files("PYTHONPATH=. ./bin/test -C --config=bin/test tests/", root)
    ['bin/test']
    """
    try:
        words = shlex.split(test_cmd)
    except ValueError:
        words = test_cmd.split()
    found: list[str] = []
    for word in words:
        value = word.split("=", 1)[1] if "=" in word else word
        path = value[2:] if value.startswith("./") else value
        if path and not path.startswith(("-", "/")) and path not in found and _inside_file(pristine, path):
            found.append(path)
    return found


def _pristine_reader(pristine: Path) -> PristineText:
    """Read paths of the base commit's checkout, never through a link that leaves it."""

    def read(path: str) -> str:
        return _read(pristine / path) if _inside_file(pristine, path) else ""

    return read


def _inside_file(root: Path, path: str) -> bool:
    try:
        target = (root / path).resolve()
    except (OSError, RuntimeError):
        return False
    return target.is_relative_to(root.resolve()) and target.is_file()


def _tail(result: ExecResult, lines: int = 8) -> str:
    return " | ".join(result.output.strip().splitlines()[-lines:]) or f"exit code {result.exit_code}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError, IsADirectoryError):
        return ""


def _result(task: Task, outcome: Outcome, detail: str, ignored: tuple[str, ...] = ()) -> GradeResult:
    return GradeResult(
        instance_id=task.instance_id,
        outcome=outcome,
        status=ResolvedStatus.NO,
        fail_to_pass={t: None for t in task.FAIL_TO_PASS},
        pass_to_pass={t: None for t in task.PASS_TO_PASS},
        ignored_paths=ignored,
        detail=detail,
    )
