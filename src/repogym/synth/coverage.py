"""Which test runs which line: one coverage run of the whole suite in the sandbox, once per repo state.

The suite runs under pytest with repogym's report plugin (statuses, cross-checked with the exit code, as the
grader reads them) and the `repogym_coverage` plugin (per-test line contexts from the `coverage` package).
The result is cached beside the task set's repository, keyed by the commit and the environment, so a second
`repogym synth` of the same state runs nothing.

coverage gets into the jail as an ordinary package of the task's environment (EnvSpec.packages), so it is
built for the task's interpreter like everything else there; the plugin itself is bound read-only.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from repogym.errors import ConfigError, DatasetError
from repogym.files import write_json
from repogym.grading.parsers import TestRun, get_parser
from repogym.grading.parsers.common import with_args
from repogym.grading.parsers.pytest import DEFAULT_TEST_CMD
from repogym.grading.report import TestStatus
from repogym.sandbox.base import OUT_DIR, Bind, plugin_binds, read_jail_file
from repogym.sandbox.runtime import TaskRuntime

PLUGIN_DIR = Path(__file__).resolve().parent / "coverage_plugin"
PLUGIN_MOUNT = "/opt/repogym/synth-plugins"
COLLECT_PREFIX = "collect::"
_VERSION = 3


@dataclass(frozen=True)
class CoverageMap:
    """Per-test line coverage of one repo state, and how each test ended in that run."""

    tests: tuple[str, ...]
    """pytest node ids; the map refers to them by index."""
    lines: dict[str, dict[int, frozenset[int]]]
    """file -> line -> indices of the tests that ran it."""
    statuses: dict[str, TestStatus]
    seconds: float = 0.0
    import_lines: dict[str, dict[int, frozenset[int]]] = field(default_factory=dict)
    """file -> line -> indices of the tests whose module ran it while being imported. Such a line does not
    make a function worth mutating (no test exercises it), but a bug there reaches those tests."""

    @functools.cached_property
    def passing(self) -> frozenset[int]:
        """Indices of the tests that passed (only they can become FAIL_TO_PASS or PASS_TO_PASS)."""
        return frozenset(
            i for i, t in enumerate(self.tests) if (s := self.statuses.get(t)) is not None and s.ok
        )

    @property
    def test_files(self) -> tuple[str, ...]:
        """The files of every test the run reported, in the order first seen."""
        files: dict[str, None] = {}
        for test_id in self.statuses:
            files.setdefault(test_id.split("::", 1)[0], None)
        return tuple(files)

    def tests_on(self, file: str, lines: Iterable[int], *, imports: bool = False) -> set[int]:
        """Passing tests that ran any of `lines` of `file` (with `imports`, also those whose module ran
        them when it was imported)."""
        maps = (self.lines, self.import_lines) if imports else (self.lines,)
        found: set[int] = set()
        for line in lines:
            for by_line in maps:
                found |= by_line.get(file, {}).get(line, frozenset())
        return found & self.passing

    def to_dict(self) -> dict:
        return {
            "version": _VERSION,
            "tests": list(self.tests),
            "lines": _dump(self.lines),
            "import_lines": _dump(self.import_lines),
            "statuses": {t: s.value for t, s in self.statuses.items()},
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, data: dict, where: str) -> CoverageMap:
        try:
            if data.get("version") != _VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            return cls(
                tests=tuple(data["tests"]),
                lines=_load(data["lines"]),
                import_lines=_load(data.get("import_lines", {})),
                statuses={t: TestStatus(s) for t, s in data["statuses"].items()},
                seconds=float(data.get("seconds", 0.0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DatasetError(f"{where}: not a coverage map ({exc}); delete it to measure again") from None


def _dump(lines: dict[str, dict[int, frozenset[int]]]) -> dict:
    return {f: {str(n): sorted(t) for n, t in by.items()} for f, by in lines.items()}


def _load(data: dict) -> dict[str, dict[int, frozenset[int]]]:
    return {f: {int(n): frozenset(t) for n, t in by.items()} for f, by in data.items()}


def _read_map(raw: dict, statuses: dict[str, TestStatus], seconds: float) -> CoverageMap:
    """The plugin's output as a CoverageMap: a module's import-time context becomes all of its tests, in
    `import_lines`.

    >>> raw = {"tests": ["t.py::a", "collect::t.py"], "files": {"m.py": {"3": [0], "1": [1]}}}
    >>> P = TestStatus.PASSED
    >>> m = _read_map(raw, {"t.py::a": P, "t.py::b": P}, 0.0)
    >>> m.tests, {n: sorted(t) for n, t in m.lines["m.py"].items()}, sorted(m.import_lines["m.py"][1])
    (('t.py::a', 't.py::b'), {3: [0]}, [0, 1])
    """
    contexts = list(raw.get("tests", ()))
    tests = [c for c in contexts if not c.startswith(COLLECT_PREFIX)]
    seen = set(tests)
    tests += [t for t in statuses if t not in seen]
    index = {t: i for i, t in enumerate(tests)}
    by_file: dict[str, list[int]] = {}
    for test in tests:
        by_file.setdefault(test.split("::", 1)[0], []).append(index[test])
    lines: dict[str, dict[int, frozenset[int]]] = {}
    import_lines: dict[str, dict[int, frozenset[int]]] = {}
    for file, by_line in raw.get("files", {}).items():
        for number, ids in by_line.items():
            ran = [contexts[int(i)] for i in ids]
            direct = frozenset(index[c] for c in ran if not c.startswith(COLLECT_PREFIX))
            imported = frozenset(
                i
                for c in ran
                if c.startswith(COLLECT_PREFIX)
                for i in by_file.get(c[len(COLLECT_PREFIX) :], [])
            )
            if direct:
                lines.setdefault(file, {})[int(number)] = direct
            if imported:
                import_lines.setdefault(file, {})[int(number)] = imported
    return CoverageMap(tuple(tests), lines, statuses, round(seconds, 3), import_lines)


def measure(runtime: TaskRuntime, cache_file: Path | None = None) -> CoverageMap:
    """Run the suite once with per-test coverage at the runtime's commit (or read the cached result).

    Raises ConfigError when the suite cannot tell anything: not a pytest suite, no test collected, a run
    that is not trusted (the message carries the log's tail).
    """
    if cache_file is not None and cache_file.exists():
        cached = json.loads(cache_file.read_text(encoding="utf-8"))
        if cached.get("version") == _VERSION:  # an older repogym's map is measured again
            return CoverageMap.from_dict(cached, str(cache_file))
    task = runtime.task
    if task.env.log_parser != "pytest":
        raise ConfigError(
            f"{task.repo}: env.log_parser is {task.env.log_parser!r}; synth measures coverage with pytest "
            "(any suite pytest can collect, unittest ones included): set log_parser 'pytest'"
        )
    parser = get_parser("pytest")
    started = time.perf_counter()
    report_name, coverage_name = f"synth-report-{time.monotonic_ns()}.jsonl", "synth-coverage.json"
    test_cmd = with_args(task.env.test_cmd or DEFAULT_TEST_CMD, "-p repogym_coverage")
    command = (
        f'export PYTHONPATH={PLUGIN_MOUNT}"${{PYTHONPATH:+:$PYTHONPATH}}" '
        f"REPOGYM_COVERAGE_FILE={OUT_DIR}/{coverage_name}; "
        + parser.command(test_cmd, [], f"{OUT_DIR}/{report_name}")
    )
    with runtime.episode() as episode:
        # episode.run, as every test run: the task's test_env applies and the report launcher is bound.
        result = episode.run(command, binds=(Bind(PLUGIN_DIR, PLUGIN_MOUNT), *plugin_binds(parser.plugin_dir)))
        report_text = read_jail_file(episode.layer.out / report_name)
        coverage_text = read_jail_file(episode.layer.out / coverage_name)
    report = parser.parse(TestRun(result.output, report_text, result.exit_code, result.timed_out))
    tail = "\n".join(result.output.strip().splitlines()[-12:])
    if not report.results:
        raise ConfigError(
            f"{task.repo} at {task.base_commit[:12]}: the test suite gave no result to build on "
            f"({report.note or 'no tests collected'}); synth needs a pytest suite that runs. Log tail:\n{tail}"
        )
    if coverage_text is None:
        raise ConfigError(
            f"{task.repo}: the coverage plugin wrote nothing (is 'coverage' installable in the environment?). "
            f"Log tail:\n{tail}"
        )
    coverage = _read_map(json.loads(coverage_text), report.statuses(), time.perf_counter() - started)
    if cache_file is not None:
        write_json(cache_file, coverage.to_dict())
    return coverage
