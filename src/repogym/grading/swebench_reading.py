"""SWE-bench's own reading of a saved test log: its log parser for the task's repository and its resolution
rule, taken from the installed `swebench` package (the optional extra `repogym[swebench]`), never copied here.

repogym's verdict comes from its structured report; this reading is the check that the verdict is the one
SWE-bench's harness would give on the same run (`repogym tasks check` re-reads every saved log with it).

Guarantees:
- The parser and the rule are the installed version's, looked up by the names that version uses: the
  repository -> parser map (`log_parsers.MAP_REPO_TO_PARSER`, or `log_parsers.python.MAP_REPO_TO_PARSER_PY`
  since 4.x), `grading.get_eval_tests_report` and `grading.get_resolution_status`, `constants.ResolvedStatus`.
- Without the package (or with one whose harness does not import), `load_reader` says why and nothing reads.

Not guaranteed: SWE-bench's harness also refuses a run whose log lacks its own start/end markers or its exit
code line (its eval script prints them); repogym's logs have neither, so the parser reads the whole log, as
SWE-bench's own fallback does.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from repogym.task import Task

#: What `pip install` needs for the reading (the package's own name on the index).
PACKAGE = "swebench"


@dataclass(frozen=True)
class SwebenchReader:
    """SWE-bench's parsers and resolution rule, as the installed package has them."""

    version: str
    parsers: Mapping[str, Callable[..., dict[str, str]]]
    """Repository ("owner/name") -> SWE-bench's log parser for it."""
    grading: Any
    """The module `swebench.harness.grading`."""
    constants: Any
    """The module `swebench.harness.constants`."""

    def statuses(self, task: Task, log: str) -> dict[str, str] | None:
        """Test id -> status word as SWE-bench's parser for the task's repository reads `log` (None when SWE-bench
        has no parser for the repository)."""
        parser = self.parsers.get(task.repo)
        if parser is None:
            return None
        # Its parsers took (log) before 3.0 and (log, test_spec) since; the Python ones never read the spec.
        takes_spec = len(inspect.signature(parser).parameters) > 1
        return dict(parser(log, None) if takes_spec else parser(log))

    def resolved(self, task: Task, log: str) -> bool | None:
        """SWE-bench's FULL on `log` for `task` (None when SWE-bench has no parser for its repository)."""
        statuses = self.statuses(task, log)
        if statuses is None:
            return None
        f2p, p2p = self.constants.FAIL_TO_PASS, self.constants.PASS_TO_PASS
        report = self.grading.get_eval_tests_report(
            statuses, {f2p: task.FAIL_TO_PASS, p2p: task.PASS_TO_PASS}
        )
        return bool(self.grading.get_resolution_status(report) == self.constants.ResolvedStatus.FULL.value)


def load_reader() -> tuple[SwebenchReader | None, str]:
    """(the installed SWE-bench's reader, '') or (None, why there is none: the package to install, or the
    import error of an installed one)."""
    try:
        package = importlib.import_module(PACKAGE)
    except ImportError:
        return None, f"SWE-bench is not installed (pip install 'repogym[swebench]', or pip install {PACKAGE})"
    try:
        # Imported by name: an optional extra, heavy (its harness imports docker and modal), and only here.
        log_parsers = importlib.import_module("swebench.harness.log_parsers")
        grading = importlib.import_module("swebench.harness.grading")
        constants = importlib.import_module("swebench.harness.constants")
    except Exception as exc:  # a broken install: any import error of its dependencies
        return (
            None,
            f"SWE-bench {getattr(package, '__version__', '?')} is installed but does not import: {exc}",
        )
    parsers = getattr(log_parsers, "MAP_REPO_TO_PARSER", None)
    if parsers is None:
        python = importlib.import_module("swebench.harness.log_parsers.python")
        parsers = getattr(python, "MAP_REPO_TO_PARSER_PY", None)
    if parsers is None:
        return None, "the installed SWE-bench names no repository -> log parser map this reader knows"
    return SwebenchReader(str(getattr(package, "__version__", "?")), dict(parsers), grading, constants), ""
