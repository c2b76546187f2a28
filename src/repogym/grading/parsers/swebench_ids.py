"""SWE-bench's test ids for pytest runs: how its log parsers read printed lines, and how repogym maps the ids
they give onto the node ids of its structured report.

SWE-bench's pytest-family parsers (swebench/harness/log_parsers/python.py) read the printed log line by
line: a line that starts with a status word (PASSED, FAILED, SKIPPED, ERROR, XFAIL) gives a test id, the
first whitespace-separated token after the word, and a later line with the same id wins. pytest's ``-rA``
summary prints ``PASSED tests/t.py::test_x[a b]``, so the id read is ``tests/t.py::test_x[a``; a line of
captured output that starts with a status word gives an id that names no test (``[100%]``). SWE-bench's
FAIL_TO_PASS / PASS_TO_PASS lists hold ids read this way (28 of the 300 Lite instances have a cut one).

The readings, one per SWE-bench parser (rules restated from its source, not copied):

- ``pytest`` (parse_log_pytest; flask, pytest, xarray, sqlfluff, astroid, marshmallow, pvlib, pyvista):
  FAILED lines have `` - `` replaced by a space first; the id is the second token.
- ``pytest-options`` (parse_log_pytest_options; requests, pylint, pydicom): as ``pytest``, then an id
  ``main[option]`` whose option starts with one ``/`` and has no ``*`` keeps only the option's last path part.
- ``pytest-v2`` (parse_log_pytest_v2; astropy, scikit-learn, sphinx): ``[<digits>m`` colour codes and control
  characters are removed first; a line ending in a status word (``-v`` output) gives its first token.
- ``pytest-matplotlib`` (parse_log_matplotlib): as ``pytest`` after ``MouseButton.LEFT`` / ``.RIGHT`` become
  ``1`` / ``3``.
- ``pytest-seaborn`` (parse_log_seaborn): only FAILED and PASSED lines (and ``-v`` lines with `` PASSED ``).

The mapping (`required_result`) keeps the structured report the source of truth: an id the report has is
judged by the report alone; another id is mapped onto the report's tests whose own summary line would read
as that id, and the printed status only chooses among them, as SWE-bench's last line does. A printed PASSED
or XFAIL that none of those tests has in the report is not believed, so a forged line cannot pass a test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from repogym.grading.report import TestResult, TestStatus

#: SWE-bench's status words, in its enum's order (a line is read when it starts with one of them).
STATUS_WORDS = ("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")

_OPTION = re.compile(r"(.*?)\[(.*)\]")
_COLOUR = re.compile(r"\[(\d+)m")
_CONTROL = str.maketrans("", "", "".join(chr(code) for code in range(1, 32)))


def _read_pytest(log: str, line_fix: Callable[[str], str] = lambda line: line) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for raw in log.split("\n"):
        line = line_fix(raw)
        if not line.startswith(STATUS_WORDS):
            continue
        if line.startswith("FAILED"):
            line = line.replace(" - ", " ")
        words = line.split()
        if len(words) > 1:
            statuses[words[1]] = words[0]
    return statuses


def _read_options(log: str) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for test_id, status in _read_pytest(log).items():
        match = _OPTION.search(test_id)
        if match:
            main, option = match.groups()
            if option.startswith("/") and not option.startswith("//") and "*" not in option:
                option = "/" + option.split("/")[-1]
            test_id = f"{main}[{option}]"
        statuses[test_id] = status
    return statuses


def _read_v2(log: str) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for raw in log.split("\n"):
        line = _COLOUR.sub("", raw).translate(_CONTROL)
        if line.startswith(STATUS_WORDS):
            if line.startswith("FAILED"):
                line = line.replace(" - ", " ")
            words = line.split()
            if len(words) >= 2:
                statuses[words[1]] = words[0]
        elif line.endswith(STATUS_WORDS):
            words = line.split()
            if len(words) >= 2:
                statuses[words[0]] = words[1]
    return statuses


def _read_matplotlib(log: str) -> dict[str, str]:
    return _read_pytest(
        log, lambda line: line.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3")
    )


def _read_seaborn(log: str) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for line in log.split("\n"):
        if line.startswith("FAILED"):
            statuses[line.split()[1]] = "FAILED"
        elif " PASSED " in line:
            words = line.split()
            if words[1] == "PASSED":
                statuses[words[0]] = "PASSED"
        elif line.startswith("PASSED"):
            statuses[line.split()[1]] = "PASSED"
    return statuses


READINGS: dict[str, Callable[[str], dict[str, str]]] = {
    "pytest": _read_pytest,
    "pytest-options": _read_options,
    "pytest-v2": _read_v2,
    "pytest-matplotlib": _read_matplotlib,
    "pytest-seaborn": _read_seaborn,
}


def read_printed(log: str, reading: str = "pytest") -> dict[str, str]:
    """Test id -> status word, as SWE-bench's parser `reading` reads `log` (the last line wins).

    >>> read_printed("PASSED t.py::test_p[a b]\\nFAILED t.py::test_q - assert 0\\nPASSED [100%]")
    {'t.py::test_p[a': 'PASSED', 't.py::test_q': 'FAILED', '[100%]': 'PASSED'}
    >>> read_printed("PASSED t.py::test_p[/tmp/x/y.txt]", "pytest-options")
    {'t.py::test_p[/y.txt]': 'PASSED'}
    """
    return READINGS[reading](log)


def printed_id(node_id: str, status: TestStatus, reading: str = "pytest") -> str:
    """The id `reading` gives the node's own ``-rA`` summary line ('' when it reads none).

    A skipped test's summary line names its location, not the node, so it is keyed as if it had passed.

    >>> printed_id("t.py::test_p[a b]", TestStatus.FAILED), printed_id("t.py::test_p[x\\\\ny]", TestStatus.PASSED)
    ('t.py::test_p[a', 't.py::test_p[x\\\\ny]')
    """
    word = "PASSED" if status is TestStatus.SKIPPED else status.value
    return next(iter(read_printed(f"{word} {node_id}", reading)), "")


def names_a_test(test_id: str) -> bool:
    """Whether a pytest-family id can name a test (a node id, or a file for a collection error); SWE-bench
    also took ids from captured output that starts with a status word (``[100%]``), which name none.

    >>> names_a_test("testing/t.py::test_x[a"), names_a_test("testing/t.py"), names_a_test("[100%]")
    (True, True, False)
    """
    return bool(id_file(test_id))


def id_file(test_id: str) -> str:
    """The file a pytest-style id names ('' for an id that names none).

    >>> id_file("tests/t.py::T::test_x[a"), id_file("tests/t.py"), id_file("test_x (m.T)")
    ('tests/t.py', 'tests/t.py', '')
    """
    return test_id.split("::", 1)[0] if "::" in test_id else test_id if test_id.endswith(".py") else ""


def required_result(
    test_id: str,
    results: Mapping[str, TestResult],
    printed: Mapping[str, str],
    reading: str = "pytest",
) -> TestResult | None:
    """The result that decides `test_id`, a FAIL_TO_PASS or PASS_TO_PASS id: the report's own result for an
    id it has; else, for an id SWE-bench cut, a result of the report's tests whose summary line reads as it,
    chosen by the status printed last; None when no test of the run reads as it.

    >>> P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED
    >>> results = {"t.py::p[a b]": TestResult("t.py::p[a b]", F), "t.py::p[a c]": TestResult("t.py::p[a c]", P)}
    >>> required_result("t.py::p[a", results, {"t.py::p[a": "PASSED"}).test_id  # SWE-bench's last line
    't.py::p[a c]'
    >>> required_result("t.py::p[a", results, {"t.py::p[a": "FAILED"}).status.value
    'FAILED'
    >>> alone = {"t.py::p[a b]": TestResult("t.py::p[a b]", F)}
    >>> required_result("t.py::p[a", alone, {"t.py::p[a": "PASSED"}).status.value  # a forged line
    'FAILED'
    >>> required_result("t.py::p[a b]", results, {"t.py::p[a": "PASSED"}).status.value  # a node id: the report
    'FAILED'
    """
    if test_id in results:
        return results[test_id]
    backing = [r for node, r in results.items() if printed_id(node, r.status, reading) == test_id]
    if not backing:
        return None
    word = printed.get(test_id)
    if word is None:
        # Skipped tests print no line of their own; a cut id whose every test was skipped is skipped.
        skipped = [r for r in backing if r.status is TestStatus.SKIPPED]
        return skipped[0] if len(skipped) == len(backing) else None
    matching = [r for r in backing if r.status.value == word]
    if matching and matching[0].status.ok:
        return matching[0]
    failing = [r for r in backing if not r.status.ok]
    if failing:
        return failing[0]
    # The printed word is a failure (or no status at all) but every test behind it passed in the report: the
    # line came from output, not from pytest's summary. The report's own view decides, except that a PASS it
    # did not print is no PASS of SWE-bench's either.
    return TestResult(test_id, TestStatus.FAILED)
