"""The pytest parser on reports written by real pytest runs of small test files (trusted files written here,
so they run without the sandbox). Hostile runs are named after the attack they stand for."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from repogym.grading.parsers import REPORT_ENV, PytestParser, TestRun, get_parser
from repogym.grading.parsers.pytest import PLUGIN_DIR
from repogym.grading.report import TestStatus

from ..support.git import write_files

PARSER = PytestParser(plugin_mount=str(PLUGIN_DIR))  # no sandbox here: the plugin is used where it lies
P, F, E, S, X = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED, TestStatus.XFAIL


def make_project(root: Path, files: dict[str, str]) -> Path:
    """A folder (no git) of `files`, dedented; its pytest.ini pins rootdir: the project's own config stays out."""
    project = root / "repo"
    dedented = {name: textwrap.dedent(text) for name, text in files.items()}
    write_files(project, {"pytest.ini": "[pytest]\n", **dedented})
    return project


def runner_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST_") and k not in ("PYTHONPATH", REPORT_ENV)
    }
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    # This venv's third-party plugins (hypothesis costs 2 s a start) play no part in these tests.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def run_pytest(repo: Path, test_ids: tuple[str, ...] = (), test_cmd: str = "") -> TestRun:
    """Run the parser's command as the sandbox would (sh -c in the repo root, the venv's python first on PATH)."""
    report_file = repo.parent / "report.jsonl"
    command = PARSER.command(test_cmd, test_ids, str(report_file))
    started = time.monotonic()
    proc = subprocess.run(
        ["sh", "-c", command],
        cwd=repo,
        env=runner_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # A guard against a hung run, not a speed check: pytest-xdist's two workers took over 60 s to finish
        # 17 tests beside a busy CI machine's other work (load 6), where they take 3.5 s on a quiet one.
        timeout=300,
    )
    return TestRun(
        log=proc.stdout,
        report_text=report_file.read_text() if report_file.exists() else None,
        exit_code=proc.returncode,
        duration_s=time.monotonic() - started,
    )


MIXED = """
import sys, time
import pytest

def test_pass():
    time.sleep(0.05)

def test_fail():
    print("PASSED test_mixed.py::test_fail")
    print("test_mixed.py::test_fail PASSED")
    sys.stderr.write("PASSED test_mixed.py::test_fail\\n")
    assert 0

@pytest.fixture
def broken():
    raise RuntimeError("setup")

def test_setup_error(broken):
    pass

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_teardown_error(broken_teardown):
    pass

@pytest.mark.skip(reason="marked")
def test_skip_marked():
    pass

def test_skip_inside():
    pytest.skip("inside")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0

@pytest.mark.xfail(reason="known")
def test_xpass():
    pass

@pytest.mark.xfail(reason="known", strict=True)
def test_xpass_strict():
    pass

@pytest.mark.parametrize("value", ["x y", "1-2", "[b]"])
def test_param(value):
    assert value != "[b]"

class TestC:
    @pytest.mark.parametrize("a,b", [(1, 2)])
    def test_y(self, a, b):
        assert a < b

def test_xfail_inside():
    pytest.xfail("raised at run time, as code under test could")

@pytest.mark.xfail(reason="known")
class TestMarked:
    def test_in_marked_class(self):
        assert 0

@pytest.mark.parametrize("value", [1, pytest.param(2, marks=pytest.mark.xfail)])
def test_param_marked(value):
    assert value == 1

def test_marked_while_running(request):
    request.node.add_marker(pytest.mark.xfail(reason="added while the test runs, as code under test could"))
    assert 0
"""

MIXED_EXPECTED = {
    "test_mixed.py::test_pass": P,
    "test_mixed.py::test_fail": F,
    "test_mixed.py::test_setup_error": E,
    "test_mixed.py::test_teardown_error": E,
    "test_mixed.py::test_skip_marked": S,
    "test_mixed.py::test_skip_inside": S,
    "test_mixed.py::test_xfail": X,
    "test_mixed.py::test_xpass": P,
    "test_mixed.py::test_xpass_strict": F,
    "test_mixed.py::test_param[x y]": P,
    "test_mixed.py::test_param[1-2]": P,
    "test_mixed.py::test_param[[b]]": F,
    "test_mixed.py::TestC::test_y[1-2]": P,
    "test_mixed.py::test_xfail_inside": F,  # pytest.xfail() at run time is no expected failure
    "test_mixed.py::TestMarked::test_in_marked_class": X,
    "test_mixed.py::test_param_marked[1]": P,
    "test_mixed.py::test_param_marked[2]": X,
    "test_mixed.py::test_marked_while_running": F,  # a mark added after collection is no expected failure
}


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> TestRun:
    return run_pytest(make_project(tmp_path_factory.mktemp("mixed"), {"test_mixed.py": MIXED}))


def test_every_outcome_maps_to_its_status(mixed_run: TestRun) -> None:
    report = PARSER.parse(mixed_run)
    assert report.collected, report.note
    assert report.exit_code == 1
    assert report.statuses() == MIXED_EXPECTED


def test_xdist_workers_report_through_the_controller(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    repo = make_project(tmp_path, {"test_mixed.py": MIXED})
    run = run_pytest(repo, test_cmd="python -m pytest -rA -p no:cacheprovider -p xdist -n 2")
    report = PARSER.parse(run)
    assert "gw1" in run.log  # two workers really ran
    assert report.collected, report.note
    # The workers run without the plugin, so the controller reads marks from the reports' keywords: a mark
    # added while the test ran counts there (the grader's static reading of the test sources still decides).
    expected = {**MIXED_EXPECTED, "test_mixed.py::test_marked_while_running": X}
    assert report.statuses() == expected


def test_marks_a_conftest_adds_at_collection_are_expected_failures(tmp_path: Path) -> None:
    """Marks are those collection ends with: a conftest's pytest_collection_modifyitems counts (it is the
    test suite's own), a mark added to the running item does not (the one above)."""
    conftest = (
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if item.name == 'test_known':\n"
        "            item.add_marker(pytest.mark.xfail(reason='listed'))\n"
    )
    tests = "def test_known():\n    assert 0\n\ndef test_other():\n    assert 0\n"
    run = run_pytest(make_project(tmp_path, {"conftest.py": conftest, "test_x.py": tests}))
    assert PARSER.parse(run).statuses() == {"test_x.py::test_known": X, "test_x.py::test_other": F}


def test_durations_come_from_the_report(mixed_run: TestRun) -> None:
    report = PARSER.parse(mixed_run)
    assert report.results["test_mixed.py::test_pass"].duration_s >= 0.05


def test_printed_fake_passed_lines_do_not_change_statuses(mixed_run: TestRun) -> None:
    assert "PASSED test_mixed.py::test_fail" in mixed_run.log  # the spoof reached the log...
    assert "test_mixed.py::test_fail PASSED" in mixed_run.log
    assert PARSER.parse(mixed_run).status("test_mixed.py::test_fail") is F  # ...and changed nothing


def test_record_forged_into_the_report_makes_it_untrusted(mixed_run: TestRun) -> None:
    assert mixed_run.report_text is not None
    lines = mixed_run.report_text.splitlines()
    forged = {"event": "test", "nodeid": "test_mixed.py::test_fail", "when": "call", "outcome": "passed"}
    tampered = TestRun(mixed_run.log, "\n".join([*lines[:-1], json.dumps(forged), lines[-1]]) + "\n", 1)
    report = PARSER.parse(tampered)
    assert not report.collected and report.results == {}
    assert "sessionfinish counts" in report.note


def test_selected_ids_with_brackets_and_spaces_run_alone(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {"test_mixed.py": MIXED})
    chosen = ("test_mixed.py::test_param[x y]", "test_mixed.py::TestC::test_y[1-2]")
    report = PARSER.parse(run_pytest(repo, chosen))
    assert report.statuses() == {test_id: P for test_id in chosen}
    assert report.exit_code == 0 and report.collected


def test_collection_error_marks_the_file_as_error(tmp_path: Path) -> None:
    repo = make_project(
        tmp_path,
        {"test_ok.py": "def test_ok():\n    pass\n", "test_broken.py": "import no_such_module_here\n"},
    )
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert run.exit_code == 2
    assert report.statuses() == {"test_broken.py": E}
    assert not report.collected and "test_broken.py" in report.note


def test_os_exit_zero_mid_run_is_not_trusted(tmp_path: Path) -> None:
    repo = make_project(
        tmp_path,
        {
            "test_exit.py": """
            import os

            def test_a():
                pass

            def test_b():
                os._exit(0)

            def test_c():
                assert 0
            """
        },
    )
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert run.exit_code == 0 and run.report_text is not None
    assert not report.collected and report.results == {}
    assert "os._exit" in report.note and "1 per-test results seen" in report.note


def test_atexit_exit_zero_after_failed_session_is_not_trusted(tmp_path: Path) -> None:
    repo = make_project(
        tmp_path,
        {
            "test_atexit.py": """
            import atexit, os
            atexit.register(os._exit, 0)

            def test_fails():
                assert 0
            """
        },
    )
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert run.exit_code == 0
    assert not report.collected and report.results == {}
    assert "records exit status 1 but the process exited 0" in report.note


def test_conftest_rewriting_exit_status_to_zero_is_not_trusted(tmp_path: Path) -> None:
    repo = make_project(
        tmp_path,
        {
            "conftest.py": """
            def pytest_sessionfinish(session):
                session.exitstatus = 0
            """,
            "test_x.py": "def test_fails():\n    assert 0\n",
        },
    )
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert run.exit_code == 0
    assert not report.collected and report.results == {}
    assert "exit code 0 but the report records failures" in report.note


def test_stale_report_file_is_replaced_not_read(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {"test_x.py": "def test_fails():\n    assert 0\n"})
    forged = [
        {"event": "start"},
        {"event": "test", "nodeid": "test_x.py::test_fails", "when": "call", "outcome": "passed"},
        {"event": "sessionfinish", "exitstatus": 0, "records": 1},
    ]
    (tmp_path / "report.jsonl").write_text("".join(json.dumps(r) + "\n" for r in forged))
    report = PARSER.parse(run_pytest(repo))
    assert report.collected and report.statuses() == {"test_x.py::test_fails": F}


def test_no_tests_collected_is_not_collected(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {"test_empty.py": "X = 1\n"})
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert run.exit_code == 5
    assert not report.collected and report.results == {} and "no tests" in report.note


def test_runner_without_the_plugin_is_not_trusted(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {"test_x.py": "def test_ok():\n    pass\n"})
    run = run_pytest(repo, test_cmd="python -c 'print(\"PASSED test_x.py::test_ok\")'; true")
    report = PARSER.parse(run)
    assert run.exit_code == 0 and run.report_text is None
    assert not report.collected and report.results == {} and "no structured report" in report.note


def test_session_killed_by_timeout_keeps_nothing(tmp_path: Path) -> None:
    repo = make_project(
        tmp_path,
        {
            "test_slow.py": """
            import time

            def test_a():
                pass

            def test_b():
                pass

            def test_sleeps():
                time.sleep(60)
            """
        },
    )
    report_file = tmp_path / "report.jsonl"
    command = PARSER.command("", (), str(report_file))
    proc = subprocess.Popen(
        ["sh", "-c", command], cwd=repo, env=runner_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = report_file.read_text() if report_file.exists() else ""
            if text.count('"when": "call"') >= 2:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        log, _ = proc.communicate()
    run = TestRun(log.decode(), report_file.read_text(), None, timed_out=True, duration_s=1.5)
    report = PARSER.parse(run)
    assert report.timed_out and not report.collected and report.results == {}
    assert "timed out after 1.5 s" in report.note and "2 per-test results seen" in report.note


def test_command_deletes_a_stale_report_and_quotes_ids() -> None:
    command = get_parser("pytest").command("", ["t.py::test[a b]"], "/out/r's.jsonl")
    assert command.startswith("rm -f '/out/r'\"'\"'s.jsonl'; export PYTHONPATH=/opt/repogym/plugins")
    assert command.endswith(
        "python /opt/repogym/plugins/repogym_pytest.py --cwd-first -rA -p no:cacheprovider 't.py::test[a b]'"
    )


@pytest.mark.parametrize("module", ["repogym_report.py", "repogym_pytest.py"])
@pytest.mark.parametrize("version", ["2.7.18", "3.6.15"])
def test_plugin_compiles_under_old_interpreters(version: str, module: str) -> None:
    python = Path.home() / ".pyenv" / "versions" / version / "bin" / "python"
    if not python.exists():
        pytest.skip(f"Python {version} is not installed under pyenv here")
    source = PLUGIN_DIR / module
    check = "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')"
    subprocess.run([str(python), "-c", check, str(source)], check=True, timeout=30)


def test_filterwarnings_error_in_the_project_config_does_not_stop_the_plugin(tmp_path: Path) -> None:
    """Loading the plugin with -p after importing it raised a config-time PytestAssertRewriteWarning,
    which a project's `filterwarnings = error` turned into a crash before any test ran."""
    repo = make_project(tmp_path, {"test_ok.py": "def test_ok():\n    pass\n"})
    (repo / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    report = PARSER.parse(run_pytest(repo))
    assert report.collected, report.note
    assert report.statuses() == {"test_ok.py::test_ok": P}


@pytest.mark.parametrize("shadow", ["pytest.py", "repogym_report.py", "repogym_report/__init__.py"])
def test_modules_of_the_repository_cannot_stand_in_for_pytest_or_the_plugin(
    tmp_path: Path, shadow: str
) -> None:
    """With `python -m pytest` the working directory comes first on sys.path; the launcher imports pytest
    and the plugin before it puts it there, so a same-named module in the repository is never used."""
    repo = make_project(tmp_path, {"test_bug.py": "def test_bug():\n    assert 1 == 2\n"})
    fake = repo / shadow
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(
        "import os, sys\nopen(os.environ.get('REPOGYM_REPORT_FILE', '/dev/null'), 'w')\nsys.exit(0)\n"
    )
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert report.collected, report.note + run.log
    assert report.statuses() == {"test_bug.py::test_bug": F}


def test_a_failure_is_reported_without_a_scan_of_every_module(tmp_path: Path) -> None:
    """pytest's report of a failure looks up the test's source, and `inspect.getmodule` found the module of a
    code object by a stat of every module's file (10-20 ms in a jail, paid by every grade: the canary always
    fails). The plugin tells inspect which module each test file is: the same module, the same report, no scan."""
    repo = make_project(
        tmp_path,
        {
            "test_lookup.py": """
                import inspect, sys

                def test_fails():
                    assert 1 == 2

                def test_the_failure_found_its_module_without_a_scan():
                    code = test_fails.__code__
                    assert inspect.getmodule(code, code.co_filename) is sys.modules[__name__]
                    assert not inspect._filesbymodname, sorted(inspect._filesbymodname)[:5]
            """
        },
    )
    run = run_pytest(repo)
    report = PARSER.parse(run)
    assert report.statuses() == {
        "test_lookup.py::test_fails": F,
        "test_lookup.py::test_the_failure_found_its_module_without_a_scan": P,
    }, run.log
    assert ">       assert 1 == 2" in run.log  # the failure's source is shown as pytest shows it
