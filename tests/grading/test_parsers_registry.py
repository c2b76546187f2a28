"""The parser registry and the report-reading rules every structured parser shares."""

from __future__ import annotations

import pytest

from repogym.errors import UnknownNameError
from repogym.grading.parsers import LogParser, TestRun, get_parser, log_parsers
from repogym.grading.parsers.common import read_jsonl


def test_the_four_frameworks_and_swebenchs_pytest_variants_are_registered() -> None:
    # pytest-*: SWE-bench's per-repo pytest parsers (how its cut ids map onto the structured report).
    assert log_parsers.names() == [
        "django", "pytest", "pytest-matplotlib", "pytest-options", "pytest-seaborn", "pytest-v2", "sympy", "unittest"
    ]
    for name in log_parsers.names():
        parser = get_parser(name)
        assert isinstance(parser, LogParser) and parser.name == name


@pytest.mark.parametrize(
    ("name", "module"), [("pytest", "repogym_pytest.py"), ("unittest", "repogym_unittest.py")]
)
def test_structured_parsers_ship_the_module_their_command_loads(name: str, module: str) -> None:
    parser = get_parser(name)
    assert parser.plugin_dir is not None and (parser.plugin_dir / module).is_file()
    assert module.removesuffix(".py") in parser.command("", [], "/out/report.jsonl")


def test_log_parsers_need_no_plugin() -> None:
    assert get_parser("sympy").plugin_dir is None and get_parser("django").plugin_dir is None


def test_unknown_name_suggests_the_close_one() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'pytest'"):
        get_parser("pytset")


def test_dotted_path_to_something_else_is_refused() -> None:
    with pytest.raises(UnknownNameError, match="lacks name, plugin_dir"):
        get_parser("os.path:basename")


def test_report_cut_mid_line_by_a_kill_has_no_finish_but_is_well_formed() -> None:
    text = '{"event": "start"}\n{"event": "test", "nodeid": "t.py::a", "when": "call", "outcome": "passed"}\n{"ev'
    report = read_jsonl(text)
    assert report.problem == "" and report.finish is None and len(report.records) == 1


def test_garbage_line_in_the_middle_is_tampering() -> None:
    text = '{"event": "start"}\nPASSED t.py::a\n{"event": "sessionfinish", "exitstatus": 0, "records": 0}\n'
    assert read_jsonl(text).problem == "report line 2 is not a JSON object"


def test_records_after_sessionfinish_are_tampering() -> None:
    lines = [
        '{"event": "start"}',
        '{"event": "sessionfinish", "exitstatus": 1, "records": 0}',
        '{"event": "test", "nodeid": "t.py::a", "when": "call", "outcome": "passed"}',
    ]
    report = read_jsonl("\n".join(lines) + "\n")
    assert report.problem == "records follow the sessionfinish record"
    parsed = get_parser("pytest").parse(TestRun("", "\n".join(lines) + "\n", 1))
    assert not parsed.collected and parsed.results == {}
