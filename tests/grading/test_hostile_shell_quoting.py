"""Attacks through text the grader puts on a command line: file names a candidate adds and test ids a mined
repository names, carrying `$(...)`, quotes, `;` and newlines. Each runs the real grader in a bwrap
episode of the toy task and is named after its attack; nothing planted may run.
"""

from __future__ import annotations

from repogym.grading.grade import grade_in_episode
from repogym.grading.report import Outcome
from repogym.grading.runner import run_tests

from ..support.patches import new_file


def test_grading_file_names_with_shell_syntax_run_nothing(toy_task, episode):
    """Names with `$(...)`, quotes, spaces and newlines reach the compile check's command line quoted."""
    evil = ["calc_$(touch PWNED1).py", "x'; touch PWNED2; '.py", 'src/"$(touch PWNED3)".py']
    patch = toy_task.patch + "".join(new_file(name, "x = 1\n") for name in evil)
    patch += new_file('"src/new\\nline.py"', "y = 2\n")
    result = grade_in_episode(toy_task, patch, episode)
    planted = episode.run("find /testbed /tmp /opt/repogym/out -name 'PWNED[0-9]'").output
    assert planted.strip() == "", planted
    assert episode.run("test -e 'calc_$(touch PWNED1).py' && echo applied").output.strip() == "applied"
    assert result.outcome is not Outcome.INFRA_ERROR


def test_grading_test_ids_with_shell_syntax_run_nothing(toy_task, episode):
    """Test ids come from mined repositories: parametrize ids may carry any text; they are quoted."""
    ids = [
        "tests/test_calc.py::test_add[$(touch /opt/repogym/out/PWNED1)]",
        "tests/$(touch /opt/repogym/out/PWNED2).py",
        "tests/test_calc.py;touch /opt/repogym/out/PWNED3;.py",
    ]
    run_tests(toy_task, episode, ids)
    assert not list(episode.layer.out.glob("PWNED*"))
    assert episode.run("find /testbed /tmp -name 'PWNED[0-9]'").output.strip() == ""
